"""Interaction modes of the canvas, each its own small object (not flags in one giant
``mousePressEvent``): drawing a link, and dropping a component from the palette."""

from __future__ import annotations

import json

from PySide6.QtCore import QLineF, QMimeData, QPointF, Qt
from PySide6.QtGui import QPen
from PySide6.QtWidgets import QGraphicsLineItem

from designer.gui.canvas.drags import snap
from designer.gui.canvas.items import NodeItem
from designer.gui.canvas.scene import FabricScene
from designer.model.commands import AddLink, AddNode
from designer.model.errors import DesignError
from designer.model.topology import Link, Node

COMPONENT_MIME = "application/x-fabric-designer-component"

#: How a new node of each kind is named, as the templates name them ("NIC 3").
NAME_PREFIX = {"gpu": "GPU", "nic": "NIC", "nvswitch": "NVSwitch",
               "nvlink-switch-tray": "NVLink switch tray", "leaf": "Leaf", "spine": "Spine",
               "core": "Core", "switch": "Switch", "host": "Host", "storage": "Storage"}


def component_mime(kind: str, model: str) -> QMimeData:
    """MIME data the palette puts on a drag: which kind and catalog model to create."""
    data = QMimeData()
    data.setData(COMPONENT_MIME, json.dumps({"kind": kind, "model": model}).encode())
    return data


def parse_component(mime: QMimeData) -> tuple[str, str] | None:
    if not mime.hasFormat(COMPONENT_MIME):
        return None
    try:
        payload = json.loads(bytes(mime.data(COMPONENT_MIME)).decode())
        return str(payload["kind"]), str(payload["model"])
    except (ValueError, KeyError, TypeError):
        return None


def best_link(scene: FabricScene, a: str, b: str) -> Link | str:
    """The link a drag from node ``a`` to ``b`` creates, or why none can be.

    Picks the fastest technology both devices' ports accept that still has a free port
    at both ends.
    """
    topo = scene.document.topology
    na, nb = topo.node(a), topo.node(b)
    if a == b:
        return "a link needs two different nodes"
    techs = topo.catalog.compatible_techs(na.model, nb.model)
    if not techs:
        return (f"no link technology fits both {na.name} ({na.model}) and {nb.name} "
                f"({nb.model}): their ports do not share a family")
    for tech in techs:
        if topo.ports_free(a, tech.key) >= 1 and topo.ports_free(b, tech.key) >= 1:
            plane = na.plane if na.plane == nb.plane else "compute"
            return Link(topo.new_id("link"), a, b, tech.key, 1, plane)
    full = na.name if topo.ports_free(a, techs[0].key) < 1 else nb.name
    return f"{full} has no free {techs[0].family} port for a {techs[0].name} link"


class LinkDrawing:
    """Drag from one node to another to connect them (Shift-drag, or the link tool)."""

    def __init__(self, scene: FabricScene, source: NodeItem):
        self.scene = scene
        self.source = source
        self.line = QGraphicsLineItem(QLineF(source.pos(), source.pos()))
        pen = QPen(scene.theme.selection, 2, Qt.PenStyle.DashLine)
        self.line.setPen(pen)
        self.line.setZValue(100)
        scene.addItem(self.line)
        scene.overlays.add(self.line)  # far-out views paint a schematic: still show it

    def move(self, pos: QPointF) -> None:
        self.line.setLine(QLineF(self.source.pos(), pos))

    def finish(self, pos: QPointF) -> str | None:
        """Create the link if released on another node; returns a refusal message."""
        self.scene.overlays.discard(self.line)
        self.scene.removeItem(self.line)
        target = next((i for i in self.scene.items(pos) if isinstance(i, NodeItem)), None)
        if target is None or target is self.source:
            return None  # released on empty canvas: nothing to do, nothing to say
        link = best_link(self.scene, self.source.node_id, target.node_id)
        if isinstance(link, str):
            return link
        try:
            self.scene.document.push(AddLink(link))
        except DesignError as exc:
            return str(exc)
        self.scene.select_ids(link_ids=[link.id])
        return None

    def cancel(self) -> None:
        self.scene.overlays.discard(self.line)
        if self.line.scene() is not None:
            self.scene.removeItem(self.line)


def drop_component(scene: FabricScene, kind: str, model: str, pos: QPointF,
                   free: bool = False) -> Node:
    """Create a node of ``kind``/``model`` at ``pos`` (snapped to the grid unless free)."""
    topo = scene.document.topology
    x, y = (pos.x(), pos.y()) if free else (snap(pos.x()), snap(pos.y()))
    nid = topo.new_id(kind)
    count = sum(1 for _ in topo.nodes(kind))
    name = f"{NAME_PREFIX.get(kind, kind.replace('-', ' ').title())} {count}"
    node = Node(nid, kind, model, name, x=x, y=y)
    scene.document.push(AddNode(node))
    scene.select_ids([nid])
    return node
