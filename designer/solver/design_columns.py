"""A topology's nodes and links as columns, kept between snapshots and frozen on demand.

Reading a big graph node by node and link by link is most of a snapshot's cost (0.4 s
for 114,688 links), so `DesignColumns` reads it once per topology and then follows the
topology's change events: a changed node or link (failed, count, tech...) is patched in
place; an added or removed one makes the next use read the whole graph again.

The GUI takes a snapshot after every edit and solves it on a worker thread.  So that
the GUI thread only pays for a capture, `DesignColumns.freeze` hands out the current
columns as an immutable `FrozenColumns` in O(1): the arrays are shared, and the first
patch after a freeze copies them before it writes (copy on write), so a frozen view
never changes under the thread that reads it.  Values derived from the columns (the
live links' ids, GPUs in natural order...) are cached on the `DesignColumns` keyed by
the identity of the frozen arrays they came from, so a worker may compute and store
them while the GUI thread patches: a stale entry simply fails its identity check.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import compress

import numpy as np

from designer.model.naming import natural_key
from designer.model.topology import Topology

__all__ = ["DesignColumns", "FrozenColumns", "LinkPositions", "columns_of"]

_LINK_FIELDS = operator.itemgetter("a", "b", "tech", "count", "plane", "failed")
_DIGITS_TO_ZERO = str.maketrans("123456789", "000000000")


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


@dataclass(frozen=True, eq=False)
class FrozenColumns:
    """One moment of a `DesignColumns`: arrays nobody writes any more.

    Node columns are indexed like ``node_ids``, link columns like ``keys`` (``g.edges``
    order).  ``*_of`` arrays hold codes into the matching ``*_names`` lists.
    """

    owner: DesignColumns
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
    one_plane: str | None
    link_failed: np.ndarray
    link_pos: dict[str, int]

    def node_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(kind, model) of every node, as tuples."""
        return self.owner.node_names(self)

    def link_names(self, live: np.ndarray) -> tuple[tuple, np.ndarray, np.ndarray]:
        """Ids of the live links, the plane of each of their arcs, and per live link
        whether it is on the compute plane."""
        return self.owner.link_names(self, live)

    def positions(self, live: np.ndarray) -> LinkPositions:
        """`LinkPositions` of the live links over the kept id -> position dict."""
        rank = np.cumsum(live, dtype=np.int64) - 1
        rank[~live] = -1
        return LinkPositions(self.link_pos, rank, int(rank[-1]) + 1 if len(rank) else 0)

    def gpus_in_order(self, gpu_nodes: np.ndarray) -> np.ndarray:
        """``gpu_nodes`` (node indices) sorted by natural id order."""
        return self.owner.gpus_in_order(self, gpu_nodes)

    def nvlink_components(self, nvlink: np.ndarray, compute) -> np.ndarray:
        """``compute()`` (the components over the live NVLink links, a bool per link in
        ``nvlink``), reused while those links are the same."""
        return self.owner.nvlink_components(self, nvlink, compute)


class DesignColumns:
    """One topology's nodes and links as columns, patched from its events (module
    docstring).  Use `columns_of`; `freeze` gives the current state to read."""

    # Arrays the event handlers write in place, copied first while a freeze shares them.
    _WRITTEN = frozenset({"kind_of", "model_of", "node_failed", "tech_of", "counts",
                          "link_failed"})

    def __init__(self, topology: Topology):
        self.stale = True
        self._shared: set[str] = set()
        for signal in (topology.node_added, topology.node_removed, topology.link_added,
                       topology.link_removed):
            signal.connect(self._on_structure_changed)
        topology.node_changed.connect(self._on_node_changed)
        topology.link_changed.connect(self._on_link_changed)
        # Derived values, each keyed by the frozen inputs it came from (see `freeze`).
        self._names: tuple | None = None
        self._live: tuple | None = None
        self._gpu_order: tuple | None = None
        self._components: tuple | None = None

    # ------------------------------------------------------------------ events
    def _on_structure_changed(self, *_) -> None:
        self.stale = True

    def _set(self, name: str, i: int, value) -> None:
        """``self.<name>[i] = value``, copying the array first if a frozen view shares
        it.  Unchanged values are not written, so a what-if that only fails a link does
        not invalidate what was derived from the node kinds."""
        arr = getattr(self, name)
        if arr[i] == value:
            return
        if name in self._shared:
            self._shared.discard(name)
            arr = arr.copy()
            setattr(self, name, arr)
        arr[i] = value

    def _on_node_changed(self, old, new) -> None:
        if not self.stale:
            i = self.index[new.id]
            self._set("kind_of", i, _code(self.kind_names, new.kind))
            self._set("model_of", i, _code(self.model_names, new.model))
            self._set("node_failed", i, new.failed)

    def _on_link_changed(self, old, new) -> None:
        if not self.stale:
            k = self.link_pos[new.id]
            self._set("tech_of", k, _code(self.tech_names, new.tech))
            self._set("counts", k, new.count)
            if self.planes[k] != new.plane:  # rare: a new list rather than copy on write
                self.planes = self.planes.copy()
                self.planes[k] = new.plane
                self.one_plane = None
            self._set("link_failed", k, new.failed)

    # ------------------------------------------------------------------ reading
    def read(self, g) -> None:
        """Read every node and link of ``g`` (a topology's graph)."""
        node_items = list(g.nodes(data=True))
        self.node_ids = tuple(map(operator.itemgetter(0), node_items))
        attrs = list(map(operator.itemgetter(1), node_items))
        self.index = {nid: i for i, nid in enumerate(self.node_ids)}
        n = len(self.node_ids)
        self.kind_names, self.kind_of = _codes(list(map(operator.itemgetter("kind"), attrs)))
        self.model_names, self.model_of = _codes(list(map(operator.itemgetter("model"),
                                                          attrs)))
        self.node_failed = np.fromiter(map(operator.itemgetter("failed"), attrs), bool, n)
        self.keys, rows = _link_rows(g)
        if rows:
            a_ids, b_ids, techs, counts, planes, failed = zip(*rows, strict=True)
        else:
            a_ids = b_ids = techs = counts = planes = failed = ()
        m = len(rows)
        self.a_idx = np.fromiter(map(self.index.__getitem__, a_ids), np.int64, m)
        self.b_idx = np.fromiter(map(self.index.__getitem__, b_ids), np.int64, m)
        self.tech_names, self.tech_of = _codes(techs)
        self.counts = np.fromiter(counts, float, m)
        self.planes = list(planes)
        # The plane of every link when they share one (the usual case), else None.
        self.one_plane = planes[0] if m and len(set(planes)) == 1 else None
        self.link_failed = np.fromiter(failed, bool, m)
        # Built now, with the read, not at the first edit: the GUI edits right after
        # opening, and this is ~20 ms on 100,000 links.
        self.link_pos: dict[str, int] = dict(zip(self.keys, range(m), strict=True))
        self._shared = set()
        self.stale = False

    def freeze(self) -> FrozenColumns:
        """The current columns, immutable from now on: O(1), the arrays are shared and
        the next patch copies them first."""
        self._shared = set(self._WRITTEN)
        return FrozenColumns(
            owner=self, node_ids=self.node_ids,
            kind_names=tuple(self.kind_names), kind_of=self.kind_of,
            model_names=tuple(self.model_names), model_of=self.model_of,
            node_failed=self.node_failed, keys=self.keys, a_idx=self.a_idx, b_idx=self.b_idx,
            tech_names=tuple(self.tech_names), tech_of=self.tech_of, counts=self.counts,
            planes=self.planes, one_plane=self.one_plane, link_failed=self.link_failed,
            link_pos=self.link_pos)

    # ------------------------------------------------------------------ derived values
    # Any thread may call these with a view; each checks that its cache entry came from
    # the very arrays of that view (identity: frozen arrays are never written) and
    # replaces the entry in one assignment.

    def node_names(self, f: FrozenColumns) -> tuple[tuple[str, ...], tuple[str, ...]]:
        hit = self._names
        if hit is None or hit[0] is not f.kind_of or hit[1] is not f.model_of:
            names = (tuple(map(f.kind_names.__getitem__, f.kind_of.tolist())),
                     tuple(map(f.model_names.__getitem__, f.model_of.tolist())))
            hit = self._names = (f.kind_of, f.model_of, names)
        return hit[2]

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
                arc_plane = np.empty(2 * n_live, dtype=object)
                arc_plane.fill(one)  # np.full is ~15x slower for objects
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
            hit = self._gpu_order = (f.node_ids, gpu_nodes.copy(),
                                     gpu_nodes[_sorted_by_natural_key(names)])
        return hit[2]


_COLUMNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def columns_of(topology: Topology) -> DesignColumns:
    """The topology's columns, read now if they are not current.  Call it on the thread
    that edits the topology (it reads the live graph)."""
    cols = _COLUMNS.get(topology)
    if cols is None:
        cols = _COLUMNS[topology] = DesignColumns(topology)
    if cols.stale:
        cols.read(topology.graph)
    return cols


def _link_rows(g) -> tuple[list[str], list[tuple]]:
    """Link ids and ``(a, b, tech, count, plane, failed)`` in ``g.edges`` order (each edge
    once, at the first of its ends in node order), read from the adjacency in one pass."""
    keys: list[str] = []
    rows: list[dict] = []
    seen: set[str] = set()
    for u, nbrs in g.adjacency():
        for v, keydict in nbrs.items():
            if v not in seen:
                keys.extend(keydict)
                rows.extend(keydict.values())
        seen.add(u)
    return keys, list(map(_LINK_FIELDS, rows))


def _sorted_by_natural_key(ids: list[str]) -> list[int]:
    """Positions of ``ids`` in natural order (``gpu-2`` before ``gpu-10``).

    When every id has the same shape (the same text with digit runs of equal length, as
    template ids are zero-padded), plain string order is natural order and much cheaper.
    """
    shapes = {i.translate(_DIGITS_TO_ZERO) for i in ids}
    if len(shapes) <= 1:
        return sorted(range(len(ids)), key=ids.__getitem__)
    return sorted(range(len(ids)), key=lambda k: natural_key(ids[k]))


def _codes(values) -> tuple[list, np.ndarray]:
    """Distinct ``values`` (first-seen order) and each value's index among them."""
    names = {v: i for i, v in enumerate(dict.fromkeys(values))}
    return list(names), np.fromiter(map(names.__getitem__, values), np.int64, len(values))


def _code(names: list, value) -> int:
    """Index of ``value`` in ``names``, appending it when new."""
    try:
        return names.index(value)
    except ValueError:
        names.append(value)
        return len(names) - 1
