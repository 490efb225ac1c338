"""Per-arc latency and jitter of a snapshot, made on first use (`ArcDelays`): a solve
needs the latency of a few arcs, not arrays over every arc (at 131,072 GPUs each is
14 MB of fresh memory a cold snapshot would pay for).  Split from `snapshot`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np


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

    def latency_where(self, mask: np.ndarray) -> np.ndarray:
        """``latency[mask]``, without making the whole array: written slice by slice
        into the result (the temporaries stay in cache), the only fresh memory."""
        if "latency" in self.__dict__:
            return self.latency[mask]
        out = np.empty(int(np.count_nonzero(mask)))
        at = 0
        for lo in range(0, len(mask), _SLICE):
            arcs = np.flatnonzero(mask[lo:lo + _SLICE])
            arcs += lo
            part = out[at:at + len(arcs)]
            np.take(self.tech_latency, self.link_tech[arcs >> 1], out=part)
            part += self.node_latency[self.arc_dst[arcs]]
            at += len(arcs)
        return out


_SLICE = 1 << 16   # arcs `ArcDelays.latency_where` reads at a time
