"""Array building blocks of routing: routes as (arcs, weights) batches, ragged ranges,
segment sums, the seeded ECMP hash and capacity splits.  Pure numpy, shared by
`routing`, `routing.fabric`, `routing.walks`, `routing.nvlink` and `arrays.keyed_rows` (route tables
looked up by key); the CSR subgraphs they walk are in `routing.subgraph`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.solver.tuning import current

Route = tuple[np.ndarray, np.ndarray]
_EMPTY: Route = (np.zeros(0, np.int64), np.zeros(0))
_MIX = np.uint64(0x9E3779B97F4A7C15)


def mix64(keys: np.ndarray, salt: int) -> np.ndarray:
    """SplitMix64 of ``keys`` and ``salt``: the seeded, deterministic hash of ECMP, of
    route signatures and of structural colours (the same in every process and run)."""
    with np.errstate(over="ignore"):
        z = keys.astype(np.uint64) * _MIX + np.uint64(salt) * np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def segment_hash(ids: np.ndarray, values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each segment of entries ``(ids[i], values[i])`` (float64, hashed
    by their bits), the segments laid end to end with ``lengths``: the entries' values
    and places within their segment, summed; 0 for an empty segment.  Equal segments
    hash alike; callers check the matches entry by entry.

    >>> h = segment_hash(np.array([3, 4, 3, 4, 4, 3]), np.ones(6), np.array([2, 2, 2]))
    >>> bool(h[0] == h[1]), bool(h[0] == h[2])
    (True, False)
    """
    lengths = np.asarray(lengths, np.int64)
    starts = np.zeros(len(lengths), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    place = np.arange(len(ids)) - np.repeat(starts, lengths)
    out = np.zeros(len(lengths), np.uint64)
    full = np.flatnonzero(lengths)
    if full.size:
        with np.errstate(over="ignore"):
            mixed = mix64(np.asarray(ids, np.int64) * np.int64(1 << 24) + place, 0) \
                ^ mix64(np.asarray(values, np.float64).view(np.uint64), 1)
            out[full] = np.add.reduceat(mixed, starts[full])
    return out


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
    for n in distinct(lengths).tolist():
        if n:
            sel = np.flatnonzero(lengths == n)
            out[sel] = values[starts[sel, None] + np.arange(n)].sum(axis=1)
    return out


def distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values: ``np.unique(values)`` by sorting.  (numpy 2.3+ answers a
    plain ``np.unique`` of integers with a hash table that is many times slower than a sort
    on these arrays.)

    >>> distinct(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    s = np.sort(np.asarray(values).reshape(-1))
    if s.size < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def run_heads(values: np.ndarray) -> np.ndarray:
    """Mask of the entries that differ from the one before (the first of each run).

    >>> run_heads(np.array([4, 4, 7, 7, 7, 4])).tolist()
    [True, False, True, False, False, True]
    """
    head = np.ones(len(values), dtype=bool)
    np.not_equal(values[1:], values[:-1], out=head[1:])
    return head


def stable_argsort(keys: np.ndarray, space: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` for integer keys in ``[0, space)``: numpy sorts
    16-bit keys by radix, so keys below 2**32 go by two radix passes (low half, then high
    half), several times faster than a merge sort of int64.

    >>> stable_argsort(np.array([70000, 3, 70000, 1]), 1 << 20).tolist()
    [3, 1, 0, 2]
    """
    keys = np.asarray(keys)
    if space <= 1 << 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    if space > 1 << 32:
        return np.argsort(keys, kind="stable")
    low = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((keys[low] >> 16).astype(np.uint16), kind="stable")]


def first_occurrence(keys: np.ndarray, space: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``keys`` in order of first appearance, and each key's position among them
    (``space``: a bound on the keys, ``[0, space)``, which allows a radix sort).

    >>> uniq, at = first_occurrence(np.array([7, 2, 7, 5, 2]))
    >>> uniq.tolist(), at.tolist()
    ([7, 2, 5], [0, 1, 0, 2, 1])
    """
    keys = np.asarray(keys).reshape(-1)
    n = len(keys)
    if n == 0:
        return keys.copy(), np.zeros(0, dtype=np.int64)
    order = (np.argsort(keys, kind="stable") if space is None
             else stable_argsort(keys, space))
    sorted_keys = keys[order]
    head = np.empty(n, dtype=bool)
    head[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=head[1:])
    first = order[head]                 # each key's first position (the sort is stable)
    run = np.cumsum(head) - 1           # each sorted entry's key, numbered by value
    is_first = np.zeros(n, dtype=bool)
    is_first[first] = True
    rank = np.cumsum(is_first) - 1      # numbering by first appearance
    at = np.empty(n, dtype=np.int64)
    at[order] = rank[first][run]
    return keys[is_first], at


def first_occurrence_grouped(group: np.ndarray, item: np.ndarray,
                             n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """`first_occurrence` of the keys ``(group, item)`` when ``group`` never falls (each
    group's keys are adjacent) and ``item`` is in ``[0, n_items)``: a mask of the first
    occurrences, and each key's position among them.

    A table of each item's first position per group, for as many groups at a time as
    keep it a few MB, replaces the sort (6x faster on the million keys of a level of
    the 131,072-GPU fabric's DAG walk).

    >>> first, at = first_occurrence_grouped(np.array([0, 0, 0, 1, 1]),
    ...                                      np.array([3, 1, 3, 3, 3]), 4)
    >>> first.tolist(), at.tolist()
    ([True, True, False, True, False], [0, 1, 0, 2, 2])
    """
    n = len(group)
    first = np.zeros(n, dtype=bool)
    at = np.empty(n, dtype=np.int64)
    if n == 0:
        return first, at
    # Groups per table: the table has at most a few slots per key.  Where keys are
    # sparse (the first hops of the 16k-GPU SuperPOD's DAGs: 16,384 keys over 512 x
    # 1,280 (route, switch) slots), a table of every slot was most of the time: a
    # 2.6 MB fill and its page faults, 1.4 ms, against 0.4 ms in batches of groups.
    # One table serves every batch (each resets the slots it set).
    t = current()
    size = min(t.grouped_table, max(t.grouped_min, 8 * n))
    per = max(1, size // max(n_items, 1))
    table = np.full(min(per, int(group[-1] - group[0]) + 1) * n_items, _UNSEEN, np.int32)
    # First group of each table, then one past the last group.
    base = np.arange(int(group[0]), int(group[-1]) + per + 1, per)
    bounds = np.searchsorted(group, base)
    position = np.arange(n, dtype=np.int32)
    seen = 0
    for g, a, b in zip(base[:-1].tolist(), bounds[:-1].tolist(), bounds[1:].tolist(),
                       strict=True):
        if a == b:
            continue
        key = (group[a:b] - g) * n_items + item[a:b]
        np.minimum.at(table, key, position[a:b])
        head = table[key]
        is_first = first[a:b]
        np.equal(head, position[a:b], out=is_first)
        rank = np.cumsum(is_first)
        at[a:b] = rank[head - a]
        at[a:b] += seen - 1
        seen += int(rank[-1])
        table[key] = _UNSEEN
    return first, at


_UNSEEN = np.iinfo(np.int32).max


def unique_inverse(keys: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for integer keys in ``[0, space)``; by
    marking a table instead of sorting when the space is small next to the number of
    keys (the inverse is int32 then).

    >>> uniq, inverse = unique_inverse(np.array([5, 2, 5]), 8)
    >>> uniq.tolist(), inverse.tolist()
    ([2, 5], [1, 0, 1])
    """
    keys = np.asarray(keys).reshape(-1)
    if space > max(1 << 16, 4 * len(keys)) or space > 1 << 25:
        if space > 1 << 32:
            uniq, inverse = np.unique(keys, return_inverse=True)
            return uniq.astype(np.int64, copy=False), inverse.reshape(-1)
        # By radix sort (`stable_argsort`): a third to a half of np.unique's time (the
        # 131,072-GPU ring's 131,072 transfers, by class of edge switches: 12 -> 4 ms).
        order = stable_argsort(keys, space)
        ordered = keys[order]
        head = run_heads(ordered)
        inverse = np.empty(len(keys), dtype=np.int64)
        inverse[order] = np.cumsum(head) - 1
        return ordered[head].astype(np.int64, copy=False), inverse
    seen = np.zeros(space, dtype=bool)
    seen[keys] = True
    uniq = np.flatnonzero(seen)
    lookup = np.zeros(space, dtype=np.int32)      # space <= 2**25: positions fit
    lookup[uniq] = np.arange(len(uniq))
    return uniq, lookup[keys]


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

    def entries(self) -> tuple[np.ndarray, np.ndarray] | PendingRows:
        """All entries, for a caller that writes them elsewhere: ``(arcs, weights)``
        (a `PendingBatch`: the `PendingRows` that write them)."""
        return self.arcs, self.weights

    def take(self, index: np.ndarray) -> RouteBatch:
        """The routes ``index`` (repeats allowed), in that order."""
        index = np.asarray(index)
        lengths = self.lengths[index]
        pos = _spans(self.ptr[index], lengths)
        return RouteBatch(_ptr(lengths), self.arcs[pos], self.weights[pos], self.hops[index])


@dataclass(frozen=True, eq=False)
class PendingBatch(RouteBatch):
    """A `RouteBatch` whose entries are not written yet: ``arcs`` and ``weights`` are
    None until ``rows`` (a `PendingRows` with the same row lengths) writes them."""

    rows: PendingRows | None = None

    def entries(self) -> PendingRows:
        return self.rows

    def done(self) -> RouteBatch:
        """The batch with its entries written into arrays of its own."""
        arcs, weights = self.rows.written()
        return RouteBatch(self.ptr, arcs, weights, self.hops)


def _spans(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """`ragged_arange`, by a 2-D broadcast when every length is the same (NVLink routes
    of domains built alike, single-arc rows): no running sum needed."""
    if len(lengths) and lengths.min() == lengths.max():
        width = int(lengths[0])
        return (np.asarray(starts, np.int64)[:, None] + np.arange(width)).reshape(-1)
    return ragged_arange(starts, lengths)


def _ptr(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def _single(arcs: np.ndarray) -> RouteBatch:
    """Route ``i`` is ``[arcs[i]]``, or empty where ``arcs[i]`` is -1."""
    arcs = np.asarray(arcs, dtype=np.int64)
    has = arcs >= 0
    return RouteBatch(_ptr(has.astype(np.int64)), arcs[has], np.ones(int(has.sum())),
                      np.zeros(len(arcs), dtype=np.int64))


def _scatter(batch: RouteBatch, rows: np.ndarray, n: int) -> RouteBatch:
    """``n`` routes: route ``rows[i]`` is ``batch.route(i)``, the others are empty."""
    lengths = np.zeros(n, dtype=np.int64)
    lengths[rows] = batch.lengths
    hops = np.zeros(n, dtype=np.int64)
    hops[rows] = batch.hops
    return RouteBatch(_ptr(lengths), batch.arcs, batch.weights, hops)


def _concat(parts: list[RouteBatch]) -> RouteBatch:
    """Route ``i`` is the routes ``i`` of ``parts`` one after another (same count each)."""
    full = [p for p in parts if len(p.arcs)]
    if len(full) == 1 and all(not p.hops.any() for p in parts if p is not full[0]):
        return full[0]          # the others are empty (a GPU's own PCIe link: no relay)
    rows = PendingRows.of([(p.ptr[:-1], p.lengths, p.arcs, p.weights) for p in parts])
    return RouteBatch(rows.ptr, *rows.written(), sum(p.hops for p in parts))


@dataclass(frozen=True, eq=False)
class PendingRows:
    """Rows made of pieces, with their row pointers, not yet written: part ``(starts,
    lengths, arcs, weights)`` gives row ``i`` the entries ``starts[i]:starts[i] +
    lengths[i]`` of ``arcs`` and ``weights``; row ``i`` is its pieces in the order of the
    parts (every part has a piece, maybe empty, per row).  Pieces may share entries (rows
    that repeat one shared middle).  The caller writes them once, into the array they end
    up in (a phase's table), instead of into a table of their own that is then copied.

    >>> rows = PendingRows.of([(np.array([0, 2]), np.array([2, 1]), np.arange(3),
    ...                         np.ones(3)),
    ...                        (np.array([0, 0]), np.array([1, 1]), np.array([9]),
    ...                         np.ones(1))])
    >>> rows.ptr.tolist(), rows.written()[0].tolist()
    ([0, 3, 5], [0, 1, 9, 2, 9])
    """

    ptr: np.ndarray
    parts: tuple

    @classmethod
    def of(cls, parts) -> PendingRows:
        return cls(_ptr(sum(np.asarray(length, np.int64) for _, length, _, _ in parts)),
                   tuple(parts))

    @property
    def size(self) -> int:
        """Entries in all."""
        return int(self.ptr[-1])

    @property
    def arcs_dtype(self) -> np.dtype:
        return np.result_type(*[a for _, _, a, _ in self.parts])

    def written(self) -> tuple[np.ndarray, np.ndarray]:
        """The entries, written into arrays of their own: ``(arcs, weights)``."""
        arcs = np.empty(self.size, self.arcs_dtype)
        weights = np.empty(self.size, np.result_type(*[w for _, _, _, w in self.parts]))
        self.write(arcs, weights)
        return arcs, weights

    def write(self, arcs: np.ndarray, weights: np.ndarray) -> None:
        """Write the rows' entries into ``arcs`` and ``weights`` (`size` long each).

        Long pieces are copied as slices, one memcpy each, where index arrays for them
        would be as large as the copy: for the shared middles of the 131,072-GPU ring's
        fabric DAGs (8,192 entries each, 2.4 million in all) building and following them
        took 0.25 s, the slices 0.02-0.1 s.  There are at most ``1 / Tuning.long_block`` as
        many long pieces as the entries they hold.  Short ones go through index arrays,
        all at once.
        """
        placed = self.ptr[:-1].copy()
        long_block = current().long_block
        for starts, length, src_arcs, src_weights in self.parts:
            long = length >= long_block
            for i in np.flatnonzero(long).tolist():
                d, s, m = int(placed[i]), int(starts[i]), int(length[i])
                arcs[d:d + m] = src_arcs[s:s + m]
                weights[d:d + m] = src_weights[s:s + m]
            short = ~long
            take = ragged_arange(starts[short], length[short])
            put = ragged_arange(placed[short], length[short])
            arcs[put], weights[put] = src_arcs[take], src_weights[take]
            placed += length


def _stack(parts: list[RouteBatch]) -> RouteBatch:
    """The routes of ``parts`` one table after another."""
    if not parts:
        return RouteBatch(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0),
                          np.zeros(0, np.int64))
    return RouteBatch(_ptr(np.concatenate([p.lengths for p in parts])),
                      np.concatenate([p.arcs for p in parts]),
                      np.concatenate([p.weights for p in parts]),
                      np.concatenate([p.hops for p in parts]))


# ----------------------------------------------------------------- DAG walks
def split_by_capacity(arcs: np.ndarray, lengths: np.ndarray, cap: np.ndarray) -> RouteBatch:
    """Rows of next-hop ``arcs`` (row ``i`` has ``lengths[i]`` of them), each row split in
    proportion to the arcs' capacity ``cap[arc]``, with the arithmetic of one row at a
    time (``cap[out] / cap[out].sum()``, see `segment_sums`)."""
    ptr = _ptr(lengths)
    c = cap[arcs]
    if len(lengths) and c.size == len(lengths) * int(lengths[0]) \
            and lengths.min() == lengths.max() > 0:
        # Rows of one length: the sums of a matrix's rows (the same pairwise sums as
        # `segment_sums`), no gather.
        rows = c.reshape(len(lengths), -1)
        return RouteBatch(ptr, arcs, (rows / rows.sum(axis=1, keepdims=True)).reshape(-1),
                          lengths)
    ratio = c / np.repeat(segment_sums(c, ptr[:-1], lengths), lengths)
    return RouteBatch(ptr, arcs, ratio, lengths)
