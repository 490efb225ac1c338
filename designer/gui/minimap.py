"""`MinimapDock`: an overview of the whole design with the canvas's visible area on it.

A small `QGraphicsView` on the canvas's own scene, always fitted to the design.  It never
asks items to paint: it draws the scene's `Schematic` into a cached image (redrawn at
most every `REDRAW_MS` while the design changes, so dragging on the canvas stays fluid)
and the main view's visible rectangle on top.  Click or drag in it to move the canvas
there; the wheel zooms the canvas.
"""

from __future__ import annotations

from collections.abc import Iterator

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QMouseEvent, QPainter, QPaintEvent, QPen, QWheelEvent
from PySide6.QtWidgets import QDockWidget, QFrame, QGraphicsView, QSizePolicy, QWidget

from designer.gui.canvas.sliced_image import SlicedImage, device_size, view_geometry
from designer.gui.canvas.view import ZOOM_STEP, FabricView

REDRAW_MS = 150
MARGIN = 0.04  # of the design's larger side, around it
MIN_AREA = (1000.0, 800.0)  # scene units the overview shows at least (an empty canvas's)


class MinimapView(QGraphicsView):
    """The overview itself (see the module docstring)."""

    def __init__(self, canvas: FabricView, parent: QWidget | None = None):
        super().__init__(canvas.fabric, parent)
        self.canvas = canvas
        self.fabric = canvas.fabric
        # The schematic version on show: it follows the scene's at most every REDRAW_MS,
        # and the new picture is drawn in slices (`SlicedImage`).
        self._version = -1
        self._shown: tuple | None = None
        self._picture = SlicedImage(self)
        self._picture.changed.connect(self._on_picture_changed)
        self._redraw = QTimer(self)
        self._redraw.setSingleShot(True)
        self._redraw.setInterval(REDRAW_MS)
        self._redraw.timeout.connect(self._on_redraw_timeout)
        self.setInteractive(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        # Its preferred height, shrinking on a small screen (a 1280x720 desktop would
        # otherwise push the main window's bottom off the screen).
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move the canvas, wheel to zoom it")
        canvas.view_changed.connect(self._on_canvas_view_changed)
        self.fabric.theme_changed.connect(self._on_fabric_theme_changed)
        self.fabric.sceneRectChanged.connect(self._on_fabric_scene_rect_changed)
        self.fabric.document.about_to_replace.connect(self._on_document_about_to_replace)

    def sizeHint(self) -> QSize:
        return QSize(320, 200)

    def minimumSizeHint(self) -> QSize:
        return QSize(120, 100)

    # ---------------------------------------------------------------- geometry
    def design_area(self) -> QRectF:
        """The scene area the overview shows: the design with a margin, and never less
        than `MIN_AREA` around it (a design of one device stays a small square)."""
        rect = self.fabric.design_rect()
        if rect.isEmpty():
            return QRectF(-500, -400, 1000, 800)
        m = MARGIN * max(rect.width(), rect.height())
        rect = rect.adjusted(-m, -m, m, m)
        w, h = max(rect.width(), MIN_AREA[0]), max(rect.height(), MIN_AREA[1])
        return QRectF(rect.center().x() - w / 2, rect.center().y() - h / 2, w, h)

    def refit(self) -> None:
        """Fit the whole design into the minimap."""
        area = self.design_area()
        self.setSceneRect(area)
        self.fitInView(area, Qt.AspectRatioMode.KeepAspectRatio)
        self.viewport().update()

    def visible_area(self) -> QRectF:
        """The part of the scene the canvas shows, in scene coordinates."""
        vp = self.canvas.viewport().rect()
        return self.canvas.mapToScene(vp).boundingRect()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.refit()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.refit()

    def _on_fabric_scene_rect_changed(self, _rect) -> None:
        if self.isVisible():
            self.refit()

    def _on_canvas_view_changed(self) -> None:
        if self.isVisible():
            self.viewport().update()

    def _on_fabric_theme_changed(self, _theme) -> None:
        self.viewport().update()

    def _on_picture_changed(self) -> None:
        self.viewport().update()

    def _on_document_about_to_replace(self, _old) -> None:
        # A picture of the old design half drawn in slices would go on reading the
        # scene's items after they are deleted: drop it, draw the new design afresh.
        self._picture.discard()
        self._shown = None

    # ---------------------------------------------------------------- painting
    def paintEvent(self, event: QPaintEvent) -> None:
        if self.fabric.document.replacing:
            # The scene's items are being deleted and rebuilt (only a nested event loop
            # can paint now): the background alone, nothing read from the scene.
            painter = QPainter(self.viewport())
            painter.fillRect(self.viewport().rect(), self.fabric.theme.background)
            painter.end()
            return
        version = self.fabric.schematic.version
        geometry = (*view_geometry(self), self.fabric.theme)
        if geometry != self._shown:
            self._version = version  # a new size, fit or theme: drawn now anyway
        elif version != self._version and not self._redraw.isActive():
            self._redraw.start()  # the design changed: redraw soon, not on every drag step
        image = self._picture.image(geometry, self._version, device_size(self.viewport()),
                                    self.devicePixelRatioF(), self._draw)
        self._shown = geometry
        painter = QPainter(self.viewport())
        painter.drawImage(0, 0, image)
        r = self.mapFromScene(self.visible_area()).boundingRect()
        sel = QColor(self.fabric.theme.selection)
        painter.setPen(QPen(sel, 1.5))
        sel.setAlpha(40)
        # Tint the visible area, unless the canvas shows it all (nothing to point at).
        whole = r.contains(self.viewport().rect())
        painter.setBrush(Qt.BrushStyle.NoBrush if whole else sel)
        painter.drawRect(r.adjusted(0, 0, -1, -1))
        painter.end()

    def _draw(self, painter: QPainter) -> Iterator[None]:
        size = self.viewport().size()
        painter.fillRect(QRectF(0, 0, size.width(), size.height()), self.fabric.theme.background)
        painter.setWorldTransform(self.viewportTransform())
        area = self.mapToScene(self.viewport().rect()).boundingRect()
        yield from self.fabric.schematic.paint_steps(painter, area, labels=False)

    def _on_redraw_timeout(self) -> None:
        self._version = self.fabric.schematic.version
        self.viewport().update()

    # ---------------------------------------------------------------- input
    def _recentre(self, pos: QPointF) -> None:
        self.canvas.note_motion()
        self.canvas.centerOn(self.mapToScene(pos.toPoint()))

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._recentre(event.position())
            event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._recentre(event.position())
            event.accept()

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        event.accept()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        event.accept()

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.canvas.zoom(ZOOM_STEP ** steps)
        event.accept()

    def contextMenuEvent(self, event) -> None:
        event.accept()


class MinimapDock(QDockWidget):
    """The overview as a dock: ``MinimapDock(view)``; toggle it with
    ``toggleViewAction()`` (View menu)."""

    def __init__(self, view: FabricView, parent: QWidget | None = None):
        super().__init__("Overview", parent)
        self.setObjectName("minimap_dock")
        self.minimap = MinimapView(view, self)
        self.setWidget(self.minimap)
        self.setAllowedAreas(Qt.DockWidgetArea.LeftDockWidgetArea
                             | Qt.DockWidgetArea.RightDockWidgetArea
                             | Qt.DockWidgetArea.BottomDockWidgetArea)
