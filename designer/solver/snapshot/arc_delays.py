"""Per-arc latency and jitter of a snapshot, made on first use (`ArcDelays`): a solve
needs the latency of a few arcs, not arrays over every arc (at 131,072 GPUs each is
14 MB of fresh memory a cold snapshot would pay for)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from designer.solver.tuning import current


def read_only(a: np.ndarray) -> np.ndarray:
    """``a``, made read-only (shared by the snapshots that reuse it)."""
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class ArcDelays:
    """Per-arc latency and jitter, computed on first use (see `Snapshot.arc_latency_s`)
    from per-technology and per-node facts; one object serves every snapshot that
    shares its arcs (`build_snapshot`'s first tier)."""

    link_tech: np.ndarray      # per link: technology code
    tech_latency: np.ndarray   # per code: seconds
    tech_jitter: np.ndarray    # per code: seconds
    node_latency: np.ndarray   # per node: seconds a device adds to the arcs into it
    arc_dst: np.ndarray

    @cached_property
    def latency(self) -> np.ndarray:
        out = np.repeat(self.tech_latency[self.link_tech], 2)
        out += self.node_latency[self.arc_dst]
        return read_only(out)

    @cached_property
    def jitter(self) -> np.ndarray:
        return read_only(np.repeat(self.tech_jitter[self.link_tech], 2))

    def link_latencies(self, links: np.ndarray) -> np.ndarray:
        """The latencies of both arcs of each of ``links`` (link ids), arc ``2k`` then
        ``2k + 1``: `latency` of those arcs, with no array over every arc.  Written a
        slice of links at a time, so that the temporaries stay in cache and the result
        is the only fresh memory."""
        out = np.empty((len(links), 2))
        step = current().arc_slice
        for lo in range(0, len(links), step):
            part = links[lo:lo + step]
            tech = self.tech_latency[self.link_tech[part]]
            arcs = 2 * part
            for way in (0, 1):
                np.add(tech, self.node_latency[self.arc_dst[arcs + way]],
                       out=out[lo:lo + step, way])
        return out.reshape(-1)
