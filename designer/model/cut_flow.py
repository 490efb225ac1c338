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

__all__ = ["max_flow", "reduce_network"]

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

    ``reduce``: shrink the network first (`reduce_network`); ``flow_func``: the networkx
    max-flow function (preflow-push if None).
    """
    u, w, cap = _merged(n, np.asarray(u), np.asarray(w), np.asarray(cap, dtype=float))
    if reduce:
        u, w, cap = reduce_network(n, u, w, cap)
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
