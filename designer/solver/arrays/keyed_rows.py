"""Route tables looked up by integer key, rows built on demand: `KeyedRows`.

The router keeps two: the NVLink route templates (`routing.nvlink`) and the fabric's next
hops per (target group, switch) state (`routing.fabric`).  It builds on the batches of
`arrays.ragged`.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable

import numpy as np

from designer.solver.arrays.ragged import RouteBatch, _stack, distinct
from designer.solver.tuning import current

__all__ = ["KeyedRows"]


_MAPPED = 1 << 20   # bytes from which a dense map is mapped afresh (`_lazy_zeros`)


def _lazy_zeros(n: int) -> np.ndarray:
    """``n`` int32 zeros whose pages are backed only when first touched.

    ``np.zeros`` gets them from malloc's calloc, which returns fresh, untouched pages
    for a block it maps, but zeroes a block it reuses from the heap: every page written
    at once.  glibc maps a large block only until one of that size has been freed; from
    then on it serves them from the heap, so from a process's second solve on, the 13 MB
    next-hop map of the 16k-GPU SuperPOD's fabric was a 13 MB memset of which a few
    hundred pages are ever used (a ring solve, 38-47 ms, took 0.2-2.7 ms longer with it:
    median differences over 30 rounds alternating the two in one process).  An
    anonymous mapping of its own is zero pages until touched, always.
    """
    if n * 4 < _MAPPED:
        return np.zeros(n, dtype=np.int32)
    return np.frombuffer(mmap.mmap(-1, n * 4), dtype=np.int32)


class KeyedRows:
    """A table of routes looked up by integer key in ``[0, space)``, rows built on
    demand: ``build(keys)``, passed to each lookup, turns distinct, sorted new keys into
    one route each.

    The owner passes its builder to every lookup rather than the table keeping it: a
    table that held its owner's bound method would make a reference cycle, and a
    router's tables (tens of MB at 131,072 GPUs) would then outlive each edit until the
    cyclic garbage collector ran, so every edit would take fresh memory (page faults).

    Lookups go through a dense map when the key space allows (zeroed lazily by the
    kernel, `_lazy_zeros`, so only the pages that keys touch are ever backed), else by
    binary search in the sorted keys.

    >>> from designer.solver.arrays.ragged import _single
    >>> rows = KeyedRows(100)
    >>> build = lambda k: _single(k)                       # route of key k: arc k
    >>> rows.rows(np.array([7, 3, 7]), build).tolist(), rows.table.arcs.tolist()
    ([1, 0, 1], [3, 7])
    >>> rows.rows(np.array([5, 3]), build).tolist(), rows.table.arcs.tolist()
    ([2, 0], [3, 7, 5])
    """

    def __init__(self, space: int):
        self.table = _stack([])
        # Row + 1 per key (0: not built yet), and the keys set in it.
        self._dense = _lazy_zeros(space) if space <= current().keyed_dense else None
        self._set: list[np.ndarray] = []
        self._keys = np.zeros(0, dtype=np.int64)      # sorted (sparse lookups)
        self._key_row = np.zeros(0, dtype=np.int64)

    def rows(self, keys: np.ndarray, build: Callable[[np.ndarray], RouteBatch]) -> np.ndarray:
        """Row of each key in `table` (building missing rows first, with ``build``)."""
        keys = np.asarray(keys, dtype=np.int64)
        if self._dense is not None:
            rows = self._dense[keys]
            if rows.min(initial=1) == 0:
                self._add(distinct(keys[rows == 0]), build)
                rows = self._dense[keys]
            return rows - 1
        at = np.minimum(np.searchsorted(self._keys, keys), max(len(self._keys) - 1, 0))
        known = (self._keys[at] == keys) if len(self._keys) else np.zeros(len(keys), bool)
        if not known.all():
            self._add(distinct(keys[~known]), build)
            at = np.searchsorted(self._keys, keys)
        return self._key_row[at]

    @property
    def table(self) -> RouteBatch:
        """The rows built so far (views: later rows never change what was handed out)."""
        return self._table

    @table.setter
    def table(self, batch: RouteBatch) -> None:
        self._table = batch
        self._room = None  # the next rows go to a buffer of this table's own

    def __copy__(self) -> KeyedRows:
        out = object.__new__(KeyedRows)
        out.__dict__.update(self.__dict__)
        out._room = None  # appends in place would write into this table's buffers
        out._set = list(self._set)
        return out

    def _add(self, new: np.ndarray, build: Callable[[np.ndarray], RouteBatch]) -> None:
        built = build(new)
        rows = len(self.table.hops) + np.arange(len(new))
        self._append(built)
        if self._dense is not None:
            self._dense[new] = rows + 1
            self._set.append(new)
            return
        keys = np.concatenate([self._keys, new])
        order = np.argsort(keys, kind="stable")
        self._keys, self._key_row = keys[order], np.concatenate([self._key_row, rows])[order]

    def take_map(self, other: KeyedRows) -> None:
        """Take over the dense key map of ``other``, emptied, if this table is empty and
        has a map of that size; ``other`` gets a fresh one (its rows are then built
        again if it is asked for them).

        A fresh map is zeroed lazily, page by page, as keys first touch it: scattered
        keys over the 13 MB map of the 16k-GPU SuperPOD's fabric cost a fail edit, which
        builds the next hops anew, ~15 ms of page faults; the old map's pages are backed.
        """
        mine, theirs = self._dense, other._dense
        if mine is None or theirs is None or mine.size != theirs.size or len(self.table.hops):
            return
        for keys in other._set:
            theirs[keys] = 0
        self._dense, other._dense, other._set = theirs, mine, []

    def _append(self, built: RouteBatch) -> None:
        """Append ``built``'s rows to `table`, in place while the buffers have room.

        Rows are added a few at a time (the states a walk reaches for the first time),
        and a large table re-concatenated on every addition cost a fail edit of the
        16k-GPU design ~10 ms; buffers that double when full make appends amortised
        O(rows added).  Writes go past the ends of the views already handed out.
        """
        t = self._table
        n, m = len(t.hops), len(t.arcs)
        k, e = len(built.hops), len(built.arcs)
        room = self._room
        # Arc ids as narrow as the rows' own (int32 on any but a giant design).
        ids = built.arcs.dtype if n == 0 else np.result_type(t.arcs, built.arcs)
        if (room is None or room[0].size < n + k + 1 or room[1].size < m + e
                or room[1].dtype != ids):
            rows, entries = 2 * (n + k) + 16, 2 * (m + e) + 64
            room = (np.empty(rows + 1, np.int64), np.empty(entries, ids),
                    np.empty(entries, np.float64), np.empty(rows, np.int64))
            for buf, part in zip(room, (t.ptr, t.arcs, t.weights, t.hops), strict=True):
                buf[:part.size] = part
            self._room = room
        ptr, arcs, weights, hops = room
        ptr[n + 1:n + k + 1] = built.ptr[1:] + m
        arcs[m:m + e] = built.arcs
        weights[m:m + e] = built.weights
        hops[n:n + k] = built.hops
        self._table = RouteBatch(ptr[:n + k + 1], arcs[:m + e], weights[:m + e], hops[:n + k])
