"""What changed between two snapshots of one design (`SnapshotChange`), so that the new
snapshot's router keeps what the old one computed and the change left valid
(`router.Router.rebased`).

`diff_snapshots` compares two snapshots arc by arc.  It only answers for snapshots of
the same design with the same nodes and links (a what-if edit: counts, technologies,
failed links or nodes); anything else (nodes or links added or removed, the routing
setting changed, a link changing between NVLink, PCIe and the network) gives None, and
the caller routes from scratch.

A failed link keeps its arcs in the snapshot, dead (no family, no capacity), so arc ids
are the same in every snapshot of a design with the same links: failing or restoring
one renumbers nothing, and only the routes that cross it, or that it may reroute, are
recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.solver.snapshot.build import NVLINK, PCIE, Snapshot


@dataclass(frozen=True, eq=False)
class SnapshotChange:
    """The arcs that differ between snapshots ``old`` and ``new`` of one design.

    Arc ids are the same in both (dead arcs keep theirs, see `designer.solver.snapshot.build`).

    Attributes
    ----------
    removed : ndarray
        Arcs whose link was live and is dead now.
    added : ndarray
        Arcs whose link was dead and is live now.
    reweighed : ndarray
        New arcs, live in both, whose capacity changed.
    same_ranks : bool
        The GPUs, their NVLink domains, positions, NICs and relays, and the NVLS and
        SHARP flags are the same: the collective planners see the same ranks.
    """

    old: Snapshot
    new: Snapshot
    removed: np.ndarray
    added: np.ndarray
    reweighed: np.ndarray
    same_ranks: bool

    @property
    def live(self) -> bool:
        """Whether links failed or came back (distances may change)."""
        return bool(self.removed.size or self.added.size)

    @property
    def empty(self) -> bool:
        return not self.live and not self.reweighed.size

    def nodes_touched(self) -> np.ndarray:
        """Nodes at an end of a changed arc (either snapshot)."""
        o, n = self.old, self.new
        arcs_new = np.concatenate([self.added, self.reweighed])
        return np.unique(np.concatenate([o.arc_src[self.removed], o.arc_dst[self.removed],
                                         n.arc_src[arcs_new], n.arc_dst[arcs_new]]))

    def touches(self, family: int) -> bool:
        """Whether any changed arc is of ``family`` (`snapshot.NVLINK`, ...)."""
        return bool((self.old.arc_family[self.removed] == family).any()
                    or (self.new.arc_family[self.added] == family).any()
                    or (self.new.arc_family[self.reweighed] == family).any())

    def net_reweighed(self) -> np.ndarray:
        """The reweighed arcs of the compute network (neither NVLink nor PCIe)."""
        s, arcs = self.new, self.reweighed
        fam = s.arc_family[arcs]
        return arcs[(fam != NVLINK) & (fam != PCIE) & s.compute_links()[arcs // 2]]


def _kind(family: np.ndarray) -> np.ndarray:
    """0 NVLink, 1 PCIe, 2 network: what decides which subgraph routes an arc."""
    return np.where(family == NVLINK, 0, np.where(family == PCIE, 1, 2))


def diff_snapshots(old: Snapshot, new: Snapshot) -> SnapshotChange | None:
    """What changed from ``old`` to ``new``, or None when they are not comparable (see the
    module docstring).

    >>> from designer.model.templates import build_template
    >>> from designer.solver.snapshot.build import take_snapshot
    >>> topo = build_template("leaf-spine")
    >>> a = take_snapshot(topo)
    >>> lid = next(k for k in a.link_ids if "spine" in k)
    >>> _ = topo.update_link(lid, failed=True)
    >>> ch = diff_snapshots(a, take_snapshot(topo))
    >>> len(ch.removed), len(ch.added), ch.same_ranks
    (2, 0, True)
    """
    if old.node_ids is not new.node_ids and old.node_ids != new.node_ids:
        return None
    if old.node_kind is not new.node_kind and not np.array_equal(old.node_kind, new.node_kind):
        return None
    if old.routing != new.routing:
        return None
    if old.link_positions()._pos is not new.link_positions()._pos:
        return None  # another design, or links added or removed since
    # A link may change technology (capacity) but not its ends, nor, while live, the
    # subgraph that routes it (NVLink, PCIe or the compute network).  Both arcs of a
    # link share a family and a capacity, so the first arcs tell.  (Snapshots of a
    # capacity edit share these arrays: nothing to compare.)
    if not (_same(old.arc_src, new.arc_src) and _same(old.arc_dst, new.arc_dst)):
        return None
    l0, l1 = old.live_links(), new.live_links()
    both = l0 & l1 if l0 is not l1 else l0
    c0, c1 = old.compute_links(), new.compute_links()
    if c0 is not c1 and np.any((c0 != c1) & both):
        return None
    if old.arc_family is not new.arc_family:
        f0, f1 = old.arc_family[0::2], new.arc_family[0::2]
        differ = np.flatnonzero((f0 != f1) & both)
        if differ.size and not np.array_equal(_kind(f0[differ]), _kind(f1[differ])):
            return None
    if l0 is l1:
        removed = added = np.zeros(0, np.int64)
    else:
        removed, added = _arcs_of(np.flatnonzero(l0 & ~l1)), _arcs_of(np.flatnonzero(~l0 & l1))
    moved = np.flatnonzero((old.arc_cap[0::2] != new.arc_cap[0::2]) & both)  # links
    same_ranks = all(_same(getattr(old, f), getattr(new, f)) for f in (
        "gpus", "gpu_domain", "gpu_local", "gpu_nic", "gpu_nic_via", "domain_nvls"))
    same_ranks = same_ranks and old.net_sharp == new.net_sharp
    return SnapshotChange(old, new, removed, added, _arcs_of(moved), same_ranks)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or np.array_equal(a, b)


def _arcs_of(links: np.ndarray) -> np.ndarray:
    """Both arcs of each link index (ascending), in order."""
    links = np.asarray(links, dtype=np.int64)
    out = np.empty(2 * len(links), dtype=np.int64)
    out[0::2] = 2 * links
    out[1::2] = out[0::2] + 1
    return out
