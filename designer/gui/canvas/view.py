"""`FabricView`: the canvas widget — zoom, pan, nudge, link drawing and palette drops.

Zoom with the wheel (anchored under the mouse), Ctrl+= / Ctrl+-, or fit; pan with the
middle button or by holding Space; rubber-band select by dragging on empty canvas; draw a
link by Shift-dragging from a node (or with the link tool); nudge with the arrow keys.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent, QPainter, QWheelEvent
from PySide6.QtWidgets import QGraphicsView

from designer.gui.canvas.interactions import LinkDrawing, drop_component, parse_component
from designer.gui.canvas.items import NodeItem
from designer.gui.canvas.scene import GRID, FabricScene
from designer.model.errors import DesignError

ZOOM_STEP = 1.2
MIN_SCALE, MAX_SCALE = 0.02, 8.0


class FabricView(QGraphicsView):
    """The canvas.  ``link_tool`` makes a plain drag from a node draw a link.

    Signals
    -------
    message(str)
        For the status bar.
    zoom_changed(float)
        The view's scale after a zoom.
    """

    message = Signal(str)
    zoom_changed = Signal(float)

    def __init__(self, scene: FabricScene, parent=None):
        super().__init__(scene, parent)
        self.fabric = scene
        self.link_tool = False
        self._drawing: LinkDrawing | None = None
        self._space = False
        self._panning = False
        self._pan_start = QPointF()
        self.setRenderHints(QPainter.RenderHint.Antialiasing
                            | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setOptimizationFlag(QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing)
        self.setAcceptDrops(True)
        self.setMouseTracking(True)
        scene.message.connect(self.message)

    # ------------------------------------------------------------ zoom
    @property
    def scale_factor(self) -> float:
        return self.transform().m11()

    def zoom(self, factor: float) -> None:
        target = min(MAX_SCALE, max(MIN_SCALE, self.scale_factor * factor))
        factor = target / self.scale_factor
        if factor != 1.0:
            self.scale(factor, factor)
            self.zoom_changed.emit(self.scale_factor)

    def zoom_in(self) -> None:
        self.zoom(ZOOM_STEP)

    def zoom_out(self) -> None:
        self.zoom(1 / ZOOM_STEP)

    def fit(self) -> None:
        rect = self.fabric.itemsBoundingRect()
        if rect.isEmpty():
            return
        self.fitInView(rect.adjusted(-40, -40, 40, 40), Qt.AspectRatioMode.KeepAspectRatio)
        if self.scale_factor > 1.5:  # a tiny design should not be blown up
            self.resetTransform()
            self.scale(1.5, 1.5)
            self.centerOn(rect.center())
        self.zoom_changed.emit(self.scale_factor)

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom(ZOOM_STEP ** steps)
        event.accept()

    def center_on_node(self, node_id: str) -> None:
        item = self.fabric.nodes.get(node_id)
        if item is not None:
            if self.scale_factor < 0.8:
                self.resetTransform()
                self.zoom_changed.emit(self.scale_factor)
            self.centerOn(item)

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
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - delta.x())
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - delta.y())
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
