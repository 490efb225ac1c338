"""Array building blocks of routing: routes as (arcs, weights) batches, ragged ranges,
segment sums and the seeded ECMP hash.  Pure numpy, shared by `routing` and
`route_tables`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    ``access_up`` / ``access_down`` hold each rank's weighted route to and from its NIC
    (one PCIe arc, or PXN / host relays; ``hops`` unused).  ``leaf`` is the far end of
    the NIC's cable (an edge switch, or the NIC of a server cabled back to back), and
    ``leaf_code`` numbers the distinct leaves of all ranks 0..L-1 (``leaves``).
    """

    gpu: np.ndarray
    nic: np.ndarray
    access_up: RouteBatch    # GPU -> NIC
    up: np.ndarray           # NIC -> edge switch
    access_down: RouteBatch  # NIC -> GPU
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
    lengths = np.stack([p.lengths for p in parts], axis=1)       # (routes, parts)
    ptr = _ptr(lengths.sum(axis=1))
    pool_at = np.cumsum([0] + [len(p.arcs) for p in parts[:-1]])
    starts = np.stack([p.ptr[:-1] + at for p, at in zip(parts, pool_at, strict=True)], axis=1)
    pick = ragged_arange(starts.reshape(-1), lengths.reshape(-1))
    arcs = np.concatenate([p.arcs for p in parts])[pick]
    weights = np.concatenate([p.weights for p in parts])[pick]
    return RouteBatch(ptr, arcs, weights, sum(p.hops for p in parts))


def _batch(routes: list[Route], hops: list[int]) -> RouteBatch:
    lengths = np.array([len(a) for a, _ in routes], dtype=np.int64)
    arcs = np.concatenate([a for a, _ in routes]) if routes else np.zeros(0, np.int64)
    weights = np.concatenate([w for _, w in routes]) if routes else np.zeros(0)
    return RouteBatch(_ptr(lengths), arcs.astype(np.int64), weights.astype(float),
                      np.asarray(hops, dtype=np.int64))


# ----------------------------------------------------------------- subgraphs
