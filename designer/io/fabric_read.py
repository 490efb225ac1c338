"""Reading a ``.fabric.json`` file up to the model: the JSON text parsed strictly, the
header checked, and what the JSON Schema cannot say checked entry by entry (unique ids
across sections, whole link counts, groups ordered parents first and not nested too
deep).  Every problem is an `Invalid` naming its place; `designer.io.fabric_json` turns
it into a `FileFormatError` that names the file too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from operator import itemgetter, methodcaller
from typing import Any

from designer.model.topology import Group, Link, Node

FORMAT = "fabric-designer"
#: The newest format version this Fabric Designer reads and writes.  Version 2 added
#: ``settings.workloads`` (training jobs); a design without jobs is still written as
#: version 1 (`version_for`), so that older releases keep opening it.
VERSION = 2
#: The first version whose files may hold ``settings.workloads``.
WORKLOADS_VERSION = 2
MAX_LINK_COUNT = 1_000_000
#: Cluster > plane > SU > pod > rack > tray > node is 7; the model checks a group's whole
#: parent chain on every add, so a hostile file of deep chains would take quadratic time.
MAX_GROUP_DEPTH = 64


class Invalid(Exception):
    """A problem at ``where``; turned into `FileFormatError` with the file name."""

    def __init__(self, where: str, what: str):
        super().__init__(where, what)
        self.where, self.what = where, what


def type_name(value: Any) -> str:
    """What a JSON value is, as an error message says it ("a boolean", "a list")."""
    if isinstance(value, bool):  # before int: True is an int to Python, not to JSON
        return "a boolean"
    for types, name in _JSON_TYPE_NAMES:
        if isinstance(value, types):
            return name
    return type(value).__name__  # from_dict called with non-JSON values


_JSON_TYPE_NAMES = (
    (type(None), "null"),
    (int | float, "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "an object"),
)


def item_where(section: str, index: int, item: Any) -> str:
    """``nodes[3] (id 'n0-gpu1')`` for an entry (a dict from the file, or a model value)."""
    item_id = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
    if isinstance(item_id, str):
        return f"{section}[{index}] (id {item_id!r})"
    return f"{section}[{index}]"


def parse_items(
    data: Mapping[str, Any], section: str, cls: type, seen: dict[str, tuple[str, int]]
) -> list[tuple[int, Any]]:
    """Build one ``cls`` per entry of ``data[section]`` (already checked by the schema),
    as ``(index, item)`` pairs.

    ``seen`` maps the ids met so far (in any section) to their place: ids are unique
    across groups, nodes and links.
    """
    out = []
    for index, item in enumerate(data.get(section, ())):
        item_id = item["id"]
        if item_id in seen:
            other, at = seen[item_id]
            where = item_where(section, index, item)
            raise Invalid(where, f"duplicate id (also {other}[{at}])")
        seen[item_id] = (section, index)
        if cls is Node:
            # The model holds floats; JSON may say 3 for 3.0 (the saver never does).
            x, y = item.get("x", 0.0), item.get("y", 0.0)
            if type(x) is not float or type(y) is not float:
                item = dict(item, x=float(x), y=float(y))
        elif cls is Link and not is_count(item.get("count", 1)):
            # JSON Schema counts 2.0 as an integer; the model wants an int.
            raise Invalid(
                item_where(section, index, item),
                f"field 'count' must be a whole number from 1 to {MAX_LINK_COUNT:_}, "
                f"got {item['count']!r}",
            )
        out.append((index, cls(**item)))
    return out


def check_records(data: Mapping[str, Any], seen: dict[str, tuple[str, int]]) -> None:
    """Check the nodes and links of ``data`` (already checked by the schema) as
    `parse_items` does (ids unique across sections, ``seen`` holding the groups', whole
    link counts), over whole columns; when a column check fails, `parse_items` walks the
    items to name the first problem as it always has.

    `Topology.add_parts` refuses all of these too, with the model's words: the loader
    calls this when the model refuses an item, so that the file's words name it.
    """
    nodes, links = data.get("nodes", []), data.get("links", [])
    ids = list(map(itemgetter("id"), nodes))
    ids += map(itemgetter("id"), links)
    counts = list(map(methodcaller("get", "count", 1), links))
    distinct = set(ids)
    if (
        len(distinct) != len(ids)
        or not distinct.isdisjoint(seen)
        or (
            counts
            and not (
                set(map(type, counts)) == {int}
                and min(counts) >= 1
                and max(counts) <= MAX_LINK_COUNT
            )
        )
    ):
        parse_items(data, "nodes", Node, seen)
        parse_items(data, "links", Link, seen)


def float_positions(
    nodes: list[Mapping[str, Any]], known: Mapping[str, list | None]
) -> tuple[list[Mapping[str, Any]], dict[str, list | None]]:
    """The nodes (already checked by the schema) with float positions, and ``known``
    (columns of their fields, see `fabric_columns.validate`) to match: the model holds
    floats, and JSON may say 3 for 3.0 (the saver never does)."""
    known = dict(known)
    columns = []
    for axis in ("x", "y"):
        column = known.get(axis)
        if column is None:
            column = list(map(methodcaller("get", axis, 0.0), nodes))
        columns.append(column)
    xs, ys = columns
    if nodes and not set(map(type, xs)) == set(map(type, ys)) == {float}:
        nodes = [
            d if type(x) is float and type(y) is float else dict(d, x=float(x), y=float(y))
            for d, x, y in zip(nodes, xs, ys, strict=True)
        ]
        # Every node now has both: the columns of the values it holds.
        known["x"], known["y"] = list(map(float, xs)), list(map(float, ys))
    return nodes, known


def is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_LINK_COUNT


def check_header(data: Any) -> None:
    """Format and version first: a newer file may well have keys this version lacks, and
    deserves "newer version" rather than a complaint about its keys."""
    if not isinstance(data, dict):
        raise Invalid("top level", f"expected a JSON object, got {type_name(data)}")
    if "format" not in data:
        raise Invalid("top level", "missing 'format' (not a Fabric Designer file)")
    if data["format"] != FORMAT:
        raise Invalid("format", f"expected {FORMAT!r}, not a Fabric Designer file")
    if "version" not in data:
        raise Invalid("top level", "missing 'version'")
    version = data["version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise Invalid("version", f"expected a whole number >= 1, got {version!r:.40}")
    if version > VERSION:
        raise Invalid(
            "version",
            f"written by a newer Fabric Designer (format version {version}); "
            f"this version reads up to {VERSION}",
        )


def version_for(settings: Mapping[str, Any]) -> int:
    """The lowest format version that holds a design with these ``settings``."""
    return WORKLOADS_VERSION if settings.get("workloads") else 1


def check_version_content(data: Mapping[str, Any]) -> None:
    """What a file holds must exist in the version it claims (run after the schema):
    ``settings.workloads`` in a version-1 file is refused, as a version-1 reader would
    refuse it."""
    settings = data.get("settings") or {}
    if "workloads" in settings and data["version"] < WORKLOADS_VERSION:
        raise Invalid("settings.workloads", f"needs format version {WORKLOADS_VERSION}; "
                                            f"the file says version {data['version']}")


def strip_subject(message: str, subject: str) -> str:
    """``"node 'g0': unknown kind 'x'"`` -> ``"unknown kind 'x'"`` (the where says it)."""
    return message.removeprefix(subject + ": ")


def order_groups(groups: list[tuple[str, Group]]) -> list[tuple[str, Group]]:
    """Parents before children (the file sorts by id; a child may come first).

    Linear time: each group's chain of not-yet-placed ancestors is walked once.
    """
    by_id = {g.id: (w, g) for w, g in groups}
    placed: set[str] = set()
    depth: dict[str, int] = {}
    ordered: list[tuple[str, Group]] = []
    for _, group in groups:
        chain: list[tuple[str, Group]] = []
        on_chain: set[str] = set()
        current: str | None = group.id
        while current is not None and current not in placed:
            if current in on_chain:
                raise Invalid(by_id[current][0], "parent chain loops")
            if current not in by_id:
                raise Invalid(chain[-1][0], f"no parent group {current!r}")
            on_chain.add(current)
            chain.append(by_id[current])
            current = by_id[current][1].parent
        for item in reversed(chain):
            parent = item[1].parent
            depth[item[1].id] = 1 + (depth[parent] if parent is not None else 0)
            if depth[item[1].id] > MAX_GROUP_DEPTH:
                raise Invalid(item[0], f"groups nested more than {MAX_GROUP_DEPTH} deep")
            ordered.append(item)
            placed.add(item[1].id)
    return ordered


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise Invalid("JSON", f"duplicate key {key!r:.60} in an object")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise Invalid("JSON", f"{name} is not a number JSON allows")


def decode_text(text: str | bytes) -> str:
    """The text of a file's bytes (UTF-8); a str is returned as it is."""
    if isinstance(text, bytes | bytearray):
        try:
            # utf-8-sig: a byte-order mark (some Windows editors add one) is harmless.
            return bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise Invalid(f"byte {err.start}", "not UTF-8 text") from None
    return text


def parse_json(text: str | bytes) -> Any:
    text = decode_text(text)
    try:
        return json.loads(
            text, object_pairs_hook=_reject_duplicates, parse_constant=_reject_constant
        )
    except json.JSONDecodeError as err:
        raise Invalid(
            f"line {err.lineno} column {err.colno}", f"not valid JSON ({err.msg})"
        ) from None
    except RecursionError:
        raise Invalid("JSON", "nested too deeply") from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise Invalid("JSON", f"unreadable value ({str(err)[:80]})") from None
