"""Read a draw.io file made by the exporter (`designer.io.exports.drawio`) back into a
design: positions, groups, models and links.

What counts: every ``<object>`` (or ``<UserObject>``) with a ``kind`` and a ``model``
attribute is a node; one with a ``kind`` and no ``model`` that contains other cells is a
group; an edge cell between two nodes with a ``tech`` attribute is a link.  Moving,
re-labelling or re-grouping in draw.io is kept; shapes draw.io added by hand (text,
arrows without ``tech``) are ignored.  A node's position is the centre of its box,
with its containers' offsets added back.  A compressed diagram (draw.io's older
default) is inflated first.

Ids come back from the cell ids (``node#<id>``); a cell copied in draw.io gets a fresh id.
"""

from __future__ import annotations

import base64
import os
import urllib.parse
import xml.etree.ElementTree as ET
import zlib

from designer.io.fabric_json import FileFormatError
from designer.io.imports.common import build_design, parse_xml
from designer.model.checks import ID_RE
from designer.model.elements import Group, Link, Node

__all__ = ["read_drawio"]

_TRUE = {"true", "1", "yes"}


def _model_root(path: str | os.PathLike[str], diagram: ET.Element) -> ET.Element:
    model = diagram.find("mxGraphModel")
    if model is not None:
        return model
    text = (diagram.text or "").strip()
    if not text:
        raise FileFormatError(f"{path}: the diagram is empty")
    try:
        raw = zlib.decompress(base64.b64decode(text), -15)
        return ET.fromstring(urllib.parse.unquote(raw.decode("utf-8")))
    except (ValueError, zlib.error, ET.ParseError) as err:
        raise FileFormatError(f"{path}: cannot inflate the compressed diagram ({err})") from err


def _float(path, cell_id: str, geometry: ET.Element | None, name: str, default: float = 0.0):
    if geometry is None:
        return default
    raw = geometry.get(name, default)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise FileFormatError(f"{path}: cell {cell_id!r}: {name}={raw!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise FileFormatError(f"{path}: cell {cell_id!r}: {name} is not finite")
    return value


def _design_id(cell_id: str, prefix: str, taken: set[str], counter: list[int]) -> str:
    raw = cell_id.removeprefix(prefix)
    if raw != cell_id and ID_RE.match(raw) and raw not in taken:
        taken.add(raw)
        return raw
    while True:
        counter[0] += 1
        fresh = f"{prefix.rstrip('#')}-{counter[0]}"
        if fresh not in taken:
            taken.add(fresh)
            return fresh


def read_drawio(path: str | os.PathLike[str]):
    """The design in the draw.io file ``path`` (its first page).

    Raises
    ------
    FileFormatError
        Not a draw.io file, no Fabric Designer nodes in it, an unknown model or link
        technology, a link to a missing node: one line naming the cell.
    """
    root = parse_xml(path)
    if root.tag == "mxfile":
        diagram = root.find("diagram")
        if diagram is None:
            raise FileFormatError(f"{path}: a draw.io file without a diagram")
        name = diagram.get("name", "")
        model = _model_root(path, diagram)
    elif root.tag == "mxGraphModel":
        name, model = "", root
    else:
        raise FileFormatError(f"{path}: not a draw.io file (root element <{root.tag}>)")
    cells_root = model.find("root")
    if cells_root is None:
        raise FileFormatError(f"{path}: a draw.io diagram without cells")

    # (cell id) -> (attributes, mxCell): objects carry the attributes, their mxCell the rest.
    cells: dict[str, tuple[dict[str, str], ET.Element]] = {}
    for child in cells_root:
        if child.tag in ("object", "UserObject"):
            cell = child.find("mxCell")
            if cell is None:
                continue
            cells[child.get("id", "")] = (dict(child.attrib), cell)
        elif child.tag == "mxCell":
            cells[child.get("id", "")] = (dict(child.attrib), child)

    def origin(cell_id: str | None, depth: int = 0) -> tuple[float, float]:
        """The absolute position of a container's top-left corner."""
        if cell_id is None or cell_id not in cells or depth > 64:
            return 0.0, 0.0
        _attrs, cell = cells[cell_id]
        if cell.get("vertex") != "1":
            return 0.0, 0.0
        geo = cell.find("mxGeometry")
        px, py = origin(cell.get("parent"), depth + 1)
        return (px + _float(path, cell_id, geo, "x"), py + _float(path, cell_id, geo, "y"))

    group_ids: dict[str, str] = {}
    node_ids: dict[str, str] = {}
    taken_g: set[str] = set()
    taken_n: set[str] = set()
    counter = [0]
    for cell_id, (attrs, cell) in cells.items():
        if cell.get("vertex") != "1" or "kind" not in attrs:
            continue
        if "model" in attrs:
            node_ids[cell_id] = _design_id(cell_id, "node#", taken_n, counter)
        else:
            group_ids[cell_id] = _design_id(cell_id, "group#", taken_g, counter)

    groups = []
    for cell_id, gid in group_ids.items():
        attrs, cell = cells[cell_id]
        parent = group_ids.get(cell.get("parent", ""))
        groups.append(Group(gid, attrs["kind"], attrs.get("label", gid), parent=parent))
    nodes = []
    for cell_id, nid in node_ids.items():
        attrs, cell = cells[cell_id]
        geo = cell.find("mxGeometry")
        ox, oy = origin(cell.get("parent"))
        x = ox + _float(path, cell_id, geo, "x") + _float(path, cell_id, geo, "width") / 2
        y = oy + _float(path, cell_id, geo, "y") + _float(path, cell_id, geo, "height") / 2
        nodes.append(
            Node(
                nid,
                attrs["kind"],
                attrs["model"],
                attrs.get("label", nid),
                x=x,
                y=y,
                group=group_ids.get(cell.get("parent", "")),
                plane=attrs.get("plane", "compute"),
                failed=attrs.get("failed", "false").lower() in _TRUE,
            )
        )
    if not nodes:
        raise FileFormatError(
            f"{path}: no Fabric Designer nodes in this draw.io file (shapes need the "
            "kind and model attributes the exporter writes)"
        )
    links = []
    taken_l: set[str] = set()
    for cell_id, (attrs, cell) in cells.items():
        if cell.get("edge") != "1" or "tech" not in attrs:
            continue
        a, b = cell.get("source", ""), cell.get("target", "")
        if a not in node_ids or b not in node_ids:
            raise FileFormatError(
                f"{path}: link cell {cell_id!r} is not connected to two nodes at both ends"
            )
        try:
            count = int(attrs.get("count", "1"))
        except ValueError:
            raise FileFormatError(
                f"{path}: link cell {cell_id!r}: count={attrs.get('count')!r} is not a whole number"
            ) from None
        links.append(
            Link(
                _design_id(cell_id, "link#", taken_l, counter),
                node_ids[a],
                node_ids[b],
                attrs["tech"],
                count=count,
                plane=attrs.get("plane", "compute"),
                failed=attrs.get("failed", "false").lower() in _TRUE,
            )
        )
    return build_design(path, name, groups, nodes, links)
