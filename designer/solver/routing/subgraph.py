"""CSR subgraphs of a snapshot's arcs (`_Subgraph`: the NVLink, fabric and PCIe arcs the
router walks), with breadth-first distances to a node; many searches at once over a
CSR (`bitwise_bfs`); and `sorted_ptr`, the CSR pointers of sorted keys.  Pure numpy."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from designer.solver.arrays.ragged import distinct, ragged_arange, stable_argsort

if TYPE_CHECKING:
    from designer.solver.snapshot.build import Snapshot


def sorted_ptr(keys: np.ndarray, n: int) -> np.ndarray:
    """CSR pointers of sorted ``keys`` in ``[0, n)``: key ``v``'s entries are
    ``ptr[v]:ptr[v + 1]``.

    From where each run of equal keys starts, not a binary search per key (5x slower at
    300,000 keys) nor ``np.bincount`` (which first copies int32 keys to int64: fresh
    memory, page faults).

    >>> sorted_ptr(np.array([1, 1, 3], np.int32), 5).tolist()
    [0, 0, 2, 2, 3, 3]
    """
    m = len(keys)
    if m == 0:
        return np.zeros(n + 1, np.int64)
    heads = np.flatnonzero(keys[1:] != keys[:-1])
    heads += 1
    starts = np.concatenate([[0], heads, [m]])
    firsts = np.concatenate([[-1], keys[0:1], keys[heads], [n]]).astype(np.int64)
    # Keys firsts[k - 1] + 1 .. firsts[k] all start where run k does.
    return np.repeat(starts, np.diff(firsts))


def bitwise_bfs(into_ptr: np.ndarray, into_src: np.ndarray, firsts: list[np.ndarray],
                batch: int = 64) -> list[np.ndarray]:
    """Hop counts along the arcs of a graph given as the CSR of each node's sources
    (``into_ptr``, ``into_src``), one search per ``firsts[i]``: those nodes count 1, a
    node one more than the nearest of its sources (-1: unreached).  Up to ``batch`` (at
    most 64) searches at once, bit-parallel.

    Each node keeps a word with a bit per search that has reached it; a level ORs, for
    every node, the words of the nodes with an arc into it: one gather and one segmented
    reduction over the arcs for all the searches, where a search at a time walked every
    arc once per search (32 searches over the 524,288 switch arcs of the 131,072-GPU
    fabric took 160 ms).

    >>> ptr, src = np.array([0, 1, 2, 3]), np.array([1, 2, 0])   # 1 -> 0, 2 -> 1, 0 -> 2
    >>> [d.tolist() for d in bitwise_bfs(ptr, src, [np.array([1]), np.array([0, 2])])]
    [[2, 1, 3], [1, 2, 1]]
    """
    n = len(into_ptr) - 1
    has = np.diff(into_ptr) > 0                # nodes with an arc into them
    starts = into_ptr[:-1][has]
    out: list[np.ndarray] = []
    for lo in range(0, len(firsts), batch):
        part = firsts[lo:lo + batch]
        d = np.full((len(part), n), -1, dtype=np.int32)     # [search, node]
        frontier = np.zeros(n, np.uint64)
        for i, first in enumerate(part):
            frontier[first] |= np.uint64(1) << np.uint64(i)
            d[i, first] = 1
        seen = frontier.copy()
        level = 1
        while True:
            level += 1
            reached = np.zeros(n, np.uint64)
            if starts.size:
                reached[has] = np.bitwise_or.reduceat(frontier[into_src], starts)
            frontier = reached & ~seen
            if not frontier.any():
                break
            seen |= frontier
            bits = np.unpackbits(frontier.astype("<u8").view(np.uint8).reshape(n, 8),
                                 axis=1, count=len(part), bitorder="little")
            node, search = np.nonzero(bits)
            d[search, node] = level
        out.extend(d)
    return out


def arcs_by_source(snap: Snapshot, arcs: np.ndarray) -> np.ndarray:
    """Ascending ``arcs`` sorted by source node (stable: arc order within), as int32 ids
    where they fit: the tables of routes gathered from them are then half the size
    (fresh memory is page faults: the 131,072-GPU ring peaks ~20 MB lower).  Each
    subgraph sorts its own arcs: fewer than all, and the NVLink ones are wanted first
    (`Router`)."""
    arcs = arcs.astype(np.int32 if snap.n_arcs < 2**31 else np.int64, copy=False)
    return arcs[stable_argsort(snap.arc_src[arcs], snap.n_nodes)]


class _Subgraph:
    """CSR of a subset of arcs (``arc_mask``, or both arcs of the links of ``link_mask``),
    with cached BFS distances to a target node.

    Each node's arcs are in arc order, or with ``by_position`` in the structural order
    of their far ends (`Snapshot.node_pos`), then arc order: the order in which single
    path routing (ECMP, static) numbers a node's equal-cost next hops, so that it picks
    by structure, not by file order.
    """

    def __init__(self, snap: Snapshot, arc_mask: np.ndarray | None = None, *,
                 link_mask: np.ndarray | None = None, by_position: bool = False):
        self.snap = snap
        self.by_position = by_position
        if link_mask is not None:   # both arcs of each link chosen
            links = np.flatnonzero(link_mask)
            arcs = np.empty(2 * len(links), dtype=links.dtype)
            np.multiply(links, 2, out=arcs[0::2])
            np.add(arcs[0::2], 1, out=arcs[1::2])
            symmetric = True
        else:
            arcs = np.flatnonzero(arc_mask)
            symmetric = bool(np.array_equal(arc_mask[0::2], arc_mask[1::2]))
        if by_position:
            arcs = arcs[np.argsort(snap.node_pos[snap.arc_dst[arcs]], kind="stable")]
        self.arcs = arcs_by_source(snap, arcs)   # sorted by source
        self.ptr = sorted_ptr(snap.arc_src[self.arcs], snap.n_nodes)
        self.dst = snap.arc_dst[self.arcs]
        # Links are full duplex and masks are per link, so the arcs into a node are the
        # reverses of the arcs out of it: a BFS towards a target can walk out-arcs.
        self._symmetric = symmetric
        self._dist: dict[int, np.ndarray] = {}

    @property
    def symmetric(self) -> bool:
        """Whether every arc's reverse is in the subgraph too (its mask is per link)."""
        return self._symmetric

    def neighbours(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions (into ``arcs``) of the arcs out of ``nodes``, and each one's node."""
        nodes = np.asarray(nodes, dtype=np.int64)
        pos, at = self.out_arcs(nodes)
        return pos, nodes[at]

    def out_arcs(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions (into ``arcs``) of the arcs out of ``nodes[i]`` for each ``i`` in
        turn (arc order within a node), and the ``i`` of each."""
        nodes = np.asarray(nodes, dtype=np.int64)
        lengths = self.ptr[nodes + 1] - self.ptr[nodes]
        return (ragged_arange(self.ptr[nodes], lengths),
                np.repeat(np.arange(len(nodes)), lengths))

    def after(self, snap: Snapshot, removed: np.ndarray, added: np.ndarray) -> _Subgraph:
        """This subgraph over ``snap``, a later snapshot of the same design: arcs
        ``removed`` dropped and arcs ``added`` (all members) merged in, in the order it
        was built (source node, then arc; or far end's position, then arc, with
        ``by_position``).  Distances are kept while no arc came or went."""
        out = copy.copy(self)
        out.snap = snap
        gone = (np.isin(self.arcs, removed) if removed.size
                else np.zeros(len(self.arcs), dtype=bool))
        if not added.size and not gone.any():
            out._dist = dict(self._dist)    # same arcs, same order
            return out
        arcs = self.arcs[~gone]
        if added.size:
            src, n = snap.arc_src.astype(np.int64), snap.n_arcs
            if self.by_position:  # (source, far end's structural position, arc), as built
                src = src * snap.n_nodes + snap.node_pos[snap.arc_dst]
            added = added[np.argsort(src[added] * n + added, kind="stable")]
            arcs = np.insert(arcs, np.searchsorted(src[arcs] * n + arcs, src[added] * n + added),
                             added)
        out.arcs = arcs
        out.ptr = sorted_ptr(snap.arc_src[arcs], snap.n_nodes)   # arcs stay sorted by source
        out.dst = snap.arc_dst[arcs]
        out._dist = {}
        return out

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
                new = distinct(cand[d[cand] < 0])
            else:
                src, dst = s.arc_src[self.arcs], s.arc_dst[self.arcs]
                new = distinct(src[np.isin(dst, frontier) & (d[src] < 0)])
            d[new] = level
            # Only forwarding nodes extend paths further.
            frontier = new if through is None else new[through[new]]
        self._dist[target] = d
        return d

    def next_arcs(self, node: int, dist: np.ndarray,
                  through: np.ndarray | None = None) -> np.ndarray:
        """Arcs out of ``node`` one step closer along ``dist``.  With ``through`` (the mask
        `dist_to` was given), only into nodes that forward, or into the target itself: a
        node that does not forward has a distance (it can be a source) but is no hop."""
        out = self.arcs[self.ptr[node]:self.ptr[node + 1]]
        nxt = self.snap.arc_dst[out]
        keep = dist[nxt] == dist[node] - 1
        if through is not None:
            keep &= through[nxt] | (dist[nxt] == 0)
        return out[keep]
