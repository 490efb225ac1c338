"""The limits of a ``.fabric.json`` file, checked by a pre-scan before it is parsed.

Parsing a file whole (``json.loads``) costs about 1 KB of memory per item before any
check can run, so a 200 MiB file of 1.6 million nodes would take gigabytes and a minute
before being refused.  `prescan` walks the text first, one group, node or link at a
time, holding only the item in hand: it counts each section against its limit, checks
that each item is an object with its required keys and no unknown ones, and that its
name is not too long, and stops at the first item that fails.  Only a file that passes
is then parsed whole, so what the full parse builds is bounded by the limits.

The limits are set by the largest designs the tool builds: the templates stop at
131,072 GPUs (`designer.model.templates.MAX_TEMPLATE_GPUS`), which is at most about
435,000 nodes, 890,000 link bundles and 135,000 groups for the designs whose file fits
the 256 MiB byte limit (a fat-tree of one-GPU hosts has the most nodes and groups per
GPU; a rail-optimised cluster with every plane the most links).

Example
-------
>>> prescan('{"format": "fabric-designer", "version": 1, "nodes": [{}], "links": []}')
Traceback (most recent call last):
...
designer.io.fabric_read.Invalid: ('nodes[0]', "missing field 'id'")
"""

from __future__ import annotations

import contextlib
import json
import re
from functools import cache
from operator import methodcaller
from typing import Any

from designer.io import fabric_schema
from designer.io.fabric_read import Invalid, check_header

__all__ = ["LIMITS", "MAX_NAME_CHARS", "prescan"]

#: The most items of each section a file may hold.
LIMITS: dict[str, int] = {"groups": 200_000, "nodes": 500_000, "links": 1_000_000}
#: The most entries of any other list (a scenario's ranks are GPU ids) or object.
MAX_LIST_ITEMS = 500_000
#: The longest name of the design, a group or a node, in characters: a label, not a
#: document (and drawn on the canvas, printed by the command line).
MAX_NAME_CHARS = 1_024
#: Top-level text shorter than this that is not an object is parsed whole, for the
#: parser's own message; a longer one is named by its first character.
_SMALL = 1 << 20

_NOUNS = {"groups": "groups", "nodes": "nodes", "links": "link bundles"}
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SEPARATOR = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_KINDS = {"[": "a list", '"': "a string", "t": "a boolean", "f": "a boolean", "n": "null"}


class _Unsure(Exception):
    """The pre-scan met text it does not follow (bad JSON); the full parse says why,
    having only the part already counted to build before it stops there."""


@cache
def _scan_once() -> Any:
    return json.JSONDecoder().scan_once


@cache
def _item_keys() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Per section, the required and the allowed keys of an item (from the schema)."""
    definitions = fabric_schema.schema()["definitions"]
    out = {}
    for section, name in (("groups", "group"), ("nodes", "node"), ("links", "link")):
        item = definitions[name]
        out[section] = (frozenset(item["required"]), frozenset(item["properties"]))
    return out


def _skip(text: str, idx: int) -> int:
    return _WHITESPACE.match(text, idx).end()  # type: ignore[union-attr]


def _value(text: str, idx: int) -> tuple[Any, int]:
    try:
        return _scan_once()(text, idx)
    except (StopIteration, ValueError, RecursionError):
        raise _Unsure from None


def prescan(text: str) -> None:
    """Check ``text`` (a whole design file) against the limits without building it.

    Raises
    ------
    Invalid
        For a section over its limit (``nodes: more than the limit of 500,000 nodes``),
        an item of the wrong shape (the schema's message for it, at its index), a name
        longer than `MAX_NAME_CHARS`, or a top level that is not an object.  Bad JSON is
        left to the full parse, whose message names the line and column; everything
        before the bad spot has been counted by then.
    """
    with contextlib.suppress(_Unsure):
        _prescan(text)


def _prescan(text: str) -> None:
    idx = _skip(text, 0)
    first = text[idx : idx + 1]
    if first == "{":
        _object(text, idx, "", {})
        return
    kind = _KINDS.get(first) or ("a number" if first and first in "-0123456789" else None)
    if len(text) >= _SMALL and kind is not None:  # else the full parse names it quickly
        raise Invalid("top level", f"expected a JSON object, got {kind}")


def _object(text: str, idx: int, where: str, header: dict[str, Any]) -> int:
    """Walk the object at ``text[idx]`` (the top level when ``where`` is empty) key by
    key, its lists item by item; the index after it."""
    idx = _skip(text, idx + 1)
    if text.startswith("}", idx):
        return idx + 1
    entries = 0
    while True:
        if entries == MAX_LIST_ITEMS:  # overrides hold one entry per catalog model
            _check_header(header)
            raise Invalid(where or "top level", f"more than the limit of {entries:,} entries")
        entries += 1
        if not text.startswith('"', idx):
            raise _Unsure
        key, idx = _value(text, idx)
        idx = _skip(text, idx)
        if not text.startswith(":", idx):
            raise _Unsure
        idx = _skip(text, idx + 1)
        path = f"{where}.{key}" if where else key
        if text.startswith("[", idx):
            idx = _array(text, idx, path, header)
        elif text.startswith("{", idx) and path.count(".") < 2:
            idx = _object(text, idx, path, header)
        else:
            value, idx = _value(text, idx)
            if path in ("format", "version"):
                header[path] = value
            elif path == "name" and isinstance(value, str) and len(value) > MAX_NAME_CHARS:
                _check_header(header)
                raise Invalid("name", _too_long(value))
        idx = _skip(text, idx)
        if text.startswith(",", idx):
            idx = _skip(text, idx + 1)
        elif text.startswith("}", idx):
            return idx + 1
        else:
            raise _Unsure


def _array(text: str, idx: int, key: str, header: dict[str, Any]) -> int:
    """Walk the list at ``text[idx]`` item by item; the index after it.

    The loop is the pre-scan's cost (about 4 us an item): names are bound locally and
    the usual ``,`` between items is one regular-expression match.
    """
    limit = LIMITS.get(key, MAX_LIST_ITEMS)
    required, allowed = _item_keys().get(key, (None, None))
    scan, separator, whitespace = _scan_once(), _SEPARATOR.match, _WHITESPACE.match
    count = 0
    idx = whitespace(text, idx + 1).end()  # type: ignore[union-attr]
    if text.startswith("]", idx):
        return idx + 1
    while True:
        if count == limit:
            _check_header(header)
            raise Invalid(key, f"more than the limit of {limit:,} {_NOUNS.get(key, 'items')}")
        try:
            item, idx = scan(text, idx)
        except (StopIteration, ValueError, RecursionError):
            raise _Unsure from None
        if required is not None and not (
            type(item) is dict
            and required <= item.keys() <= allowed
            and (type(name := item.get("name")) is not str or len(name) <= MAX_NAME_CHARS)
        ):
            _check_header(header)
            _refuse_item(key, count, item)
        count += 1
        found = separator(text, idx)
        if found is not None:
            idx = found.end()
            continue
        idx = whitespace(text, idx).end()  # type: ignore[union-attr]
        if text.startswith("]", idx):
            return idx + 1
        raise _Unsure


def _refuse_item(section: str, index: int, item: Any) -> None:
    """Raise the schema's message for ``item``, placed at ``section[index]``."""
    probe = {"format": "fabric-designer", "version": 1, "nodes": [], "links": [], section: [item]}
    try:
        fabric_schema.validate(probe)
    except fabric_schema.SchemaViolation as err:
        where = err.where.replace(f"{section}[0]", f"{section}[{index}]", 1)
        raise Invalid(where, err.what) from None


def _check_header(header: dict[str, Any]) -> None:
    """A file of another format or a newer version says so before any limit."""
    if "format" in header:
        check_header({"version": 1, **header})


def _too_long(name: str) -> str:
    return (
        f"expected a string of at most {MAX_NAME_CHARS:,} characters, got {len(name):,} characters"
    )


# --------------------------------------------------------------------------- parsed


def check_parsed(data: Any) -> None:
    """What `prescan` checks, on the parsed value of a file (``data``), in the same
    order with the same messages: for a text whose full parse is known to be bounded
    (`designer.io.fabric_parse`).

    Raises
    ------
    Invalid
        As `prescan` would for the text.
    """
    if type(data) is dict:
        _parsed_object(data, "", {})
    # Anything else: the header check names it, as the full parse after `prescan` does.


def _parsed_object(obj: dict, where: str, header: dict[str, Any]) -> None:
    for entries, (key, value) in enumerate(obj.items()):
        if entries == MAX_LIST_ITEMS:
            _check_header(header)
            raise Invalid(where or "top level", f"more than the limit of {entries:,} entries")
        path = f"{where}.{key}" if where else key
        if type(value) is list:
            _parsed_array(value, path, header)
        elif type(value) is dict and path.count(".") < 2:
            _parsed_object(value, path, header)
        elif path in ("format", "version"):
            header[path] = value
        elif path == "name" and type(value) is str and len(value) > MAX_NAME_CHARS:
            _check_header(header)
            raise Invalid("name", _too_long(value))


def _parsed_array(items: list, key: str, header: dict[str, Any]) -> None:
    limit = LIMITS.get(key, MAX_LIST_ITEMS)
    required, allowed = _item_keys().get(key, (None, None))
    bad = len(items)
    if required is not None and not _items_fit(items[:limit], required, allowed):
        bad = next((i for i, item in enumerate(items) if not _fits(item, required, allowed)), bad)
    if bad < min(limit, len(items)):
        _check_header(header)
        _refuse_item(key, bad, items[bad])
    if len(items) > limit:
        _check_header(header)
        raise Invalid(key, f"more than the limit of {limit:,} {_NOUNS.get(key, 'items')}")


def _fits(item: Any, required: frozenset[str], allowed: frozenset[str]) -> bool:
    """The test `_array` makes of each item."""
    return (
        type(item) is dict
        and required <= item.keys() <= allowed
        and (type(name := item.get("name")) is not str or len(name) <= MAX_NAME_CHARS)
    )


def _items_fit(items: list, required: frozenset[str], allowed: frozenset[str]) -> bool:
    """`_fits` of every item, a set of key tuples and a column of names at a time."""
    if not items:
        return True
    if set(map(type, items)) != {dict}:
        return False
    if not all(required <= set(keys) <= allowed for keys in set(map(tuple, items))):
        return False
    if "name" not in allowed:
        return True
    names = list(map(methodcaller("get", "name"), items))
    if set(map(type, names)) != {str}:
        names = [n for n in names if type(n) is str]
    return not names or max(map(len, names)) <= MAX_NAME_CHARS
