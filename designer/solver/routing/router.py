"""Routing GPU-to-GPU traffic over a `Snapshot`: NVLink inside a domain, rail NICs and the
switched fabric between domains.

Three fabric routing modes (``Snapshot.routing``):

``adaptive``
    The flow splits over every equal-cost next hop in proportion to its capacity (IB
    adaptive routing, Spectrum-X, EFA/SRD packet spraying).
``ecmp``
    Each flow is hashed (seeded, deterministic) onto one equal-cost path, so large flows
    can collide on one uplink while others idle, as on real Ethernet.
``static``
    One deterministic path per destination (``d mod k`` next-hop choice, subnet-manager
    style).

Paths are never searched per flow: distances are computed once per destination switch
(breadth-first, vectorised over arcs), and the shortest-path DAG between two edge switches
is reused by every flow of that (leaf, leaf) class.  Only switches forward fabric
traffic: a NIC cabled to two leaves (dual-homed) is an endpoint, never a transit hop.
NVLink traffic is sprayed over all shortest NVLink paths in proportion to capacity (a
GPU uses all its links at once).  A GPU reaches its rail NIC (`Snapshot.gpu_nic`) over
its own PCIe link, through a sibling GPU (PXN) or through its host: `Router.rank_links`.

A route is a pair of arrays ``(arcs, weights)``: the fraction of the flow's rate that
crosses each directed arc.

Besides the per-pair methods (`Router.nvlink_route`, `Router.fabric_dag`,
`Router.fabric_paths`) the router answers whole batches at once, which is what the
collective planners use: `Router.nvlink_routes`, `Router.fabric_dags` and
`Router.fabric_walks` return `RouteBatch` tables built with array code, identical arc for
arc and bit for bit to the per-pair answers, so a 16k-GPU ring or a million-pair
all-to-all needs no Python loop per transfer.  Three structural
shortcuts make that possible:

* NVLink domains built alike (same links in the same order with the same capacities,
  e.g. every HGX board of a cluster) share one set of route *templates*, computed on the
  first such domain and translated to the others by arc position; the templates a batch
  still lacks (every domain of a degraded cluster differs) are found together by one
  level-by-level walk (`routing.nvlink`).
* Edge switches with the same switch neighbours (the leaves of one pod) have the same
  distance to every other switch, so one breadth-first search serves the whole group,
  and the next hops of a (switch, group) are found once and kept (`routing.fabric`):
  adaptive DAGs and ECMP/static walks of every flow are then array gathers.
* Classes whose first hop leaves them alike (same spines, same shares, targets of one
  group) walk the middle levels of their adaptive DAGs once (`routing.walks.walk_shared`),
  and the phases keep each such middle once (`routing.middles`).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from designer.solver.arrays.ragged import (  # noqa: F401 - re-exported for callers
    _EMPTY,
    Route,
    RouteBatch,
    _concat,
    _ptr,
    _scatter,
    _single,
    distinct,
    first_occurrence,
    mix64,
    ragged_arange,
    run_heads,
    segment_sums,
    unique_inverse,
)
from designer.solver.errors import SolverError
from designer.solver.parallel import Forked, fork
from designer.solver.routing import paths as route_paths
from designer.solver.routing.access import RankLinks, access_legs, make_rank_links
from designer.solver.routing.fabric import _FabricGroups
from designer.solver.routing.middles import Middles, SplitDags
from designer.solver.routing.nvlink import NvlinkTables, _node_domains
from designer.solver.routing.subgraph import _Subgraph
from designer.solver.snapshot.build import NVLINK, PCIE, Snapshot

if TYPE_CHECKING:
    from designer.solver.routing.change import SnapshotChange


class Router:
    """Routes for one snapshot (caches distances and per-class DAGs).

    Parameters
    ----------
    snap : Snapshot
    seed : int
        Seed of the ECMP hash.
    """

    def __init__(self, snap: Snapshot, seed: int = 0):
        self.snap = snap
        self.seed = seed
        s = snap
        # The NVLink route templates' groundwork (domains, classes of domains built
        # alike) first: on two cores it is laid while this thread builds the fabric's
        # subgraph and goes on.  It needs no NVLink subgraph of the whole design (see
        # `NvlinkTables`), which is made only if some route is found pair by pair.
        family = s.arc_family[0::2]   # per link (a link's two arcs share it, as planes)
        nv = family == NVLINK
        self._nvlink: _Subgraph | None = None
        self._nv_pending: Forked[NvlinkTables] | None = (
            fork(NvlinkTables, s, self._nvlink) if nv.any() else None)
        # Single-path modes number next hops by structure (adaptive splits over all).
        self.net = _Subgraph(s, link_mask=~nv & (family != PCIE) & s.compute_links(),
                             by_position=s.routing != "adaptive")
        self._pcie: _Subgraph | None = None   # made when first asked (`pcie`)
        self.is_switch = s.node_switch
        self._edge: dict[int, int] = {}   # NIC -> its first compute switch arc
        self._dag: dict[tuple[int, int], Route] = {}
        self._nv: dict[tuple[int, int], Route] = {}
        self._edge_table: np.ndarray | None = None
        self._nv_batch: NvlinkTables | None = None
        self._fabric: _FabricGroups | None = None
        self._ranks: RankLinks | None = None
        self._access_legs: RouteBatch | None = None
        self._legs_pending: Forked[RouteBatch] | None = None

    # -------------------------------------------------------------- NVLink
    @property
    def nvlink(self) -> _Subgraph:
        """The NVLink arcs, made on first use (the batched routes need only their
        domains', `NvlinkTables`)."""
        if self._nvlink is None:
            self._nvlink = _Subgraph(self.snap, link_mask=self.snap.arc_family[0::2] == NVLINK)
        return self._nvlink

    def nvlink_route(self, a: int, b: int) -> Route:
        """Spray from node ``a`` to node ``b`` over all shortest NVLink paths, each hop
        split in proportion to arc capacity."""
        key = (a, b)
        if a == b:
            return _EMPTY
        if key in self._nv:
            return self._nv[key]
        g = self.nvlink
        # GPUs may forward (torus designs); through a switch is always shorter anyway.
        dist = g.dist_to(b)
        if dist[a] < 0:
            raise SolverError(f"no NVLink path from {self.snap.node_ids[a]} to "
                              f"{self.snap.node_ids[b]}")
        route = self._dag_fractions(g, a, b, dist)
        self._nv[key] = route
        return route

    def _dag_fractions(self, g: _Subgraph, a: int, b: int, dist: np.ndarray,
                       through: np.ndarray | None = None) -> Route:
        cap = self.snap.arc_cap
        frac = {a: 1.0}
        arcs, weights = [], []
        for _ in range(int(dist[a])):
            nxt: dict[int, float] = {}
            for node, f in frac.items():
                out = g.next_arcs(node, dist, through)
                if out.size == 0:
                    raise SolverError(f"routing dead end at {self.snap.node_ids[node]}")
                share = cap[out] / cap[out].sum() * f
                arcs.append(out)
                weights.append(share)
                for v, w in zip(self.snap.arc_dst[out].tolist(), share.tolist(), strict=True):
                    nxt[v] = nxt.get(v, 0.0) + w
            frac = nxt
        return np.concatenate(arcs), np.concatenate(weights)

    def nvlink_routes(self, a: np.ndarray, b: np.ndarray) -> RouteBatch:
        """`nvlink_route` for node pairs ``(a[i], b[i])`` of one NVLink domain each;
        ``hops[i]`` is the NVLink hop count ``dist(a, b)``.

        Routes come from per-template caches (`routing.nvlink`): domains built alike share
        them, and the templates still missing are found together with array code.
        """
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        tables = self._nv_tables()
        d = tables.dom.node_dom[a]
        apart = (d < 0) | (tables.dom.node_dom[b] != d)
        if np.any(apart):
            i = int(np.flatnonzero(apart)[0])
            self.nvlink_route(int(a[i]), int(b[i]))  # raises with the culprit's names
            raise SolverError(f"{self.snap.node_ids[a[i]]} and {self.snap.node_ids[b[i]]} "
                              "are not in one NVLink domain")
        return tables.routes(a, b)

    def _nv_tables(self) -> NvlinkTables:
        if self._nv_started() is None:
            self._nv_batch = NvlinkTables(self.snap, self._nvlink)
        return self._nv_batch

    def _nv_started(self) -> NvlinkTables | None:
        """The NVLink tables if made or under way (then waited for), else None."""
        if self._nv_batch is None and self._nv_pending is not None:
            # Any thread may join: they all get the one result.
            self._nv_batch = self._nv_pending.join()
        return self._nv_batch

    # -------------------------------------------------------------- fabric
    def rank_links(self) -> RankLinks:
        """Per-rank NIC, access routes and edge arcs (see `RankLinks`), computed once.

        A rank reaches its NIC (``Snapshot.gpu_nic_via``) over its own PCIe link, through
        a sibling GPU (PXN: NVLink to the sibling, sprayed as `nvlink_route`, then the
        sibling's PCIe link) or through its host (two PCIe arcs); the way back is the
        mirror image.  NCCL relays only sends through PXN and lets the NIC write to the
        far GPU over PCIe; the model relays both ways, which loads the same NIC PCIe link.
        """
        if self._ranks is None:
            self._ranks = make_rank_links(self)
            if self._access_legs is None and self._legs_pending is None:
                # Wanted next by every phase that leaves a domain; meanwhile the caller
                # goes on with its transfers.
                self._legs_pending = fork(access_legs, self._ranks, self.snap.n_arcs)
        return self._ranks

    def access_legs(self) -> RouteBatch:
        """Every rank's way out to the fabric and way in (`routing.access.access_legs`),
        computed once: every phase of every plan shares them."""
        if self._legs_started() is None:
            self._access_legs = access_legs(self.rank_links(), self.snap.n_arcs)
        return self._access_legs

    def _legs_started(self) -> RouteBatch | None:
        """The access legs if made or under way (then waited for), else None."""
        if self._access_legs is None and self._legs_pending is not None:
            self._access_legs = self._legs_pending.join()   # any thread: one result
        return self._access_legs

    def check_rank(self, rank: int) -> None:
        """Raise `SolverError` naming what keeps ``rank`` from the fabric, if anything."""
        s, rl = self.snap, self.rank_links()
        if rl.ok[rank]:
            return
        g, nic, via = int(rl.gpu[rank]), int(rl.nic[rank]), int(s.gpu_nic_via[rank])
        if nic < 0:
            raise SolverError(f"GPU {s.node_ids[g]} has no NIC on the compute fabric, so it "
                              "cannot reach GPUs outside its NVLink domain")
        self.edge_arc(nic)
        near = g if via < 0 else via
        self.pcie_arc(near, nic)
        self.pcie_arc(nic, near)
        if via >= 0 and s.node_kind[via] != "gpu":
            self.pcie_arc(g, via)
            self.pcie_arc(via, g)
        raise SolverError(f"GPU {s.node_ids[g]} cannot reach its NIC {s.node_ids[nic]}")

    @property
    def pcie(self) -> _Subgraph:
        """The PCIe arcs, made on first use: the ranks' arcs to their own NICs come with
        the snapshot (``Snapshot.gpu_nic_arc``), so a design whose every NIC sits on its
        GPU's own PCIe link needs no PCIe subgraph (98,304 arcs sorted, ~2.5 ms at
        16,384 GPUs)."""
        if self._pcie is None:
            self._pcie = _Subgraph(self.snap, link_mask=self.snap.arc_family[0::2] == PCIE)
        return self._pcie

    def pcie_symmetric(self) -> bool:
        """`_Subgraph.symmetric` of `pcie`, without making it: chosen per link, it has both
        arcs of each of its links."""
        return True if self._pcie is None else self._pcie.symmetric

    def pcie_arc(self, a: int, b: int) -> int:
        arc = int(self.pcie_arcs(np.array([a]), np.array([b]))[0])
        if arc < 0:
            raise SolverError(f"no PCIe link between {self.snap.node_ids[a]} and "
                              f"{self.snap.node_ids[b]}")
        return arc

    def pcie_arcs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """First PCIe arc ``a[i] -> b[i]`` (lowest arc index), or -1 where there is none
        (or where ``a[i]`` or ``b[i]`` is -1).

        A scan of the PCIe arcs out of each ``a[i]`` (a few per GPU or NIC), in arc order.
        """
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        g = self.pcie
        out = np.full(len(a), -1, dtype=np.int64)
        ask = np.flatnonzero((a >= 0) & (b >= 0))
        pos, owner = g.out_arcs(a[ask])
        hit = np.flatnonzero(g.dst[pos] == b[ask][owner])
        first = hit[run_heads(owner[hit])]                 # each query's first match
        out[ask[owner[first]]] = g.arcs[pos[first]]
        return out

    def edge_arc(self, nic: int) -> int:
        """The arc from ``nic`` to the switch it is cabled to (most capacity first)."""
        if nic not in self._edge:
            arc = int(self.edge_arcs()[nic])
            if arc < 0:
                raise SolverError(f"NIC {self.snap.node_ids[nic]} is not cabled to the fabric")
            self._edge[nic] = arc
        return self._edge[nic]

    def edge_arcs(self) -> np.ndarray:
        """`edge_arc` of every node (`edge_arcs_of`), computed once."""
        if self._edge_table is None:
            out = np.full(self.snap.n_nodes, -1, dtype=np.int64)
            nodes = np.flatnonzero((np.diff(self.net.ptr) > 0) & ~self.is_switch)
            out[nodes] = self.edge_arcs_of(nodes)
            self._edge_table = out
        return self._edge_table

    def edge_arcs_of(self, nodes: np.ndarray) -> np.ndarray:
        """`edge_arc` of each of ``nodes``: its compute-fabric arc of most capacity, of
        equals the one to the far end of lowest structural position (`Snapshot.node_pos`;
        not the first cable in the file, so a dual-homed NIC goes to the same switch
        under any names), then the lowest arc; -1 where it has none, and for switches
        (they are no endpoints, and hold most of the fabric's arcs)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        g = self.net
        out = np.full(len(nodes), -1, dtype=np.int64)
        ask = np.flatnonzero(~self.is_switch[nodes])
        # A node with one such arc (a NIC with one cable: the usual case) takes it.
        count = g.ptr[nodes[ask] + 1] - g.ptr[nodes[ask]]
        one = count == 1
        out[ask[one]] = g.arcs[g.ptr[nodes[ask[one]]]]
        ask = ask[~one]
        pos, owner = g.out_arcs(nodes[ask])
        if pos.size:
            cap = self.snap.arc_cap[g.arcs[pos]]
            best = np.full(len(ask), -np.inf)
            # Each node's arcs are one run of ``pos`` (owners ascend): a max per run.
            heads = np.flatnonzero(run_heads(owner))
            best[owner[heads]] = np.maximum.reduceat(cap, heads)
            hit = np.flatnonzero(cap == best[owner])
            arcs = g.arcs[pos[hit]]
            hit = hit[np.lexsort((arcs, self.snap.node_pos[self.snap.arc_dst[arcs]],
                                  owner[hit]))]
            first = hit[run_heads(owner[hit])]
            out[ask[owner[first]]] = g.arcs[pos[first]]
        return out

    def fabric_dag(self, leaf_a: int, leaf_b: int) -> Route:
        """Adaptive split between two edge switches (cached per class)."""
        key = (leaf_a, leaf_b)
        if key not in self._dag:
            if leaf_a == leaf_b:
                self._dag[key] = _EMPTY
            else:
                dist = self.net.dist_to(leaf_b, through=self.is_switch)
                if dist[leaf_a] < 0:
                    raise SolverError(f"no fabric path from {self.snap.node_ids[leaf_a]} to "
                                      f"{self.snap.node_ids[leaf_b]}")
                self._dag[key] = self._dag_fractions(self.net, leaf_a, leaf_b, dist,
                                                     self.is_switch)
        return self._dag[key]

    def fabric_paths(self, leaf_a: int, leaf_b: int, keys: np.ndarray, dest_ids: np.ndarray,
                     mode: str) -> tuple[np.ndarray, np.ndarray]:
        """One path per flow (``ecmp`` hashes ``keys``; ``static`` uses ``dest_ids``): see
        `routing.paths.fabric_paths`."""
        return route_paths.fabric_paths(self, leaf_a, leaf_b, keys, dest_ids, mode)

    # -------------------------------------------------------------- fabric, batched
    def fabric_hops(self, leaf_a: np.ndarray, leaf_b: np.ndarray) -> np.ndarray:
        """Switch-to-switch hop count of each pair (0 when equal, -1 when unreachable)."""
        leaf_a, leaf_b = np.asarray(leaf_a, np.int64), np.asarray(leaf_b, np.int64)
        out = np.zeros(len(leaf_a), dtype=np.int64)
        diff = np.flatnonzero(leaf_a != leaf_b)
        if diff.size == 0:
            return out
        keys = leaf_a[diff] * self.snap.n_nodes + leaf_b[diff]
        uniq, inverse = np.unique(keys, return_inverse=True)
        ua, ub = uniq // self.snap.n_nodes, uniq % self.snap.n_nodes
        fast = self.fabric_groups().covers(ua, ub)
        hops = np.empty(len(uniq), dtype=np.int64)
        if fast.any():
            hops[fast] = self._fabric.distance(ua[fast], ub[fast])
        for i in np.flatnonzero(~fast).tolist():
            hops[i] = self.net.dist_to(int(ub[i]), through=self.is_switch)[ua[i]]
        out[diff] = hops[inverse.reshape(-1)]
        return out

    def fabric_dags(self, leaf_a: np.ndarray, leaf_b: np.ndarray, *,
                    hops: np.ndarray | None = None, pending: bool = False,
                    split: bool = False) -> RouteBatch | SplitDags:
        """`fabric_dag` of each pair, as one table (``hops``: switch-to-switch hops, as
        `fabric_hops` gives them, which the caller may pass when it has them).
        ``pending``: a `PendingBatch` when the walk made every DAG, for the caller to
        write where they end up (else a table of their own, as without it).
        ``split``: a `routing.middles.SplitDags`, the middles the walk shares kept once
        (its own rows pending as ``pending`` says); its `SplitDags.whole` is the table.

        The DAGs of all pairs are walked together, level by level, with exactly the
        arithmetic of `fabric_dag` (same splits, same order), so the arrays are identical.
        Unusual fabrics (endpoints that are not switches, non-switch nodes cabled to two
        places) fall back to `fabric_dag` pair by pair.
        """
        leaf_a, leaf_b = np.asarray(leaf_a, np.int64), np.asarray(leaf_b, np.int64)
        hops = (self.fabric_hops(leaf_a, leaf_b) if hops is None
                else np.asarray(hops, np.int64))
        if np.any(hops < 0):
            i = int(np.flatnonzero(hops < 0)[0])
            self.fabric_dag(int(leaf_a[i]), int(leaf_b[i]))  # raises naming the pair
        groups = self.fabric_groups()
        differ = leaf_a != leaf_b
        fast = np.flatnonzero(groups.covers(leaf_a, leaf_b) & differ)
        slow = np.flatnonzero(~groups.covers(leaf_a, leaf_b) & differ)
        walked = groups.dags(leaf_a[fast], leaf_b[fast], hops[fast],
                             pending=pending and not slow.size, split=split)
        mid = None
        if split:
            walked, mid = walked.own, walked.middles.scattered(fast, len(leaf_a))
        if not slow.size:    # the usual case: the walked table as it is, no copy
            # Rows stay in walk order, written or pending: only the pointers move.
            own = replace(walked, ptr=_scatter(walked, fast, len(leaf_a)).ptr, hops=hops)
            return own if mid is None else SplitDags(own, mid)
        routes = [self.fabric_dag(int(leaf_a[i]), int(leaf_b[i])) for i in slow.tolist()]
        lengths = np.zeros(len(leaf_a), dtype=np.int64)
        lengths[fast] = walked.lengths
        lengths[slow] = [len(a) for a, _ in routes]
        ptr = _ptr(lengths)
        arcs, weights = np.empty(ptr[-1], dtype=np.int64), np.empty(ptr[-1])
        at = ragged_arange(ptr[fast], walked.lengths)
        arcs[at], weights[at] = walked.arcs, walked.weights
        for i, (a, w) in zip(slow.tolist(), routes, strict=True):
            arcs[ptr[i]:ptr[i + 1]], weights[ptr[i]:ptr[i + 1]] = a, w
        table = RouteBatch(ptr, arcs, weights, hops)
        if mid is None:
            return table
        # The slow pairs' DAGs are whole own rows, crossing no middle.
        head = mid.head.copy()
        head[slow] = lengths[slow]
        return SplitDags(table, Middles(head, mid.of, mid.table))

    def fabric_walks(self, leaf_a: np.ndarray, leaf_b: np.ndarray, keys: np.ndarray,
                     dest_ids: np.ndarray, mode: str, *,
                     hops: np.ndarray | None = None) -> RouteBatch:
        """`fabric_paths` of single flows, as one table: `routing.paths.fabric_walks`."""
        return route_paths.fabric_walks(self, leaf_a, leaf_b, keys, dest_ids, mode, hops=hops)

    def class_walks(self, leaf_a: np.ndarray, leaf_b: np.ndarray, cls: np.ndarray,
                    keys: np.ndarray, dest_ids: np.ndarray, mode: str, *,
                    hops: np.ndarray | None = None) -> RouteBatch:
        """`fabric_walks` of flows given by class: `routing.paths.class_walks`."""
        return route_paths.class_walks(self, leaf_a, leaf_b, cls, keys, dest_ids, mode,
                                       hops=hops)

    def fabric_groups(self) -> _FabricGroups:
        """The fabric's switch groups and next-hop tables, built on first use."""
        if self._fabric is None:
            self._fabric = _FabricGroups(self.snap, self.net, self.is_switch)
        return self._fabric

    def node_domains(self) -> np.ndarray:
        """NVLink domain of every node of the snapshot (-1: none)."""
        if self._nv_started() is not None:
            return self._nv_batch.dom.node_dom
        if self.snap.node_domain is not None:
            return self.snap.node_domain
        return _node_domains(self.snap, self.nvlink)

    # -------------------------------------------------------------- a later snapshot
    def rebased(self, change: SnapshotChange) -> Router:
        """A router for ``change.new`` that keeps what this one (the router of
        ``change.old``) computed and the change leaves valid.

        Breadth-first distances do not depend on capacities, so after a capacity edit
        the subgraphs, distances and fabric groups are kept and only the tables whose
        capacity splits changed are dropped; after a fail or restore the subgraphs lose
        or gain the arcs concerned (`_Subgraph.after`), the fabric groups keep the
        distance rows the change provably leaves alone (`_FabricGroups.rebased`), the
        NVLink templates are kept when no NVLink arc changed, and each rank's way to
        the fabric when no changed link touches it.
        """
        snap = change.new
        nv_changed = change.touches(NVLINK)
        new = copy.copy(self)
        new.snap = snap
        new._edge, new._dag, new._nv = {}, {}, {}
        net_reweighed = change.net_reweighed()
        removed, added = change.removed, change.added
        if change.live:
            fam = snap.arc_family

            def after(g: _Subgraph | None, member: np.ndarray) -> _Subgraph | None:
                return None if g is None else g.after(snap, removed, added[member])

            nv, pcie = fam[added] == NVLINK, fam[added] == PCIE
            new._nvlink = after(self._nvlink, nv)
            new.net = after(self.net, ~nv & ~pcie & snap.compute_links()[added // 2])
            new._pcie = after(self._pcie, pcie)
            new._edge_table = None
        else:
            none = added[:0]
            new._nvlink = None if self._nvlink is None else self._nvlink.after(snap, removed,
                                                                              none)
            new.net = self.net.after(snap, removed, none)
            new._pcie = None if self._pcie is None else self._pcie.after(snap, removed, none)
            if self._edge_table is not None and net_reweighed.size:
                new._edge_table = self._edge_table.copy()   # rows of the reweighed arcs anew
                src = np.unique(snap.arc_src[net_reweighed])
                new._edge_table[src] = new.edge_arcs_of(src)
        tables = None if nv_changed else self._nv_started()
        new._nv_batch = None if tables is None else tables.rebased(snap)
        new._nv_pending = None
        if self._fabric is not None:
            new._fabric = self._fabric.rebased(snap, new.net, new.is_switch, change,
                                               net_reweighed)
        new._ranks, new._access_legs = self._kept_rank_links(change, nv_changed)
        new._legs_pending = None
        return new

    def _kept_rank_links(self, change: SnapshotChange, nv_changed: bool
                         ) -> tuple[RankLinks | None, RouteBatch | None]:
        """This router's rank links and access legs when no changed arc can alter them:
        none ends at a rank's GPU, NIC or relay, and no NVLink arc changed if some rank
        relays through a sibling (PXN).  Else None (computed anew when asked)."""
        rl, legs = self._ranks, self._legs_started()
        if rl is None or not change.same_ranks:
            return None, None
        via = change.new.gpu_nic_via
        if nv_changed and np.any(via >= 0):
            return None, None
        access = np.zeros(change.new.n_nodes, dtype=bool)
        access[rl.gpu] = True
        access[rl.nic[rl.nic >= 0]] = True
        access[via[via >= 0]] = True
        if access[change.nodes_touched()].any():
            return None, None
        return rl, legs

