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
"""

from __future__ import annotations

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.snapshot import NVLINK, PCIE, SWITCH_KINDS, Snapshot

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


class _Subgraph:
    """CSR of a subset of arcs, with cached BFS distances to a target node."""

    def __init__(self, snap: Snapshot, arc_mask: np.ndarray):
        self.snap = snap
        arcs = np.flatnonzero(arc_mask)
        order = np.argsort(snap.arc_src[arcs], kind="stable")
        self.arcs = arcs[order]                        # arcs sorted by source node
        self.ptr = np.searchsorted(snap.arc_src[self.arcs], np.arange(snap.n_nodes + 1))
        self._dist: dict[int, np.ndarray] = {}

    def dist_to(self, target: int, through: np.ndarray | None = None) -> np.ndarray:
        """Hop distance of every node to ``target`` (-1 unreachable).  With ``through``
        (bool per node), paths may only pass through nodes marked True: the others get a
        distance (they can be sources) but are not forwarded through.  The cache is per
        target, so one subgraph always uses the same ``through``."""
        d = self._dist.get(target)
        if d is not None:
            return d
        s = self.snap
        src, dst = s.arc_src[self.arcs], s.arc_dst[self.arcs]
        d = np.full(s.n_nodes, -1, dtype=np.int32)
        d[target] = 0
        frontier = np.array([target])
        level = 0
        while frontier.size:
            level += 1
            hit = np.isin(dst, frontier) & (d[src] < 0)
            new = np.unique(src[hit])
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
        self.nvlink = _Subgraph(s, s.arc_family == NVLINK)
        compute = np.fromiter((p == "compute" for p in s.arc_plane), bool, s.n_arcs)
        net = (s.arc_family != NVLINK) & (s.arc_family != PCIE) & compute
        self.net = _Subgraph(s, net)
        self.is_switch = np.fromiter((k in SWITCH_KINDS for k in s.node_kind), bool, s.n_nodes)
        self._pcie: dict[tuple[int, int], int] = {}
        for arc in np.flatnonzero(s.arc_family == PCIE).tolist():
            self._pcie.setdefault((int(s.arc_src[arc]), int(s.arc_dst[arc])), arc)
        self._edge: dict[int, int] = {}   # NIC -> its first compute switch arc
        self._dag: dict[tuple[int, int], Route] = {}
        self._nv: dict[tuple[int, int], Route] = {}

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

    # -------------------------------------------------------------- fabric
    def pcie_arc(self, a: int, b: int) -> int:
        try:
            return self._pcie[(a, b)]
        except KeyError:
            raise SolverError(f"no PCIe link between {self.snap.node_ids[a]} and "
                              f"{self.snap.node_ids[b]}") from None

    def edge_arc(self, nic: int) -> int:
        """The arc from ``nic`` to the switch it is cabled to (most capacity first)."""
        if nic not in self._edge:
            out = self.net.arcs[self.net.ptr[nic]:self.net.ptr[nic + 1]]
            if out.size == 0:
                raise SolverError(f"NIC {self.snap.node_ids[nic]} is not cabled to the fabric")
            self._edge[nic] = int(out[np.argmax(self.snap.arc_cap[out])])
        return self._edge[nic]

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
        for hop in range(int(dist[leaf_a])):
            step = np.empty(m, dtype=np.int64)
            for node in np.unique(cur).tolist():
                sel = cur == node
                out = self.net.next_arcs(node, dist)
                if mode == "ecmp":
                    pick = _hash(keys[sel], self.seed * 1_000_003 + hop) % np.uint64(out.size)
                else:  # static: destination-based, the same for every source
                    pick = dest_ids[sel] % out.size
                step[sel] = out[pick.astype(np.int64)]
            flows.append(idx)
            arcs.append(step)
            cur = self.snap.arc_dst[step]
        return np.concatenate(flows), np.concatenate(arcs)
