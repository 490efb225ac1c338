"""`FabricScene`: graphics items that mirror the open design, both ways.

The scene listens to the `Topology`'s events and adds, removes or updates items; it
never edits items' models directly.  User gestures on the scene (moving nodes, dragging
a group) become model commands pushed on the `Document`, whose events then update the
items — one direction of data, as ``../shared/design.md`` describes.
"""

from __future__ import annotations

from collections import defaultdict

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QGraphicsScene, QGraphicsSceneMouseEvent

from designer.gui.canvas.items import GroupItem, LinkItem, NodeItem, link_color
from designer.gui.canvas.style import Theme, system_theme
from designer.gui.document import Document
from designer.model.commands import MoveNodes
from designer.model.errors import DesignError
from designer.model.topology import Group, Link, Node, Topology

GRID = 20.0
PARALLEL_GAP = 7.0


def snap(value: float, grid: float = GRID) -> float:
    return round(value / grid) * grid


class FabricScene(QGraphicsScene):
    """Items for every node, link bundle and group of ``document.topology``.

    Signals
    -------
    message(str)
        A one-line message for the status bar (a refused edit, say).
    """

    message = Signal(str)

    def __init__(self, document: Document, theme: Theme | None = None, parent=None):
        super().__init__(parent)
        self.document = document
        self.theme = theme or system_theme()
        self.show_grid = True
        self.nodes: dict[str, NodeItem] = {}
        self.links: dict[str, LinkItem] = {}
        self.groups: dict[str, GroupItem] = {}
        self._topology: Topology | None = None
        self._press_pos: dict[str, QPointF] = {}
        self._group_drag: tuple[QPointF, list[NodeItem]] | None = None
        self._groups_dirty = False
        self._group_timer = QTimer(self)
        self._group_timer.setSingleShot(True)
        self._group_timer.setInterval(0)
        self._group_timer.timeout.connect(self._refresh_groups)
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        document.topology_replaced.connect(self._on_document_topology_replaced)
        self._attach(document.topology)

    # ------------------------------------------------------------ model -> items
    def _attach(self, topo: Topology) -> None:
        if self._topology is not None:
            for sig, slot in self._connections():
                sig(self._topology).disconnect(slot)
        self._topology = topo
        self.clear()
        self.nodes.clear()
        self.links.clear()
        self.groups.clear()
        for group in topo.groups():
            self._on_group_added(group)
        for node in topo.nodes():
            self._add_node_item(node)
        for link in topo.links():
            self._add_link_item(link)
        self._refresh_groups()
        for sig, slot in self._connections():
            sig(topo).connect(slot)
        self._update_scene_rect()

    def _connections(self):
        return [
            (lambda t: t.node_added, self._on_node_added),
            (lambda t: t.node_removed, self._on_node_removed),
            (lambda t: t.node_changed, self._on_node_changed),
            (lambda t: t.node_moved, self._on_node_moved),
            (lambda t: t.link_added, self._on_link_added),
            (lambda t: t.link_removed, self._on_link_removed),
            (lambda t: t.link_changed, self._on_link_changed),
            (lambda t: t.group_added, self._on_group_added),
            (lambda t: t.group_removed, self._on_group_removed),
            (lambda t: t.group_changed, self._on_group_changed),
        ]

    def _on_document_topology_replaced(self, topo: Topology) -> None:
        self._attach(topo)

    def _add_node_item(self, node: Node) -> NodeItem:
        item = NodeItem(node, self.theme)
        self.addItem(item)
        self.nodes[node.id] = item
        return item

    def _tech_look(self, link: Link) -> tuple:
        tech = self.document.topology.catalog.tech(link.tech)
        return link_color(tech.protocol, tech.family), tech.gbps * link.count

    def _add_link_item(self, link: Link) -> LinkItem:
        color, gbps = self._tech_look(link)
        item = LinkItem(link, self.nodes[link.a], self.nodes[link.b], color, gbps, self.theme)
        self.addItem(item)
        self.links[link.id] = item
        self._spread_parallel(link.a, link.b)
        return item

    def _spread_parallel(self, a: str, b: str) -> None:
        """Offset parallel bundles between ``a`` and ``b`` so each stays visible."""
        same = [li for li in self.nodes[a].links if {li.link.a, li.link.b} == {a, b}]
        same.sort(key=lambda li: li.link.id)
        for i, li in enumerate(same):
            sign = 1 if li.link.a == a else -1  # offsets are relative to each link's a->b
            li.offset = sign * (i - (len(same) - 1) / 2) * PARALLEL_GAP
            li.update_path()

    def _on_node_added(self, node: Node) -> None:
        self._add_node_item(node)
        self._schedule_groups()

    def _on_node_removed(self, node: Node) -> None:
        item = self.nodes.pop(node.id, None)
        if item is not None:
            self.removeItem(item)
        self._schedule_groups()

    def _on_node_changed(self, old: Node, new: Node) -> None:
        self.nodes[new.id].set_node(new)
        self._schedule_groups()

    def _on_node_moved(self, node: Node) -> None:
        self.nodes[node.id].set_node(node)
        self._schedule_groups()

    def _on_link_added(self, link: Link) -> None:
        self._add_link_item(link)

    def _on_link_removed(self, link: Link) -> None:
        item = self.links.pop(link.id, None)
        if item is not None:
            item.detach()
            self.removeItem(item)
            if link.a in self.nodes and link.b in self.nodes:
                self._spread_parallel(link.a, link.b)

    def _on_link_changed(self, old: Link, new: Link) -> None:
        color, gbps = self._tech_look(new)
        self.links[new.id].set_link(new, color, gbps)

    def _on_group_added(self, group: Group) -> None:
        item = GroupItem(group, self.theme)
        self.addItem(item)
        self.groups[group.id] = item
        self._schedule_groups()

    def _on_group_removed(self, group: Group) -> None:
        item = self.groups.pop(group.id, None)
        if item is not None:
            self.removeItem(item)

    def _on_group_changed(self, old: Group, new: Group) -> None:
        self.groups[new.id].group = new
        self._schedule_groups()

    def _schedule_groups(self) -> None:
        self._group_timer.start()

    def _refresh_groups(self) -> None:
        """Fit every group's frame around its members (sub-groups included)."""
        if not self.groups:
            return
        rects: dict[str, QRectF] = defaultdict(QRectF)
        parent = {gid: item.group.parent for gid, item in self.groups.items()}
        for item in self.nodes.values():
            gid = item.node.group
            r = item.sceneBoundingRect()
            while gid is not None:
                rects[gid] = rects[gid].united(r) if rects[gid].isValid() else r
                gid = parent.get(gid)
        for gid, item in self.groups.items():
            item.set_rect(rects.get(gid, QRectF()))
        self._update_scene_rect()

    def _update_scene_rect(self) -> None:
        rect = self.itemsBoundingRect().adjusted(-400, -400, 400, 400)
        self.setSceneRect(rect.united(QRectF(-500, -400, 1000, 800)))

    # ------------------------------------------------------------ selection
    def selected_node_ids(self) -> list[str]:
        return [i.node_id for i in self.selectedItems() if isinstance(i, NodeItem)]

    def selected_link_ids(self) -> list[str]:
        return [i.link_id for i in self.selectedItems() if isinstance(i, LinkItem)]

    def select_ids(self, node_ids=(), link_ids=()) -> None:
        """Make exactly these nodes and links the selection."""
        self.clearSelection()
        for nid in node_ids:
            if nid in self.nodes:
                self.nodes[nid].setSelected(True)
        for lid in link_ids:
            if lid in self.links:
                self.links[lid].setSelected(True)

    # ------------------------------------------------------------ gestures -> commands
    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        hit = self.itemAt(event.scenePos(), self.views()[0].transform()) if self.views() else None
        if (event.button() == Qt.MouseButton.LeftButton and isinstance(hit, GroupItem)):
            # Pressing a group's frame picks up the whole group.
            members = [self.nodes[n] for n in self.document.topology.members(hit.group.id)]
            if not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                self.clearSelection()
            for m in members:
                m.setSelected(True)
            self._group_drag = (event.scenePos(), members)
            self._press_pos = {m.node_id: m.pos() for m in members}
            event.accept()
            return
        super().mousePressEvent(event)
        self._press_pos = {i.node_id: i.pos() for i in self.selectedItems()
                           if isinstance(i, NodeItem)}

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self._group_drag is not None:
            start, members = self._group_drag
            delta = event.scenePos() - start
            for m in members:
                m.setPos(self._press_pos[m.node_id] + delta)
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        self._group_drag = None
        super().mouseReleaseEvent(event)
        free = bool(event.modifiers() & Qt.KeyboardModifier.AltModifier)
        moved = {}
        for nid, before in self._press_pos.items():
            item = self.nodes.get(nid)
            if item is None:
                continue
            pos = item.pos()
            if pos != before:
                x, y = (pos.x(), pos.y()) if free else (snap(pos.x()), snap(pos.y()))
                moved[nid] = (x, y)
        self._press_pos = {}
        if moved:
            self.push_move(moved, f"Move {len(moved)} node(s)")

    def push_move(self, positions: dict[str, tuple[float, float]], text: str = "Move") -> None:
        """One undo step for a whole drag (or nudge / align)."""
        try:
            self.document.push(MoveNodes(positions, text))
        except DesignError as exc:
            self.message.emit(str(exc))
            for nid in positions:  # put the items back where the model has them
                n = self.document.topology.node(nid)
                self.nodes[nid].setPos(n.x, n.y)

    # ------------------------------------------------------------ background
    def drawBackground(self, painter: QPainter, rect: QRectF) -> None:
        painter.fillRect(rect, self.theme.background)
        if not self.show_grid:
            return
        scale = painter.worldTransform().m11()
        if scale * GRID < 6:  # grid lines would merge into a grey wash
            return
        painter.setPen(self.theme.grid)
        left = int(rect.left() // GRID) * GRID
        top = int(rect.top() // GRID) * GRID
        x = left
        lines = []
        while x < rect.right():
            lines.append((QPointF(x, rect.top()), QPointF(x, rect.bottom())))
            x += GRID
        y = top
        while y < rect.bottom():
            lines.append((QPointF(rect.left(), y), QPointF(rect.right(), y)))
            y += GRID
        for p1, p2 in lines:
            painter.drawLine(p1, p2)
