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
is reused by every flow of that (leaf, leaf) class.  NVLink traffic is sprayed over all
shortest NVLink paths in proportion to capacity (a GPU uses all its links at once).

A route is a pair of arrays ``(arcs, weights)``: the fraction of the flow's rate that
crosses each directed arc.

Besides the per-pair methods (`Router.nvlink_route`, `Router.fabric_dag`,
`Router.fabric_paths`) the router answers whole batches at once, which is what the
collective planners use: `Router.nvlink_routes`, `Router.fabric_dags` and
`Router.fabric_walks` return `RouteBatch` tables built with array code, identical arc for
arc and bit for bit to the per-pair answers, so a 16k-GPU ring or a million-pair
all-to-all needs no Python loop per transfer.  Two structural
shortcuts make that possible:

* NVLink domains built alike (same links in the same order with the same capacities,
  e.g. every HGX board of a cluster) share one set of route *templates*, computed on the
  first such domain and translated to the others by arc position.
* Edge switches with the same switch neighbours (the leaves of one pod) have the same
  distance to every other switch, so one breadth-first search serves the whole group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.snapshot import NVLINK, PCIE, SWITCH_KINDS, Snapshot, _components

Route = tuple[np.ndarray, np.ndarray]
_EMPTY: Route = (np.zeros(0, np.int64), np.zeros(0))
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _hash(keys: np.ndarray, salt: int) -> np.ndarray:
    """SplitMix64 of ``keys`` and ``salt``: the seeded, deterministic ECMP hash."""
    with np.errstate(over="ignore"):
        z = keys.astype(np.uint64) * _MIX + np.uint64(salt) * np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


# ----------------------------------------------------------------- array helpers
def ragged_arange(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for each ``(s, n)``, without a Python loop.

    >>> ragged_arange(np.array([10, 0]), np.array([2, 3])).tolist()
    [10, 11, 0, 1, 2]
    """
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if not np.all(lengths > 0):
        starts, lengths = starts[lengths > 0], lengths[lengths > 0]
    if lengths.size == 0:
        return np.zeros(0, dtype=np.int64)
    # Ones with a jump at each segment's head, summed in place: one array of the output's
    # size (these can hold tens of millions of pairs).
    out = np.ones(int(lengths.sum()), dtype=np.int64)
    heads = np.cumsum(lengths[:-1])
    out[0] = starts[0]
    out[heads] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    return np.cumsum(out, out=out)


def segment_sums(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``values[s:s + n].sum()`` for each segment, bit for bit.

    ``np.add.reduceat`` adds in another order than ``ndarray.sum`` (which sums pairwise), so
    its results differ in the last bits; summing rows of equal-length segments with
    ``sum(axis=1)`` reproduces ``ndarray.sum`` exactly, which keeps batch routes identical
    to the per-pair ones.
    """
    out = np.zeros(len(starts))
    for n in np.unique(lengths).tolist():
        if n:
            sel = np.flatnonzero(lengths == n)
            out[sel] = values[starts[sel, None] + np.arange(n)].sum(axis=1)
    return out


def first_occurrence(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``keys`` in order of first appearance, and each key's position among them."""
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return uniq[order], rank[inverse.reshape(-1)]


def unique_inverse(keys: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for keys in ``[0, space)``; by marking a
    table instead of sorting when the space is small next to the number of keys."""
    keys = np.asarray(keys, dtype=np.int64).reshape(-1)
    if space > max(1 << 16, 4 * len(keys)) or space > 1 << 25:
        uniq, inverse = np.unique(keys, return_inverse=True)
        return uniq, inverse.reshape(-1)
    seen = np.zeros(space, dtype=bool)
    seen[keys] = True
    uniq = np.flatnonzero(seen)
    lookup = np.zeros(space, dtype=np.int64)
    lookup[uniq] = np.arange(len(uniq))
    return uniq, lookup[keys]


@dataclass(frozen=True, eq=False)
class RankLinks:
    """What each rank (index into ``snap.gpus``) crosses to leave its NVLink domain.

    ``-1`` marks a missing NIC or arc; ``ok`` is True where every piece exists.
    ``leaf_code`` numbers the distinct edge switches of all ranks 0..L-1 (``leaves``).
    """

    gpu: np.ndarray
    nic: np.ndarray
    pcie_up: np.ndarray     # GPU -> NIC
    up: np.ndarray          # NIC -> edge switch
    pcie_down: np.ndarray   # NIC -> GPU
    leaf: np.ndarray
    ok: np.ndarray
    leaves: np.ndarray
    leaf_code: np.ndarray


@dataclass(frozen=True, eq=False)
class RouteBatch:
    """Routes of many transfers as one table: route ``i`` is ``arcs[ptr[i]:ptr[i + 1]]``
    with ``weights`` alike; ``hops[i]`` is its hop count (the meaning depends on the
    method that made it)."""

    ptr: np.ndarray
    arcs: np.ndarray
    weights: np.ndarray
    hops: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.ptr)

    def route(self, i: int) -> Route:
        return self.arcs[self.ptr[i]:self.ptr[i + 1]], self.weights[self.ptr[i]:self.ptr[i + 1]]

    def take(self, index: np.ndarray) -> RouteBatch:
        """The routes ``index`` (repeats allowed), in that order."""
        index = np.asarray(index, dtype=np.int64)
        lengths = self.lengths[index]
        pos = ragged_arange(self.ptr[index], lengths)
        return RouteBatch(_ptr(lengths), self.arcs[pos], self.weights[pos], self.hops[index])


def _ptr(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def _batch(routes: list[Route], hops: list[int]) -> RouteBatch:
    lengths = np.array([len(a) for a, _ in routes], dtype=np.int64)
    arcs = np.concatenate([a for a, _ in routes]) if routes else np.zeros(0, np.int64)
    weights = np.concatenate([w for _, w in routes]) if routes else np.zeros(0)
    return RouteBatch(_ptr(lengths), arcs.astype(np.int64), weights.astype(float),
                      np.asarray(hops, dtype=np.int64))


# ----------------------------------------------------------------- subgraphs
class _Subgraph:
    """CSR of a subset of arcs, with cached BFS distances to a target node."""

    def __init__(self, snap: Snapshot, arc_mask: np.ndarray, by_src: np.ndarray | None = None):
        self.snap = snap
        if by_src is None:  # every arc, sorted by source node (stable: arc order within)
            by_src = np.argsort(snap.arc_src, kind="stable")
        self.arcs = by_src[arc_mask[by_src]]           # arcs sorted by source node
        counts = np.bincount(snap.arc_src[self.arcs], minlength=snap.n_nodes)
        self.ptr = np.zeros(snap.n_nodes + 1, dtype=np.int64)
        np.cumsum(counts, out=self.ptr[1:])
        self.dst = snap.arc_dst[self.arcs]
        # Links are full duplex and masks are per link, so the arcs into a node are the
        # reverses of the arcs out of it: a BFS towards a target can walk out-arcs.
        self._symmetric = bool(np.array_equal(arc_mask[0::2], arc_mask[1::2]))
        self._dist: dict[int, np.ndarray] = {}

    def neighbours(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions (into ``arcs``) of the arcs out of ``nodes``, and each one's node."""
        nodes = np.asarray(nodes, dtype=np.int64)
        lengths = self.ptr[nodes + 1] - self.ptr[nodes]
        return ragged_arange(self.ptr[nodes], lengths), np.repeat(nodes, lengths)

    def dist_to(self, target: int, through: np.ndarray | None = None) -> np.ndarray:
        """Hop distance of every node to ``target`` (-1 unreachable).  With ``through``
        (bool per node), paths may only pass through nodes marked True: the others get a
        distance (they can be sources) but are not forwarded through.  The cache is per
        target, so one subgraph always uses the same ``through``."""
        d = self._dist.get(target)
        if d is not None:
            return d
        s = self.snap
        d = np.full(s.n_nodes, -1, dtype=np.int32)
        d[target] = 0
        frontier = np.array([target])
        level = 0
        while frontier.size:
            level += 1
            if self._symmetric:
                cand = self.dst[self.neighbours(frontier)[0]]
                new = np.unique(cand[d[cand] < 0])
            else:
                src, dst = s.arc_src[self.arcs], s.arc_dst[self.arcs]
                new = np.unique(src[np.isin(dst, frontier) & (d[src] < 0)])
            d[new] = level
            # Only forwarding nodes extend paths further.
            frontier = new if through is None else new[through[new]]
        self._dist[target] = d
        return d

    def next_arcs(self, node: int, dist: np.ndarray) -> np.ndarray:
        """Arcs out of ``node`` one step closer along ``dist``."""
        out = self.arcs[self.ptr[node]:self.ptr[node + 1]]
        return out[dist[self.snap.arc_dst[out]] == dist[node] - 1]


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
        by_src = np.argsort(s.arc_src, kind="stable")   # shared by both subgraphs
        self.nvlink = _Subgraph(s, s.arc_family == NVLINK, by_src)
        # Planes are per link: test one arc of each pair.
        planes = s.arc_plane[0::2]
        if len(set(planes)) <= 1:  # the common case: one plane (a set costs less)
            link_compute = np.full(len(planes), bool(planes) and planes[0] == "compute")
        else:
            link_compute = np.fromiter(map("compute".__eq__, planes), bool, len(planes))
        compute = np.repeat(link_compute, 2)
        net = (s.arc_family != NVLINK) & (s.arc_family != PCIE) & compute
        self.net = _Subgraph(s, net, by_src)
        self.is_switch = np.fromiter(map(SWITCH_KINDS.__contains__, s.node_kind), bool,
                                     s.n_nodes)
        self._edge: dict[int, int] = {}   # NIC -> its first compute switch arc
        self._dag: dict[tuple[int, int], Route] = {}
        self._nv: dict[tuple[int, int], Route] = {}
        self._pcie_table: tuple[np.ndarray, np.ndarray] | None = None
        self._edge_table: np.ndarray | None = None
        self._domains: _Domains | None = None
        self._templates: dict[int, tuple[np.ndarray, np.ndarray, int]] = {}
        self._fabric: _FabricGroups | None = None
        self._ranks: RankLinks | None = None

    # -------------------------------------------------------------- NVLink
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

    def _dag_fractions(self, g: _Subgraph, a: int, b: int, dist: np.ndarray) -> Route:
        cap = self.snap.arc_cap
        frac = {a: 1.0}
        arcs, weights = [], []
        for _ in range(int(dist[a])):
            nxt: dict[int, float] = {}
            for node, f in frac.items():
                out = g.next_arcs(node, dist)
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

        Routes come from per-template caches: domains built alike share them (see the
        module docstring), so only a few routes per design are ever searched.
        """
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        dom = self._nv_domains()
        d = dom.node_dom[a]
        apart = (d < 0) | (dom.node_dom[b] != d)
        if np.any(apart):
            i = int(np.flatnonzero(apart)[0])
            self.nvlink_route(int(a[i]), int(b[i]))  # raises with the culprit's names
            raise SolverError(f"{self.snap.node_ids[a[i]]} and {self.snap.node_ids[b[i]]} "
                              "are not in one NVLink domain")
        k = dom.max_nodes
        keys = (dom.dom_class[d] * k + dom.rel[a]) * k + dom.rel[b]
        keys[a == b] = -1           # to itself: the empty route (as `nvlink_route`)
        uniq, inverse = unique_inverse(keys + 1, int(dom.class_rep.size) * k * k + 1)
        tpl = [self._template(int(key) - 1, dom) for key in uniq.tolist()]
        out = _batch([(p, w) for p, w, _ in tpl], [h for _, _, h in tpl]).take(inverse)
        # Template arc positions are relative to a domain's arc list: shift to domain d.
        base = np.repeat(dom.arc_ptr[d], out.lengths)
        return RouteBatch(out.ptr, dom.arcs[base + out.arcs], out.weights, out.hops)

    def _nv_domains(self) -> _Domains:
        if self._domains is None:
            self._domains = _Domains(self.snap)
        return self._domains

    def _template(self, key: int, dom: _Domains) -> tuple[np.ndarray, np.ndarray, int]:
        """Route of template ``key`` on its class's first domain, as arc positions."""
        if key < 0:
            return np.zeros(0, np.int64), np.zeros(0), 0
        if key not in self._templates:
            k = dom.max_nodes
            cls, rel_a, rel_b = key // (k * k), key // k % k, key % k
            rep = int(dom.class_rep[cls])
            a = int(dom.nodes[dom.node_ptr[rep] + rel_a])
            b = int(dom.nodes[dom.node_ptr[rep] + rel_b])
            arcs, w = self.nvlink_route(a, b)
            span = dom.arcs[dom.arc_ptr[rep]:dom.arc_ptr[rep + 1]]
            hops = int(self.nvlink.dist_to(b)[a])
            self._templates[key] = (np.searchsorted(span, arcs), w, hops)
        return self._templates[key]

    # -------------------------------------------------------------- fabric
    def rank_links(self) -> RankLinks:
        """Per-rank NIC, PCIe and edge arcs (see `RankLinks`), computed once."""
        if self._ranks is None:
            s = self.snap
            gpu = s.gpus.astype(np.int64)
            nic = s.gpu_nic.astype(np.int64)
            has = nic >= 0
            up = np.full(len(gpu), -1, dtype=np.int64)
            up[has] = self.edge_arcs()[nic[has]]
            pcie_up = np.where(has, self.pcie_arcs(gpu, nic), -1)
            pcie_down = np.where(has, self.pcie_arcs(nic, gpu), -1)
            leaf = np.where(up >= 0, s.arc_dst[np.maximum(up, 0)] if s.n_arcs else -1, -1)
            ok = has & (up >= 0) & (pcie_up >= 0) & (pcie_down >= 0)
            leaves, code = np.unique(leaf, return_inverse=True)
            self._ranks = RankLinks(gpu, nic, pcie_up, up, pcie_down, leaf.astype(np.int64),
                                    ok, leaves, code.reshape(-1))
        return self._ranks

    def pcie_arc(self, a: int, b: int) -> int:
        arc = int(self.pcie_arcs(np.array([a]), np.array([b]))[0])
        if arc < 0:
            raise SolverError(f"no PCIe link between {self.snap.node_ids[a]} and "
                              f"{self.snap.node_ids[b]}")
        return arc

    def pcie_arcs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """First PCIe arc ``a[i] -> b[i]`` (lowest arc index), or -1 where there is none."""
        if self._pcie_table is None:
            s = self.snap
            arcs = np.flatnonzero(s.arc_family == PCIE)
            keys = s.arc_src[arcs].astype(np.int64) * s.n_nodes + s.arc_dst[arcs]
            uniq, first = np.unique(keys, return_index=True)  # first = lowest arc index
            self._pcie_table = (uniq, arcs[first])
        uniq, first_arc = self._pcie_table
        keys = np.asarray(a, dtype=np.int64) * self.snap.n_nodes + np.asarray(b, np.int64)
        at = np.minimum(np.searchsorted(uniq, keys), max(len(uniq) - 1, 0))
        found = (uniq[at] == keys) if len(uniq) else np.zeros(len(keys), bool)
        return np.where(found, first_arc[at] if len(uniq) else -1, -1)

    def edge_arc(self, nic: int) -> int:
        """The arc from ``nic`` to the switch it is cabled to (most capacity first)."""
        if nic not in self._edge:
            arc = int(self.edge_arcs()[nic])
            if arc < 0:
                raise SolverError(f"NIC {self.snap.node_ids[nic]} is not cabled to the fabric")
            self._edge[nic] = arc
        return self._edge[nic]

    def edge_arcs(self) -> np.ndarray:
        """`edge_arc` of every node (-1 where it has no compute-fabric arc)."""
        if self._edge_table is None:
            s, g = self.snap, self.net
            out = np.full(s.n_nodes, -1, dtype=np.int64)
            if g.arcs.size:
                src = s.arc_src[g.arcs]
                cap = s.arc_cap[g.arcs]
                nodes = np.flatnonzero(np.diff(g.ptr))
                best = np.full(s.n_nodes, -np.inf)
                best[nodes] = np.maximum.reduceat(cap, g.ptr[nodes])  # max: order-free
                # First arc (in CSR order, as np.argmax picks) reaching its node's maximum.
                hit = np.flatnonzero(cap == best[src])
                nodes, first = np.unique(src[hit], return_index=True)
                out[nodes] = g.arcs[hit[first]]
            self._edge_table = out
        return self._edge_table

    def _reverse(self, arc: int) -> int:
        return arc ^ 1  # arcs come in (a->b, b->a) pairs

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
                self._dag[key] = self._dag_fractions(self.net, leaf_a, leaf_b, dist)
        return self._dag[key]

    def fabric_paths(self, leaf_a: int, leaf_b: int, keys: np.ndarray, dest_ids: np.ndarray,
                     mode: str) -> tuple[np.ndarray, np.ndarray]:
        """One path per flow (``ecmp`` hashes ``keys``; ``static`` uses ``dest_ids``).

        Returns ``(flow_index, arc)`` pairs, every weight being 1.
        """
        m = len(keys)
        if leaf_a == leaf_b or m == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        dist = self.net.dist_to(leaf_b, through=self.is_switch)
        if dist[leaf_a] < 0:
            raise SolverError(f"no fabric path from {self.snap.node_ids[leaf_a]} to "
                              f"{self.snap.node_ids[leaf_b]}")
        cur = np.full(m, leaf_a)
        flows, arcs = [], []
        idx = np.arange(m)
        # Static (d-mod-k): each tier uses the next digit of the destination in the
        # radix of its fan-out, so destinations spread over every core, not k of them.
        q = np.asarray(dest_ids, dtype=np.int64).copy()
        for hop in range(int(dist[leaf_a])):
            step = np.empty(m, dtype=np.int64)
            for node in np.unique(cur).tolist():
                sel = cur == node
                out = self.net.next_arcs(node, dist)
                if mode == "ecmp":
                    pick = _hash(keys[sel], self.seed * 1_000_003 + hop) % np.uint64(out.size)
                else:  # static: destination-based, the same for every source
                    pick = q[sel] % out.size
                    q[sel] //= out.size
                step[sel] = out[pick.astype(np.int64)]
            flows.append(idx)
            arcs.append(step)
            cur = self.snap.arc_dst[step]
        return np.concatenate(flows), np.concatenate(arcs)

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
        fast = self._fabric_groups().covers(ua, ub)
        hops = np.empty(len(uniq), dtype=np.int64)
        if fast.any():
            hops[fast] = self._fabric.distance(ua[fast], ub[fast])
        for i in np.flatnonzero(~fast).tolist():
            hops[i] = self.net.dist_to(int(ub[i]), through=self.is_switch)[ua[i]]
        out[diff] = hops[inverse.reshape(-1)]
        return out

    def fabric_dags(self, leaf_a: np.ndarray, leaf_b: np.ndarray) -> RouteBatch:
        """`fabric_dag` of each pair, as one table (``hops``: switch-to-switch hops).

        The DAGs of all pairs are walked together, level by level, with exactly the
        arithmetic of `fabric_dag` (same splits, same order), so the arrays are identical.
        Unusual fabrics (endpoints that are not switches, non-switch nodes cabled to two
        places) fall back to `fabric_dag` pair by pair.
        """
        leaf_a, leaf_b = np.asarray(leaf_a, np.int64), np.asarray(leaf_b, np.int64)
        hops = self.fabric_hops(leaf_a, leaf_b)
        if np.any(hops < 0):
            i = int(np.flatnonzero(hops < 0)[0])
            self.fabric_dag(int(leaf_a[i]), int(leaf_b[i]))  # raises naming the pair
        groups = self._fabric_groups()
        differ = leaf_a != leaf_b
        fast = np.flatnonzero(groups.covers(leaf_a, leaf_b) & differ)
        slow = np.flatnonzero(~groups.covers(leaf_a, leaf_b) & differ)
        walked = groups.dags(leaf_a[fast], leaf_b[fast])
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
        return RouteBatch(ptr, arcs, weights, hops)

    def fabric_walks(self, leaf_a: np.ndarray, leaf_b: np.ndarray, keys: np.ndarray,
                     dest_ids: np.ndarray, mode: str, *,
                     hops: np.ndarray | None = None) -> RouteBatch:
        """`fabric_paths` of single flows ``(leaf_a[i], leaf_b[i], keys[i], dest_ids[i])``,
        as one table of paths (weights 1; ``hops``: switch-to-switch hops, which the
        caller may pass when it has them)."""
        leaf_a, leaf_b = np.asarray(leaf_a, np.int64), np.asarray(leaf_b, np.int64)
        keys, dest_ids = np.asarray(keys, np.int64), np.asarray(dest_ids, np.int64)
        if hops is None:
            hops = self.fabric_hops(leaf_a, leaf_b)
        if np.any(hops < 0):
            i = int(np.flatnonzero(hops < 0)[0])
            self.fabric_paths(int(leaf_a[i]), int(leaf_b[i]), keys[i:i + 1],
                              dest_ids[i:i + 1], mode)  # raises naming the pair
        groups = self._fabric_groups()
        fast = groups.covers(leaf_a, leaf_b)
        arcs = np.zeros((len(leaf_a), int(hops.max(initial=0))), dtype=np.int64)
        if fast.any():
            sel = np.flatnonzero(fast)
            arcs[sel] = groups.walks(leaf_a[sel], leaf_b[sel], keys[sel], dest_ids[sel],
                                     hops[sel], arcs.shape[1], mode, self.seed)
        # Elsewhere walk class by class with `fabric_paths` (all flows of a class at once).
        slow = np.flatnonzero(~fast & (leaf_a != leaf_b))
        if slow.size:
            cls = leaf_a[slow] * self.snap.n_nodes + leaf_b[slow]
            for key in np.unique(cls).tolist():
                rows = slow[cls == key]
                _, path = self.fabric_paths(key // self.snap.n_nodes, key % self.snap.n_nodes,
                                            keys[rows], dest_ids[rows], mode)
                arcs[rows, :hops[rows[0]]] = path.reshape(-1, len(rows)).T
        mask = np.arange(arcs.shape[1]) < hops[:, None]
        return RouteBatch(_ptr(hops), arcs[mask], np.ones(int(hops.sum())), hops)

    def _fabric_groups(self) -> _FabricGroups:
        if self._fabric is None:
            self._fabric = _FabricGroups(self)
        return self._fabric


# ----------------------------------------------------------------- NVLink domains
class _Domains:
    """NVLink domains as arc lists, and classes of domains built alike.

    Each domain's NVLink arcs are listed in arc order and its nodes numbered 0, 1, ... in
    node order (``rel``).  Two domains whose lists match position by position (same
    relative ends, bitwise-equal capacities) are isomorphic by a map that keeps arc order,
    so every route of one, found by the same arithmetic, is the other's with arcs
    translated by position.
    """

    def __init__(self, snap: Snapshot):
        nv_all = np.flatnonzero(snap.arc_family == NVLINK)
        comp = _components(snap.n_nodes, snap.arc_src[nv_all], snap.arc_dst[nv_all])
        comp_dom = np.full(snap.n_nodes, -1, dtype=np.int64)
        comp_dom[comp[snap.gpus]] = snap.gpu_domain
        self.node_dom = comp_dom[comp]
        n_dom = snap.n_domains
        arc_dom = self.node_dom[snap.arc_src[nv_all]]
        keep = arc_dom >= 0
        order = np.argsort(arc_dom[keep], kind="stable")
        self.arcs = nv_all[keep][order]                  # grouped by domain, arc order within
        adom = arc_dom[keep][order]
        self.arc_ptr = np.searchsorted(adom, np.arange(n_dom + 1))
        # Relative node numbers: rank inside the domain by node index (any fixed numbering
        # works: equal signatures below prove the map between two domains an isomorphism).
        in_dom = np.flatnonzero(self.node_dom >= 0)
        self.nodes = in_dom[np.argsort(self.node_dom[in_dom], kind="stable")]
        ndom = self.node_dom[self.nodes]
        self.node_ptr = np.searchsorted(ndom, np.arange(n_dom + 1))
        self.rel = np.zeros(snap.n_nodes, dtype=np.int64)
        self.rel[self.nodes] = np.arange(len(self.nodes)) - self.node_ptr[ndom]
        n_arcs, n_nodes = np.diff(self.arc_ptr), np.diff(self.node_ptr)
        self.max_nodes = int(n_nodes.max(initial=0)) + 1
        # Classes: domains with equal (arc count, node count, relative ends, capacities).
        self.dom_class = np.zeros(n_dom, dtype=np.int64)
        reps = []
        shape_key = n_arcs * (self.max_nodes + 1) + n_nodes
        for shape in np.unique(shape_key).tolist():
            doms = np.flatnonzero(shape_key == shape)
            m = int(n_arcs[doms[0]])
            at = self.arc_ptr[doms][:, None] + np.arange(m)
            arcs = self.arcs[at]
            rows = np.concatenate([self.rel[snap.arc_src[arcs]], self.rel[snap.arc_dst[arcs]],
                                   snap.arc_cap[arcs].view(np.int64)], axis=1)
            _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
            self.dom_class[doms] = len(reps) + inverse.reshape(-1)
            reps.extend(doms[first].tolist())
        self.class_rep = np.array(reps, dtype=np.int64)


# ----------------------------------------------------------------- fabric groups
class _FabricGroups:
    """Distances to target switches, one breadth-first search (over switches only) per
    group of targets with the same switch neighbours, and batched DAG walks on them.

    Exact only where non-switch nodes cannot carry transit traffic: each is cabled to one
    neighbour at most (then a shortest path never enters it), and both ends of a pair are
    switches.  `covers` says where that holds; elsewhere the router walks pair by pair.
    """

    def __init__(self, router: Router):
        self.router = router
        s, g = router.snap, router.net
        sw = router.is_switch
        src = s.arc_src[g.arcs]
        # Non-switch nodes with two distinct neighbours could be transit nodes.
        ns = ~sw[src]
        pairs = np.unique(src[ns].astype(np.int64) * s.n_nodes + g.dst[ns])
        self.ok = bool(np.all(np.diff(pairs // s.n_nodes) != 0)) if pairs.size else True
        # Switches with fabric arcs (not NVSwitches) numbered 0..S-1, and the CSR of the
        # arcs between them (in that numbering; the net CSR is sorted by source node, so
        # this one is too).
        self.switches = np.flatnonzero(sw & (np.diff(g.ptr) > 0))
        self.index = np.full(s.n_nodes, -1, dtype=np.int64)
        self.index[self.switches] = np.arange(len(self.switches))
        self.switch_arc = sw[src] & sw[g.dst]
        self.s_src = self.index[src[self.switch_arc]]
        self.s_dst = self.index[g.dst[self.switch_arc]]
        self.s_arc = g.arcs[self.switch_arc]
        self.s_ptr = np.searchsorted(self.s_src, np.arange(len(self.switches) + 1))
        self._group: dict[int, int] = {}          # target switch -> group
        self._group_key: dict[bytes, int] = {}    # switch neighbours -> group
        self._rows: list[np.ndarray] = []         # per group: distance of every switch
        self._table: np.ndarray | None = None

    def covers(self, leaf_a: np.ndarray, leaf_b: np.ndarray) -> np.ndarray:
        sw = self.router.is_switch
        if not self.ok:
            return np.zeros(len(leaf_a), dtype=bool)
        return sw[leaf_a] & sw[leaf_b]

    # ---- distances
    def groups_of(self, targets: np.ndarray) -> np.ndarray:
        """Group of each target switch (computing the group's distances when new)."""
        uniq, inverse = unique_inverse(targets, self.router.snap.n_nodes)
        new = [t for t in uniq.tolist() if t not in self._group]
        if new:
            g, n = self.router.net, self.router.snap.n_nodes
            pos, owner = g.neighbours(np.array(new, dtype=np.int64))
            keep = self.switch_arc[pos]
            pairs = np.unique(owner[keep] * n + g.dst[pos][keep])  # by target, then node
            owner, nbr = pairs // n, self.index[pairs % n]
            lo = np.searchsorted(owner, new)
            hi = np.searchsorted(owner, new, side="right")
            for t, a, b in zip(new, lo.tolist(), hi.tolist(), strict=True):
                key = nbr[a:b].tobytes()
                grp = self._group_key.get(key)
                if grp is None:
                    grp = self._group_key[key] = len(self._rows)
                    self._rows.append(self._bfs(nbr[a:b]))
                    self._table = None
                self._group[t] = grp
        return np.array([self._group[t] for t in uniq.tolist()], dtype=np.int64)[inverse]

    def _bfs(self, first: np.ndarray) -> np.ndarray:
        """Distances (over switches) to a target whose switch neighbours are ``first``.

        A switch other than the target is as far from it as from the nearest of its
        switch neighbours plus one, so every target with these neighbours shares the
        result (its own entry is overridden to 0 where it matters)."""
        d = np.full(len(self.switches), -1, dtype=np.int32)
        d[first] = 1
        frontier, level = first, 1
        while frontier.size:
            level += 1
            lengths = self.s_ptr[frontier + 1] - self.s_ptr[frontier]
            cand = self.s_dst[ragged_arange(self.s_ptr[frontier], lengths)]
            frontier = np.unique(cand[d[cand] < 0])
            d[frontier] = level
        return d

    def table(self) -> np.ndarray:
        """Group x switch distance matrix."""
        if self._table is None:
            self._table = np.stack(self._rows) if self._rows else np.zeros((0, 0), np.int32)
        return self._table

    def node_dist(self, grp: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Distance of ``nodes[i]`` in group ``grp[i]``'s table (-1 for non-switches)."""
        at = self.index[nodes]
        out = np.full(len(nodes), -1, dtype=np.int64)
        ok = at >= 0
        out[ok] = self.table()[grp[ok], at[ok]]
        return out

    def distance(self, leaf_a: np.ndarray, leaf_b: np.ndarray) -> np.ndarray:
        out = self.node_dist(self.groups_of(leaf_b), leaf_a)
        out[leaf_a == leaf_b] = 0
        return out

    # ---- next hops
    def downhill(self, grp: np.ndarray, node: np.ndarray) -> RouteBatch:
        """Next hops of switch ``node[i]`` (switch number) towards group ``grp[i]``: its
        arcs one step closer to the group's targets, in arc order (as
        `_Subgraph.next_arcs`), weighted by the split of `Router._dag_fractions`."""
        dist = self.table()
        lengths = self.s_ptr[node + 1] - self.s_ptr[node]
        pos = ragged_arange(self.s_ptr[node], lengths)
        owner = np.repeat(np.arange(len(node)), lengths)
        g = grp[owner]
        keep = dist[g, self.s_dst[pos]] == dist[g, node[owner]] - 1
        return self._split(self.s_arc[pos[keep]],
                           np.bincount(owner[keep], minlength=len(node)))

    def _split(self, arcs: np.ndarray, lengths: np.ndarray) -> RouteBatch:
        """Rows of next-hop arcs, each split in proportion to capacity."""
        ptr = _ptr(lengths)
        cap = self.router.snap.arc_cap[arcs]
        ratio = cap / np.repeat(segment_sums(cap, ptr[:-1], lengths), lengths)
        return RouteBatch(ptr, arcs, ratio, lengths)

    def _next(self, nodes: np.ndarray, grp: np.ndarray, target: np.ndarray,
              dist: np.ndarray) -> tuple[np.ndarray, RouteBatch]:
        """Next-hop arcs of each ``nodes[i]`` towards ``target[i]`` (in group ``grp[i]``,
        at distance ``dist[i] >= 1``), with the adaptive split of `Router._dag_fractions`
        as weights.

        Returns ``(row, table)``: input ``i`` has the next hops ``table.route(row[i])``.
        """
        s = self.router.snap
        n_sw = len(self.switches)
        # Before the last hop the next arcs depend on the node and the target's group
        # (`downhill`); at the last hop they are the node's arcs into the target.
        last = dist == 1
        width = n_sw + len(self._rows)
        ident = np.where(last, self.index[target], n_sw + grp)
        uniq, row = unique_inverse(self.index[nodes] * width + ident, n_sw * width)
        node, ident = uniq // width, uniq % width
        inner = ident >= n_sw
        parts = self.downhill(ident[inner] - n_sw, node[inner])
        # Last hop: arcs from the node into the target, among its switch arcs.
        end_node, end_tgt = node[~inner], ident[~inner]
        lengths = self.s_ptr[end_node + 1] - self.s_ptr[end_node]
        pos = ragged_arange(self.s_ptr[end_node], lengths)
        hit = self.s_dst[pos] == np.repeat(end_tgt, lengths)
        owner = np.repeat(np.arange(len(end_node)), lengths)[hit]
        ends = self._split(self.s_arc[pos[hit]], np.bincount(owner, minlength=len(end_node)))
        # One table: the inner rows first, then the last-hop rows.
        table = RouteBatch(np.concatenate([parts.ptr, parts.ptr[-1] + ends.ptr[1:]]),
                           np.concatenate([parts.arcs, ends.arcs]),
                           np.concatenate([parts.weights, ends.weights]),
                           np.concatenate([parts.lengths, ends.lengths]))
        where = np.empty(len(uniq), dtype=np.int64)
        where[np.flatnonzero(inner)] = np.arange(int(inner.sum()))
        where[np.flatnonzero(~inner)] = int(inner.sum()) + np.arange(int((~inner).sum()))
        if np.any(table.hops == 0):
            bad = int(self.switches[node[np.flatnonzero(table.hops[where] == 0)[0]]])
            raise SolverError(f"routing dead end at {s.node_ids[bad]}")
        return where[row], table

    # ---- adaptive DAGs
    def dags(self, leaf_a: np.ndarray, leaf_b: np.ndarray) -> RouteBatch:
        """Adaptive DAGs of pairs of distinct switches, walked together level by level.

        Per pair this is `Router._dag_fractions`: the nodes of a level in order of first
        arrival, each split over its next hops by capacity, arrivals summed in order."""
        s = self.router.snap
        n = len(leaf_a)
        grp = self.groups_of(leaf_b)
        hops = self.distance(leaf_a, leaf_b)
        cls = np.arange(n, dtype=np.int64)
        node, frac = leaf_a.copy(), np.ones(n)
        out_cls, out_arc, out_w = [], [], []
        level = 0
        while cls.size:
            row, table = self._next(node, grp[cls], leaf_b[cls], hops[cls] - level)
            step = table.take(row)
            arcs, ratio, lengths = step.arcs, step.weights, step.lengths
            share = ratio * np.repeat(frac, lengths)
            row_cls = np.repeat(cls, lengths)
            out_cls.append(row_cls)
            out_arc.append(arcs)
            out_w.append(share)
            # Next level: arrival nodes per pair in first-arrival order, shares summed in
            # arrival order (np.bincount adds sequentially, like the dict of the original).
            uniq, at = first_occurrence(row_cls * s.n_nodes + s.arc_dst[arcs])
            frac = np.bincount(at, weights=share, minlength=len(uniq))
            cls, node = uniq // s.n_nodes, uniq % s.n_nodes
            level += 1
            going = hops[cls] > level
            cls, node, frac = cls[going], node[going], frac[going]
        all_cls = np.concatenate(out_cls) if out_cls else np.zeros(0, np.int64)
        order = np.argsort(all_cls, kind="stable")   # per pair, levels in order
        arcs = np.concatenate(out_arc)[order] if out_arc else np.zeros(0, np.int64)
        weights = np.concatenate(out_w)[order] if out_w else np.zeros(0)
        return RouteBatch(_ptr(np.bincount(all_cls, minlength=n)), arcs.astype(np.int64),
                          weights, hops)

    # ---- single-path walks (ecmp, static)
    def walks(self, leaf_a: np.ndarray, leaf_b: np.ndarray, keys: np.ndarray,
              dest_ids: np.ndarray, hops: np.ndarray, width: int, mode: str,
              seed: int) -> np.ndarray:
        """Per flow, the arcs of `Router.fabric_paths` (hop ``h`` in column ``h``)."""
        s = self.router.snap
        out = np.zeros((len(leaf_a), width), dtype=np.int64)
        grp = self.groups_of(leaf_b) if len(leaf_b) else np.zeros(0, np.int64)
        live = np.flatnonzero(hops > 0)
        cur = leaf_a[live]
        q = np.asarray(dest_ids, dtype=np.int64)[live]  # static: one digit per tier
        for hop in range(width):
            dist = hops[live] - hop
            row, table = self._next(cur, grp[live], leaf_b[live], dist)
            lengths = table.lengths[row]
            if mode == "ecmp":
                pick = _hash(keys[live], seed * 1_000_003 + hop) % lengths.astype(np.uint64)
            else:  # static: destination-based, the same for every source
                pick = q % lengths
                q = q // lengths
            step = table.arcs[table.ptr[row] + pick.astype(np.int64)]
            out[live, hop] = step
            cur = s.arc_dst[step].astype(np.int64)
            keep = dist > 1
            live, cur, q = live[keep], cur[keep], q[keep]
        return out
