"""GraphML with the yFiles extension: opens laid out in yEd, coloured in Gephi, and
plain ``networkx.read_graphml`` still reads every attribute.

What is written (yFiles GraphML, docs.yworks.com "GraphML file format"; field notes
2026, 1.3 j):

* typed ``<key>``s for the design's own attributes (``kind, model, name, label, x, y,
  group, plane, failed, design_id`` on nodes; ``tech, count, plane, failed,
  gbps_per_direction, design_id`` on edges; ``utilisation`` and ``load_GBps`` when a
  solve's per-link results are given), so networkx reads them with their types;
* a ``nodegraphics`` key holding a ``<y:ShapeNode>`` per node (geometry centred on the
  node's position, fill by kind, label, shape) written *before* the plain data, so
  networkx, which also reads yFiles geometry, ends with the exact ``x``/``y``;
* each group as a yEd group node (``yfiles.foldertype="group"``, a
  ``<y:ProxyAutoBoundsNode>``) with a nested ``<graph>`` holding its members; networkx
  flattens nesting, so it sees a group as a node of ``kind="group"`` (its own kind in
  ``group_kind``): filter those out for the device graph;
* ``edgegraphics`` with the technology's colour (or utilisation's) on each edge; all
  edges live in the top graph, where networkx looks for them.

Group node ids are ``group#<id>`` (``#`` never occurs in a design id), so they never
collide with a node's.  yEd renumbers ids when it saves; ``design_id`` keeps ours.

Example
-------
>>> import io, networkx as nx
>>> from designer.model.topology import Topology, Node
>>> t = Topology()
>>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0", x=5))
>>> g = nx.read_graphml(io.BytesIO(graphml_bytes(t)))
>>> g.nodes["g0"]["x"], g.nodes["g0"]["model"]
(5.0, 'H100')
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping

from designer.io.atomic import atomic_write_bytes
from designer.io.exports.common import (
    FAILED_COLOR,
    KIND_COLORS,
    OTHER_COLOR,
    group_boxes,
    link_color,
    node_box,
    sorted_groups,
    sorted_links,
    sorted_nodes,
    utilisation_color,
)
from designer.model.safe_text import xml_text
from designer.model.topology import Topology

__all__ = ["GRAPHML_NS", "Y_NS", "graphml_bytes", "write_graphml"]

GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"
Y_NS = "http://www.yworks.com/xml/graphml"
_XSI = "http://www.w3.org/2001/XMLSchema-instance"
_SCHEMA = (
    "http://graphml.graphdrawing.org/xmlns "
    "http://www.yworks.com/xml/schema/graphml/1.1/ygraphml.xsd"
)

#: (id, for, attr.name, attr.type): the design's attributes.
NODE_KEYS = (
    ("d_kind", "kind", "string"),
    ("d_model", "model", "string"),
    ("d_name", "name", "string"),
    ("d_label", "label", "string"),
    ("d_x", "x", "double"),
    ("d_y", "y", "double"),
    ("d_group", "group", "string"),
    ("d_plane", "plane", "string"),
    ("d_failed", "failed", "boolean"),
    ("d_id", "design_id", "string"),
    ("d_gkind", "group_kind", "string"),
)
EDGE_KEYS = (
    ("e_tech", "tech", "string"),
    ("e_count", "count", "int"),
    ("e_plane", "plane", "string"),
    ("e_failed", "failed", "boolean"),
    ("e_gbps", "gbps_per_direction", "double"),
    ("e_id", "design_id", "string"),
)
RESULT_KEYS = (("e_util", "utilisation", "double"), ("e_load", "load_GBps", "double"))

#: yEd shape per node kind.
SHAPES: Mapping[str, str] = {
    "gpu": "roundrectangle",
    "nvswitch": "hexagon",
    "nvlink-switch-tray": "hexagon",
    "nic": "parallelogram",
    "host": "rectangle3d",
    "storage": "ellipse",
}


def _y(tag: str) -> str:
    return f"{{{Y_NS}}}{tag}"


def _g(tag: str) -> str:
    return f"{{{GRAPHML_NS}}}{tag}"


def _fmt(value: float) -> str:
    return repr(float(value))


def _data(parent: ET.Element, key: str, value: str) -> None:
    ET.SubElement(parent, _g("data"), {"key": key}).text = value


def _label(parent: ET.Element, text: str, **attrs: str) -> None:
    el = ET.SubElement(parent, _y("NodeLabel"), {"fontSize": "9", **attrs})
    el.text = text


def graphml_bytes(
    topology: Topology, *, results: Mapping[str, Mapping[str, float]] | None = None
) -> bytes:
    """The design as yFiles GraphML (see module doc).

    Parameters
    ----------
    topology : Topology
        The design.
    results : mapping of link id to {"utilisation": u, "load_GBps": g}, optional
        A solve's per-link figures, written as edge data (and colouring edges).
    """
    ET.register_namespace("", GRAPHML_NS)
    ET.register_namespace("y", Y_NS)
    ET.register_namespace("xsi", _XSI)
    root = ET.Element(_g("graphml"), {f"{{{_XSI}}}schemaLocation": _SCHEMA})
    ET.SubElement(
        root,
        _g("key"),
        {"id": "g_name", "for": "graph", "attr.name": "name", "attr.type": "string"},
    )
    for kid, name, typ in NODE_KEYS:
        ET.SubElement(
            root, _g("key"), {"id": kid, "for": "node", "attr.name": name, "attr.type": typ}
        )
    edge_keys = EDGE_KEYS + (RESULT_KEYS if results is not None else ())
    for kid, name, typ in edge_keys:
        ET.SubElement(
            root, _g("key"), {"id": kid, "for": "edge", "attr.name": name, "attr.type": typ}
        )
    ET.SubElement(root, _g("key"), {"id": "ng", "for": "node", "yfiles.type": "nodegraphics"})
    ET.SubElement(root, _g("key"), {"id": "eg", "for": "edge", "yfiles.type": "edgegraphics"})
    graph = ET.SubElement(root, _g("graph"), {"id": "G", "edgedefault": "undirected"})
    _data(graph, "g_name", xml_text(topology.name))

    boxes = group_boxes(topology)
    containers: dict[str | None, ET.Element] = {None: graph}
    for group in sorted_groups(topology):
        outer = containers.get(group.parent, graph)
        el = ET.SubElement(
            outer, _g("node"), {"id": f"group#{group.id}", "yfiles.foldertype": "group"}
        )
        gfx = ET.SubElement(ET.SubElement(el, _g("data"), {"key": "ng"}), _y("ProxyAutoBoundsNode"))
        real = ET.SubElement(ET.SubElement(gfx, _y("Realizers"), {"active": "0"}), _y("GroupNode"))
        box = boxes[group.id]
        ET.SubElement(
            real,
            _y("Geometry"),
            {
                "x": _fmt(box.x),
                "y": _fmt(box.y),
                "width": _fmt(box.width),
                "height": _fmt(box.height),
            },
        )
        ET.SubElement(real, _y("Fill"), {"color": "#F7F7F7", "transparent": "false"})
        ET.SubElement(
            real, _y("BorderStyle"), {"color": "#9E9E9E", "type": "dashed", "width": "1.0"}
        )
        _label(
            real,
            xml_text(group.name),
            alignment="left",
            autoSizePolicy="node_width",
            modelName="internal",
            modelPosition="t",
            fontStyle="bold",
        )
        ET.SubElement(real, _y("Shape"), {"type": "roundrectangle"})
        ET.SubElement(real, _y("State"), {"closed": "false"})
        _data(el, "d_kind", "group")
        _data(el, "d_gkind", group.kind)
        _data(el, "d_name", xml_text(group.name))
        _data(el, "d_label", xml_text(group.name))
        _data(el, "d_group", group.parent or "")
        _data(el, "d_id", group.id)
        containers[group.id] = ET.SubElement(
            el, _g("graph"), {"id": f"group#{group.id}:", "edgedefault": "undirected"}
        )

    nodes = sorted_nodes(topology)
    for node in nodes:
        el = ET.SubElement(containers.get(node.group, graph), _g("node"), {"id": node.id})
        shape = ET.SubElement(ET.SubElement(el, _g("data"), {"key": "ng"}), _y("ShapeNode"))
        box = node_box(node)
        ET.SubElement(
            shape,
            _y("Geometry"),
            {
                "x": _fmt(box.x),
                "y": _fmt(box.y),
                "width": _fmt(box.width),
                "height": _fmt(box.height),
            },
        )
        fill = FAILED_COLOR if node.failed else KIND_COLORS.get(node.kind, OTHER_COLOR)
        ET.SubElement(shape, _y("Fill"), {"color": fill, "transparent": "false"})
        ET.SubElement(
            shape,
            _y("BorderStyle"),
            {"color": "#333333", "type": "dashed" if node.failed else "line", "width": "1.0"},
        )
        _label(shape, xml_text(node.name), modelName="sides", modelPosition="s")
        ET.SubElement(shape, _y("Shape"), {"type": SHAPES.get(node.kind, "rectangle")})
        for key, value in (
            ("d_kind", node.kind),
            ("d_model", node.model),
            ("d_name", xml_text(node.name)),
            ("d_label", xml_text(node.name)),
            ("d_x", _fmt(node.x)),
            ("d_y", _fmt(node.y)),
            ("d_group", node.group or ""),
            ("d_plane", node.plane),
            ("d_failed", str(node.failed).lower()),
            ("d_id", node.id),
        ):
            _data(el, key, value)

    order = {n.id: i for i, n in enumerate(nodes)}
    for link in sorted_links(topology, order):
        el = ET.SubElement(graph, _g("edge"), {"id": link.id, "source": link.a, "target": link.b})
        color = link_color(topology, link)
        figures = (results or {}).get(link.id)
        if figures and "utilisation" in figures and not link.failed:
            color = utilisation_color(figures["utilisation"])
        line = ET.SubElement(ET.SubElement(el, _g("data"), {"key": "eg"}), _y("PolyLineEdge"))
        ET.SubElement(
            line,
            _y("LineStyle"),
            {
                "color": color,
                "type": "dashed" if link.failed else "line",
                "width": _fmt(1 + min(4, link.count // 4)),
            },
        )
        ET.SubElement(line, _y("Arrows"), {"source": "none", "target": "none"})
        tech = topology.catalog.tech(link.tech)
        for key, value in (
            ("e_tech", link.tech),
            ("e_count", str(link.count)),
            ("e_plane", link.plane),
            ("e_failed", str(link.failed).lower()),
            ("e_gbps", _fmt(link.count * tech.gbps)),
            ("e_id", link.id),
        ):
            _data(el, key, value)
        for kid, name, _ in RESULT_KEYS if results is not None else ():
            if figures and name in figures:
                _data(el, kid, _fmt(figures[name]))
    ET.indent(root, space=" ")
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"
    # A raw CR in element text would come back as LF (XML end-of-line handling); as a
    # character reference it stays a CR.  Only text holds one: attributes are escaped.
    return data.replace(b"\r", b"&#13;")


def write_graphml(
    topology: Topology,
    path: str | os.PathLike[str],
    *,
    results: Mapping[str, Mapping[str, float]] | None = None,
) -> None:
    """Write `graphml_bytes` to ``path`` atomically."""
    atomic_write_bytes(path, graphml_bytes(topology, results=results))
