"""Values a snapshot derives from a design's columns, kept between snapshots.

The topology keeps its nodes and links as numpy columns (`designer.model.columns`) and
hands them out frozen.  Some values built from them cost milliseconds at 100,000 links
and rarely change between two edits: the node kinds as strings, the live links' ids,
the GPUs in natural order, the NVLink domains.  A `ColumnCache` per topology keeps each
one keyed by the identity of the frozen arrays it came from (a frozen array is the same
object from one freeze to the next while its content is the same), so a worker thread
may compute and store them while the GUI thread edits: a stale entry simply fails its
identity check.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from itertools import compress

import numpy as np

from designer.model.columns import FrozenColumns
from designer.model.naming import natural_key
from designer.model.topology import Topology

__all__ = ["ColumnCache", "LinkPositions", "cache_of", "positions"]



class LinkPositions(Mapping):
    """Read-only ``{link id: index among the live links}``: a dict over every link of
    the design (kept between snapshots) and each one's live index (-1: not live)."""

    __slots__ = ("_n", "_pos", "_rank")

    def __init__(self, pos: dict[str, int], rank: np.ndarray, n_live: int):
        self._pos, self._rank, self._n = pos, rank, n_live

    def __getitem__(self, link_id: str) -> int:
        k = int(self._rank[self._pos[link_id]])
        if k < 0:
            raise KeyError(link_id)
        return k

    def get(self, link_id, default=None):
        p = self._pos.get(link_id)
        if p is None:
            return default
        k = int(self._rank[p])
        return default if k < 0 else k

    def __contains__(self, link_id: object) -> bool:
        return self.get(link_id) is not None

    def __iter__(self):
        return (lid for lid, p in self._pos.items() if self._rank[p] >= 0)

    def __len__(self) -> int:
        return self._n


def positions(f: FrozenColumns, live: np.ndarray) -> LinkPositions:
    """`LinkPositions` of the live links (``live``: a bool per row of ``f``) over the
    columns' id -> row dict."""
    rank = np.cumsum(live, dtype=np.int64) - 1
    rank[~live] = -1
    return LinkPositions(f.link_pos, rank, int(rank[-1]) + 1 if len(rank) else 0)


class ColumnCache:
    """Values derived from one design's columns, kept between its snapshots (module
    docstring).  Use `cache_of`."""

    def __init__(self):
        # Each entry is keyed by the frozen inputs it came from.
        self._live: tuple | None = None
        self._gpu_order: tuple | None = None
        self._components: tuple | None = None
        self._derived: dict[str, tuple] = {}
        self._one_plane: tuple | None = None      # (plane, array of it for every arc)

    # ------------------------------------------------------------------ derived values
    # Any thread may call these with a view; each checks that its cache entry came from
    # the very arrays of that view (identity: frozen arrays are never written) and
    # replaces the entry in one assignment.

    def node_names(self, f: FrozenColumns) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(kind, model) of every node, as tuples."""
        return self.derived("names", (f.kind_of, f.model_of), lambda: (
            tuple(map(f.kind_names.__getitem__, f.kind_of.tolist())),
            tuple(map(f.model_names.__getitem__, f.model_of.tolist()))))

    def link_names(self, f: FrozenColumns, live: np.ndarray) -> tuple[tuple, np.ndarray,
                                                                       np.ndarray]:
        hit = self._live
        if (hit is None or hit[0] is not f.keys or hit[1] is not f.planes
                or not np.array_equal(hit[2], live)):
            n_live = int(np.count_nonzero(live))
            one = f.one_plane
            planes = None if one is not None else list(compress(f.planes, live))
            if one is None and len(set(planes)) <= 1:
                one = planes[0] if planes else ""
            # An object array, not a tuple: the cyclic garbage collector does not walk
            # an array's items, and a 200,000-item tuple costs each of its passes ~15 ms.
            if one is not None:  # one plane: no need to test every link
                # A view of one array filled for every link of the design, so that a
                # fail or restore does not fill 2 x 917,504 pointers again.
                full = self._one_plane
                if full is None or full[0] != one or len(full[1]) < 2 * len(f.keys):
                    arr = np.empty(2 * len(f.keys), dtype=object)
                    arr.fill(one)  # np.full is ~15x slower for objects
                    arr.setflags(write=False)
                    full = self._one_plane = (one, arr)
                arc_plane = full[1][:2 * n_live]
                compute = np.full(n_live, bool(n_live) and one == "compute")
            else:
                arc_plane = np.repeat(np.array(planes, dtype=object), 2)
                compute = np.fromiter(map("compute".__eq__, planes), bool, len(planes))
            hit = self._live = (f.keys, f.planes, live.copy(),
                                (tuple(compress(f.keys, live)), arc_plane, compute))
        return hit[3]

    def nvlink_components(self, f: FrozenColumns, nvlink: np.ndarray, compute) -> np.ndarray:
        hit = self._components
        if (hit is None or hit[0] is not f.a_idx or hit[1] is not f.node_ids
                or not np.array_equal(hit[2], nvlink)):
            comp = compute()
            comp.setflags(write=False)  # shared by the snapshots that reuse it
            hit = self._components = (f.a_idx, f.node_ids, nvlink.copy(), comp)
        return hit[3]

    def gpus_in_order(self, f: FrozenColumns, gpu_nodes: np.ndarray) -> np.ndarray:
        hit = self._gpu_order
        if hit is None or hit[0] is not f.node_ids or not np.array_equal(hit[1], gpu_nodes):
            names = [f.node_ids[i] for i in gpu_nodes.tolist()]
            order = gpu_nodes[_sorted_by_natural_key(names)].astype(np.int32)
            order.setflags(write=False)  # shared by the snapshots that reuse it
            hit = self._gpu_order = (f.node_ids, gpu_nodes.copy(), order)
        return hit[2]

    def derived(self, key: str, inputs: tuple, compute):
        """``compute()``, reused while every one of ``inputs`` is the very object it was
        computed from (frozen arrays, or values this cache handed out).  The result's
        arrays are made read-only: the snapshots that reuse them share them."""
        hit = self._derived.get(key)
        if hit is None or len(hit[0]) != len(inputs) or any(
                a is not b for a, b in zip(hit[0], inputs, strict=True)):
            value = compute()
            for v in value if isinstance(value, tuple) else (value,):
                if isinstance(v, np.ndarray):
                    v.setflags(write=False)
            hit = (inputs, value)
            self._derived[key] = hit
        return hit[1]


_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cache_of(topology: Topology) -> ColumnCache:
    """The `ColumnCache` of ``topology`` (made on first use)."""
    cache = _CACHES.get(topology)
    if cache is None:
        cache = _CACHES[topology] = ColumnCache()
    return cache


def _sorted_by_natural_key(ids: list[str]) -> np.ndarray:
    """Positions of ``ids`` in natural order (``gpu-2`` before ``gpu-10``).

    When every id has the same shape (the same text with digit runs of equal length, as
    template ids are zero-padded), plain string order is natural order and much cheaper:
    the shapes are compared as arrays of code points, digits masked.
    """
    if not ids:
        return np.zeros(0, dtype=np.int64)
    text = np.array(ids)                         # fixed-width unicode, zero-padded
    points = text.view(np.uint32).reshape(len(ids), -1)
    shape = np.where((points >= 48) & (points <= 57), 48, points)
    if (shape == shape[0]).all():
        return np.argsort(text, kind="stable")
    return np.array(sorted(range(len(ids)), key=lambda k: natural_key(ids[k])),
                    dtype=np.int64)
