"""Read GraphML back into a design: the exporter's own (`designer.io.exports.graphml`),
the same file after yEd saved it, and the older plain export (no yFiles graphics).

* A node with ``kind`` and ``model`` data is a device; a node holding a nested
  ``<graph>`` (a yEd group or folder) is a group, of ``group_kind`` (``rack`` for a
  group made in yEd).  A device belongs to the group it is nested in; in a file without
  nesting, to its ``group`` data.
* Position: the centre of the yFiles geometry, which yEd updates when a node moves;
  the ``x``/``y`` data where there is no geometry or it agrees with them to 1e-6.
* Ids: the ``design_id`` data (yEd renumbers element ids when it saves), else the
  element id.
* Links: every edge with a ``tech``; an edge without one is an error naming it.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from designer.io.exports.graphml import GRAPHML_NS, Y_NS
from designer.io.fabric_json import FileFormatError
from designer.io.imports.common import build_design, parse_xml
from designer.model.checks import ID_RE
from designer.model.elements import Group, Link, Node

__all__ = ["read_graphml"]

_G = f"{{{GRAPHML_NS}}}"
_Y = f"{{{Y_NS}}}"
_TRUE = {"true", "1", "yes"}


def _number(path, what: str, raw: str | None) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise FileFormatError(f"{path}: {what}: {raw!r} is not a number") from None
    if value != value or abs(value) == float("inf"):
        raise FileFormatError(f"{path}: {what}: not a finite number")
    return value


def read_graphml(path: str | os.PathLike[str]):
    """The design in the GraphML file ``path``.

    Raises
    ------
    FileFormatError
        Not GraphML, a node without a model, an unknown model or technology, a link to
        a missing node: one line naming the element.
    """
    root = parse_xml(path)
    if root.tag != f"{_G}graphml":
        raise FileFormatError(f"{path}: not a GraphML file (root element <{root.tag}>)")
    names: dict[str, str] = {}
    for key in root.findall(f"{_G}key"):
        if key.get("attr.name"):
            names[key.get("id", "")] = key.get("attr.name", "")
    graph = root.find(f"{_G}graph")
    if graph is None:
        raise FileFormatError(f"{path}: a GraphML file without a graph")

    def data(el: ET.Element) -> dict[str, str]:
        return {
            names[d.get("key", "")]: (d.text or "")
            for d in el.findall(f"{_G}data")
            if d.get("key", "") in names
        }

    def geometry(el: ET.Element) -> ET.Element | None:
        for d in el.findall(f"{_G}data"):
            for tag in ("ShapeNode", "GenericNode", "SVGNode", "ImageNode"):
                geo = d.find(f"{_Y}{tag}/{_Y}Geometry")
                if geo is not None:
                    return geo
        return None

    def yed_label(el: ET.Element) -> str | None:
        for d in el.findall(f"{_G}data"):
            label = d.find(f".//{_Y}NodeLabel")
            if label is not None and label.text:
                return label.text
        return None

    taken: set[str] = set()
    groups: list[Group] = []
    nodes: list[Node] = []
    element_ids: dict[str, str] = {}  # GraphML node id -> design node id

    def design_id(el: ET.Element, attrs: dict[str, str]) -> str:
        for raw in (attrs.get("design_id"), el.get("id", "").removeprefix("group#")):
            if raw and ID_RE.match(raw) and raw not in taken:
                taken.add(raw)
                return raw
        n = len(taken)
        while f"imported-{n}" in taken:
            n += 1
        taken.add(f"imported-{n}")
        return f"imported-{n}"

    def walk(container: ET.Element, group: str | None, depth: int) -> None:
        if depth > 64:
            raise FileFormatError(f"{path}: groups nested more than 64 deep")
        for el in container.findall(f"{_G}node"):
            attrs = data(el)
            inner = el.find(f"{_G}graph")
            where = f"node {el.get('id')!r}"
            if inner is not None or attrs.get("kind") == "group":
                gid = design_id(el, attrs)
                name = yed_label(el) or attrs.get("name") or gid
                parent = group if inner is not None or not attrs.get("group") else attrs["group"]
                groups.append(Group(gid, attrs.get("group_kind") or "rack", name, parent=parent))
                if inner is not None:
                    walk(inner, gid, depth + 1)
                continue
            if not attrs.get("model") or not attrs.get("kind"):
                raise FileFormatError(
                    f"{path}: {where} has no kind and model (a node added in another tool "
                    "needs the kind and model properties the exporter writes)"
                )
            x = _number(path, f"{where} x", attrs.get("x"))
            y = _number(path, f"{where} y", attrs.get("y"))
            geo = geometry(el)
            if geo is not None:
                gx = _number(path, f"{where} geometry x", geo.get("x")) or 0.0
                gy = _number(path, f"{where} geometry y", geo.get("y")) or 0.0
                cx = gx + (_number(path, f"{where} width", geo.get("width")) or 0.0) / 2
                cy = gy + (_number(path, f"{where} height", geo.get("height")) or 0.0) / 2
                if x is None or y is None or abs(cx - x) > 1e-6 or abs(cy - y) > 1e-6:
                    x, y = cx, cy
            nid = design_id(el, attrs)
            element_ids[el.get("id", "")] = nid
            nodes.append(
                Node(
                    nid,
                    attrs["kind"],
                    attrs["model"],
                    yed_label(el) or attrs.get("name") or nid,
                    x=x or 0.0,
                    y=y or 0.0,
                    group=group if group is not None else (attrs.get("group") or None),
                    plane=attrs.get("plane") or "compute",
                    failed=attrs.get("failed", "false").lower() in _TRUE,
                )
            )

    walk(graph, None, 0)
    # The plain export before yFiles names groups only in the nodes' ``group`` data.
    known = {g.id for g in groups}
    for missing in sorted({n.group for n in nodes if n.group is not None} - known):
        if not ID_RE.match(missing):
            raise FileFormatError(f"{path}: group {missing!r} is not a valid id")
        groups.append(Group(missing, "rack", missing))
    links: list[Link] = []
    link_taken: set[str] = set()
    for n, el in enumerate(graph.iter(f"{_G}edge")):
        attrs = data(el)
        where = f"edge {el.get('id') or n}"
        if not attrs.get("tech"):
            raise FileFormatError(f"{path}: {where} has no tech (link technology)")
        a, b = element_ids.get(el.get("source", "")), element_ids.get(el.get("target", ""))
        if a is None or b is None:
            raise FileFormatError(f"{path}: {where} does not join two devices")
        lid = next(
            (
                raw
                for raw in (attrs.get("design_id"), el.get("id"))
                if raw and ID_RE.match(raw) and raw not in link_taken
            ),
            None,
        )
        if lid is None:
            lid = f"imported-link-{n}"
        link_taken.add(lid)
        count = _number(path, f"{where} count", attrs.get("count"))
        if count is not None and count != int(count):
            raise FileFormatError(f"{path}: {where} count is not a whole number")
        links.append(
            Link(
                lid,
                a,
                b,
                attrs["tech"],
                count=int(count or 1),
                plane=attrs.get("plane") or "compute",
                failed=attrs.get("failed", "false").lower() in _TRUE,
            )
        )
    name = data(graph).get("name", "")
    return build_design(path, name, groups, nodes, links)
