"""Route tables reused across many flows: NVLink domains built alike (one route template
serves every isomorphic domain) and groups of fabric edge switches that share their
switch neighbours (one breadth-first search per group).  Used by `routing.Router`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.route_arrays import (
    RouteBatch,
    _hash,
    _ptr,
    first_occurrence,
    ragged_arange,
    segment_sums,
    unique_inverse,
)
from designer.solver.snapshot import NVLINK, Snapshot, _components

if TYPE_CHECKING:
    from designer.solver.routing import Router


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

    Only switches forward traffic (a dual-homed NIC is never a transit hop, as in
    `Router.fabric_dag`), so walks over switch-to-switch arcs are exact whenever both ends
    of a pair are switches; `covers` says where; elsewhere the router walks pair by pair.
    """

    def __init__(self, router: Router):
        self.router = router
        s, g = router.snap, router.net
        sw = router.is_switch
        src = s.arc_src[g.arcs]
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
