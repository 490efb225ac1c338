"""Values a snapshot derives from a design's columns, kept between snapshots.

The topology keeps its nodes and links as numpy columns (`designer.model.columns`) and
hands them out frozen.  Some values built from them cost milliseconds at 100,000 links
and rarely change between two edits: the node kinds as strings, the links' planes,
the GPUs in natural order, the NVLink domains.  A `ColumnCache` per topology keeps each
one keyed by the identity of the frozen arrays it came from (a frozen array is the same
object from one freeze to the next while its content is the same), so a worker thread
may compute and store them while the GUI thread edits: a stale entry simply fails its
identity check.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from designer.model.columns import FrozenColumns
from designer.model.naming import natural_key
from designer.model.topology import Topology

__all__ = ["ColumnCache", "LinkPositions", "cache_of"]


class LinkPositions(Mapping):
    """Read-only ``{link id: index in the snapshot's link_ids}``: the columns' own dict,
    which is the same object from one snapshot to the next while no link is added or
    removed (a link's index is its row)."""

    __slots__ = ("_pos",)

    def __init__(self, pos: dict[str, int]):
        self._pos = pos

    def __getitem__(self, link_id: str) -> int:
        return self._pos[link_id]

    def get(self, link_id, default=None):
        return self._pos.get(link_id, default)

    def __contains__(self, link_id: object) -> bool:
        return link_id in self._pos

    def __iter__(self):
        return iter(self._pos)

    def __len__(self) -> int:
        return len(self._pos)


class ColumnCache:
    """Values derived from one design's columns, kept between its snapshots (module
    docstring).  Use `cache_of`."""

    def __init__(self):
        # Each entry is keyed by the frozen inputs it came from.
        self._gpu_order: tuple | None = None
        self._components: tuple | None = None
        self._derived: dict[str, tuple] = {}

    # ------------------------------------------------------------------ derived values
    # Any thread may call these with a view; each checks that its cache entry came from
    # the very arrays of that view (identity: frozen arrays are never written) and
    # replaces the entry in one assignment.

    def node_names(self, f: FrozenColumns) -> tuple[np.ndarray, np.ndarray]:
        """(kind, model) of every node, as read-only object arrays of the names.

        Arrays, not tuples: gathered from the names by code (a tuple is a Python call per
        node: 50 ms at 131,072 GPUs), and the cyclic garbage collector does not walk an
        array's items (see `arc_plane`)."""
        def names(table, codes):
            return np.array(list(table), dtype=object)[codes]
        return self.derived("names", (f.kind_of, f.model_of), lambda: (
            names(f.kind_names, f.kind_of), names(f.model_names, f.model_of)))

    def arc_plane(self, f: FrozenColumns) -> np.ndarray:
        """The plane of every arc (an object array: the cyclic garbage collector does not
        walk an array's items, and a 200,000-item tuple costs each of its passes ~15 ms)."""
        def compute():
            one = _one_plane(f)
            if one is not None:  # one plane: no need to read every link's
                arc_plane = np.empty(2 * len(f.keys), dtype=object)
                arc_plane.fill(one)  # np.full is ~15x slower for objects
                return arc_plane
            return np.repeat(np.array(f.planes, dtype=object), 2)
        return self.derived("arc planes", (f.keys, f.planes), compute)

    def link_compute(self, f: FrozenColumns) -> np.ndarray:
        """Whether each link is on the compute plane."""
        def compute():
            one = _one_plane(f)
            if one is not None:  # one plane: no need to test every link
                return np.full(len(f.keys), one == "compute")
            return np.fromiter(map("compute".__eq__, f.planes), bool, len(f.keys))
        return self.derived("compute links", (f.keys, f.planes), compute)

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
            if f.gpus_in_order:   # the columns kept track: rows are natural order
                order = gpu_nodes.astype(np.int32)
            else:
                at = gpu_nodes.tolist()
                # One pass over the names (each a Python string: the pass is what costs,
                # ~100 ns a name) to one text, which settles same-shaped ids.
                pos = _same_shape_order("\0".join(map(f.node_ids.__getitem__, at)), len(at))
                if pos is None:
                    pos = _sorted_by_natural_key(list(map(f.node_ids.__getitem__, at)))
                order = gpu_nodes[pos].astype(np.int32)
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


def _same_shape_order(joined: str, n: int) -> np.ndarray | None:
    """`_sorted_by_natural_key` of ``n`` ids joined by NULs, when they are ASCII ids of
    one length and one shape (template ids); None otherwise.

    Reading the ids as rows of one block of bytes needs every id to be ``width`` long:
    with a NUL after each, the block has ``n`` rows of ``width + 1`` bytes exactly when
    its only NULs (ids have none) end the rows.
    """
    if not n or not joined.isascii():
        return None
    row, rest = divmod(len(joined) + 1, n)
    if rest or row < 2:
        return None
    raw = np.frombuffer(joined.encode("ascii") + b"\0", dtype=np.uint8).reshape(n, row)
    if np.count_nonzero(raw == 0) != n or np.any(raw[:, -1]):
        return None
    raw = raw[:, :-1]
    digit = (raw >= 48) & (raw <= 57)
    if not (np.array_equal(digit, np.broadcast_to(digit[0], digit.shape))
            and (raw[:, ~digit[0]] == raw[0, ~digit[0]]).all()):
        return None
    # Byte order is code point order.
    text = np.ascontiguousarray(raw).reshape(-1).view(f"S{row - 1}")
    if bool(np.all(text[1:] >= text[:-1])):
        return np.arange(n)
    return np.argsort(text, kind="stable")


def _one_plane(f: FrozenColumns) -> str | None:
    """The plane every link is on, if they share one (None: several)."""
    one = f.one_plane
    if one is None and len(set(f.planes)) <= 1:
        one = f.planes[0] if f.planes else ""
    return one


@dataclass(frozen=True, eq=False)
class NameSource:
    """Where a snapshot reads its names on first use: the design's frozen columns,
    through their cache (so the snapshots of one design share the arrays, and a cold
    snapshot makes none of them)."""

    cache: ColumnCache
    columns: FrozenColumns

    def node_names(self) -> tuple[np.ndarray, np.ndarray]:
        return self.cache.node_names(self.columns)

    def arc_plane(self) -> np.ndarray:
        return self.cache.arc_plane(self.columns)


_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cache_of(topology: Topology) -> ColumnCache:
    """The `ColumnCache` of ``topology`` (made on first use)."""
    cache = _CACHES.get(topology)
    if cache is None:
        cache = _CACHES[topology] = ColumnCache()
    return cache


def _sorted_by_natural_key(ids: Sequence[str]) -> np.ndarray:
    """Positions of ``ids`` in natural order (``gpu-2`` before ``gpu-10``).

    When every id has the same shape (the same text with digit runs of equal length, as
    template ids are zero-padded), plain string order is natural order and much cheaper:
    the shapes are compared as arrays of code points, digits masked.  ASCII ids of one
    length (every template's) are read as one block of bytes, and ids already in order
    (as a template adds them) need no sort at all.
    """
    n = len(ids)
    if not n:
        return np.zeros(0, dtype=np.int64)
    same = _same_shape_order("\0".join(ids), n)
    if same is not None:
        return same
    text = np.array(ids)                         # fixed-width unicode, zero-padded
    points = text.view(np.uint32).reshape(n, -1)
    shape = np.where((points >= 48) & (points <= 57), 48, points)
    if (shape == shape[0]).all():
        return np.argsort(text, kind="stable")
    return np.array(sorted(range(n), key=lambda k: natural_key(ids[k])), dtype=np.int64)
