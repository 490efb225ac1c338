"""The JSON Schema of ``*.fabric.json`` files, and a fast validator built from it.

The schema (``resources/schema/fabric.schema.json``, JSON Schema draft-07) describes the
shape of a design file: every key, type, enumeration and numeric bound.  Any standard
tool can check a file against it; the loader (`designer.io.fabric_json`) checks every
file with `validate` before its own checks of what a schema cannot say (unique ids,
references that resolve, models that exist in the catalog).

`validate` uses fastjsonschema, which compiles the schema to Python once (lazily, on the
first call).  The schema's local references (``$ref``) are inlined before compiling: a
reference compiles to a function call per value, and inlining halves the time on a
16k-GPU design.  A violation becomes a `SchemaViolation` whose one-line message speaks the
loader's language: ``nodes[3] (id 'n0-gpu1'): field 'kind' must be one of core, ...,
got 'toaster'``, never the library's multi-line dump.

Example
-------
>>> validate({"format": "fabric-designer", "version": 1, "nodes": [], "links": [3]})
Traceback (most recent call last):
...
designer.io.fabric_schema.SchemaViolation: links[0]: expected an object, got a number
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import fastjsonschema

from designer.model.catalog import resources_dir
from designer.model.errors import DesignError

__all__ = ["SCHEMA_PATH", "SchemaViolation", "inline_refs", "schema", "validate"]

SCHEMA_PATH: Path = resources_dir() / "schema" / "fabric.schema.json"

_ID_PHRASE = "an id of 1 to 128 letters, digits, '_', '.', ':', '/' or '-'"
#: Phrases for the schema's patterns, so a bad id reads as such rather than as a regex.
_PATTERN_PHRASES = {
    r"^[A-Za-z0-9_.:/\-]{1,128}$": _ID_PHRASE,
    "^group:": "a string starting with 'group:'",
}
_TYPE_PHRASES = {
    "string": "a string",
    "integer": "a whole number",
    "number": "a finite number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}
_NAME_STEP = re.compile(r"\[(\d+)\]")

#: Where a value sits in the data: ``("nodes", 3, "kind")``.
JsonPath = tuple[str | int, ...]


class SchemaViolation(DesignError):
    """A value breaks the schema.

    ``str(error)`` is ``"<where>: <what>"``; ``path`` is where the culprit sits in the
    data (``("nodes", 3, "kind")``; for a missing or unknown key, the key is the last
    step), ``where`` and ``what`` the two halves of the message.
    """

    def __init__(self, path: JsonPath, where: str, what: str):
        super().__init__(f"{where}: {what}")
        self.path, self.where, self.what = path, where, what


@cache
def _schema_text() -> str:
    return SCHEMA_PATH.read_text(encoding="utf-8")


def schema() -> dict[str, Any]:
    """The schema as a fresh dict (read from disk once).

    Examples
    --------
    >>> schema()["properties"]["format"]["const"]
    'fabric-designer'
    """
    return json.loads(_schema_text())


def inline_refs(node: Any, root: Mapping[str, Any] | None = None) -> Any:
    """``node`` with every local ``{"$ref": "#/definitions/x"}`` replaced by its target.

    Draft-07 ignores the keywords beside a ``$ref`` (here only titles and descriptions),
    so the result validates exactly as the original.  The schema has no recursive
    references; a reference to anything but ``#/definitions/...`` is refused.

    Examples
    --------
    >>> inline_refs({"definitions": {"n": {"type": "number"}},
    ...              "properties": {"x": {"$ref": "#/definitions/n", "title": "X"}}})
    {'properties': {'x': {'type': 'number'}}}
    """
    root = node if root is None else root
    if isinstance(node, dict):
        if "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str) or not ref.startswith("#/definitions/"):
                raise ValueError(f"unsupported $ref {ref!r}")
            return inline_refs(root["definitions"][ref.removeprefix("#/definitions/")], root)
        return {k: inline_refs(v, root) for k, v in node.items() if k != "definitions"}
    if isinstance(node, list):
        return [inline_refs(v, root) for v in node]
    return node


@cache
def _compiled() -> tuple[Callable[[Any], Any], dict[str, Any]]:
    flat = inline_refs(schema())
    # use_default=False: fastjsonschema would otherwise write defaults into the data.
    return fastjsonschema.compile(flat, use_default=False), flat


def validate(data: Any) -> None:
    """Check parsed JSON ``data`` against the schema; the first problem found is raised.

    Raises
    ------
    SchemaViolation
        Naming the place (``nodes[3] (id 'n0-gpu1')``, ``settings.scenario``) and the
        problem in one line.
    """
    check, flat = _compiled()
    try:
        check(data)
    except fastjsonschema.JsonSchemaValueException as err:
        raise _violation(err, data, flat) from None


# --------------------------------------------------------------------------- messages


def _type_name(value: Any) -> str:
    if isinstance(value, bool):  # before int: True is an int to Python, not to JSON
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return "a number"
    for types, name in ((str, "a string"), (list | tuple, "a list"), (dict, "an object")):
        if isinstance(value, types):
            return name
    return type(value).__name__


def _shown(value: Any) -> str:
    """A short rendering of the culprit: scalars as values, containers by their type."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        text = _number(value)
    elif isinstance(value, str | bool) or value is None:
        text = repr(value)
    else:
        return _type_name(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: float) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        digits = len(str(abs(value)))
        return f"{value:_}" if digits <= 30 else f"a {digits}-digit number"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return f"{value:g}" if abs(value) >= 1e15 else f"{value!r}"
    return f"{value!r}"


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _phrase(definition: Mapping[str, Any], rule: str) -> str:
    """What a value under ``definition`` must be, in words."""
    if "enum" in definition:
        return "one of " + ", ".join(str(v) for v in definition["enum"])
    if "const" in definition:
        return repr(definition["const"])
    if "anyOf" in definition:
        return _join([alt.get("title") or _phrase(alt, "type") for alt in definition["anyOf"]])
    if rule == "pattern" and "pattern" in definition:
        pattern = definition["pattern"]
        return _PATTERN_PHRASES.get(pattern, f"a string matching {pattern}")
    types = definition.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    text = _join([_TYPE_PHRASES.get(t, t) for t in types]) if types else "valid"
    if rule == "type":  # a value of the wrong type: its bounds are beside the point
        return text
    if rule == "maxLength":
        return f"{text} of at most {definition['maxLength']:,} characters"
    lo, hi = definition.get("minimum"), definition.get("maximum")
    if lo is not None and hi is not None:
        text += f" from {_number(lo)} to {_number(hi)}"
    elif lo is not None:
        text += f" >= {_number(lo)}"
    elif hi is not None:
        text += f" <= {_number(hi)}"
    return text


def _path_of(name: str, data: Any) -> JsonPath:
    """Turn fastjsonschema's ``data.nodes[3].kind`` into ``("nodes", 3, "kind")``.

    The name is ambiguous when a key holds ``.`` or ``[`` (an overrides key may), so it
    is read against the data itself, trying longer keys first.
    """

    def walk(rest: str, node: Any) -> JsonPath | None:
        if not rest:
            return ()
        match = _NAME_STEP.match(rest)
        if match and isinstance(node, list | tuple):
            index = int(match.group(1))
            if index < len(node):
                tail = walk(rest[match.end() :], node[index])
                if tail is not None:
                    return (index, *tail)
        if rest.startswith(".") and isinstance(node, dict):
            keys = [k for k in node if isinstance(k, str) and rest.startswith(k, 1)]
            for key in sorted(keys, key=len, reverse=True):
                tail = walk(rest[1 + len(key) :], node[key])
                if tail is not None:
                    return (key, *tail)
        return None

    found = walk(name.removeprefix("data"), data)
    return found if found is not None else ()


def _where(path: JsonPath, data: Any, schema_at: Callable[[JsonPath], Mapping[str, Any]]) -> str:
    """``("nodes", 3)`` -> ``nodes[3] (id 'n0-gpu1')``; ``("overrides", "H100")`` ->
    ``overrides['H100']``; ``("settings", "scenario")`` -> ``settings.scenario``."""
    if not path:
        return "top level"
    text, node = "", data
    for depth, step in enumerate(path):
        node = node[step]
        if isinstance(step, int):
            text += f"[{step}]"
            if isinstance(node, dict) and isinstance(node.get("id"), str):
                text += f" (id {_shown(node['id'])})"
        elif depth == 0:
            text = step
        elif step in schema_at(path[:depth]).get("properties", {}):
            text += f".{step}"
        else:  # a key of a map (overrides), not a field
            text += f"[{_shown(step)}]"
    return text


def _violation(
    err: fastjsonschema.JsonSchemaValueException, data: Any, flat: Mapping[str, Any]
) -> SchemaViolation:
    def schema_at(path: JsonPath) -> Mapping[str, Any]:
        node: Mapping[str, Any] = flat
        for step in path:
            if isinstance(step, int):
                node = node.get("items", {})
            elif step in node.get("properties", {}):
                node = node["properties"][step]
            else:
                extra = node.get("additionalProperties", {})
                node = extra if isinstance(extra, dict) else {}
        return node

    path = _path_of(err.name or "data", data)
    rule, definition, value = err.rule, err.definition or {}, err.value
    if rule in ("required", "additionalProperties") and isinstance(value, dict):
        where = _where(path, data, schema_at)
        noun = "" if not path else "field "
        if rule == "required":
            key = next(k for k in definition.get("required", ()) if k not in value)
            what = f"missing {noun}{key!r}"
        else:
            known = definition.get("properties", {})
            key = next(k for k in value if k not in known)
            what = f"unknown {noun or 'key '}{_shown(key)}"
        return SchemaViolation((*path, key), where, what)
    # A record's field is named in the message; a list item, a map entry or a top-level
    # key is the place itself.
    parent = path[:-1]
    is_field = (
        len(path) > 1
        and isinstance(path[-1], str)
        and path[-1] in schema_at(parent).get("properties", {})
    )
    if is_field:
        where, verb = _where(parent, data, schema_at), f"field {path[-1]!r} must be"
    else:
        where, verb = _where(path, data, schema_at), "expected"
    # "got a string" says more than a long string; 2.5 more than "a number" where a
    # whole number is wanted.
    got = _type_name(value) if rule == "type" and not isinstance(value, float) else _shown(value)
    if rule == "maxLength" and isinstance(value, str):
        got = f"{len(value):,} characters"
    return SchemaViolation(path, where, f"{verb} {_phrase(definition, rule)}, got {got}")
