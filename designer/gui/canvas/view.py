"""`FabricView`: the canvas widget — zoom, pan, nudge, link drawing and palette drops.

Zoom with the wheel (anchored under the mouse), Ctrl+= / Ctrl+-, or fit; pan with the
middle button or by holding Space; rubber-band select by dragging on empty canvas; draw a
link by Shift-dragging from a node (or with the link tool); nudge with the arrow keys;
double-click a group's frame to collapse it to one box (and the box to expand it), or use
its context menu.  A big design opens with its pods or SUs collapsed; zooming in until
one of those boxes fills much of the view opens it.

Zoomed far out (`uses_schematic`) the view paints the scene's batched `Schematic` instead
of asking thousands of items to paint themselves; items still take clicks and rubber
bands as usual.
"""

from __future__ import annotations

from collections.abc import Iterator

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QWheelEvent
from PySide6.QtWidgets import (
    QGraphicsView,
    QMenu,
    QRubberBand,
    QStyle,
    QStyleOptionGraphicsItem,
    QStyleOptionRubberBand,
)

from designer.gui.canvas.interactions import LinkDrawing, drop_component, parse_component
from designer.gui.canvas.items import GroupItem, NodeItem
from designer.gui.canvas.scene import GRID, FabricScene
from designer.gui.canvas.sliced_image import SlicedImage, device_size, view_geometry
from designer.gui.canvas.style import uses_schematic
from designer.model.errors import DesignError

ZOOM_STEP = 1.2
SETTLE_MS = 150  # a pause this long ends a pan or zoom: repaint with antialiasing
MIN_SCALE, MAX_SCALE = 0.02, 8.0
ZOOM_OPEN_SHARE = 0.3  # a box the design opened collapsed opens when it fills this much


class FabricView(QGraphicsView):
    """The canvas.  ``link_tool`` makes a plain drag from a node draw a link.

    Signals
    -------
    message(str)
        For the status bar.
    zoom_changed(float)
        The view's scale after a zoom.
    view_changed()
        The visible part of the scene changed (scroll, zoom, resize): the minimap follows.
    """

    message = Signal(str)
    zoom_changed = Signal(float)
    view_changed = Signal()
    is_canvas = True  # the scene sizes group grab strips for this view's scale

    def __init__(self, scene: FabricScene, parent=None):
        super().__init__(scene, parent)
        self.fabric = scene
        self.link_tool = False
        self._drawing: LinkDrawing | None = None
        self._space = False
        self._zoomed_in = False  # since the last settle: then boxes zoomed on open
        self._panning = False
        self._pan_start = QPointF()
        self.setRenderHints(QPainter.RenderHint.Antialiasing
                            | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
        # A band selects what it encloses, not every link that happens to cross it.
        self.setRubberBandSelectionMode(Qt.ItemSelectionMode.ContainsItemShape)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing)
        # Every item sets the pen and brush it draws with, so Qt need not save and restore
        # the painter around each of them.
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontSavePainterState)
        # The grid is drawn once per zoom level and scrolled, not redrawn every frame.
        self.setCacheMode(QGraphicsView.CacheModeFlag.CacheBackground)
        self.setAcceptDrops(True)
        self.setMouseTracking(True)
        # While the view pans or zooms, lines are drawn without antialiasing (4x faster
        # where hundreds of rails cross); the frame after it settles is smooth again.
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(SETTLE_MS)
        self._settle.timeout.connect(self._on_settle_timeout)
        for bar in (self.horizontalScrollBar(), self.verticalScrollBar()):
            bar.actionTriggered.connect(self._on_scrollbar_action_triggered)
        scene.message.connect(self.message)
        # Far out, the schematic is drawn into an image, redrawn in slices when the
        # design changes (a 16k-GPU design takes 100+ ms to draw): see `SlicedImage`.
        self._picture = SlicedImage(self)
        self._picture.changed.connect(self._on_picture_changed)

    # ------------------------------------------------------------ zoom
    @property
    def scale_factor(self) -> float:
        return self.transform().m11()

    def zoom(self, factor: float, anchor: QPointF | None = None) -> None:
        """Zoom by ``factor`` (clamped to the scale limits), keeping the scene point under
        ``anchor`` (viewport coordinates) in place; without one (the keyboard, the
        toolbar, the overview's wheel), the centre of the view.

        Always anchored here: Qt's own under-the-mouse anchor uses the scene point of the
        last mouse move, so after a scroll the mouse did not make (Find, a fit) it would
        jump the view back to where the pointer last moved."""
        target = min(MAX_SCALE, max(MIN_SCALE, self.scale_factor * factor))
        factor = target / self.scale_factor
        if factor == 1.0:
            return
        at = (self.viewport().rect().center() if anchor is None else anchor.toPoint())
        fixed = self.mapToScene(at)
        self.scale(factor, factor)
        # Scroll so the anchored scene point is back under ``at``.
        drift = self.mapFromScene(fixed) - at
        h, v = self.horizontalScrollBar(), self.verticalScrollBar()
        h.setValue(h.value() + drift.x())
        v.setValue(v.value() + drift.y())
        self.note_motion()
        self._zoomed_in |= factor > 1.0
        self._zoomed()

    def _zoomed(self) -> None:
        self.zoom_changed.emit(self.scale_factor)
        self.view_changed.emit()

    def pan_by(self, dx: float, dy: float) -> None:
        """Scroll the canvas by ``(dx, dy)`` pixels, as a hand drag does."""
        self.note_motion()
        h, v = self.horizontalScrollBar(), self.verticalScrollBar()
        h.setValue(round(h.value() + dx))
        v.setValue(round(v.value() + dy))

    def note_motion(self) -> None:
        """The user is panning or zooming: draw fast (no antialiasing) until they stop."""
        if self.renderHints() & QPainter.RenderHint.Antialiasing:
            self.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        self._settle.start()

    def settle(self) -> None:
        """Back to full quality now (what happens `SETTLE_MS` after the last motion)."""
        self._settle.stop()
        if not self.renderHints() & QPainter.RenderHint.Antialiasing:
            self.setRenderHint(QPainter.RenderHint.Antialiasing, True)  # repaints smooth

    def _on_settle_timeout(self) -> None:
        self.settle()
        if self._zoomed_in:
            self._zoomed_in = False
            self.open_zoomed_boxes()

    def open_zoomed_boxes(self) -> list[str]:
        """Open the boxes a big design opened collapsed with that the view is zoomed in
        on (one filling `ZOOM_OPEN_SHARE` of the view): what a zoom ending does."""
        vp = self.viewport().rect()
        area = max(1, vp.width() * vp.height())

        def share_of(box) -> float:
            r = self.mapFromScene(box).boundingRect().intersected(vp)
            return r.width() * r.height() / area if r.isValid() else 0.0

        visible = self.mapToScene(vp).boundingRect()
        opened = self.fabric.open_boxes_in(visible, share_of, ZOOM_OPEN_SHARE)
        if opened:
            names = ", ".join(self.fabric.groups[g].group.name for g in opened)
            self.message.emit(f"Opened {names} (zoomed in)")
        return opened

    def _on_scrollbar_action_triggered(self, _action: int) -> None:
        self.note_motion()  # a scroll bar dragged, or its arrows held

    def zoom_in(self) -> None:
        self.zoom(ZOOM_STEP)

    def zoom_out(self) -> None:
        self.zoom(1 / ZOOM_STEP)

    def fit(self) -> None:
        """Show the whole design, with a small margin, never blown up past 150%."""
        rect = self.fabric.design_rect()
        if rect.isEmpty():
            return
        margin = max(30.0, 0.02 * max(rect.width(), rect.height()))
        self.fitInView(rect.adjusted(-margin, -margin, margin, margin),
                       Qt.AspectRatioMode.KeepAspectRatio)
        if self.scale_factor > 1.5:  # a tiny design should not be blown up
            self.resetTransform()
            self.scale(1.5, 1.5)
            self.centerOn(rect.center())
        self._zoomed()

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom(ZOOM_STEP ** steps, event.position())
        event.accept()

    def viewportEvent(self, event: QEvent) -> bool:
        if (event.type() == QEvent.Type.NativeGesture
                and event.gestureType() == Qt.NativeGestureType.ZoomNativeGesture):
            self.zoom(1.0 + event.value(), event.position())  # touchpad pinch
            event.accept()
            return True
        return super().viewportEvent(event)

    def center_on_node(self, node_id: str) -> None:
        """Centre on a node at a readable zoom, expanding collapsed groups that hide it."""
        item = self.fabric.nodes.get(node_id)
        if item is None or item.hidden:  # (no item yet: inside a box never opened)
            selected = self.fabric.selected_node_ids()
            self.fabric.reveal(node_id)
            self.fabric.select_ids(selected)
            item = self.fabric.nodes.get(node_id)
        if item is not None:
            if self.scale_factor < 0.8:
                self.resetTransform()
                self._zoomed()
            self.centerOn(item)

    # ------------------------------------------------------------ painting
    def paintEvent(self, event: QPaintEvent) -> None:
        if not uses_schematic(self.scale_factor):
            super().paintEvent(event)
            return
        size, ratio, (m11, m12, m21, m22, dx, dy) = view_geometry(self)
        # The translation apart: a pan shifts the picture and draws the uncovered strips.
        # Not the render hints: the schematic draws its lines aliased whatever the view's
        # motion state (`_draw_schematic`), so a pan that outlasts the settle delay on a
        # huge design still shifts the picture instead of redrawing it.
        geometry = (size, ratio, (m11, m12, m21, m22), self.fabric.theme)
        image = self._picture.image(geometry, self.fabric.schematic.version,
                                    device_size(self.viewport()), self.devicePixelRatioF(),
                                    self._draw_schematic, offset=(dx, dy))
        painter = QPainter(self.viewport())
        painter.setClipRegion(event.region())
        painter.drawImage(0, 0, image)
        for item in list(self.fabric.overlays):  # a link being drawn, and the like
            if item.scene() is self.fabric and item.isVisible():
                painter.setWorldTransform(item.sceneTransform() * self.viewportTransform())
                item.paint(painter, QStyleOptionGraphicsItem(), self.viewport())
        band = self.rubberBandRect()
        if not band.isEmpty():
            painter.resetTransform()
            option = QStyleOptionRubberBand()
            option.initFrom(self.viewport())
            option.rect = band
            option.shape = QRubberBand.Shape.Rectangle
            self.style().drawControl(QStyle.ControlElement.CE_RubberBand, option, painter,
                                     self.viewport())
        painter.end()

    def _draw_schematic(self, painter: QPainter) -> Iterator[None]:
        """The far-out picture: the grid, then the schematic (see `SlicedImage`)."""
        painter.setRenderHints(QPainter.RenderHint.Antialiasing
                               | QPainter.RenderHint.TextAntialiasing)
        painter.setWorldTransform(self.viewportTransform())
        if painter.hasClipping():  # a strip a pan uncovered (`SlicedImage`): just that
            exposed = painter.clipBoundingRect().adjusted(-2, -2, 2, 2)
        else:
            exposed = self.mapToScene(self.viewport().rect().adjusted(-2, -2, 2, 2)
                                      ).boundingRect()
        self.fabric.drawBackground(painter, exposed)
        yield from self.fabric.schematic.paint_steps(painter, exposed)

    def _on_picture_changed(self) -> None:
        if uses_schematic(self.scale_factor):
            self.viewport().update()

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        super().scrollContentsBy(dx, dy)
        self.view_changed.emit()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.view_changed.emit()

    # ------------------------------------------------------------ groups
    def group_at(self, pos: QPoint) -> GroupItem | None:
        """The group whose frame title/border or collapsed box is under ``pos``."""
        return next((i for i in self.items(pos) if isinstance(i, GroupItem)), None)

    def add_group_actions(self, menu: QMenu, pos: QPoint) -> bool:
        """Add Collapse/Expand actions for the group under ``pos`` (viewport coordinates)
        to ``menu``; False when there is no group there.  A context menu built elsewhere
        can call this to offer them too."""
        scene = self.fabric
        group = self.group_at(pos)
        if group is not None:
            gid, name = group.group.id, group.group.name
            if gid in scene.collapsed:
                menu.addAction(f"Expand {name}", lambda: scene.expand(gid))
            else:
                menu.addAction(f"Collapse {name}", lambda: scene.collapse(gid))
            kind = group.group.kind
            menu.addAction(f"Collapse every {kind} group", lambda: scene.collapse_kind(kind))
        if scene.collapsed:
            menu.addAction("Expand all groups", scene.expand_all)
        return group is not None or bool(scene.collapsed)

    def contextMenuEvent(self, event) -> None:
        menu = QMenu(self)
        menu.aboutToHide.connect(menu.deleteLater)  # (or it stays a child of the view)
        if self.add_group_actions(menu, event.pos()):
            menu.popup(event.globalPos())
            event.accept()
            return
        menu.deleteLater()
        super().contextMenuEvent(event)

    # ------------------------------------------------------------ mouse
    def _node_at(self, pos) -> NodeItem | None:
        return next((i for i in self.items(pos) if isinstance(i, NodeItem)), None)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.MiddleButton or (
                self._space and event.button() == Qt.MouseButton.LeftButton):
            self._panning = True
            self._pan_start = event.position()
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            event.accept()
            return
        node = self._node_at(event.position().toPoint())
        shift = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if event.button() == Qt.MouseButton.LeftButton and node is not None and (
                self.link_tool or shift):
            self._drawing = LinkDrawing(self.fabric, node)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._panning:
            delta = event.position() - self._pan_start
            self._pan_start = event.position()
            self.pan_by(-delta.x(), -delta.y())
            event.accept()
            return
        if self._drawing is not None:
            self._drawing.move(self.mapToScene(event.position().toPoint()))
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._panning:
            self._panning = False
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor if self._space
                                      else Qt.CursorShape.ArrowCursor)
            event.accept()
            return
        if self._drawing is not None:
            refusal = self._drawing.finish(self.mapToScene(event.position().toPoint()))
            self._drawing = None
            if refusal:
                self.message.emit(f"Link refused: {refusal}")
            event.accept()
            return
        super().mouseReleaseEvent(event)

    # ------------------------------------------------------------ keys
    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = True
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor)
            return
        if key == Qt.Key.Key_Escape and self._drawing is not None:
            self._drawing.cancel()
            self._drawing = None
            return
        arrows = {Qt.Key.Key_Left: (-1, 0), Qt.Key.Key_Right: (1, 0),
                  Qt.Key.Key_Up: (0, -1), Qt.Key.Key_Down: (0, 1)}
        if key in arrows and self.fabric.selected_node_ids():
            step = 1.0 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else GRID
            dx, dy = arrows[key]
            topo = self.fabric.document.topology
            moved = {}
            for nid in self.fabric.selected_node_ids():
                n = topo.node(nid)
                moved[nid] = (n.x + dx * step, n.y + dy * step)
            self.fabric.push_move(moved, "Nudge")
            return
        super().keyPressEvent(event)

    def keyReleaseEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space = False
            self.viewport().setCursor(Qt.CursorShape.ArrowCursor)
            return
        super().keyReleaseEvent(event)

    # ------------------------------------------------------------ palette drops
    def dragEnterEvent(self, event) -> None:
        if parse_component(event.mimeData()) is not None:
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:
        if parse_component(event.mimeData()) is not None:
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event) -> None:
        comp = parse_component(event.mimeData())
        if comp is None:
            event.ignore()
            return
        kind, model = comp
        pos = self.mapToScene(event.position().toPoint())
        free = bool(event.modifiers() & Qt.KeyboardModifier.AltModifier)
        try:
            node = drop_component(self.fabric, kind, model, pos, free)
        except DesignError as exc:
            self.message.emit(str(exc))
            event.ignore()
            return
        self.message.emit(f"Added {node.name} ({model})")
        event.acceptProposedAction()
