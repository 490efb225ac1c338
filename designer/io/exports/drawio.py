"""draw.io / diagrams.net: the design as an uncompressed ``mxfile`` (``.drawio``).

Follows draw.io's file format (jgraph/drawio, ``mxfile.xsd``; field notes 2026, 1.3 i):
``<mxfile><diagram><mxGraphModel><root>`` with the two root cells ``0`` and ``1``, then

* each group as a container vertex (``container=1``), nested as the design nests them;
  a child's geometry is relative to its container, as draw.io expects;
* each node as an ``<object>`` wrapping a vertex, its label the node's name and its
  metadata (``kind``, ``model``, ``model_name``, ``plane``, ``failed``) as attributes,
  which draw.io shows under Edit Data and keeps when the file is saved again;
* each link as an edge between its ends, coloured by technology (or by utilisation when
  per-link results are given), with ``tech``, ``count``, ``gbps_per_direction``,
  ``plane``, ``failed`` (and ``utilisation``) as attributes.

Cell ids are ``node#<id>``, ``group#<id>`` and ``link#<id>`` (``#`` never occurs in a
design id), so the importer (`designer.io.imports.drawio`) gets the design's ids back.
Labels are plain text (no ``html=1``), so a name holding markup is shown, never run.

Example
-------
>>> from designer.model.topology import Topology, Node
>>> t = Topology()
>>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU <0>"))
>>> b"GPU &lt;0&gt;" in drawio_bytes(t)
True
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping

from designer import __version__
from designer.io.atomic import atomic_write_bytes
from designer.io.exports.common import (
    FAILED_COLOR,
    KIND_COLORS,
    OTHER_COLOR,
    Box,
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

__all__ = ["drawio_bytes", "write_drawio"]

#: draw.io shape per node kind (all built into draw.io's default style sheet).
SHAPES: Mapping[str, str] = {
    "gpu": "rounded=1;arcSize=20",
    "nvswitch": "shape=hexagon;perimeter=hexagonPerimeter2;size=0.2",
    "nvlink-switch-tray": "shape=hexagon;perimeter=hexagonPerimeter2;size=0.2",
    "leaf": "rounded=0",
    "spine": "rounded=0",
    "core": "rounded=0",
    "switch": "rounded=0",
    "nic": "shape=process;size=0.15",
    "host": "shape=cube;size=6",
    "storage": "shape=cylinder3;boundedLbl=1;size=6",
}


def _fmt(value: float) -> str:
    return repr(float(value)).removesuffix(".0")


def _geometry(parent: ET.Element, box: Box, origin: Box | None) -> None:
    ox, oy = (origin.x, origin.y) if origin is not None else (0.0, 0.0)
    ET.SubElement(
        parent,
        "mxGeometry",
        {
            "x": _fmt(box.x - ox),
            "y": _fmt(box.y - oy),
            "width": _fmt(box.width),
            "height": _fmt(box.height),
            "as": "geometry",
        },
    )


def drawio_bytes(topology: Topology, *, utilisation: Mapping[str, float] | None = None) -> bytes:
    """The design as draw.io XML (see module doc).

    Parameters
    ----------
    topology : Topology
        The design.
    utilisation : mapping of link id to float, optional
        A solve's per-link utilisation (0-1): edges are then coloured on a green-red
        scale and carry it as an attribute.
    """
    boxes = group_boxes(topology)
    mxfile = ET.Element("mxfile", {"host": "Fabric Designer", "version": __version__})
    diagram = ET.SubElement(mxfile, "diagram", {"id": "fabric", "name": xml_text(topology.name)})
    model = ET.SubElement(
        diagram,
        "mxGraphModel",
        {
            "grid": "1",
            "gridSize": "10",
            "page": "0",
            "arrows": "0",
            "connect": "1",
        },
    )
    root = ET.SubElement(model, "root")
    ET.SubElement(root, "mxCell", {"id": "0"})
    ET.SubElement(root, "mxCell", {"id": "1", "parent": "0"})

    def parent_of(group: str | None) -> tuple[str, Box | None]:
        if group is None or group not in boxes:
            return "1", None
        return f"group#{group}", boxes[group]

    for group in sorted_groups(topology):
        parent, origin = parent_of(group.parent)
        obj = ET.SubElement(
            root,
            "object",
            {
                "id": f"group#{group.id}",
                "label": xml_text(group.name),
                "kind": group.kind,
            },
        )
        cell = ET.SubElement(
            obj,
            "mxCell",
            {
                "style": "rounded=1;arcSize=4;container=1;collapsible=0;dashed=1;"
                "fillColor=#F7F7F7;strokeColor=#9E9E9E;verticalAlign=top;"
                "align=left;spacingLeft=6;fontStyle=1;",
                "vertex": "1",
                "parent": parent,
            },
        )
        _geometry(cell, boxes[group.id], origin)

    nodes = sorted_nodes(topology)
    for node in nodes:
        parent, origin = parent_of(node.group)
        device = topology.catalog.devices.get(node.model)
        obj = ET.SubElement(
            root,
            "object",
            {
                "id": f"node#{node.id}",
                "label": xml_text(node.name),
                "kind": node.kind,
                "model": node.model,
                "plane": node.plane,
                "failed": str(node.failed).lower(),
            },
        )
        if device is not None:
            obj.set("model_name", xml_text(device.name))
        fill = FAILED_COLOR if node.failed else KIND_COLORS.get(node.kind, OTHER_COLOR)
        shape = SHAPES.get(node.kind, "rounded=0")
        cell = ET.SubElement(
            obj,
            "mxCell",
            {
                "style": f"{shape};fillColor={fill};strokeColor=#333333;"
                "verticalLabelPosition=bottom;verticalAlign=top;fontSize=9;"
                + ("dashed=1;" if node.failed else ""),
                "vertex": "1",
                "parent": parent,
            },
        )
        _geometry(cell, node_box(node), origin)

    order = {n.id: i for i, n in enumerate(nodes)}
    for link in sorted_links(topology, order):
        a, b = link.a, link.b  # the design's own orientation, kept for the round trip
        tech = topology.catalog.tech(link.tech)
        attrs = {
            "id": f"link#{link.id}",
            "label": f"x{link.count}" if link.count > 1 else "",
            "tech": link.tech,
            "count": str(link.count),
            "gbps_per_direction": _fmt(link.count * tech.gbps),
            "plane": link.plane,
            "failed": str(link.failed).lower(),
        }
        color = link_color(topology, link)
        if utilisation is not None and link.id in utilisation and not link.failed:
            attrs["utilisation"] = f"{float(utilisation[link.id]):.4f}"
            color = utilisation_color(utilisation[link.id])
        obj = ET.SubElement(root, "object", attrs)
        width = 1 + min(4, link.count // 4)
        cell = ET.SubElement(
            obj,
            "mxCell",
            {
                "style": f"endArrow=none;html=0;strokeColor={color};strokeWidth={width};"
                "fontSize=8;labelBackgroundColor=#FFFFFF;" + ("dashed=1;" if link.failed else ""),
                "edge": "1",
                "parent": "1",
                "source": f"node#{a}",
                "target": f"node#{b}",
            },
        )
        ET.SubElement(cell, "mxGeometry", {"relative": "1", "as": "geometry"})
    ET.indent(mxfile, space=" ")
    return ET.tostring(mxfile, encoding="utf-8", xml_declaration=True) + b"\n"


def write_drawio(
    topology: Topology,
    path: str | os.PathLike[str],
    *,
    utilisation: Mapping[str, float] | None = None,
) -> None:
    """Write `drawio_bytes` to ``path`` atomically."""
    atomic_write_bytes(path, drawio_bytes(topology, utilisation=utilisation))
