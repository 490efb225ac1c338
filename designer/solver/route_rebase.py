"""What changed between two snapshots of one design, and a router for the new one that
keeps what the old router computed and the change left valid.

`diff_snapshots` compares two snapshots arc by arc.  It only answers for snapshots of
the same design with the same nodes and links (a what-if edit: counts, technologies,
failed links or nodes); anything else (nodes or links added or removed, the routing
setting changed, a link changing between NVLink, PCIe and the network) gives None, and
the caller routes from scratch.

Failed links are left out of a snapshot, so failing or restoring one renumbers the arcs:
`SnapshotChange.arc_map` takes old arc ids to new ones, through the design-wide link
positions the snapshots share (`snapshot.LinkPositions`).

`rebase_router` makes the new snapshot's `Router`.  Breadth-first distances do not
depend on capacities, so after a capacity edit the router keeps its subgraphs, its
distances and its fabric groups, and only drops the tables whose capacity splits
changed; after a fail or restore it is built anew but keeps the fabric groups' distance
rows that the change provably leaves alone (`route_tables._FabricGroups.rebased`), and
each rank's way to the fabric when no changed link touches it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import numpy as np

from designer.solver.route_arrays import RankLinks, RouteBatch, _Subgraph
from designer.solver.route_nvlink import _node_domains
from designer.solver.routing import Router
from designer.solver.snapshot import NVLINK, PCIE, Snapshot


@dataclass(frozen=True, eq=False)
class SnapshotChange:
    """The arcs that differ between snapshots ``old`` and ``new`` of one design.

    Attributes
    ----------
    arc_map : ndarray or None
        New id of each old arc (-1: its link is no longer live); None when the two
        snapshots have the same arcs.
    removed : ndarray
        Old arcs whose link is no longer live.
    added : ndarray
        New arcs whose link was not live before.
    reweighed : ndarray
        New arcs, live in both, whose capacity changed.
    same_ranks : bool
        The GPUs, their NVLink domains, positions, NICs and relays, and the NVLS and
        SHARP flags are the same: the collective planners see the same ranks.
    """

    old: Snapshot
    new: Snapshot
    arc_map: np.ndarray | None
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

    def map_arcs(self, arcs: np.ndarray) -> np.ndarray:
        """New ids of old arcs (-1 where gone)."""
        if self.arc_map is None:
            return arcs
        return self.arc_map[arcs]

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
    >>> from designer.solver.snapshot import take_snapshot
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
    if old.node_kind is not new.node_kind and old.node_kind != new.node_kind:
        return None
    if old.routing != new.routing:
        return None
    lp0, lp1 = old.link_positions(), new.link_positions()
    if lp0._pos is not lp1._pos:  # links added or removed since
        return None
    r0, r1 = lp0._rank, lp1._rank
    c0, c1 = old.compute_links(), new.compute_links()
    if r0 is r1 or np.array_equal(r0, r1):
        arc_map, removed, added = None, np.zeros(0, np.int64), np.zeros(0, np.int64)
        same_compute = c0 is c1 or np.array_equal(c0, c1)
    else:
        both = (r0 >= 0) & (r1 >= 0)
        k0, k1 = r0[both], r1[both]          # ascending: ranks follow the design's order
        # int32 while ids fit: phases keep arc ids so, and renumbering is a gather.
        dt = np.int32 if max(old.n_arcs, new.n_arcs) < 2**31 else np.int64
        link_map = np.full(old.n_arcs // 2, -1, dtype=dt)   # new index of each old link
        link_map[k0] = k1
        gone = link_map < 0
        arc_map = np.empty(old.n_arcs, dtype=dt)             # both arcs of each link
        arc_map[0::2] = 2 * link_map
        arc_map[1::2] = arc_map[0::2] + 1                    # a gone link's: -2 + 1
        arc_map[0::2][gone] = -1
        removed = _arcs_of(r0[(r0 >= 0) & (r1 < 0)])
        added = _arcs_of(r1[(r1 >= 0) & (r0 < 0)])
        same_compute = np.array_equal(c0[k0], c1[k1])
    # A link may change technology (capacity) but not its ends, nor the subgraph that
    # routes it (NVLink, PCIe, compute network).  Both arcs of a link share a family
    # and a capacity, so the first arcs tell.
    first_old = slice(0, None, 2) if arc_map is None else 2 * k0
    first_new = slice(0, None, 2) if arc_map is None else 2 * k1
    # (Snapshots of a capacity edit share these arrays: nothing to compare.)
    shared = arc_map is None and all(getattr(old, f) is getattr(new, f) for f in (
        "arc_src", "arc_dst", "arc_family"))
    if not same_compute or (not shared and not (
            np.array_equal(old.arc_src[first_old], new.arc_src[first_new])
            and np.array_equal(old.arc_dst[first_old], new.arc_dst[first_new]))):
        return None
    f0, f1 = old.arc_family[first_old], new.arc_family[first_new]
    differ = np.zeros(0, np.int64) if shared else np.flatnonzero(f0 != f1)
    if differ.size and not np.array_equal(_kind(f0[differ]), _kind(f1[differ])):
        return None
    moved = np.flatnonzero(old.arc_cap[first_old] != new.arc_cap[first_new])  # links
    reweighed = _arcs_of(moved if arc_map is None else k1[moved])
    same_ranks = all(_same(getattr(old, f), getattr(new, f)) for f in (
        "gpus", "gpu_domain", "gpu_local", "gpu_nic", "gpu_nic_via", "domain_nvls"))
    same_ranks = same_ranks and old.net_sharp == new.net_sharp
    return SnapshotChange(old, new, arc_map, removed, added, reweighed.astype(np.int64),
                          same_ranks)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or np.array_equal(a, b)


def _arcs_of(links: np.ndarray) -> np.ndarray:
    """Both arcs of each live link index (ascending), in order."""
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
        new.nvlink = _renumbered(old.nvlink, change, lambda a: fam[a] == NVLINK)
        new.net = _renumbered(old.net, change, lambda a: (
            (fam[a] != NVLINK) & (fam[a] != PCIE) & snap.compute_links()[a // 2]))
        new._pcie_table = new._edge_table = None
    else:
        new.nvlink, new.net = _renumbered(old.nvlink, change), _renumbered(old.net, change)
        if old._edge_table is not None and net_reweighed.size:
            new._edge_table = _edge_table(new, old._edge_table, net_reweighed)
    new._nv_batch = None if nv_changed else _nv_tables(old, new, change)
    if old._fabric is not None:
        new._fabric = old._fabric.rebased(new, change, net_reweighed)
    new._ranks, new._access_legs = _rank_links(old, new, change, nv_changed)
    return new


def _renumbered(g: _Subgraph, change: SnapshotChange, member=None) -> _Subgraph:
    """Subgraph ``g`` over ``change.new``: arcs renumbered, the removed ones dropped and
    the added ones for which ``member(arcs)`` holds merged in (in source node, then arc
    order, as built).  Distances are kept while none of its arcs came or went."""
    out = copy.copy(g)
    snap = out.snap = change.new
    if change.arc_map is None:
        out._dist = dict(g._dist)
        return out
    arcs = change.arc_map[g.arcs].astype(g.arcs.dtype, copy=False)
    gone = arcs < 0
    add = change.added[member(change.added)] if change.added.size else change.added
    if not add.size and not gone.any():
        out.arcs, out._dist = arcs, dict(g._dist)    # same nodes, same order
        return out
    arcs = arcs[~gone]
    if add.size:
        src, n = snap.arc_src.astype(np.int64), snap.n_arcs
        add = add[np.argsort(src[add] * n + add, kind="stable")]
        arcs = np.insert(arcs, np.searchsorted(src[arcs] * n + arcs, src[add] * n + add), add)
    out.arcs = arcs
    out.ptr = np.zeros(snap.n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(snap.arc_src[arcs], minlength=snap.n_nodes), out=out.ptr[1:])
    out.dst = snap.arc_dst[arcs]
    out._dist = {}
    return out


def _nv_tables(old: Router, new: Router, change: SnapshotChange):
    """The old router's NVLink route templates, for a change that touched no NVLink arc:
    same domains, same classes; template rows are arc positions in a domain's list, so
    only the lists are renumbered."""
    tables = old._nv_batch
    if tables is None:
        return None
    out = copy.copy(tables)
    out.snap, out.graph = new.snap, new.nvlink
    # The templates found so far; new ones are found by the new router.  (The key map
    # is copied, as it is written in place; the template space is small.)
    rows = out._rows = copy.copy(tables._rows)
    rows.build = lambda keys: out._templates(keys - 1)
    if rows._dense is not None:
        rows._dense = rows._dense.copy()
    if change.arc_map is not None:
        out.dom = copy.copy(tables.dom)
        out.dom.arcs = change.arc_map[tables.dom.arcs].astype(tables.dom.arcs.dtype)
    return out


def _edge_table(router: Router, table: np.ndarray, arcs: np.ndarray) -> np.ndarray:
    """`Router.edge_arcs` after the capacities of network ``arcs`` changed: recomputed for
    their source nodes (the first arc of the node's largest capacity)."""
    s, g = router.snap, router.net
    out = table.copy()
    for v in np.unique(s.arc_src[arcs]).tolist():
        arcs = g.arcs[g.ptr[v]:g.ptr[v + 1]]
        out[v] = arcs[int(np.argmax(s.arc_cap[arcs]))] if arcs.size else -1
    return out


def _rank_links(old: Router, new: Router, change: SnapshotChange,
                nv_changed: bool) -> tuple[RankLinks | None, RouteBatch | None]:
    """The old router's rank links and access legs, with arcs renumbered, when no
    changed arc can alter them: none ends at a rank's GPU, NIC or relay, and no NVLink
    arc changed if some rank relays through a sibling (PXN).  Else None (computed anew
    when asked)."""
    rl = old._ranks
    legs = getattr(old, "_access_legs", None)
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
    if change.arc_map is None:
        return rl, legs
    m = change.arc_map

    def remap(b: RouteBatch) -> RouteBatch:
        return RouteBatch(b.ptr, m[b.arcs].astype(b.arcs.dtype, copy=False), b.weights,
                          b.hops)

    up = np.where(rl.up >= 0, m[np.maximum(rl.up, 0)], -1).astype(rl.up.dtype, copy=False)
    rl = replace(rl, access_up=remap(rl.access_up), access_down=remap(rl.access_down), up=up)
    return rl, None if legs is None else remap(legs)


def node_domains(router: Router) -> np.ndarray:
    """NVLink domain of every node of the router's snapshot (-1: none)."""
    if router._nv_batch is not None:
        return router._nv_batch.dom.node_dom
    return _node_domains(router.snap, router.nvlink)
