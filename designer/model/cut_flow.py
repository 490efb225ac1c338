"""Max flow between two terminals of an undirected capacity network, shrunk first by
exact reductions over numpy arrays.

A bisection cut of a 16,384-GPU SuperPOD is a network of ~45,000 nodes and ~150,000
link bundles; networkx's max flow on it takes seconds per cut.  With the GPUs of each
half merged into the two terminals, most of the network carries nothing or is a chain,
and what is left is made of many identical parts (the leaves of one rail, the spines of
one group).  `reduce_network` removes the first and merges the second, each step exact
for the max flow between the terminals:

- parallel edges add up;
- a non-terminal with at most one neighbour (a dead end) carries no terminal-to-terminal
  flow (whatever enters must leave the way it came): it goes;
- a non-terminal with exactly two neighbours u and w (a NIC between its GPU and its leaf)
  passes at most min(c_uv, c_vw) each way, and any such amount: it becomes an edge u-w of
  that capacity (series reduction);
- two non-terminals with the same neighbours at the same capacities (twins: two leaves
  of one rail whose GPUs are on one side) are merged, their edges adding up.  Some
  minimum cut puts both on one side: if one cut separates them, moving one to the
  other's side changes the cut by d and moving the other changes it by -d (their
  neighbourhoods are the same), so one of the moves does not raise it.  Merging
  therefore keeps the minimum cut, hence the max flow.  Twins are never adjacent (each
  would be its own neighbour).

Each step may enable another, so they repeat until none applies; a SuperPOD's cut ends
as a network of a few dozen nodes, whose max flow networkx computes at once.

Example
-------
>>> u, w = np.array([0, 2, 2]), np.array([2, 1, 1])
>>> max_flow(3, u, w, np.array([5.0, 2.0, 1.0]))    # 0 -5- 2 =(2+1)= 1
3.0
"""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import numpy as np

__all__ = ["dinic", "max_flow", "reduce_network"]

SOURCE, SINK = 0, 1


def max_flow(
    n: int,
    u: np.ndarray,
    w: np.ndarray,
    cap: np.ndarray,
    flow_func: Callable | None = None,
    reduce: bool = True,
) -> float:
    """Max flow from node 0 to node 1 of the undirected network on nodes ``0..n-1``
    whose edge ``i`` joins ``u[i]`` and ``w[i]`` with capacity ``cap[i]`` each way.

    ``reduce``: shrink the network first (`reduce_network`); ``flow_func``: a networkx
    max-flow function to use (``nx.algorithms.flow.preflow_push``...) instead of
    `dinic`, the reference the tests compare it with.
    """
    u, w, cap = _merged(n, np.asarray(u), np.asarray(w), np.asarray(cap, dtype=float))
    if reduce:
        u, w, cap = reduce_network(n, u, w, cap)
    if flow_func is None:
        return dinic(n, u, w, cap)
    net = nx.DiGraph()
    net.add_weighted_edges_from(
        zip(u.tolist(), w.tolist(), cap.tolist(), strict=True), weight="capacity"
    )
    net.add_weighted_edges_from(
        zip(w.tolist(), u.tolist(), cap.tolist(), strict=True), weight="capacity"
    )
    if SOURCE not in net or SINK not in net:
        return 0.0
    return float(nx.maximum_flow_value(net, SOURCE, SINK, flow_func=flow_func))


def _merged(n: int, u: np.ndarray, w: np.ndarray, cap: np.ndarray):
    """The edges as ``(lo, hi, cap)`` with ``lo < hi``, loops dropped, parallel edges
    added up (in the order of ``lo * n + hi``)."""
    lo, hi = np.minimum(u, w), np.maximum(u, w)
    keep = lo != hi
    lo, hi, cap = lo[keep], hi[keep], cap[keep]
    key = lo.astype(np.int64) * n + hi
    uniq, inverse = np.unique(key, return_inverse=True)
    return uniq // n, uniq % n, np.bincount(inverse, weights=cap, minlength=len(uniq))


def reduce_network(n: int, lo: np.ndarray, hi: np.ndarray, cap: np.ndarray):
    """The network ``(lo, hi, cap)`` (as `_merged` gives it) with the exact reductions
    of the module docstring applied until none applies; the terminals are 0 and 1."""
    while True:
        degree = np.bincount(lo, minlength=n) + np.bincount(hi, minlength=n)
        free = np.ones(n, dtype=bool)
        free[[SOURCE, SINK]] = False
        dead = free & (degree == 1)
        if dead.any():
            keep = ~(dead[lo] | dead[hi])
            lo, hi, cap = lo[keep], hi[keep], cap[keep]
            continue
        chain = free & (degree == 2)
        if chain.any():
            lo, hi, cap = _series(n, lo, hi, cap, chain)
            continue
        merged = _twins(n, lo, hi, cap, free & (degree > 0))
        if merged is None:
            return lo, hi, cap
        lo, hi, cap = _merged(n, merged[lo], merged[hi], cap)


def _series(n: int, lo, hi, cap, chain: np.ndarray):
    """Replace nodes of degree two (``chain``), no two of them adjacent, by an edge."""
    # No two chosen nodes adjacent: of an edge joining two, the higher one waits.
    both = chain[lo] & chain[hi]
    chosen = chain.copy()
    chosen[hi[both]] = False
    at_lo, at_hi = chosen[lo], chosen[hi]
    touching = np.flatnonzero(at_lo | at_hi)
    middle = np.where(at_lo[touching], lo[touching], hi[touching])
    other = np.where(at_lo[touching], hi[touching], lo[touching])
    order = np.argsort(middle, kind="stable")
    other, caps = other[order], cap[touching][order]
    # Each chosen node has exactly two edges, now side by side.
    new_u, new_w = other[0::2], other[1::2]
    new_cap = np.minimum(caps[0::2], caps[1::2])
    keep = ~(at_lo | at_hi)
    return _merged(
        n,
        np.concatenate([lo[keep], new_u]),
        np.concatenate([hi[keep], new_w]),
        np.concatenate([cap[keep], new_cap]),
    )


def _twins(n: int, lo, hi, cap, candidates: np.ndarray) -> np.ndarray | None:
    """A relabelling of the nodes that maps every group of twins among ``candidates``
    to its first member; None when there are none."""
    if not len(lo):
        return None
    x = np.concatenate([lo, hi])
    y = np.concatenate([hi, lo])
    c = np.concatenate([cap, cap])
    order = np.lexsort((c, y, x))
    x, y, c = x[order], y[order], c[order]
    starts = np.flatnonzero(np.r_[True, x[1:] != x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    label = np.arange(n)
    first: dict[bytes, int] = {}
    found = False
    ys, cs = y.tobytes(), c.tobytes()
    size_y, size_c = y.itemsize, c.itemsize
    for node, s, e in zip(x[starts].tolist(), starts.tolist(), ends.tolist(), strict=True):
        if not candidates[node]:
            continue
        key = ys[s * size_y : e * size_y] + cs[s * size_c : e * size_c]
        rep = first.setdefault(key, node)
        if rep != node:
            label[node] = rep
            found = True
    return label if found else None


def dinic(n: int, u: np.ndarray, w: np.ndarray, cap: np.ndarray) -> float:
    """Max flow from node 0 to node 1 by Dinic's algorithm (level graph by breadth-first
    search, blocking flow by depth-first search with a current arc per node), each
    undirected edge being two arcs of its capacity, each the other's reverse.

    Examples
    --------
    >>> dinic(4, np.array([0, 0, 2, 3]), np.array([2, 3, 1, 1]), np.array([1.0, 2, 3, 1]))
    2.0
    """
    m = len(u)
    if not m:
        return 0.0
    tail = np.empty(2 * m, dtype=np.int64)
    tail[0::2], tail[1::2] = u, w
    head_arr = np.empty(2 * m, dtype=np.int64)
    head_arr[0::2], head_arr[1::2] = w, u
    order = np.argsort(tail, kind="stable")
    start = np.searchsorted(tail[order], np.arange(n + 1)).tolist()
    arcs = order.tolist()  # arcs by tail; arc a's reverse is a ^ 1
    head = head_arr.tolist()
    res = np.repeat(np.asarray(cap, dtype=float), 2).tolist()
    eps = 1e-9 * (max(res) if res else 1.0)
    total = 0.0
    while True:
        level = [-1] * n
        level[SOURCE] = 0
        frontier = [SOURCE]
        while frontier and level[SINK] < 0:
            nxt = []
            for x in frontier:
                for k in range(start[x], start[x + 1]):
                    a = arcs[k]
                    y = head[a]
                    if level[y] < 0 and res[a] > eps:
                        level[y] = level[x] + 1
                        nxt.append(y)
            frontier = nxt
        if level[SINK] < 0:
            return total
        current = start[:-1]
        while True:
            pushed = _augment(arcs, head, res, level, current, start, eps)
            if pushed <= 0.0:
                break
            total += pushed


def _augment(arcs, head, res, level, current, start, eps) -> float:
    """One augmenting path along the level graph from the source to the sink (depth
    first, advancing each node's current arc past dead ends); the amount pushed."""
    path: list[int] = []  # arcs taken
    x = SOURCE
    while x != SINK:
        k, end = current[x], start[x + 1]
        while k < end:
            a = arcs[k]
            if res[a] > eps and level[head[a]] == level[x] + 1:
                break
            k += 1
        current[x] = k
        if k == end:  # dead end: retreat, and never come back this phase
            if not path:
                return 0.0
            level[x] = -1
            a = path.pop()
            x = head[a ^ 1]
            current[x] += 1
            continue
        path.append(arcs[k])
        x = head[arcs[k]]
    amount = min(res[a] for a in path)
    for a in path:
        res[a] -= amount
        res[a ^ 1] += amount
    return amount
