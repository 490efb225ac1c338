"""The native design file, ``*.fabric.json`` (format version 1; 2 when it holds workloads).

The file is JSON meant to live in version control: top-level keys in a fixed order, one
group, node or link per line (keys in dataclass field order), items sorted by id with a
natural sort (``gpu-2`` before ``gpu-10``), UTF-8 with a trailing newline.  Moving one
node therefore changes one line of the file.  Floats are written with ``repr`` so the
round trip is exact::

    {
      "format": "fabric-designer",
      "version": 1,
      "name": "DGX H100 SU",
      "settings": {"routing": "adaptive"},
      "overrides": {
        "H100": {"price_usd": 25000.0}
      },
      "groups": [
        {"id": "n0", "kind": "node", "name": "DGX 0", "parent": null}
      ],
      "nodes": [
        {"id": "n0-gpu0", "kind": "gpu", "model": "H100", "name": "GPU 0", ...}
      ],
      "links": [
        {"id": "l0", "a": "n0-gpu0", "b": "n0-sw0", "tech": "nvlink4", "count": 5, ...}
      ]
    }

Loading trusts nothing: every failure (unreadable file, bad UTF-8, bad JSON, wrong
types, unknown or duplicate keys, dangling ids, a model the catalog lacks) becomes a
`FileFormatError` whose one-line message names the file, the place and the problem.
The shape of the file (keys, types, enumerations, bounds) is checked against the JSON
Schema ``resources/schema/fabric.schema.json`` (`designer.io.fabric_schema`); then
`designer.io.fabric_read` and the model check what a schema cannot say.
``docs/file-format.md`` is the reference.

Example
-------
>>> from designer.model.topology import Topology, Node
>>> t = Topology(name="tiny")
>>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0", x=1.5))
>>> loads(dumps(t)).state() == t.state()
True
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from designer.collector import collector_paused
from designer.io import design_file, fabric_columns, fabric_parse
from designer.io.atomic import atomic_write_bytes
from designer.io.design_file import MAX_FILE_BYTES, FileFormatError, check_design_file
from designer.io.fabric_limits import LIMITS, MAX_NAME_CHARS
from designer.io.fabric_read import (
    FORMAT,
    MAX_GROUP_DEPTH,
    MAX_LINK_COUNT,
    VERSION,
    Invalid,
    check_header,
    check_records,
    check_version_content,
    decode_text,
    float_positions,
    item_where,
    order_groups,
    parse_items,
    strip_subject,
    version_for,
)
from designer.io.fabric_schema import SchemaViolation
from designer.io.fabric_write import (
    check_limits,
    column_lines,
    item_columns,
    item_dicts,
    item_lines,
    one_line,
)
from designer.io.stale_temps import remove_stale_temps
from designer.model.catalog import Catalog
from designer.model.errors import DesignError
from designer.model.naming import natural_key
from designer.model.topology import (
    GROUP_FIELDS,
    LINK_FIELDS,
    NODE_FIELDS,
    Group,
    PartError,
    Topology,
)

__all__ = [
    "FORMAT",
    "LIMITS",
    "MAX_FILE_BYTES",
    "MAX_GROUP_DEPTH",
    "MAX_LINK_COUNT",
    "MAX_NAME_CHARS",
    "VERSION",
    "FileFormatError",
    "LoadCancelled",
    "dumps",
    "from_dict",
    "load",
    "loads",
    "natural_key",
    "save",
    "to_dict",
]

#: Price and power overrides above this are surely typos (and keep floats exact).
MAX_OVERRIDE = 1e15
OVERRIDE_FIELDS: tuple[str, ...] = ("price_usd", "power_w")


class LoadCancelled(Exception):
    """A load stopped because its ``progress`` callback returned False (the user's
    Cancel); nothing was built."""


# --------------------------------------------------------------------------- writing

def _by_id(items: Iterable[Any]) -> list[Any]:
    return sorted(items, key=lambda item: natural_key(item.id))


def _check_overrides(topology: Topology) -> dict[str, dict[str, float]]:
    """Overrides are a public mutable dict on the topology; refuse to write junk that
    `load` would refuse to read back (better a clear error now than a lost design later)."""
    overrides, catalog = topology.overrides, topology.catalog
    out: dict[str, dict[str, float]] = {}
    for model in overrides:
        if not isinstance(model, str) or (
            model not in catalog.devices and model not in catalog.techs
        ):
            raise DesignError(f"overrides: unknown device model or link technology {model!r}")
    for model in sorted(overrides, key=natural_key):
        values = overrides[model]
        where = f"overrides[{model!r}]"
        if not isinstance(values, Mapping):
            raise DesignError(f"{where}: expected a mapping of {', '.join(OVERRIDE_FIELDS)}")
        for field in values:
            if field not in OVERRIDE_FIELDS:
                raise DesignError(f"{where}: unknown field {field!r}")
        # Fixed field order, whatever the order the dict was filled in.
        out[model] = {
            f: _override_value(values[f], where, f) for f in OVERRIDE_FIELDS if f in values
        }
    return out


def _override_value(value: Any, where: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DesignError(f"{where}: {field!r} must be a number")
    if not math.isfinite(value) or not 0 <= value <= MAX_OVERRIDE:
        raise DesignError(f"{where}: {field!r} must be a finite number >= 0")
    return float(value)


def _header(topology: Topology) -> dict[str, Any]:
    """What `to_dict` holds before the nodes and links."""
    settings = topology.settings
    if not settings.get("workloads"):
        settings.pop("workloads", None)   # (and the file stays readable by version 1)
    return {
        "format": FORMAT,
        "version": version_for(settings),
        "name": topology.name,
        "settings": dict(sorted(settings.items())),
        "overrides": _check_overrides(topology),
        "groups": [{f: getattr(g, f) for f in GROUP_FIELDS} for g in _by_id(topology.groups())],
    }


def to_dict(topology: Topology) -> dict[str, Any]:
    """The design as plain JSON values, keys and items in file order.

    Examples
    --------
    >>> list(to_dict(Topology()))
    ['format', 'version', 'name', 'settings', 'overrides', 'groups', 'nodes', 'links']
    """
    columns = item_columns(topology)
    if columns is not None:
        nodes, links = item_dicts(columns[0], NODE_FIELDS), item_dicts(columns[1], LINK_FIELDS)
    else:
        check_limits(topology)
        nodes = []
        for node in _by_id(topology.nodes()):
            item = {f: getattr(node, f) for f in NODE_FIELDS}
            item["x"], item["y"] = float(node.x), float(node.y)
            nodes.append(item)
        links = [{f: getattr(lk, f) for f in LINK_FIELDS} for lk in _by_id(topology.links())]
    return {**_header(topology), "nodes": nodes, "links": links}


_one_line = one_line


def dumps(topology: Topology) -> str:
    """The design as the text of a ``.fabric.json`` file (ends with a newline).

    Raises
    ------
    DesignError
        The topology holds a value that cannot be written (an override that is not a
        finite number), or is larger than a file may hold (`LIMITS`, `MAX_NAME_CHARS`).
    """
    columns = item_columns(topology)
    if columns is None:
        data = to_dict(topology)
        sections = {k: item_lines(data[k]) for k in ("groups", "nodes", "links") if data[k]}
    else:
        data = {**_header(topology), "nodes": columns[0][0], "links": columns[1][0]}
        sections = {"groups": item_lines(data["groups"])} if data["groups"] else {}
        for key, cols, fields in (("nodes", columns[0], NODE_FIELDS),
                                  ("links", columns[1], LINK_FIELDS)):
            if cols[0]:
                sections[key] = column_lines(cols, fields)
    lines = ["{"]
    for key, value in data.items():
        if key in sections:
            text = f"[\n{sections[key]}\n  ]"
        elif key == "overrides" and value:
            body = ",\n".join(f"    {_one_line(k)}: {_one_line(v)}" for k, v in value.items())
            text = f"{{\n{body}\n  }}"
        else:
            text = _one_line(value)
        lines.append(f"  {_one_line(key)}: {text},")
    lines[-1] = lines[-1].removesuffix(",")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _encode(text: str) -> bytes:
    # A str may hold a lone surrogate (pasted from a broken source) that UTF-8 cannot
    # encode.  It can only sit inside a JSON string, where backslashreplace writes it as
    # the JSON escape \udXXX, which json.loads reads back to the same character.
    return text.encode("utf-8", errors="backslashreplace")


def save(
    topology: Topology,
    path: str | os.PathLike[str],
    *,
    backup: bool = True,
    progress: Callable[[str, int, int], Any] | None = None,
) -> None:
    """Write the design to ``path`` atomically.

    The new content goes to a temporary file in the same folder, is fsynced and renamed
    over ``path``; with ``backup`` the previous file is kept as ``<path>.bak``.
    ``progress(stage, done, total)``, if given, is told each stage ("encoding",
    "writing") as it starts, and the end.

    Raises
    ------
    FileFormatError
        Naming the path and the reason (read-only folder, disk full, a value that cannot
        be written); the previous file is then intact.
    """
    def report(stage: str, done: int) -> None:
        if progress is not None:
            progress(stage, done, 2)

    report("encoding", 0)
    try:
        data = _encode(dumps(topology))
    except DesignError as err:
        raise FileFormatError(f"{os.fspath(path)}: cannot save: {err}") from err
    report("writing", 1)
    try:
        atomic_write_bytes(path, data, backup=backup)
    except OSError as err:
        raise FileFormatError(f"{os.fspath(path)}: cannot save: {err.strerror or err}") from err
    report("written", 2)


# --------------------------------------------------------------------------- reading


def _parse_overrides(raw: Mapping[str, Any], catalog: Catalog) -> dict[str, dict[str, float]]:
    """The overrides (shape already checked by the schema) against the catalog."""
    out: dict[str, dict[str, float]] = {}
    for model, values in raw.items():
        where = f"overrides[{model!r}]"
        if model not in catalog.devices and model not in catalog.techs:
            raise Invalid(where, f"unknown device model or link technology {model!r}")
        out[model] = {}
        for field, value in values.items():
            try:  # from_dict may be handed a NaN, which no schema bound catches
                out[model][field] = _override_value(value, where, field)
            except DesignError:
                raise Invalid(
                    where, f"field {field!r} must be a finite number from 0 to {MAX_OVERRIDE:g}"
                ) from None
    return out


#: Items added between two calls of a load's ``progress`` callback.
PROGRESS_EVERY = 4096

#: ``progress(stage, done, total)``: what a long load is doing (``stage`` one of
#: "checking", "building"), for a caller that shows it; ``done`` of ``total`` items.
#: Returning False stops the load (`LoadCancelled`); None or True goes on.
Progress = Callable[[str, int, int], "bool | None"]


def _report(progress: Progress | None, stage: str, done: int, total: int) -> None:
    if progress is not None and progress(stage, done, total) is False:
        raise LoadCancelled(f"stopped while {stage}")


def _build(
    data: Any,
    catalog: Catalog | None,
    progress: Progress | None = None,
    owned: bool = False,
    lazy_edges: bool = False,
) -> Topology:
    """The design ``data`` describes (``owned``: nobody else holds ``data``, whose item
    dicts may become the graph's; ``lazy_edges``: see `load`; both `Topology.add_parts`
    options)."""
    check_header(data)
    total = sum(len(data.get(k, ())) for k in ("groups", "nodes", "links")
                if isinstance(data.get(k), list))
    _report(progress, "checking", 0, total)
    # The schema describes versions 1 and 2, which differ only by what 2 may add
    # (``settings.workloads``): a version-1 file is a version-2 file without jobs, so it
    # needs no migration beyond that check.
    try:
        columns = fabric_columns.validate(data) or {}
    except SchemaViolation as err:
        raise Invalid(err.where, err.what) from None
    check_version_content(data)
    # From here on the shape is right (every key known, every value of its type and
    # within its bounds); what is left is what a schema cannot say.
    topology = Topology(catalog=catalog, name=data.get("name", "untitled"))
    for key, value in data.get("settings", {}).items():
        try:
            topology.set_setting(key, value)
        except DesignError as err:  # what the schema lets through: ranks 2.0, say
            raise Invalid(f"settings.{key}", strip_subject(str(err), key)) from None
    topology.overrides = _parse_overrides(data.get("overrides", {}), topology.catalog)

    seen: dict[str, tuple[str, int]] = {}
    groups = order_groups(
        [(item_where("groups", i, g), g) for i, g in parse_items(data, "groups", Group, seen)]
    )
    nodes, known_nodes = float_positions(data.get("nodes", []), columns.get("nodes", {}))
    links = data.get("links", [])

    def building(done: int) -> None:
        _report(progress, "building", done, total)

    try:
        topology.add_parts(
            [g for _, g in groups], nodes, links,
            progress=None if progress is None else building, every=PROGRESS_EVERY,
            adopt=owned, columns=(known_nodes, columns.get("links", {})),
            lazy_edges=lazy_edges,
        )
    except PartError as err:
        # The model refuses duplicate ids and fractional counts too, but the file's
        # words for them come first, as the file's checks come before the model's.
        check_records(data, seen)
        raise _invalid(err, groups, data) from None
    topology.flush_columns()  # as part of loading, not of the first snapshot
    return topology


def _invalid(err: PartError, groups: list[tuple[str, Group]], data: Any) -> Invalid:
    """The model's refusal of an item, placed in the file."""
    section, index = err.section, err.index
    if section == "groups":
        where, item_id = groups[index][0], groups[index][1].id
    else:
        item = data[section][index]
        where, item_id = item_where(section, index, item), item["id"]
    noun = section.removesuffix("s")
    return Invalid(where, strip_subject(str(err), f"{noun} {item_id!r}"))


def from_dict(data: Any, *, source: str = "<memory>", catalog: Catalog | None = None,
              progress: Progress | None = None) -> Topology:
    """Build a `Topology` from parsed JSON values (as `to_dict` makes them).

    Parameters
    ----------
    data : object
        Whatever ``json.load`` returned; every part is checked.
    source : str
        File name used in error messages.
    catalog : Catalog, optional
        Catalog the design's models must exist in; the shipped one by default.
    progress : callable, optional
        ``progress(stage, done, total)`` now and then while a big design is built (see
        `Progress`), for a caller that shows how far it got; returning False stops the
        load with `LoadCancelled`.

    Raises
    ------
    FileFormatError
        ``"<source>: <where>: <what>"`` for the first problem found.
    """
    return _from_dict(data, source, catalog, progress)


def _from_dict(
    data: Any,
    source: str,
    catalog: Catalog | None,
    progress: Progress | None,
    owned: bool = False,
    lazy_edges: bool = False,
) -> Topology:
    try:
        with collector_paused():
            return _build(data, catalog, progress, owned, lazy_edges)
    except Invalid as err:
        raise FileFormatError(f"{source}: {err.where}: {err.what}") from None
    except RecursionError:
        raise FileFormatError(f"{source}: nested too deeply") from None


def loads(
    text: str | bytes, *, source: str = "<memory>", catalog: Catalog | None = None,
    progress: Progress | None = None,
) -> Topology:
    """Read a design from the text of a ``.fabric.json`` file (str, or UTF-8 bytes).

    Raises
    ------
    FileFormatError
        Anything wrong with the text, named ``"<source>: <where>: <what>"``.

    Examples
    --------
    >>> loads('{"format": "fabric-designer", "version": 9, "nodes": [], "links": []}')
    Traceback (most recent call last):
    ...
    designer.io.design_file.FileFormatError: <memory>: version: written by a newer \
Fabric Designer (format version 9); this version reads up to 2
    """
    return _loads([text], source, catalog, progress)


def _loads(
    box: list[str | bytes],
    source: str,
    catalog: Catalog | None,
    progress: Progress | None,
    lazy_edges: bool = False,
) -> Topology:
    """`loads` of the one text in ``box``, which it takes out: nothing holds the text of
    a big file (up to 256 MiB) once it is parsed, while the design is built."""
    try:
        # Counts, item shapes and name lengths checked before anything big is built
        # (`designer.io.fabric_limits`, `designer.io.fabric_parse`).
        data = fabric_parse.parse(decode_text(box.pop()))
    except Invalid as err:
        raise FileFormatError(f"{source}: {err.where}: {err.what}") from None
    try:
        # The parsed value is ours alone: its item dicts become the graph's.
        return _from_dict(data, source, catalog, progress, owned=True, lazy_edges=lazy_edges)
    except (FileFormatError, LoadCancelled):
        raise
    except Exception as err:
        # A safety net: the GUI promises the user a message, never a traceback.  The
        # fuzz tests fail on this text, so a bug that reaches it does not hide.
        raise FileFormatError(
            f"{source}: could not be read (internal error: {type(err).__name__}: {err})"
        ) from err


def load(path: str | os.PathLike[str], *, catalog: Catalog | None = None,
         progress: Progress | None = None, lazy_edges: bool = False) -> Topology:
    """Read the design file ``path`` (``progress``: see `from_dict`).

    ``lazy_edges``: leave the writing of the design's networkx edges to the first
    reader of its graph (`Topology.add_parts`), for a caller that may read only its
    columns and nodes (``fabric-designer info``); a caller that loads on a worker
    thread and draws on another leaves it False, so that the work stays on the worker.

    Raises
    ------
    FileFormatError
        For any failure: missing or unreadable file, larger than `MAX_FILE_BYTES`, not
        UTF-8, not JSON, or not a valid design; the message names the file, the field
        and the node or link at fault.
    """
    source = os.fspath(path)
    check_design_file(path)
    try:
        remove_stale_temps(path)  # a crashed save's leftovers, when the writer is gone
        with open(path, "rb") as f:
            # Read one byte past the limit: the file may have grown since the stat.
            data = f.read(design_file.MAX_FILE_BYTES + 1)
    except OSError as err:
        raise FileFormatError(f"{source}: cannot read: {err.strerror or err}") from err
    if len(data) > design_file.MAX_FILE_BYTES:
        raise FileFormatError(
            f"{source}: too big (the limit is {design_file.MAX_FILE_BYTES:,} bytes)")
    try:
        box: list[str | bytes] = [decode_text(data)]
    except Invalid as err:
        raise FileFormatError(f"{source}: {err.where}: {err.what}") from None
    del data  # the text alone from here: a 256 MiB file is not held twice
    return _loads(box, source, catalog, progress, lazy_edges)
