"""Many nodes and links entering a design at once: checked column by column, written
into the graph in one go.

Adding items one by one (`Topology.add_node`) costs 15-30 us each in checks, a frozen
value, networkx's ``add_edge`` and an event; the 1.5 million items of a design at the file
limits took most of a minute.  `Topology.add_parts` instead takes the items' fields as
columns (one list per field), checks each rule over a whole column at C speed (a set of
the distinct values, ``min``/``max`` of the numbers, one regular expression over the
joined ids) and writes the graph's dictionaries directly.

The column checks only say "certainly valid": when one fails, the items are walked in
order with the very checks ``add_node`` and ``add_link`` use (`designer.model.checks`),
so the first bad item is refused with the same message, wrapped in a `PartError` that
names its place.

Example
-------
>>> cols = node_columns([{"id": "g0", "kind": "gpu", "model": "H100", "name": "GPU 0"}])
>>> cols["x"], cols["group"]
([0.0], [None])
"""

from __future__ import annotations

from array import array
from collections import ChainMap, deque
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import MISSING, fields
from functools import partial
from itertools import compress, repeat
from operator import attrgetter, eq, itemgetter, methodcaller
from typing import Any

import networkx as nx

from designer.model.catalog import NODE_KINDS, PLANES, Catalog
from designer.model.checks import check_group, check_link, check_node, ids_look_valid
from designer.model.columns import DesignColumns
from designer.model.elements import Group, Link, Node
from designer.model.errors import DesignError

__all__ = [
    "EitherOf",
    "Known",
    "PartError",
    "check_links",
    "check_nodes",
    "checked_groups",
    "link_columns",
    "node_columns",
    "with_attributes",
    "write_links",
    "write_nodes",
    "write_parts",
]

_NUMBER_TYPES = frozenset((int, float, bool))


class PartError(DesignError):
    """The first item `Topology.add_parts` refuses: ``str(error)`` is the message
    ``add_node`` (``add_link``, ``add_group``) gives for it; ``section`` ("groups",
    "nodes" or "links") and ``index`` say which item it is."""

    def __init__(self, section: str, index: int, message: str):
        super().__init__(message)
        self.section, self.index = section, index


# --------------------------------------------------------------------------- columns


#: Columns a caller has already read (`node_columns`' ``known``): field -> the value of
#: every item, or None when no item has the field (it takes its default).
Known = Mapping[str, "list | None"]


def _columns(cls: type, items: Sequence[Any], known: Known | None = None) -> dict[str, list]:
    """One list per field of ``cls`` over ``items`` (all ``cls`` values, or all mappings
    of its field names, a missing optional field taking its default); the columns in
    ``known`` are taken as they are."""
    out: dict[str, list] = {}
    values = bool(items) and not isinstance(items[0], Mapping)
    known = known or {}
    for f in fields(cls):
        column = known.get(f.name, MISSING)
        if column is None and f.default is not MISSING:
            out[f.name] = [f.default] * len(items)
        elif column is not None and column is not MISSING:
            out[f.name] = column  # type: ignore[assignment]
        elif values:
            out[f.name] = list(map(attrgetter(f.name), items))
        elif f.default is MISSING:
            out[f.name] = list(map(itemgetter(f.name), items))
        else:
            out[f.name] = list(map(methodcaller("get", f.name, f.default), items))
    return out


def node_columns(
    nodes: Sequence[Node | Mapping[str, Any]], known: Known | None = None
) -> dict[str, list]:
    """The nodes' fields as columns (``{"id": [...], "kind": [...], ...}``); ``known``:
    the mappings' columns a caller has already read (see `Known`)."""
    return _columns(Node, nodes, known)


def link_columns(
    links: Sequence[Link | Mapping[str, Any]], known: Known | None = None
) -> dict[str, list]:
    """The links' fields as columns (``{"id": [...], "a": [...], ...}``); ``known`` as
    for `node_columns`."""
    return _columns(Link, links, known)


def _as_values(cls: type, items: Sequence[Any]) -> list[Any]:
    return [item if isinstance(item, cls) else cls(**item) for item in items]


# --------------------------------------------------------------------------- checks


def _coords_look_valid(values: list) -> bool:
    """Every one is a number within +-1e9 (False: maybe not)."""
    if not values:
        return True
    if not set(map(type, values)) <= _NUMBER_TYPES:
        return False
    # A NaN makes the sum NaN; the bounds keep the sum finite.
    return min(values) >= -1e9 and max(values) <= 1e9 and sum(values) == sum(values)


def _unique_and_free(ids: list, taken: Sequence[Container[str]]) -> bool:
    """No id twice, none already in ``taken`` (False: maybe not).  The smaller side of
    each pair is walked: a design may be added to in many small steps."""
    distinct = set(ids)
    if len(distinct) != len(ids):
        return False
    for t in taken:
        if isinstance(t, set | dict) and len(t) <= len(distinct):
            if not distinct.isdisjoint(t):
                return False
        elif any(map(t.__contains__, distinct)):
            return False
    return True


def _nodes_look_valid(
    cols: dict[str, list], catalog: Catalog, groups: Container[str], taken: Sequence
) -> bool:
    kinds, models = cols["kind"], cols["model"]
    try:
        if not (_unique_and_free(cols["id"], taken) and ids_look_valid(cols["id"])):
            return False
        if not set(kinds) <= set(NODE_KINDS) or not set(cols["plane"]) <= set(PLANES):
            return False
        devices = catalog.devices
        for kind, model in set(zip(kinds, models, strict=True)):
            if model not in devices or kind not in devices[model].kinds:
                return False
        if not all(g is None or g in groups for g in set(cols["group"])):
            return False
    except TypeError:  # an unhashable value: the per-item checks say what it is
        return False
    return _coords_look_valid(cols["x"]) and _coords_look_valid(cols["y"])


def _links_look_valid(
    cols: dict[str, list],
    catalog: Catalog,
    nodes: tuple[Mapping[str, int], Container[str]],
    taken: Sequence,
    rows: list[array],
) -> bool:
    """The links are certainly valid (False: maybe not); ``rows`` gets, per end, each
    link's end's place among the new nodes (-1 for a node already there)."""
    a, b, counts = cols["a"], cols["b"], cols["count"]
    try:
        if not (_unique_and_free(cols["id"], taken) and ids_look_valid(cols["id"])):
            return False
        new, old = nodes
        for ends in (a, b):
            # Most ends are new nodes: look each up once, building no set.
            at = array("q", map(new.get, ends, repeat(-1)))  # no list of ints to hold
            rows.append(at)
            if -1 in at and not all(
                map(old.__contains__, set(compress(ends, map(eq, at, repeat(-1)))))
            ):
                return False
        if any(map(eq, a, b)):
            return False
        if not set(cols["tech"]) <= catalog.techs.keys():
            return False
        if not set(cols["plane"]) <= set(PLANES):
            return False
    except TypeError:
        return False
    return not counts or (set(map(type, counts)) == {int} and min(counts) >= 1)


def _walk(
    section: str,
    items: list[Any],
    taken: Sequence[Container[str]],
    check: Callable[[Any], None],
) -> None:
    """Check each item in order as its ``add_*`` would; raise `PartError` at the first
    one refused."""
    seen: set[str] = set()
    for index, item in enumerate(items):
        try:
            if item.id in seen or any(item.id in t for t in taken):
                raise DesignError(f"id {item.id!r} is already used")
            check(item)
        except DesignError as err:
            raise PartError(section, index, str(err)) from None
        seen.add(item.id)


def checked_groups(
    groups: Sequence[Group | Mapping[str, Any]],
    existing: Mapping[str, Group],
    taken: Sequence[Container[str]],
) -> dict[str, Group]:
    """The groups by id, each checked as ``add_group`` would after the ones before it
    (parents first); `PartError` for the first refused."""
    added: dict[str, Group] = {}
    known = ChainMap(added, existing)  # type: ignore[arg-type]
    for index, group in enumerate(_as_values(Group, groups)):
        try:
            if group.id in known or any(group.id in t for t in taken):
                raise DesignError(f"id {group.id!r} is already used")
            check_group(group, known)
        except DesignError as err:
            raise PartError("groups", index, str(err)) from None
        added[group.id] = group
    return added


def check_nodes(
    cols: dict[str, list],
    nodes: Sequence[Node | Mapping[str, Any]],
    catalog: Catalog,
    groups: Container[str],
    taken: Sequence[Container[str]],
) -> None:
    """Raise `PartError` for the first node ``add_node`` would refuse (``cols``: the
    nodes' `node_columns`; ``groups``: the group ids they may name; ``taken``: the
    containers of ids already used)."""
    if not _nodes_look_valid(cols, catalog, groups, taken):
        _walk(
            "nodes", _as_values(Node, nodes), taken, lambda node: check_node(node, catalog, groups)
        )


def check_links(
    cols: dict[str, list],
    links: Sequence[Link | Mapping[str, Any]],
    catalog: Catalog,
    nodes: tuple[Mapping[str, int], Container[str]],
    taken: Sequence[Container[str]],
) -> tuple[Sequence[int], Sequence[int]] | None:
    """Raise `PartError` for the first link ``add_link`` would refuse (``nodes``: the
    nodes being added, id -> place among them, and the container of those already
    there, which its ends may name; the rest as `check_nodes`).

    Returns the place of each link's ends among the new nodes (a list per end) when
    every end is a new node, for `write_links`; else None.
    """
    rows: list[array] = []
    if not _links_look_valid(cols, catalog, nodes, taken, rows):
        known = EitherOf(*nodes)
        _walk(
            "links", _as_values(Link, links), taken, lambda link: check_link(link, catalog, known)
        )
        return None
    if any(-1 in at for at in rows):
        return None
    return rows[0], rows[1]


class EitherOf:
    """``x in`` either of two containers (False for an unhashable ``x``, as for a
    networkx graph): the nodes a link may join while new ones are being checked."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: Container[Any], second: Container[Any]):
        self._first, self._second = first, second

    def __contains__(self, x: object) -> bool:
        try:
            return x in self._first or x in self._second
        except TypeError:
            return False


# --------------------------------------------------------------------------- writing


#: The key of `with_attributes`'s column of attribute dicts.
ATTRS = "attributes"
#: The keys of the links' columns of their ends' places among the new nodes.
A_ROW, B_ROW = "a at", "b at"
#: The key of the nodes' column of neighbour dicts (`write_parts`).
ADJACENCY = "adjacency"


def with_attributes(
    cls: type,
    cols: dict[str, list],
    items: list,
    adopt: bool,
    present: Container[str] = (),
    absent: Container[str] = (),
) -> None:
    """Add to ``cols`` (the `node_columns` or `link_columns` of ``items``) the graph's
    attribute dict of each item, every field but the id, under `ATTRS`.

    With ``adopt``, ``items`` are dicts holding no other keys than ``cls``'s fields,
    which their caller gives away: each becomes the attribute dict itself (its id
    removed, missing fields set to their defaults), which saves a dict per item.
    ``present``: the fields every one of them is known to have; ``absent``: those none
    of them has (set with one call per item).
    """
    names = tuple(f.name for f in fields(cls))[1:]
    if not adopt:
        rows = zip(*(cols[f] for f in names), strict=True)
        cols[ATTRS] = list(map(dict, map(zip, repeat(names), rows)))
        return
    deque(map(methodcaller("pop", "id"), items), maxlen=0)
    defaults = [f for f in fields(cls) if f.default is not MISSING and f.name not in present]
    if all(f.name in absent for f in defaults):
        # In field order, as the setdefault calls below would add them.
        missing = {f.name: f.default for f in defaults}
        if missing:
            deque(map(dict.update, items, repeat(missing)), maxlen=0)
    else:
        for f in defaults:
            deque(map(methodcaller("setdefault", f.name, f.default), items), maxlen=0)
    cols[ATTRS] = items


def write_nodes(g: nx.MultiGraph, columns: DesignColumns, cols: dict[str, list]) -> None:
    """Write checked nodes (their `node_columns`) into ``g`` and ``columns``."""
    ids = cols["id"]
    # networkx's own containers, as `add_node` fills them: its add_nodes_from costs a
    # dict copy and two lookups a node.
    g._node.update(zip(ids, cols[ATTRS], strict=True))
    if ADJACENCY in cols:  # made for the links' writing (`write_parts`)
        g._adj.update(zip(ids, cols[ADJACENCY], strict=True))
    else:
        g._adj.update([(n, {}) for n in ids])
    nx._clear_cache(g)
    columns.extend_nodes(ids, cols["kind"], cols["model"], cols["failed"])


def write_links(
    g: nx.MultiGraph,
    columns: DesignColumns,
    link_ends: dict,
    cols: dict[str, list],
    adjacency: list[dict] | None = None,
    first: int = 0,
    deferred: list[Callable[[], None]] | None = None,
) -> None:
    """Write checked links (their `link_columns`, ends already in ``g``) into ``g``,
    ``columns`` and ``link_ends`` (link id -> ends).

    With ``deferred``, the graph's edges are not written now: a function that writes
    them is appended to it, for its owner to call before the graph is next read (the
    columns and ``link_ends`` are written at once).

    When ``cols`` holds `A_ROW` and `B_ROW`, the ends' places among the nodes just
    written, ``adjacency`` holds those nodes' neighbour dicts in that order and
    ``first`` is the first one's row in ``columns``: the ends are then found by place,
    not looked up by id in dicts of every node (a memory access less per end).
    """
    ids, a, b = cols["id"], cols["a"], cols["b"]
    # As MultiGraph.add_edge leaves them: one key dict per node pair, shared by both
    # ends, holding each link's attribute dict under its id.
    if A_ROW in cols and adjacency is not None:
        at_a = map(adjacency.__getitem__, cols[A_ROW])
        at_b = map(adjacency.__getitem__, cols[B_ROW])
        rows = (cols[A_ROW], cols[B_ROW], first)
    else:
        adj = g._adj
        at_a, at_b = map(adj.__getitem__, a), map(adj.__getitem__, b)
        rows = None
    edges = partial(_write_edges, g, ids, a, b, at_a, at_b, cols[ATTRS])
    if deferred is None:
        edges()
    else:
        deferred.append(edges)
    link_ends.update(zip(ids, zip(a, b, strict=True), strict=True))
    columns.extend_links(
        ids, a, b, cols["tech"], cols["count"], cols["plane"], cols["failed"], rows=rows
    )


def _write_edges(g: nx.MultiGraph, ids, a, b, at_a, at_b, attrs_of) -> None:
    """The edges of `write_links` (``at_a``, ``at_b``: each end's neighbour dict)."""
    for key, u, v, at_u, at_v, attrs in zip(ids, a, b, at_a, at_b, attrs_of, strict=True):
        keyed = at_u.get(v)
        if keyed is None:
            keyed = at_u[v] = at_v[u] = {}
        keyed[key] = attrs
    nx._clear_cache(g)


def write_parts(
    g: nx.MultiGraph,
    columns: DesignColumns,
    link_ends: dict,
    nodes: dict[str, list],
    links: dict[str, list],
    done: int = 0,
    progress: Callable[[int], None] | None = None,
    every: int = 4096,
    deferred: list[Callable[[], None]] | None = None,
) -> None:
    """Write checked nodes, then links (their columns) after ``done`` items; with
    ``progress``, in blocks that end where the count reaches a multiple of ``every``,
    calling ``progress(count)`` there.  ``deferred``: see `write_links`.

    Links whose columns hold their ends' places among these nodes (`A_ROW`, `B_ROW`,
    from `check_links`) are joined to them by place.
    """
    first, adjacency = len(columns.node_ids), None
    if A_ROW in links:
        adjacency = nodes[ADJACENCY] = [{} for _ in range(len(nodes["id"]))]
    write_all = partial(
        write_links, link_ends=link_ends, adjacency=adjacency, first=first, deferred=deferred
    )
    for cols, write in ((nodes, write_nodes), (links, write_all)):
        n = len(cols["id"])
        if progress is None:
            write(g, columns, cols=cols)
            continue
        start = 0
        while start < n:
            stop = min(n, start + every - done % every)
            write(g, columns, cols={k: v[start:stop] for k, v in cols.items()})
            columns.flush()  # numpy rows, not a list of Python ints per cell
            done += stop - start
            start = stop
            if done % every == 0:
                progress(done)
