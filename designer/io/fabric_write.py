"""Writing a big design's nodes and links as ``.fabric.json`` items, column by column.

The file holds one item per line, keys in field order, items in natural order of their
ids (`designer.io.fabric_json`).  Made one item at a time (a `Node` value, a sort key,
a ``json.dumps`` call each), a 16,384-GPU SuperPOD took seconds.  Here:

- the fields come a column at a time: the links' all from the design's numpy columns
  (`Topology.columns`), the nodes' from their attribute dicts;
- the natural order of the ids is checked first (`columns.in_natural_order`: a design
  loaded from a file, or built by a template, is usually in it) and the sort done only
  when it is not;
- each column is encoded by the JSON encoder's own functions mapped over it (strings,
  numbers, booleans, null), and each line is one ``%`` format of its item's values.

The text is the very text ``json.dumps`` of each item makes (`one_line`): the tests
compare the two.

Example
-------
>>> cols = [["a", "b"], [1, 2.5]]
>>> print(column_lines(cols, ("id", "n")))
    {"id": "a", "n": 1},
    {"id": "b", "n": 2.5}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from json.encoder import encode_basestring
from operator import itemgetter
from typing import Any

import numpy as np

from designer.io.fabric_limits import LIMITS, MAX_NAME_CHARS
from designer.model.columns import in_natural_order
from designer.model.elements import NODE_FIELDS
from designer.model.errors import DesignError
from designer.model.naming import natural_key
from designer.model.topology import Topology

__all__ = [
    "check_limits",
    "column_lines",
    "item_columns",
    "item_dicts",
    "item_lines",
    "one_line",
    "ordered_columns",
]

_SEPARATORS = (", ", ": ")


def one_line(value: Any) -> str:
    """``value`` as one line of JSON, as the file writes it."""
    # ensure_ascii=False keeps names readable; allow_nan=False refuses to write a file
    # that the strict reader would reject.
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=_SEPARATORS)


def ordered_columns(ids: Sequence[str], columns: Sequence[Sequence[Any]]) -> list[list]:
    """``[ids, *columns]`` with every column in natural order of ``ids``."""
    if in_natural_order(list(ids)):
        return [list(ids), *map(list, columns)]
    order = sorted(range(len(ids)), key=lambda i: natural_key(ids[i]))
    return [[column[i] for i in order] for column in (ids, *columns)]


def item_dicts(columns: Sequence[Sequence[Any]], fields: tuple[str, ...]) -> list[dict]:
    """One dict per row of ``columns`` (one per field of ``fields``, in order)."""
    return list(map(dict, map(zip, repeat(fields), zip(*columns, strict=True))))


_LITERALS = {True: "true", False: "false", None: "null"}


def _encoded(column: Sequence[Any]) -> list[str] | None:
    """The JSON text of each value, or None for a column this does not handle alike."""
    types = set(map(type, column))
    if types == {str}:
        return list(map(encode_basestring, column))
    if types <= {bool, type(None)}:
        return list(map(_LITERALS.__getitem__, column))
    if types == {int}:
        return list(map(int.__repr__, column))
    if types == {float}:
        if not np.isfinite(np.asarray(column, dtype=float)).all():
            return None  # json.dumps refuses it: let it say so
        return list(map(float.__repr__, column))
    if types == {str, type(None)}:
        return [_LITERALS[v] if v is None else encode_basestring(v) for v in column]
    return None


def item_lines(items: Sequence[Any]) -> str:
    """``one_line`` of each item, indented by four spaces, joined by ``,\\n``."""
    return ",\n".join(f"    {one_line(item)}" for item in items)


def column_lines(columns: Sequence[Sequence[Any]], fields: tuple[str, ...]) -> str:
    """The items the rows of ``columns`` make (as `item_dicts`), one per line indented
    by four spaces, joined by ``,\n``: the lines ``one_line`` of each makes."""
    texts = [_encoded(column) for column in columns]
    if any(t is None for t in texts):
        return item_lines(item_dicts(columns, fields))
    template = "    {" + ", ".join(f"{one_line(f)}: %s" for f in fields) + "}"
    return ",\n".join(map(template.__mod__, zip(*texts, strict=True)))


def check_limits(
    topology: Topology,
    n_nodes: int | None = None,
    n_links: int | None = None,
    node_attrs: Iterable[Mapping[str, Any]] | None = None,
) -> None:
    """Refuse to write a design that `load` would refuse for its size (the limits of
    `designer.io.fabric_limits`): better a clear error now than a file that cannot be
    opened again.  ``n_nodes``, ``n_links`` and ``node_attrs`` (each node's fields),
    when given, save walking the design's items."""
    # Counted through the iterators alone: `save` also writes designs that are not a
    # `Topology` (the autosaver's frozen copy).
    counts = {
        "groups": sum(1 for _ in topology.groups()),
        "nodes": sum(1 for _ in topology.nodes()) if n_nodes is None else n_nodes,
        "links": sum(1 for _ in topology.links()) if n_links is None else n_links,
    }
    for section, count in counts.items():
        if count > LIMITS[section]:
            raise DesignError(
                f"{count:,} {section}, more than the {LIMITS[section]:,} a file may hold"
            )
    if len(topology.name) > MAX_NAME_CHARS:
        raise DesignError(f"the design's name is longer than {MAX_NAME_CHARS:,} characters")
    if node_attrs is not None:
        names = list(map(itemgetter("name"), node_attrs))
        if not names or max(map(len, names)) <= MAX_NAME_CHARS:
            groups = [g for g in topology.groups() if len(g.name) > MAX_NAME_CHARS]
            if groups:
                raise DesignError(
                    f"group {groups[0].id!r}: name longer than {MAX_NAME_CHARS:,} characters"
                )
            return
    for noun, items in (("group", topology.groups()), ("node", topology.nodes())):
        for item in items:
            if len(item.name) > MAX_NAME_CHARS:
                raise DesignError(
                    f"{noun} {item.id!r}: name longer than {MAX_NAME_CHARS:,} characters"
                )


def item_columns(topology: Topology) -> tuple[list[list], list[list]] | None:
    """The nodes' and links' fields as columns in file order (`NODE_FIELDS`,
    `LINK_FIELDS`), for a `Topology`; None for another design (the autosaver's frozen
    copy), whose items are read one by one."""
    if not isinstance(topology, Topology):
        return None
    node_data = topology.node_data()
    cols = topology.columns()
    check_limits(topology, len(node_data), len(cols.keys), node_data.values())
    # Links: every field from the numpy columns; nodes: from their attribute dicts.
    ids = np.asarray(cols.node_ids, dtype=object)
    plane = [cols.one_plane] * len(cols.keys) if cols.one_plane else cols.planes
    links = ordered_columns(
        cols.keys,
        [
            ids[cols.a_idx].tolist(),
            ids[cols.b_idx].tolist(),
            np.asarray(cols.tech_names, dtype=object)[cols.tech_of].tolist(),
            cols.counts.astype(np.int64).tolist(),
            plane,
            cols.link_failed.tolist(),
        ],
    )
    attrs = list(node_data.values())
    node_cols = [list(map(itemgetter(f), attrs)) for f in NODE_FIELDS[1:]]
    # Positions are floats in the model; write 0 as 0.0 so every line looks alike.
    for f in ("x", "y"):
        at = NODE_FIELDS.index(f) - 1
        node_cols[at] = list(map(float, node_cols[at]))
    return ordered_columns(list(node_data), node_cols), links
