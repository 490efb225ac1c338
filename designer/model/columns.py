"""The design's nodes and links as numpy columns, kept by the `Topology` as it changes.

Every snapshot the solver takes needs the design as arrays.  Reading them out of the
networkx graph is a Python loop over every node's and edge's attribute dict: ~0.5 s for
the 114,688 links of a 16,384-GPU SuperPOD, paid on the GUI thread by the first solve of
every design opened.  So the topology writes its columns as it is edited, at the cost
of a few array writes per edit: adding a node or link appends a row (O(1), to lists
written into the arrays by the next read or `DesignColumns.flush`), an update writes its
cells, and a removal marks its row gone; gone rows are dropped, in
order, by the next `DesignColumns.freeze`.

`freeze` hands the current columns to another thread as an immutable `FrozenColumns`,
in O(1) unless rows were removed since the last one: the arrays and containers are
shared, and the first write after a freeze copies what it writes to (copy on write).
Appending does not copy an array: a frozen array is a view of the rows that existed at
the freeze, and an append writes past them.

Rows are in insertion order, that of `Topology.nodes` and `Topology.links`.

Example
-------
>>> cols = DesignColumns()
>>> cols.add_node("g0", "gpu", "H100", False)
>>> cols.add_node("s0", "nvswitch", "NVSwitch-gen3", False)
>>> cols.add_link("l0", "g0", "s0", "nvlink4", 5, "compute", False)
>>> f = cols.freeze()
>>> f.node_ids, f.a_idx.tolist(), f.b_idx.tolist(), f.counts.tolist()
(('g0', 's0'), [0], [1], [5.0])
>>> cols.update_link("l0", "nvlink4", 9, "compute", False)
>>> f.counts.tolist(), cols.freeze().counts.tolist()     # the frozen view is unchanged
([5.0], [9.0])
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat

import numpy as np

from designer.model.naming import natural_key

__all__ = ["DesignColumns", "FrozenColumns"]


@dataclass(frozen=True, eq=False)
class FrozenColumns:
    """One moment of a `DesignColumns`: arrays and containers nobody writes any more.

    Node columns are indexed like ``node_ids``, link columns like ``keys``; ``*_of``
    arrays hold codes into the matching ``*_names`` tuples.  An array, tuple or list is
    the very object of the previous freeze while its content is the same, so values
    derived from it can be cached by identity.
    """

    node_ids: tuple[str, ...]
    kind_names: tuple[str, ...]
    kind_of: np.ndarray
    model_names: tuple[str, ...]
    model_of: np.ndarray
    node_failed: np.ndarray
    keys: list[str]
    a_idx: np.ndarray
    b_idx: np.ndarray
    tech_names: tuple[str, ...]
    tech_of: np.ndarray
    counts: np.ndarray
    planes: list[str]
    one_plane: str | None          # the plane of every link when they share one
    link_failed: np.ndarray
    link_pos: dict[str, int]       # link id -> row
    gpus_in_order: bool = False    # the GPU rows are in natural order of their ids


class _Column:
    """A growable numpy column: O(1) appends (to a list, written into the array by the
    next read or `flush`), O(1) read-only views, copy on write for cells a view shares."""

    __slots__ = ("_view", "buf", "n", "pending", "shared")

    def __init__(self, dtype, values: np.ndarray | None = None):
        self.buf = np.zeros(16, dtype) if values is None else np.array(values, dtype)
        self.n = 0 if values is None else len(self.buf)
        self.pending: list = []
        self.shared = False
        self._view: np.ndarray | None = None

    def append(self, value) -> None:
        # A list append: a numpy scalar write costs ~5x more, ~0.8 s of opening a
        # 114,688-link design.
        self.pending.append(value)

    def flush(self) -> None:
        """Write the pending appends into the array (past every view's rows: no copy)."""
        if not self.pending:
            return
        m = self.n + len(self.pending)
        if m > len(self.buf):
            grown = np.zeros(max(16, 2 * m), self.buf.dtype)
            grown[:self.n] = self.buf[:self.n]
            self.buf, self.shared = grown, False
        self.buf[self.n:m] = self.pending
        self.n, self.pending, self._view = m, [], None

    def set(self, i: int, value) -> bool:
        """``column[i] = value``; whether it changed anything."""
        self.flush()
        if self.buf[i] == value:
            return False
        if self.shared:
            self.buf, self.shared = self.buf.copy(), False
        self.buf[i] = value
        self._view = None
        return True

    def kept(self, keep: np.ndarray) -> _Column:
        """A new column of the rows where ``keep`` holds, in order."""
        return _Column(self.buf.dtype, self.view()[keep])

    def view(self) -> np.ndarray:
        """The rows as a read-only array, the same object until the column changes."""
        self.flush()
        if self._view is None:
            v = self.buf[:self.n]
            v.setflags(write=False)
            self._view = v
        self.shared = True
        return self._view


class _Codes:
    """Distinct names in first-seen order, and a name's code."""

    __slots__ = ("_tuple", "code", "names")

    def __init__(self):
        self.names: list[str] = []
        self.code: dict[str, int] = {}
        self._tuple: tuple[str, ...] = ()

    def __call__(self, name: str) -> int:
        c = self.code.get(name)
        if c is None:
            c = self.code[name] = len(self.names)
            self.names.append(name)
        return c

    def frozen(self) -> tuple[str, ...]:
        if len(self._tuple) != len(self.names):
            self._tuple = tuple(self.names)
        return self._tuple


class DesignColumns:
    """Nodes and links of one design as columns, written by `Topology` (module
    docstring).  `freeze` gives the current state to read."""

    # The numpy columns of each kind of row, and the Python containers a freeze shares.
    _NODE_COLUMNS = ("kind_of", "model_of", "node_failed", "node_gone")
    _LINK_COLUMNS = ("a_idx", "b_idx", "tech_of", "counts", "link_failed", "link_gone")
    _NODE_SHARED = ("node_ids", "node_row")
    _LINK_SHARED = ("keys", "link_pos", "planes")

    def __init__(self):
        self.kinds, self.models, self.techs = _Codes(), _Codes(), _Codes()
        self.node_ids: list[str] = []
        self.node_row: dict[str, int] = {}
        self.kind_of, self.model_of = _Column(np.int64), _Column(np.int64)
        self.node_failed, self.node_gone = _Column(bool), _Column(bool)
        self.keys: list[str] = []
        self.link_pos: dict[str, int] = {}
        self.a_idx, self.b_idx = _Column(np.int64), _Column(np.int64)
        self.tech_of, self.counts = _Column(np.int64), _Column(float)
        self.planes: list[str] = []
        self.plane_count: dict[str, int] = {}     # live links per plane
        self.link_failed, self.link_gone = _Column(bool), _Column(bool)
        self.n_gone = 0                           # gone rows (nodes and links)
        # Whether the GPU rows are in natural order of their ids (`naming.natural_key`),
        # as a template or a saved file adds them: the solver then numbers the GPUs in
        # row order without reading a name (`design_columns.ColumnCache.gpus_in_order`).
        # Removing rows keeps it; a GPU added out of order, or a node turned into a GPU,
        # ends it.
        self.gpus_in_order = True
        self._last_gpu_key: tuple | None = None
        # Python containers a freeze shares, copied before their next write.
        self._shared: set[str] = set()
        self._node_tuple: tuple[str, ...] = ()

    def _own(self, name: str):
        """The container ``name``, copied first if a frozen view shares it."""
        if name in self._shared:
            self._shared.discard(name)
            setattr(self, name, getattr(self, name).copy())
        return getattr(self, name)

    def _own_all(self, names: tuple[str, ...]) -> None:
        for name in names:
            self._own(name)

    # ------------------------------------------------------------------ nodes
    def add_node(self, node_id: str, kind: str, model: str, failed: bool) -> None:
        # Bulk loads add a node or link every few microseconds: no copy checks unless a
        # freeze shares something.
        if self._shared:
            self._own_all(self._NODE_SHARED)
        self.node_row[node_id] = len(self.node_ids)
        self.node_ids.append(node_id)
        self.kind_of.append(self.kinds(kind))
        self.model_of.append(self.models(model))
        self.node_failed.append(failed)
        self.node_gone.append(False)
        if kind == "gpu" and self.gpus_in_order:
            key = natural_key(node_id)
            if self._last_gpu_key is not None and key < self._last_gpu_key:
                self.gpus_in_order = False
            self._last_gpu_key = key

    def extend_nodes(self, ids: list[str], kinds: list[str], models: list[str],
                     failed: list[bool]) -> None:
        """`add_node` for each row of these columns, in order, at list speed."""
        if self._shared:
            self._own_all(self._NODE_SHARED)
        first = len(self.node_ids)
        self.node_row.update(zip(ids, range(first, first + len(ids)), strict=True))
        self.node_ids.extend(ids)
        self.kind_of.pending.extend(_coded(self.kinds, kinds))
        self.model_of.pending.extend(_coded(self.models, models))
        self.node_failed.pending.extend(failed)
        self.node_gone.pending.extend([False] * len(ids))
        if self.gpus_in_order:
            gpu_ids = list(compress(ids, map(operator.eq, kinds, repeat("gpu"))))
            if gpu_ids:
                last = self._last_gpu_key
                if (last is not None and natural_key(gpu_ids[0]) < last) or not in_natural_order(
                    gpu_ids
                ):
                    self.gpus_in_order = False
                self._last_gpu_key = natural_key(gpu_ids[-1])

    def update_node(self, node_id: str, kind: str, model: str, failed: bool) -> None:
        i = self.node_row[node_id]
        if self.kind_of.set(i, self.kinds(kind)) and kind == "gpu":
            self.gpus_in_order = False          # a GPU now, wherever its row is
        self.model_of.set(i, self.models(model))
        self.node_failed.set(i, failed)

    def remove_node(self, node_id: str) -> None:
        """Mark the node gone (its links must be removed first)."""
        self.node_gone.set(self._own("node_row").pop(node_id), True)
        self.n_gone += 1

    # ------------------------------------------------------------------ links
    def add_link(self, link_id: str, a: str, b: str, tech: str, count: int, plane: str,
                 failed: bool) -> None:
        if self._shared:
            self._own_all(self._LINK_SHARED)
        self.link_pos[link_id] = len(self.keys)
        self.keys.append(link_id)
        self.a_idx.append(self.node_row[a])
        self.b_idx.append(self.node_row[b])
        self.tech_of.append(self.techs(tech))
        self.counts.append(count)
        self.planes.append(plane)
        self.plane_count[plane] = self.plane_count.get(plane, 0) + 1
        self.link_failed.append(failed)
        self.link_gone.append(False)

    def extend_links(self, ids: list[str], a: list[str], b: list[str], techs: list[str],
                     counts: list[int], planes: list[str], failed: list[bool],
                     rows: tuple[Sequence[int], Sequence[int], int] | None = None) -> None:
        """`add_link` for each row of these columns, in order, at list speed (``rows``:
        the ends' node rows, as places from a first row, when the caller knows them)."""
        if self._shared:
            self._own_all(self._LINK_SHARED)
        first = len(self.keys)
        self.link_pos.update(zip(ids, range(first, first + len(ids)), strict=True))
        self.keys.extend(ids)
        if rows is None:
            row = self.node_row.__getitem__
            self.a_idx.pending.extend(map(row, a))
            self.b_idx.pending.extend(map(row, b))
        else:
            a_at, b_at, first = rows
            self.a_idx.pending.extend(map(first.__add__, a_at))
            self.b_idx.pending.extend(map(first.__add__, b_at))
        self.tech_of.pending.extend(_coded(self.techs, techs))
        self.counts.pending.extend(counts)
        self.planes.extend(planes)
        for plane in set(planes):
            self.plane_count[plane] = self.plane_count.get(plane, 0) + planes.count(plane)
        self.link_failed.pending.extend(failed)
        self.link_gone.pending.extend([False] * len(ids))

    def update_link(self, link_id: str, tech: str, count: int, plane: str,
                    failed: bool) -> None:
        k = self.link_pos[link_id]
        self.tech_of.set(k, self.techs(tech))
        self.counts.set(k, count)
        old = self.planes[k]
        if old != plane:
            self._own("planes")[k] = plane
            self._count_plane(old, -1)
            self._count_plane(plane, 1)
        self.link_failed.set(k, failed)

    def remove_link(self, link_id: str) -> None:
        k = self._own("link_pos").pop(link_id)
        self.link_gone.set(k, True)
        self._count_plane(self.planes[k], -1)
        self.n_gone += 1

    def _count_plane(self, plane: str, step: int) -> None:
        counts = self.plane_count
        n = counts.get(plane, 0) + step
        if n:
            counts[plane] = n
        else:
            del counts[plane]

    # ------------------------------------------------------------------ reading
    def flush(self) -> None:
        """Write pending appends into the arrays (`Topology` calls it after a bulk add, so
        that the first snapshot does not pay for a whole design's rows)."""
        for name in self._NODE_COLUMNS + self._LINK_COLUMNS:
            getattr(self, name).flush()

    def freeze(self) -> FrozenColumns:
        """The current columns, immutable from now on: O(1) (the containers are shared
        and copied by their next write) unless rows were removed since the last freeze
        (then they are dropped first, in O(rows))."""
        if self.n_gone:
            self._compact()
        if "node_ids" not in self._shared:  # written (or compacted) since the last freeze
            self._node_tuple = tuple(self.node_ids)
        self._shared = set(self._NODE_SHARED + self._LINK_SHARED)
        planes = self.plane_count
        return FrozenColumns(
            node_ids=self._node_tuple,
            kind_names=self.kinds.frozen(), kind_of=self.kind_of.view(),
            model_names=self.models.frozen(), model_of=self.model_of.view(),
            node_failed=self.node_failed.view(),
            keys=self.keys, a_idx=self.a_idx.view(), b_idx=self.b_idx.view(),
            tech_names=self.techs.frozen(), tech_of=self.tech_of.view(),
            counts=self.counts.view(), planes=self.planes,
            one_plane=next(iter(planes)) if len(planes) == 1 else None,
            link_failed=self.link_failed.view(), link_pos=self.link_pos,
            gpus_in_order=self.gpus_in_order)

    def _compact(self) -> None:
        """Drop the gone rows, keeping the order of the others."""
        keep_n = ~self.node_gone.view()
        keep_l = ~self.link_gone.view()
        new_row = np.cumsum(keep_n) - 1
        for names, keep in ((self._NODE_COLUMNS, keep_n), (self._LINK_COLUMNS, keep_l)):
            for name in names:
                setattr(self, name, getattr(self, name).kept(keep))
        # Links now point at the nodes' new rows.
        self.a_idx = _Column(np.int64, new_row[self.a_idx.view()])
        self.b_idx = _Column(np.int64, new_row[self.b_idx.view()])
        self.node_ids = list(compress(self.node_ids, keep_n))
        self.node_row = dict(zip(self.node_ids, range(len(self.node_ids)), strict=True))
        self.keys = list(compress(self.keys, keep_l))
        self.planes = list(compress(self.planes, keep_l))
        self.link_pos = dict(zip(self.keys, range(len(self.keys)), strict=True))
        self._shared = set()
        self.n_gone = 0


def _coded(codes: _Codes, names: list[str]) -> list[int]:
    """The code of each of ``names`` (a design has few distinct ones: one lookup each)."""
    code = {name: codes(name) for name in dict.fromkeys(names)}
    return list(map(code.__getitem__, names))


def in_natural_order(ids: list[str]) -> bool:
    """Whether ``ids`` ascend (or stay) by `natural_key`, without a key per id for
    ASCII ids.

    Each neighbouring pair is compared at the first byte where they differ, over a
    byte matrix of the ids: outside a digit run the bytes decide; inside one, the runs'
    lengths decide (when neither starts with 0), then the bytes.  Pairs that need more
    (a leading zero, non-ASCII text) are compared by their natural keys.

    Examples
    --------
    >>> in_natural_order(["g2", "g10", "h1"]), in_natural_order(["g10", "g2"])
    (True, False)
    """
    if len(ids) < 2:
        return True
    try:
        text = np.array(ids, dtype=bytes)
    except UnicodeEncodeError:
        return _pairs_in_order(ids, range(1, len(ids)))
    width = text.dtype.itemsize
    m = np.frombuffer(text.tobytes(), dtype=np.uint8).reshape(len(ids), width)
    m = np.concatenate([m, np.zeros((len(ids), 1), np.uint8)], axis=1)  # an end byte
    a, b = m[:-1], m[1:]
    differ = a != b
    equal = ~differ.any(axis=1)  # (equal ids are in order, as their keys are)
    p = differ.argmax(axis=1)
    rows = np.arange(len(p))
    ca, cb = a[rows, p], b[rows, p]
    digit = (m >= 48) & (m <= 57)
    da, db = digit[:-1], digit[1:]
    # The digit run around p: where it starts (shared by both) and where each ends.
    col = np.arange(m.shape[1])
    last_other = np.maximum.accumulate(np.where(digit, -1, col), axis=1)
    start = np.where(p > 0, last_other[:-1][rows, np.maximum(p - 1, 0)] + 1, 0)
    dig_a, dig_b = da[rows, p], db[rows, p]
    # A digit run at p in both (begun before p, or at p in both): compare numbers.
    in_run = (start < p) | (dig_a & dig_b)
    end_a = _next_other(da, p, col)
    end_b = _next_other(db, p, col)
    len_a, len_b = end_a - start, end_b - start
    at = np.minimum(start, width)
    zero = (a[rows, at] == 48) | (b[rows, at] == 48)
    ok = np.where(in_run & (len_a != len_b), len_a < len_b, ca < cb)
    # A run begins at p in one only: that one's text part ends there, so it comes
    # first, unless the other id ends there too.
    one = ~in_run & (dig_a != dig_b)
    ok = np.where(one, np.where(dig_a, cb != 0, ca == 0), ok)
    ok |= equal
    sure = ~in_run | (len_a == len_b) | ~zero | equal
    if not ok[sure].all():
        return False
    return _pairs_in_order(ids, (np.flatnonzero(~sure) + 1).tolist())


def _next_other(digit: np.ndarray, p: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Per row, the first column at or after ``p`` that is not a digit."""
    width = digit.shape[1]
    next_other = np.minimum.accumulate(np.where(digit, width, col)[:, ::-1], axis=1)[:, ::-1]
    return next_other[np.arange(len(p)), p]


def _pairs_in_order(ids: list[str], at) -> bool:
    return all(natural_key(ids[k - 1]) < natural_key(ids[k]) for k in at)


_ASCII_DIGITS = "0123456789"
