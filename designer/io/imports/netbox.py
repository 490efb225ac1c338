"""Read a NetBox devices CSV and cables CSV (as `designer.io.exports.netbox` writes them,
or as NetBox's own export lists them with the same columns) into a design.

Input: the export folder (``OUT.netbox/``, holding ``devices.csv`` and ``cables.csv``), or a
``…devices.csv`` file whose ``…cables.csv`` sits beside it.  What is read:

* ``devices.csv``: ``name`` (the node's name; its id is the name with characters ids do
  not take replaced by ``-``), ``role`` (the node kind), ``device_type`` (the catalog
  model), ``status`` (``offline``/``failed``: a failed node), ``site`` and ``rack`` (rack
  groups, and a ``cluster`` group per site when there are several), ``cf_coordinates``
  (netbox-topology-views ``"X;Y"``: the canvas position; without it devices are laid out
  on a grid).
* ``cables.csv``: one row per cable; rows whose ``label`` is ``<link>/<n>`` with the same
  ends and technology form one bundle of that many links; ``description`` is the link
  technology (a catalog key); ``status`` ``decommissioning`` marks a failed link.
* ``board-links.csv`` when present (ours, not NetBox's): PCIe and in-server NVLink.

Not carried by these files, so not restored: server/SU groups (only racks and sites),
planes (everything is ``compute``).  Errors are one line naming the file, row and value: a
missing column, an unknown model or technology, a cable to a device not in the devices
CSV.  Cells our CSV writer guarded against formula injection (a leading ``'``) are
read back as written.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

from designer.io.fabric_json import FileFormatError
from designer.io.imports.common import MAX_IMPORT_BYTES, build_design
from designer.model.catalog import default_catalog
from designer.model.checks import ID_RE
from designer.model.elements import Group, Link, Node

__all__ = ["netbox_paths", "read_netbox"]

_GUARDED = re.compile(r"^'[=+\-@\t\r]")
_NOT_ID = re.compile(r"[^A-Za-z0-9_.:/\-]+")
_BUNDLE = re.compile(r"^(.+)/(\d+)$")
_FAILED = {"offline", "failed", "decommissioning"}


def netbox_paths(path: str | os.PathLike[str]) -> tuple[Path, Path, Path]:
    """(devices, cables, board links) CSV paths for a folder or a ``…devices.csv``."""
    p = Path(path)
    if p.is_dir():
        return p / "devices.csv", p / "cables.csv", p / "board-links.csv"
    prefix = p.name[: -len("devices.csv")]
    return p, p.with_name(f"{prefix}cables.csv"), p.with_name(f"{prefix}board-links.csv")


def _rows(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise FileFormatError(
                f"{path}: too large to import (over {MAX_IMPORT_BYTES >> 20} MiB)"
            )
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as err:
        raise FileFormatError(f"{path}: cannot read: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise FileFormatError(f"{path}: not UTF-8 text ({err.reason})") from err
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in required if c not in (reader.fieldnames or [])]
    if missing:
        raise FileFormatError(f"{path}: no column {', '.join(missing)} in the header")
    return [
        {k: (v[1:] if _GUARDED.match(v or "") else (v or "")).strip() for k, v in row.items() if k}
        for row in reader
    ]


def _unique_id(raw: str, taken: set[str], fallback: str) -> str:
    base = _NOT_ID.sub("-", raw).strip("-")[:120] or fallback
    ident, n = base, 1
    while ident in taken or not ID_RE.match(ident):
        n += 1
        ident = f"{base}-{n}"
    taken.add(ident)
    return ident


def _position(path: Path, line: int, text: str, index: int) -> tuple[float, float]:
    if not text:
        return 200.0 * (index % 32), 200.0 * (index // 32)
    try:
        x, y = (float(v) for v in text.split(";"))
    except ValueError:
        raise FileFormatError(f'{path}: row {line}: coordinates {text!r} are not "X;Y"') from None
    if any(v != v or abs(v) == float("inf") for v in (x, y)):
        raise FileFormatError(f"{path}: row {line}: coordinates {text!r} are not finite")
    return x, y


def read_netbox(path: str | os.PathLike[str]):
    """The design in a NetBox devices + cables CSV pair (see module doc).

    Raises
    ------
    FileFormatError
        A file missing or unreadable, a required column missing, an unknown model or link
        technology, a cable naming a device the devices CSV does not list: one line.
    """
    devices_csv, cables_csv, board_csv = netbox_paths(path)
    catalog = default_catalog()
    devices = _rows(devices_csv, ("name", "role", "device_type"))
    cable_rows = _rows(cables_csv, ("side_a_device", "side_b_device", "description"))
    board_rows = (
        _rows(board_csv, ("side_a_device", "side_b_device", "tech", "count"))
        if (board_csv.exists())
        else []
    )

    sites = sorted({d.get("site", "") for d in devices} - {""})
    clusters = len(sites) > 1
    taken_g: set[str] = set()
    groups: dict[tuple[str, str], Group] = {}

    def group(kind: str, name: str, parent: str | None) -> str:
        key = (kind, name if kind == "cluster" else f"{parent}/{name}")
        if key not in groups:
            groups[key] = Group(_unique_id(f"{kind}-{name}", taken_g, kind), kind, name, parent)
        return groups[key].id

    by_name: dict[str, str] = {}
    taken_n: set[str] = set()
    nodes = []
    for i, d in enumerate(devices):
        line = i + 2
        name, model = d["name"], d["device_type"]
        if not name:
            raise FileFormatError(f"{devices_csv}: row {line}: a device without a name")
        if name in by_name:
            raise FileFormatError(f"{devices_csv}: row {line}: device {name!r} listed twice")
        if model not in catalog.devices:
            close = sorted(k for k in catalog.devices if k.lower()[:3] == model.lower()[:3])[:5]
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise FileFormatError(
                f"{devices_csv}: row {line}: device {name!r}: unknown model {model!r}{hint}"
            )
        site = d.get("site", "")
        parent = group("cluster", site, None) if clusters and site else None
        rack = d.get("rack", "")
        where = group("rack", rack, parent) if rack else parent
        x, y = _position(devices_csv, line, d.get("cf_coordinates", ""), i)
        ident = _unique_id(name, taken_n, "node")
        by_name[name] = ident
        failed = d.get("status", "").lower() in _FAILED
        nodes.append(Node(ident, d["role"], model, name, x, y, where, failed=failed))

    def end(file: Path, line: int, row: dict[str, str], side: str) -> str:
        name = row[f"side_{side}_device"]
        if name not in by_name:
            raise FileFormatError(
                f"{file}: row {line}: side_{side}_device {name!r} is not in {devices_csv.name}"
            )
        return by_name[name]

    def tech_of(file: Path, line: int, tech: str) -> str:
        if tech not in catalog.techs:
            raise FileFormatError(
                f"{file}: row {line}: unknown link technology {tech!r} (the catalog's keys, "
                f"e.g. {', '.join(sorted(catalog.techs)[:4])})"
            )
        return tech

    # Cables: rows of one bundle share the label's link id, both ends and the technology.
    bundles: dict[tuple, list] = {}
    for i, row in enumerate(cable_rows):
        line = i + 2
        a, b = end(cables_csv, line, row, "a"), end(cables_csv, line, row, "b")
        tech = tech_of(cables_csv, line, row["description"])
        label = row.get("label", "")
        m = _BUNDLE.match(label)
        base = m.group(1) if m else (label or None)
        key = (base, a, b, tech) if base else (None, a, b, tech, i)
        entry = bundles.setdefault(key, [base, a, b, tech, 0, False])
        entry[4] += 1
        entry[5] = entry[5] or row.get("status", "").lower() in _FAILED
    for i, row in enumerate(board_rows):
        line = i + 2
        a, b = end(board_csv, line, row, "a"), end(board_csv, line, row, "b")
        tech = tech_of(board_csv, line, row["tech"])
        try:
            count = int(row["count"])
        except ValueError:
            raise FileFormatError(f"{board_csv}: row {line}: count {row['count']!r}") from None
        failed = row.get("status", "").lower() in _FAILED
        bundles[("board", i)] = [row.get("label") or None, a, b, tech, count, failed]
    taken_l: set[str] = set()
    links = [
        Link(_unique_id(base or "link", taken_l, "link"), a, b, tech, count, failed=failed)
        for base, a, b, tech, count, failed in bundles.values()
    ]
    name = (
        devices_csv.parent.name.removesuffix(".netbox") if devices_csv.name == "devices.csv" else ""
    )
    name = sites[0] if len(sites) == 1 else name
    return build_design(devices_csv, name, groups.values(), nodes, links)
