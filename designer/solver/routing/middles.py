"""Fabric DAGs kept as each class's own hops plus the middles that classes share.

Over a multi-tier fat tree, the adaptive DAG between two edge switches of different pods
is its first hop (the edge switch's uplinks), a middle (spine, core, spine: 2,048 of the
2,112 arcs of a four-hop DAG of the 16k-GPU SuperPOD) and its last hop.  Every edge
switch of a pod leaves the same way towards a group of targets, so the walk finds each
middle once (`routing.walks.walk_shared`); written out class by class, a ring's fabric DAGs
were 295,000 route entries of which 262,000 were the same 16 middles over again, and
the max-min solver, the phase's table and the loads passed over every copy.

A `SplitDags` keeps each class's own entries (its first hop, then its last hop: the
whole DAG when it has no middle) and a table of distinct middles, each named by the
classes that cross it (`Middles`).  A flow that crosses a class crosses its own row
and its middle: two shared routes instead of one, which the solver handles as any
flow that takes several routes.  The class rows themselves, written in full
(`Middles.whole`), are identical to the unsplit ones entry for entry.

The form is canonical: middles with equal entries are one row, numbered in order of
the first class that crosses them, so a table patched after an edit (`spliced`) is the
very table a fresh walk makes, and so are the phases and the sums over them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.solver.arrays.ragged import (
    PendingBatch,
    PendingRows,
    RouteBatch,
    _ptr,
    _stack,
    first_occurrence,
    segment_hash,
)
from designer.solver.arrays.shared_routes import SharedRoutes

__all__ = ["Middles", "SplitDags", "canonical_middles", "split_rows", "with_middles"]


@dataclass(frozen=True, eq=False)
class Middles:
    """The middles of a table of class DAGs.

    ``table`` has one row per distinct middle; class ``c`` crosses row ``of[c]`` (-1:
    none) between the first ``head[c]`` entries of its own row and the rest.
    """

    head: np.ndarray
    of: np.ndarray
    table: RouteBatch

    def whole(self, own: RouteBatch) -> RouteBatch:
        """The class rows written in full: own head, middle, own tail (as an unsplit
        walk writes them)."""
        if own.arcs is None:  # a pending batch: written first
            own = own.done()
        lengths = own.lengths
        at, mid_len = np.zeros(len(lengths), np.int64), np.zeros(len(lengths), np.int64)
        has = np.flatnonzero(self.of >= 0)
        at[has] = self.table.ptr[self.of[has]]
        mid_len[has] = self.table.lengths[self.of[has]]
        rows = PendingRows.of([
            (own.ptr[:-1], self.head, own.arcs, own.weights),
            (at, mid_len, self.table.arcs, self.table.weights),
            (own.ptr[:-1] + self.head, lengths - self.head, own.arcs, own.weights)])
        arcs, weights = rows.written()
        return RouteBatch(rows.ptr, arcs, weights, own.hops)

    def scattered(self, rows: np.ndarray, n: int) -> Middles:
        """These middles for ``n`` classes, class ``i`` of these being ``rows[i]``; the
        others cross none."""
        head = np.zeros(n, np.int64)
        of = np.full(n, -1, np.int64)
        head[rows], of[rows] = self.head, self.of
        return Middles(head, of, self.table)

    def spliced(self, at: np.ndarray, new: Middles) -> Middles:
        """These middles with classes ``at`` taking ``new``'s instead (canonical)."""
        head, of = self.head.copy(), self.of.copy()
        head[at] = new.head
        of[at] = np.where(new.of >= 0, new.of + len(self.table.hops), -1)
        return canonical_middles(head, of, _stack([self.table, new.table]))

    def on(self, arcs: np.ndarray, weights: np.ndarray) -> Middles:
        """The same middles with their entries read from ``arcs`` and ``weights``."""
        t = self.table
        return Middles(self.head, self.of, RouteBatch(t.ptr, arcs, weights, t.hops))

    @property
    def size(self) -> int:
        """Entries in the middles' table."""
        return int(self.table.ptr[-1])


@dataclass(frozen=True, eq=False)
class SplitDags:
    """Class DAGs as own rows (``own``: head then tail of each class, ``own.hops`` its
    hop count; maybe a `PendingBatch`, unwritten) and shared `Middles`."""

    own: RouteBatch
    middles: Middles

    def whole(self) -> RouteBatch:
        """The class rows written in full (`Middles.whole`)."""
        return self.middles.whole(self.own)


def canonical_middles(head: np.ndarray, of: np.ndarray, table: RouteBatch) -> Middles:
    """``Middles(head, of, table)`` in canonical form: rows with equal entries merged,
    rows no class crosses dropped, the rest numbered in order of the first class that
    crosses them.

    Rows are matched by a hash of their entries (`arrays.ragged.segment_hash`), and every
    match is then checked entry by entry, so a collision costs sharing, never a wrong
    route.
    """
    of = np.asarray(of, np.int64)
    n_rows = len(table.hops)
    if n_rows == 0:
        return Middles(head, of, table)
    # Each row's stand-in: the first row with the same hash (checked below).
    _, first, inverse = np.unique(segment_hash(table.arcs, table.weights, table.lengths),
                                  return_index=True, return_inverse=True)
    same = first[inverse.reshape(-1)]
    maybe = np.flatnonzero(same != np.arange(n_rows))
    if maybe.size:
        lengths = table.lengths
        ok = lengths[same[maybe]] == lengths[maybe]
        for i in np.flatnonzero(ok).tolist():
            r, s = int(maybe[i]), int(same[maybe[i]])
            a = slice(table.ptr[r], table.ptr[r + 1])
            b = slice(table.ptr[s], table.ptr[s + 1])
            ok[i] = (np.array_equal(table.arcs[a], table.arcs[b])
                     and np.array_equal(np.asarray(table.weights[a]).view(np.int64),
                                        np.asarray(table.weights[b]).view(np.int64)))
        same[maybe[~ok]] = maybe[~ok]
    used = of >= 0
    rows, order_of = first_occurrence(same[of[used]], n_rows)
    out = np.full(len(of), -1, np.int64)
    out[used] = order_of
    if len(rows) == n_rows and np.array_equal(rows, np.arange(n_rows)):
        return Middles(head, out, table)
    return Middles(head, out, table.take(rows))


def with_middles(routes: SharedRoutes, n_legs: int, mid: Middles) -> SharedRoutes:
    """The solver's view of a legs-and-DAGs piece (`flows.recipe.SharedPiece`) whose
    DAGs keep their middles apart: ``routes`` (the legs, then each class's own row;
    pairs: every sender's way out, every receiver's way in, every transfer's class) with
    the middles' rows after them, and a pair (flow, middle) for every transfer whose
    class crosses one.  ``routes.ptr`` counts the middles' entries too only if its
    entries do (they follow: the caller writes them)."""
    n_routes = routes.n_routes
    m = len(routes.pair_route) // 3
    fab_flow, fab_route = routes.pair_flow[2 * m:], routes.pair_route[2 * m:]
    mid_of = mid.of[np.asarray(fab_route, np.int64) - n_legs]
    deep = np.flatnonzero(mid_of >= 0)
    ptr = np.concatenate([routes.ptr, mid.table.ptr[1:] + routes.ptr[-1]])
    pair_flow = np.concatenate([routes.pair_flow, fab_flow[deep]])
    ids = routes.pair_route.dtype if n_routes + len(mid.table.hops) < 2**31 else np.int64
    pair_route = np.concatenate([routes.pair_route,
                                 (mid_of[deep] + n_routes).astype(ids, copy=False)])
    local = None
    if routes.local is not None:
        local = np.concatenate([routes.local, np.zeros(len(mid.table.hops), bool)])
    if routes.pair_mult is not None:
        raise ValueError("shared middles with pair multiplicities")
    return SharedRoutes(ptr, routes.link, routes.weight, pair_flow, pair_route, None, local)


def split_rows(first: RouteBatch, last_len: np.ndarray, last_arcs: np.ndarray,
               last_w: np.ndarray, hops: np.ndarray, mid_of: np.ndarray,
               middle: RouteBatch, pending: bool) -> SplitDags:
    """The `SplitDags` of a shared walk (`routing.walks.walk_shared`): route ``i`` is its
    first hop (row ``i`` of ``first``), the middle ``mid_of[i]`` of ``middle`` (-1:
    none) and its last hop (``last_len[i]`` entries of ``last_arcs``, in route
    order)."""
    rows = PendingRows.of([
        (first.ptr[:-1], first.lengths, first.arcs, first.weights),
        (_ptr(last_len)[:-1], last_len, last_arcs, last_w)])
    own: RouteBatch
    if pending:
        own = PendingBatch(rows.ptr, None, None, hops, rows)
    else:
        own = RouteBatch(rows.ptr, *rows.written(), hops)
    return SplitDags(own, canonical_middles(np.asarray(first.lengths, np.int64), mid_of,
                                            middle))
