"""What changed between two snapshots of one design, and a router for the new one that
keeps what the old router computed and the change left valid.

`diff_snapshots` compares two snapshots arc by arc.  It only answers for snapshots of
the same design with the same nodes and links (a what-if edit: counts, technologies,
failed links or nodes); anything else (nodes or links added or removed, the routing
setting changed, a link changing between NVLink, PCIe and the network) gives None, and
the caller routes from scratch.

A failed link keeps its arcs in the snapshot, dead (no family, no capacity), so arc ids
are the same in every snapshot of a design with the same links: failing or restoring
one renumbers nothing, and only the routes that cross it, or that it may reroute, are
recomputed.

`rebase_router` makes the new snapshot's `Router`.  Breadth-first distances do not
depend on capacities, so after a capacity edit the router keeps its subgraphs, its
distances and its fabric groups, and only drops the tables whose capacity splits
changed; after a fail or restore its subgraphs lose or gain the arcs concerned, and it
keeps the fabric groups' distance rows that the change provably leaves alone
(`route_tables._FabricGroups.rebased`), the NVLink route templates when no NVLink arc
changed, and each rank's way to the fabric when no changed link touches it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from designer.solver.arrays.ragged import RouteBatch
from designer.solver.routing.access import RankLinks
from designer.solver.routing.nvlink import _node_domains
from designer.solver.routing.router import Router
from designer.solver.routing.subgraph import _Subgraph, sorted_ptr
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


# ----------------------------------------------------------------- routers
def rebase_router(old: Router, change: SnapshotChange) -> Router:
    """A `Router` for ``change.new`` that keeps what ``old`` (the router of
    ``change.old``) computed and the change leaves valid (see the module docstring)."""
    snap = change.new
    nv_changed = change.touches(NVLINK)
    new = copy.copy(old)
    new.snap = snap
    new._edge, new._dag, new._nv = {}, {}, {}
    net_reweighed = change.net_reweighed()
    if change.live:
        fam = snap.arc_family
        new._nvlink = (None if old._nvlink is None else
                       _subgraph_after(old._nvlink, change, lambda a: fam[a] == NVLINK))
        new.net = _subgraph_after(old.net, change, lambda a: (
            (fam[a] != NVLINK) & (fam[a] != PCIE) & snap.compute_links()[a // 2]))
        new._pcie = (None if old._pcie is None else
                     _subgraph_after(old._pcie, change, lambda a: fam[a] == PCIE))
        new._edge_table = None
    else:
        new._nvlink = None if old._nvlink is None else _subgraph_after(old._nvlink, change)
        new.net = _subgraph_after(old.net, change)
        new._pcie = None if old._pcie is None else _subgraph_after(old._pcie, change)
        if old._edge_table is not None and net_reweighed.size:
            new._edge_table = _edge_table(new, old._edge_table, net_reweighed)
    new._nv_batch = None if nv_changed else _nv_tables(old, new, change)
    new._nv_pending = None
    if old._fabric is not None:
        new._fabric = old._fabric.rebased(new.snap, new.net, new.is_switch, change, net_reweighed)
    new._ranks, new._access_legs = _rank_links(old, new, change, nv_changed)
    new._legs_pending = None
    return new


def _subgraph_after(g: _Subgraph, change: SnapshotChange, member=None) -> _Subgraph:
    """Subgraph ``g`` over ``change.new``: the removed arcs dropped and the added ones for
    which ``member(arcs)`` holds merged in (in source node, then arc order, or far end's
    position and arc order with ``by_position``, as built).
    Distances are kept while none of its arcs came or went."""
    out = copy.copy(g)
    snap = out.snap = change.new
    gone = (np.isin(g.arcs, change.removed) if change.removed.size
            else np.zeros(len(g.arcs), dtype=bool))
    add = change.added[member(change.added)] if change.added.size else change.added
    if not add.size and not gone.any():
        out._dist = dict(g._dist)    # same arcs, same order
        return out
    arcs = g.arcs[~gone]
    if add.size:
        src, n = snap.arc_src.astype(np.int64), snap.n_arcs
        if g.by_position:  # (source, far end's structural position, arc), as built
            src = src * snap.n_nodes + snap.node_pos[snap.arc_dst]
        add = add[np.argsort(src[add] * n + add, kind="stable")]
        arcs = np.insert(arcs, np.searchsorted(src[arcs] * n + arcs, src[add] * n + add), add)
    out.arcs = arcs
    out.ptr = sorted_ptr(snap.arc_src[arcs], snap.n_nodes)   # arcs stay sorted by source
    out.dst = snap.arc_dst[arcs]
    out._dist = {}
    return out


def _nv_tables(old: Router, new: Router, change: SnapshotChange):
    """The old router's NVLink route templates, for a change that touched no NVLink arc:
    same domains, same classes, same arcs."""
    tables = old._nv_started()
    if tables is None:
        return None
    out = copy.copy(tables)
    out.snap = new.snap   # (its graph, the domains' NVLink arcs, is the same)
    # The templates found so far; new ones are found by the new router.  (The key map
    # is copied, as it is written in place; the template space is small.)
    rows = out._rows = copy.copy(tables._rows)
    if rows._dense is not None:
        rows._dense = rows._dense.copy()
    return out


def _edge_table(router: Router, table: np.ndarray, arcs: np.ndarray) -> np.ndarray:
    """`Router.edge_arcs` after the capacities of network ``arcs`` changed: recomputed for
    their source nodes."""
    out = table.copy()
    src = np.unique(router.snap.arc_src[arcs])
    out[src] = router.edge_arcs_of(src)
    return out


def _rank_links(old: Router, new: Router, change: SnapshotChange,
                nv_changed: bool) -> tuple[RankLinks | None, RouteBatch | None]:
    """The old router's rank links and access legs when no changed arc can alter them:
    none ends at a rank's GPU, NIC or relay, and no NVLink arc changed if some rank
    relays through a sibling (PXN).  Else None (computed anew when asked)."""
    rl = old._ranks
    legs = old._legs_started()
    if rl is None or not change.same_ranks:
        return None, None
    s = change.new
    via = s.gpu_nic_via
    if nv_changed and np.any(via >= 0):
        return None, None
    ends = change.nodes_touched()
    access = np.zeros(s.n_nodes, dtype=bool)
    access[rl.gpu] = True
    access[rl.nic[rl.nic >= 0]] = True
    access[via[via >= 0]] = True
    if access[ends].any():
        return None, None
    return rl, legs


def node_domains(router: Router) -> np.ndarray:
    """NVLink domain of every node of the router's snapshot (-1: none)."""
    if router._nv_started() is not None:
        return router._nv_batch.dom.node_dom
    if router.snap.node_domain is not None:
        return router.snap.node_domain
    return _node_domains(router.snap, router.nvlink)
