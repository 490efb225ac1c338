"""`PointerMixin`: the selection by model id, and the mouse gestures on the canvas that
become model commands, for `FabricScene`.

A drag moves items while the mouse moves (`NodeDrag`) and becomes one `MoveNodes` command
when it ends, pushed on the document; the model's events then put the items where the
model says (one direction of data, as ``../shared/design.md`` describes).  Pressing a
group's frame or box picks up the whole group; double-clicking it collapses or expands
it.  Tool tips are written when asked for, not kept on thousands of items.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtGui import QTransform
from PySide6.QtWidgets import (
    QGraphicsSceneHelpEvent,
    QGraphicsSceneMouseEvent,
    QGraphicsView,
    QToolTip,
)

from designer.gui.canvas.drags import GRID, NodeDrag
from designer.gui.canvas.items import BundleItem, GroupItem, LinkItem, NodeItem, help_text
from designer.model.commands import MoveNodes
from designer.model.errors import DesignError


class PointerMixin:
    """Selection and mouse gestures for a `QGraphicsScene` with ``document``, ``nodes``,
    ``links``, ``groups``, ``schematic``, ``message`` and the folding of
    `FoldingMixin` (see `FabricScene`); listed before the Qt class, so its event
    handlers override Qt's and ``super()`` reaches them."""

    # ------------------------------------------------------------ selection
    def selected_node_ids(self) -> list[str]:
        """Selected nodes, members of selected collapsed boxes included, sorted by id (Qt
        lists a selection in an order that changes from run to run)."""
        if not shiboken6.isValid(self):  # asked by a listener while the scene is destroyed
            return []
        out: list[str] = []
        boxes = []
        for i in self.selectedItems():
            if isinstance(i, NodeItem):
                out.append(i.node_id)
            elif isinstance(i, GroupItem):
                boxes.append(i.group.id)
        if boxes:
            seen = set(out)
            topo = self.document.topology
            for gid in boxes:
                for nid in topo.members(gid):
                    if nid not in seen:
                        seen.add(nid)
                        out.append(nid)
        return sorted(out)

    def selected_link_ids(self) -> list[str]:
        """Selected links, the links of selected aggregated bundles included, by id."""
        if not shiboken6.isValid(self):
            return []
        out: list[str] = []
        for i in self.selectedItems():
            if isinstance(i, LinkItem):
                out.append(i.link_id)
            elif isinstance(i, BundleItem):
                out.extend(i.link_ids)
        return sorted(out)

    def select_ids(self, node_ids=(), link_ids=()) -> None:
        """Make exactly these nodes and links the selection.  A node hidden in a
        collapsed group selects the group's box instead.  Listeners hear of it once."""
        blocked = self.blockSignals(True)  # not once per item: Select All stays linear
        try:
            self._select(node_ids, link_ids)
        finally:
            self.blockSignals(blocked)
        if not blocked:
            self.selectionChanged.emit()

    def _select(self, node_ids, link_ids) -> None:
        self.clearSelection()
        topo = self.document.topology
        boxes: dict[str | None, str | None] = {}  # group -> the box hiding its nodes
        for nid in node_ids:
            item = self.nodes.get(nid)
            if item is not None and not item.hidden:
                item.setSelected(True)
                continue
            if item is not None:
                group = item.node.group
            elif topo.has_node(nid):  # no item: inside a box of a big design
                group = topo.node(nid).group
            else:
                continue
            if group not in boxes:
                boxes[group] = self._box_of(group)
            if boxes[group] is not None:
                self.groups[boxes[group]].setSelected(True)
        for lid in link_ids:
            if lid in self.links and not self.links[lid].hidden:
                self.links[lid].setSelected(True)

    # ------------------------------------------------------------ gestures -> commands
    def _view_transform(self, event=None) -> QTransform | None:
        """The transform of the view an event came from (else the main canvas's)."""
        widget = event.widget() if event is not None else None
        view = widget.parentWidget() if widget is not None else None
        if isinstance(view, QGraphicsView):
            return view.transform()
        views = [v for v in self.views() if getattr(v, "is_canvas", False)] or self.views()
        return views[0].transform() if views else None

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self._drag is not None:
            # Another button pressed during a drag (a right-click opens a menu that takes
            # the mouse, so the left release may never come): cancel the drag.
            self._cancel_drag()
        self._drag = None
        transform = self._view_transform(event)
        hit = self.itemAt(event.scenePos(), transform) if transform is not None else None
        if event.button() == Qt.MouseButton.LeftButton and isinstance(hit, GroupItem):
            # Pressing a group's frame (or its collapsed box) picks up the whole group.
            topo = self.document.topology
            members = [self.nodes[n] for n in topo.members(hit.group.id) if n in self.nodes]
            if not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                self.clearSelection()
            if hit.collapsed:
                hit.setSelected(True)
            else:
                for m in members:
                    m.setSelected(True)
            frames = [g for g in self.groups.values()
                      if g is hit or self._is_inside(g.group.id, hit.group.id)]
            self._drag = NodeDrag(members, frames=frames, press=event.scenePos())
            event.accept()
            return
        super().mousePressEvent(event)
        self._start_node_drag()

    def _start_node_drag(self) -> None:
        """After Qt handled a left press on a node: a drag of what Qt will move, the
        selected nodes and the grabbed one, which is the anchor (no drag if Qt grabbed
        no node).  A Ctrl+press leaves an unselected node unselected until the release,
        yet Qt moves it with the selection."""
        grabbed = self.mouseGrabberItem()
        if not isinstance(grabbed, NodeItem):
            return
        items = [i for i in self.selectedItems() if isinstance(i, NodeItem)]
        if grabbed not in items:
            items.append(grabbed)
        self._drag = NodeDrag(items, anchor=grabbed)

    @property
    def dragging(self) -> bool:
        """Whether nodes are being dragged: their items are away from the model's
        positions until the release moves the model."""
        return self._drag is not None

    def _cancel_drag(self) -> None:
        """End the drag in progress without a move: its nodes go back to where the
        model has them now (not where the drag started: a drag whose release went to a
        menu may be found only later, after undo moved them), and the item Qt was
        moving lets go of the mouse."""
        drag, self._drag = self._drag, None
        grabber = self.mouseGrabberItem()
        if grabber is not None:
            grabber.ungrabMouse()
        topo = self.document.topology
        for nid, item in drag.items.items():
            if topo.has_node(nid) and nid in self.nodes and self.nodes[nid] is item:
                node = topo.node(nid)
                if (item.pos().x(), item.pos().y()) != (node.x, node.y):
                    item.move_to(node.x, node.y)
        drag.frames = [f for f in drag.frames if shiboken6.isValid(f)]  # may be gone since
        drag.end()
        if drag.by_group:  # frames and boxes refit from the model
            self._dirty_groups = True
            self.refresh()

    def _is_inside(self, gid: str, ancestor: str) -> bool:
        seen = set()
        g = self.groups[gid].group.parent
        while g is not None and g in self.groups and g not in seen:
            if g == ancestor:
                return True
            seen.add(g)
            g = self.groups[g].group.parent
        return False

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        drag = self._drag
        if drag is not None and drag.by_group:
            drag.move_group(event.scenePos())
            self.schematic.invalidate()
            return
        super().mouseMoveEvent(event)
        if drag is not None and event.buttons() & Qt.MouseButton.LeftButton:
            drag.follow()  # Qt moved the selection: its links follow
            self.schematic.invalidate()

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        drag, self._drag = self._drag, None
        super().mouseReleaseEvent(event)
        if drag is None:
            return
        moved = drag.result(GRID, free=bool(event.modifiers() & Qt.KeyboardModifier.AltModifier))
        drag.end()
        if moved:
            self.push_move(moved, f"Move {len(moved)} node(s)")
        else:  # dropped where it started, or snapped back there: the model did not move
            for nid, p in drag.start.items():
                if drag.items[nid].pos() != p:
                    drag.items[nid].move_to(p.x(), p.y())
        if drag.by_group:  # frames and boxes refit from the model, bundles follow them
            self._dirty_groups = True
            self.refresh()
            for frame in drag.frames:
                for bundle in frame.bundles:
                    bundle.update_path()

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        transform = self._view_transform(event)
        hit = self.itemAt(event.scenePos(), transform) if transform is not None else None
        if event.button() == Qt.MouseButton.LeftButton and isinstance(hit, GroupItem):
            self.toggle_collapsed(hit.group.id)  # double-click a frame or a box
            event.accept()
            return
        if self._drag is not None:
            self._cancel_drag()
        super().mouseDoubleClickEvent(event)
        # Qt takes a double-click's second press as a press: it grabs the node and drags
        # it if the mouse moves on, so that drag is ours to follow and commit too.
        self._start_node_drag()

    def push_move(self, positions: dict[str, tuple[float, float]], text: str = "Move") -> None:
        """One undo step for a whole drag (or nudge / align)."""
        try:
            self.document.push(MoveNodes(positions, text))
        except DesignError as exc:
            self.message.emit(str(exc))
            for nid in positions:  # put the items back where the model has them
                n = self.document.topology.node(nid)
                self.nodes[nid].move_to(n.x, n.y)

    def helpEvent(self, event: QGraphicsSceneHelpEvent) -> None:
        """Tool tips are written when asked for, not kept on thousands of items."""
        transform = self._view_transform(event)
        for item in self.items(event.scenePos(), Qt.ItemSelectionMode.IntersectsItemShape,
                               Qt.SortOrder.DescendingOrder,
                               transform if transform is not None else QTransform()):
            text = help_text(item)
            if text:
                QToolTip.showText(event.screenPos(), text, event.widget())
                event.accept()
                return
        QToolTip.hideText()
        event.ignore()
