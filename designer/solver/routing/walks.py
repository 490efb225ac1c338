"""Level-by-level walks of capacity-split DAGs for many routes at once, and the shared
walk: routes that stand on the same nodes with the same fractions after their first hop,
bound for the same group of targets, walk the levels in between once.  Pure numpy; used
by `routing.fabric` (fabric DAGs) and `routing.nvlink` (NVLink sprays)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from designer.solver.arrays.ragged import (
    PendingBatch,
    PendingRows,
    RouteBatch,
    _ptr,
    first_occurrence,
    first_occurrence_grouped,
    mix64,
    ragged_arange,
    segment_hash,
)
from designer.solver.routing.middles import SplitDags, split_rows

NextHops = Callable[[np.ndarray, np.ndarray, "int | np.ndarray"], RouteBatch]


@dataclass(frozen=True, eq=False)
class Frontier:
    """Where routes stand between two levels: route ``route[i]`` has the fraction
    ``frac[i]`` of its flow at node ``node[i]``.  Routes ascend; a route's nodes are in
    order of first arrival."""

    route: np.ndarray
    node: np.ndarray
    frac: np.ndarray

    def take(self, mask: np.ndarray) -> Frontier:
        return Frontier(self.route[mask], self.node[mask], self.frac[mask])


def walk_levels(start: np.ndarray, hops: np.ndarray, arc_dst: np.ndarray, n_nodes: int,
                next_hops: NextHops, node_index: np.ndarray | None = None) -> RouteBatch:
    """Capacity-split DAGs of many routes, walked together level by level.

    Route ``i`` leaves ``start[i]`` and takes ``hops[i]`` steps.  ``next_hops(route, node,
    level)`` gives, for each state (a node reached by a route at a level), one row of next
    arcs with the fraction of the state's share each gets.  Per route this is a walk that
    keeps the nodes of a level in order of first arrival, splits each node's share over
    its next arcs and sums the arrivals in order (`np.bincount` adds sequentially, like a
    dict of running sums), so the result is bit for bit that of a per-route loop.  The
    route's arcs are listed level by level, nodes in arrival order, arcs in row order.
    ``node_index`` (optional) numbers the nodes that routes reach ``0..m-1``: the nodes
    of a level are then told apart by a table instead of a sort (same result, faster;
    `first_occurrence_grouped`).

    >>> dst = np.array([1, 2, 3, 3])           # arcs 0: 0->1, 1: 0->2, 2: 1->3, 3: 2->3
    >>> rows = {0: ([0, 1], [0.5, 0.5]), 1: ([2], [1.0]), 2: ([3], [1.0])}
    >>> def step(route, node, level):
    ...     parts = [rows[int(v)] for v in node]
    ...     lengths = np.array([len(a) for a, _ in parts])
    ...     return RouteBatch(_ptr(lengths), np.concatenate([a for a, _ in parts]),
    ...                       np.concatenate([w for _, w in parts]), lengths)
    >>> out = walk_levels(np.array([0]), np.array([2]), dst, 4, step)
    >>> out.arcs.tolist(), out.weights.tolist()
    ([0, 1, 2, 3], [0.5, 0.5, 0.5, 0.5])
    """
    hops = np.asarray(hops, np.int64)
    out, _ = walk_from(_starts(start, hops), hops, 0, arc_dst, n_nodes, next_hops,
                       node_index)
    return out


def _starts(start: np.ndarray, hops: np.ndarray) -> Frontier:
    """Each route with a hop to take, with all of its flow at its start node."""
    walking = np.flatnonzero(hops > 0)
    return Frontier(walking, np.asarray(start, np.int64)[walking], np.ones(len(walking)))


def walk_from(front: Frontier, stop: np.ndarray, level: int, arc_dst: np.ndarray,
              n_nodes: int, next_hops: NextHops, node_index: np.ndarray | None = None,
              keep: bool = False) -> tuple[RouteBatch, Frontier | None]:
    """`walk_levels` from ``front`` (the states at ``level``) until route ``i`` has
    reached level ``stop[i]``; with ``keep``, also where each route then stands.

    Returns ``(routes, frontier)``: ``routes`` has ``len(stop)`` routes (``hops`` =
    ``stop``), each the arcs of its levels ``level .. stop - 1``; ``frontier`` (None
    without ``keep``) has every route of ``front`` at its level ``stop``.
    """
    n = len(stop)
    space = n * n_nodes                         # bound on the (route, node) keys
    n_index = 0 if node_index is None else int(node_index.max(initial=-1)) + 1
    done: list[Frontier] = []
    walking = stop[front.route] > level
    if not walking.all():
        if keep:
            done.append(front.take(~walking))
        front = front.take(walking)
    cls, node, frac = front.route, front.node, front.frac
    out_cls, out_arc, out_w = [], [], []
    while cls.size:
        step = next_hops(cls, node, level)
        lengths = step.lengths
        share = step.weights * np.repeat(frac, lengths)
        row_cls = np.repeat(cls, lengths)
        out_cls.append(row_cls)
        out_arc.append(step.arcs)
        out_w.append(share)
        level += 1
        # Next level: arrival nodes per route in first-arrival order, shares summed in
        # arrival order (routes that arrived at their target are done).
        arrive = arc_dst[step.arcs]
        if not keep:
            going = np.repeat(stop[cls] > level, lengths)
            if not going.all():
                row_cls, share, arrive = row_cls[going], share[going], arrive[going]
        item = None if node_index is None else node_index[arrive]
        if item is not None and item.min(initial=0) >= 0:
            # (Routes stay in order level after level: ``row_cls`` never falls.)
            first, at = first_occurrence_grouped(row_cls, item, n_index)
            cls, node = row_cls[first], arrive[first]
        else:
            uniq, at = first_occurrence(row_cls * n_nodes + arrive, space)
            cls, node = uniq // n_nodes, uniq % n_nodes
        frac = np.bincount(at, weights=share, minlength=len(cls))
        if keep:
            going = stop[cls] > level
            if not going.all():
                done.append(Frontier(cls[~going], node[~going], frac[~going]))
                cls, node, frac = cls[going], node[going], frac[going]
    return _by_route(out_cls, out_arc, out_w, stop), _merged(done) if keep else None


def _by_route(out_cls: list[np.ndarray], out_arc: list[np.ndarray], out_w: list[np.ndarray],
              hops: np.ndarray) -> RouteBatch:
    """The entries of a walk's levels, route by route (levels in order)."""
    n = len(hops)
    if not out_cls:
        return RouteBatch(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0),
                          np.asarray(hops, np.int64))
    # Each level lists routes in order (``row_cls`` never falls), so an entry's place is
    # its route's start, plus the route's entries in the levels before, plus its rank
    # among the route's entries of its level: no sort.
    counts = [np.bincount(c, minlength=n) for c in out_cls]
    ptr = _ptr(sum(counts))
    arcs = np.empty(int(ptr[-1]), np.result_type(*out_arc))
    weights = np.empty(int(ptr[-1]))
    at = ptr[:-1].copy()                         # each route's next free place
    for c, a, w, count in zip(out_cls, out_arc, out_w, counts, strict=True):
        level_start = _ptr(count)[:-1]
        place = (at - level_start)[c]
        place += np.arange(len(c))
        arcs[place], weights[place] = a, w
        at += count
    return RouteBatch(ptr, arcs, weights, np.asarray(hops, np.int64))


def _merged(parts: list[Frontier]) -> Frontier:
    """Frontiers of disjoint routes as one, routes ascending (a route's states all come
    from one part, in order: the sort is stable)."""
    if not parts:
        return Frontier(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    route = np.concatenate([p.route for p in parts])
    order = np.argsort(route, kind="stable")
    return Frontier(route[order], np.concatenate([p.node for p in parts])[order],
                    np.concatenate([p.frac for p in parts])[order])


# ----------------------------------------------------------------- shared walk
def walk_shared(start: np.ndarray, hops: np.ndarray, kind: np.ndarray, arc_dst: np.ndarray,
                n_nodes: int, next_hops: NextHops,
                node_index: np.ndarray | None = None, pending: bool = False,
                split: bool = False) -> RouteBatch | SplitDags:
    """`walk_levels`, identical arc for arc and bit for bit, for routes whose next hops
    depend only on the node, the hops left and the route's ``kind`` except at the last
    hop (a fabric DAG: until the last hop, a switch's next hops towards a target are those
    towards any target with the same switch neighbours).

    Then two routes of one kind and length that stand on the same nodes with the same
    fractions after their first hop take the same arcs with the same weights at every
    level but the last, so those levels are walked once for both: in a ring over a
    rail-optimised fat tree every leaf of a pod splits alike over the pod's spines, and
    the spine-core-spine middle of its DAGs (2,048 of the 2,112 arcs of a four-hop DAG
    of the 16k-GPU SuperPOD) is walked once per (pod, target group) instead of once per
    leaf.  Each route then takes its own
    last hop from where its shared middle ends.

    ``pending``: return a `PendingBatch`, whose rows the caller writes where they end
    up (a phase's table), instead of a table of their own.  ``split``: return the
    routes as a `routing.middles.SplitDags`, each middle kept once (its own rows pending
    if ``pending``).
    """
    n = len(start)
    hops = np.asarray(hops, np.int64)
    first, front = walk_from(_starts(start, hops), np.minimum(hops, 1), 0, arc_dst,
                             n_nodes, next_hops, node_index, keep=True)
    front = front.take(hops[front.route] >= 2)     # the routes with a last hop to come
    rep = _alike(front, hops, kind)
    deep = np.flatnonzero(hops >= 3)
    reps = deep[rep[deep] == deep]
    # Where each route stands before its last hop (``at``, ``size``: its states in
    # ``pool_node`` and ``pool_frac``) and the middle levels it lists (``mid_at``,
    # ``mid_len``: in ``middle``): a two-hop route stands where its first hop left it and
    # has no middle; a longer one has its representative's middle, walked once from the
    # representative's frontier.
    own = np.bincount(front.route, minlength=n)
    at, size = _ptr(own)[:-1], own
    mid_at, mid_len = np.zeros(n, np.int64), np.zeros(n, np.int64)
    mid_of = np.full(n, -1, np.int64)
    middle_arcs, middle_w = np.zeros(0, first.arcs.dtype), np.zeros(0)
    middle = RouteBatch(np.zeros(1, np.int64), middle_arcs, middle_w, np.zeros(0, np.int64))
    pool_node, pool_frac = front.node, front.frac
    if reps.size:
        renum = np.full(n, -1, dtype=np.int64)
        renum[reps] = np.arange(len(reps))
        sub = front.take(renum[front.route] >= 0)
        middle, before_last = walk_from(
            Frontier(renum[sub.route], sub.node, sub.frac), hops[reps] - 1, 1, arc_dst,
            n_nodes, lambda r, v, level: next_hops(reps[r], v, level), node_index, keep=True)
        which = renum[rep[deep]]                   # each deep route's representative
        ends = np.bincount(before_last.route, minlength=len(reps))
        at[deep] = len(front.node) + _ptr(ends)[:-1][which]
        size[deep] = ends[which]
        mid_at[deep], mid_len[deep] = middle.ptr[:-1][which], middle.lengths[which]
        mid_of[deep] = which
        middle_arcs, middle_w = middle.arcs, middle.weights
        pool_node = np.concatenate([front.node, before_last.node])
        pool_frac = np.concatenate([front.frac, before_last.frac])
    pos = ragged_arange(at, size)
    route = np.repeat(np.arange(n), size)
    last_arcs, last_w = np.zeros(0, first.arcs.dtype), np.zeros(0)
    last_len = np.zeros(n, np.int64)
    if route.size:
        step = next_hops(route, pool_node[pos], hops[route] - 1)
        last_arcs = step.arcs
        last_w = step.weights * np.repeat(pool_frac[pos], step.lengths)
        last_len = np.bincount(np.repeat(route, step.lengths), minlength=n)
    if split:
        return split_rows(first, last_len, last_arcs, last_w, hops, mid_of, middle,
                          pending)
    # Each route: its first hop, its representative's middle, its last hop.
    rows = PendingRows.of([
        (first.ptr[:-1], first.lengths, first.arcs, first.weights),
        (mid_at, mid_len, middle_arcs, middle_w),
        (_ptr(last_len)[:-1], last_len, last_arcs, last_w)])
    if pending:
        return PendingBatch(rows.ptr, None, None, hops, rows)
    return RouteBatch(rows.ptr, *rows.written(), hops)


def _alike(front: Frontier, hops: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """For each route, the first route with the same kind, hops and frontier (itself if
    none); routes without a frontier are their own.

    Rows are matched by a hash of their states, and every match is then checked state by
    state, so a collision costs sharing, never a wrong route."""
    n = len(hops)
    rep = np.arange(n)
    if not front.route.size:
        return rep
    kind = np.asarray(kind, np.int64)
    size = np.bincount(front.route, minlength=n)
    ptr = _ptr(size)
    place = np.arange(len(front.route)) - ptr[front.route]
    has = np.flatnonzero(size)
    with np.errstate(over="ignore"):
        digest = segment_hash(front.node, front.frac, size)[has] \
            ^ mix64((kind[has] * np.int64(1 << 20) + hops[has]) * np.int64(1 << 20)
                    + size[has], 2)
    _, first, inverse = np.unique(digest, return_index=True, return_inverse=True)
    rep[has] = has[first][inverse.reshape(-1)]
    # Check every match: kind, hops and size, then state by state.
    alike = (kind[rep] == kind) & (hops[rep] == hops) & (size[rep] == size)
    rep[~alike] = np.flatnonzero(~alike)
    route = front.route
    other = ptr[rep[route]] + place
    differ = (front.node != front.node[other]) \
        | (front.frac.view(np.int64) != front.frac.view(np.int64)[other])
    bad = np.unique(route[differ])
    rep[bad] = bad
    return rep
