"""Graphics items mirroring model values: `NodeItem`, `LinkItem`, `GroupItem`, `BundleItem`.

Items never change the model; they display a `Node`/`Link`/`Group` and are updated by
the scene when the model says something changed.  Painting follows the level of detail of
the view (see `designer.gui.canvas.style`): zoomed out, nodes are plain squares and labels
and badges disappear; further out the view draws a batched schematic instead of items.

Speed on a 1,024-GPU design comes from doing little per item: bounding rects are cached
(node bounds are native ``QGraphicsRectItem`` rects, so Qt never calls into Python for
them), icons are blitted from a pixmap shared by every node of a kind, and a link's
colour can change without any geometry change (`LinkItem.set_color`).
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QPaintEngine,
    QPainter,
    QPainterPath,
    QPainterPathStroker,
    QPen,
    QStaticText,
    QTransform,
)
from PySide6.QtWidgets import QGraphicsItem, QGraphicsRectItem, QStyleOptionGraphicsItem

from designer.gui.canvas.geometry import (
    ICON_RECT,
    LABEL_RECT,
    LABEL_WIDTH,
    NODE_BOUNDS,
    lod_of,
)
from designer.gui.canvas.icons import icon_pixmap, paint_icon
from designer.gui.canvas.style import (
    BADGE_FONT,
    FAILED_COLOR,
    FAILED_MARK,
    KIND_COLORS,
    LABEL_FONT,
    NODE_SIZE,
    Theme,
    link_width,
    opaque_over,
    shows_badges,
    shows_icons,
    shows_labels,
    tech_color,
)
from designer.model.topology import Link, Node

_LABEL_METRICS = QFontMetricsF(LABEL_FONT)
MIN_LABEL_PT = 5.0  # a long node name shrinks down to this before it is elided
_NO_PEN = QPen(Qt.PenStyle.NoPen)
#: Where along a line a badge may sit, tried in this order: the middle, then outwards
#: in steps of 5 % (a line from an NVSwitch row to a GPU row has a row of NICs and
#: their labels at its middle; the free strip between two rows is narrow).
_BADGE_TS = (0.5, *(0.5 + s * k / 20 for k in range(1, 9) for s in (-1, 1)))
_ICON_SHAPE = QPainterPath()
_ICON_SHAPE.addRect(ICON_RECT)
_KIND_QCOLORS = {kind: QColor(c) for kind, c in KIND_COLORS.items()}
_OTHER_KIND = QColor("#808080")
_BADGE_TEXT: dict[int, QStaticText] = {}


def _static(text: str, font) -> QStaticText:
    st = QStaticText(text)
    st.setTextFormat(Qt.TextFormat.PlainText)
    st.prepare(QTransform(), font)
    return st


_SELECTABLE = QGraphicsItem.GraphicsItemFlag.ItemIsSelectable  # looked up once, not per link
_BADGE_WIDTH: dict[int, float] = {}  # count -> badge box width (`_LineItem._badge_width`)


def _badge_static(count: int) -> QStaticText:
    st = _BADGE_TEXT.get(count)
    if st is None:
        st = _BADGE_TEXT[count] = _static(f"x{count}", BADGE_FONT)
    return st


def _width_step(width: float) -> float:
    """Link widths bucketed for the schematic, so its batches stay few (1, 2 or 3 px)."""
    return 1.0 if width <= 2.5 else 2.0 if width <= 5.0 else 3.0


def _raster(painter: QPainter) -> bool:
    """Whether pixmap shortcuts are right for this painter (not SVG, PDF or printing)."""
    engine = painter.paintEngine()
    return engine is not None and engine.type() == QPaintEngine.Type.Raster


class NodeItem(QGraphicsRectItem):
    """A device on the canvas: icon plus label, selectable and movable.

    ``links`` are the link items ending here and ``bundles`` the aggregated bundles
    drawn to it while a neighbouring group is collapsed; the scene keeps both and makes
    them follow the node (`follow`).  ``hidden`` is True while a collapsed group hides it.
    """

    Type = QGraphicsItem.UserType + 1

    def __init__(self, node: Node, theme: Theme):
        super().__init__(NODE_BOUNDS)
        self.setPen(_NO_PEN)  # the native bounding rect is then exactly NODE_BOUNDS
        self.node = node
        self.theme = theme
        self.links: list[LinkItem] = []
        self.bundles: list[BundleItem] = []
        self.hidden = False
        self._label: tuple[QStaticText, float] | None = None
        self.setPos(node.x, node.y)
        self.setFlags(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable
                      | QGraphicsItem.GraphicsItemFlag.ItemIsMovable)
        self.setZValue(10)

    def type(self) -> int:
        return self.Type

    @property
    def node_id(self) -> str:
        return self.node.id

    def set_node(self, node: Node) -> None:
        """Show a changed node value (moving the item and its links if it moved)."""
        if node.name != self.node.name:
            self._label = None
        self.node = node
        if (self.pos().x(), self.pos().y()) != (node.x, node.y):
            self.setPos(node.x, node.y)
            self.follow()
        self.update()

    def move_to(self, x: float, y: float) -> None:
        """Put the item at ``(x, y)`` and make its links follow (no model change)."""
        self.setPos(x, y)
        self.follow()

    def follow(self) -> None:
        """Re-route the links and bundles ending here after the item moved."""
        for link in self.links:
            link.update_path()
        for bundle in self.bundles:
            bundle.update_path()

    def anchor(self) -> QPointF:
        """Where links attach, in scene coordinates."""
        return self.pos()

    def shape(self) -> QPainterPath:
        # The icon, not the label: what a click picks and what a rubber band must enclose.
        return _ICON_SHAPE

    def color(self) -> QColor:
        if self.node.failed:
            return FAILED_COLOR
        return _KIND_QCOLORS.get(self.node.kind, _OTHER_KIND)

    def tooltip_text(self) -> str:
        n = self.node
        state = " — FAILED (what-if)" if n.failed else ""
        return (f"{n.name}{state}\n{n.kind} · {n.model}\nid {n.id}"
                + (f"\ngroup {n.group}" if n.group else "") + f"\nplane {n.plane}")

    def _label_text(self) -> tuple[QStaticText, float, QFont]:
        """The label, laid out once (QStaticText): the whole name under the icon, in a
        smaller font when the name is long ("Leaf rail 12 SU 3"), elided only past
        that."""
        if self._label is None:
            text, font, metrics = self.node.name, LABEL_FONT, _LABEL_METRICS
            wide = metrics.horizontalAdvance(text)
            if wide > LABEL_WIDTH:
                font = QFont(LABEL_FONT)
                font.setPointSizeF(max(MIN_LABEL_PT, LABEL_FONT.pointSizeF() * LABEL_WIDTH
                                       / wide * 0.97))
                metrics = QFontMetricsF(font)
                text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, LABEL_WIDTH)
            self._label = (_static(text, font), metrics.horizontalAdvance(text), font)
        return self._label

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = lod_of(painter)
        color = self.color()
        if not shows_icons(lod):  # far out: a coloured square is all the eye can use
            painter.fillRect(ICON_RECT.adjusted(6, 6, -6, -6), color)
        else:
            self._paint_icon(painter, lod, color)
            if shows_labels(lod):
                text, width, font = self._label_text()
                # A veil behind the label keeps it legible where links cross it.
                painter.fillRect(QRectF(-width / 2 - 2, LABEL_RECT.top() + 1, width + 4, 12),
                                 self.theme.label_veil)
                painter.setFont(font)
                painter.setPen(self.theme.text)
                painter.drawStaticText(QPointF(-width / 2, LABEL_RECT.top()), text)
        if self.node.failed:
            painter.setPen(QPen(FAILED_MARK, 2.5))
            painter.drawLine(ICON_RECT.topLeft(), ICON_RECT.bottomRight())
            painter.drawLine(ICON_RECT.topRight(), ICON_RECT.bottomLeft())
        if self.isSelected():
            painter.setPen(QPen(self.theme.selection, 2, Qt.PenStyle.DashLine))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(ICON_RECT.adjusted(-3, -3, 3, 3))

    def _paint_icon(self, painter: QPainter, lod: float, color: QColor) -> None:
        t = painter.worldTransform()
        side = round(NODE_SIZE * lod)
        if t.m12() == 0 and t.m21() == 0 and side <= 400 and _raster(painter):
            # One shared pixmap per kind and zoom, blitted in device pixels: no resampling.
            ratio = painter.device().devicePixelRatio()
            pm = icon_pixmap(self.node.kind, color, self.theme, round(side * ratio))
            pm.setDevicePixelRatio(ratio)
            c = t.map(QPointF(0, 0))
            painter.setWorldTransform(QTransform())
            painter.drawPixmap(QPointF(round(c.x() - side / 2), round(c.y() - side / 2)), pm)
            painter.setWorldTransform(t)
        else:  # SVG, PDF, printing: real vector strokes
            paint_icon(painter, self.node.kind, ICON_RECT, self.theme, color)


class _LineItem(QGraphicsItem):
    """A straight bundle line with a width, a colour and an optional ``xN`` badge.

    Subclasses provide the two end items (anything with ``anchor()``) and ``count``.
    Geometry (``line``, bounds, hit shape) changes only in `update_path`; colour only in
    `set_color`, which never calls ``prepareGeometryChange``.
    """

    def __init__(self, a, b, color: QColor, gbps: float, theme: Theme, count: int):
        super().__init__()
        self.a, self.b = a, b
        self.theme = theme
        self.base_color = color
        self.color = color
        self.gbps = gbps
        self.width = link_width(gbps)
        self.count = count
        self.batch_key: tuple[int, float, bool] = (0, 1.0, False)
        self._pen_key: tuple | None = None
        self._pen: QPen | None = None   # made on first paint (`_pen_key` None till then)
        self.offset = 0.0
        self.hidden = False
        self.line = QLineF()
        self._bounds = QRectF()
        self._shape: QPainterPath | None = None
        self._badge_at: QPointF | None = None
        self._badge_paint: tuple | None = None  # (key, box, text origin, border pen)
        self.setFlags(_SELECTABLE)   # (a new item has no flags to keep)
        self.setZValue(1)

    def _rekey(self) -> None:
        """The schematic's batch of this line: colour, width step, dashed when failed."""
        if self.failed():
            self.batch_key = (FAILED_COLOR.rgba(), _width_step(self.width), True)
        else:
            self.batch_key = (self.color.rgba(), _width_step(self.width), False)

    # ---------------------------------------------------------------- geometry
    def update_path(self) -> None:
        """Re-route between the ends (after a move, or an offset / width change)."""
        pa, pb = self.a.anchor(), self.b.anchor()
        if self.offset:
            dx, dy = pb.x() - pa.x(), pb.y() - pa.y()
            length = math.hypot(dx, dy) or 1.0
            shift = QPointF(-dy / length * self.offset, dx / length * self.offset)
            pa, pb = pa + shift, pb + shift
        self.prepareGeometryChange()
        self.line = QLineF(pa, pb)
        margin = self.width / 2 + 4
        if self.count > 1:
            margin = max(margin, self._badge_width() / 2 + 3)
        # The ends' box grown by the margin, from plain floats: one QRectF, not three
        # (this runs for every link of a design as it opens: 114,688 at 16k GPUs).
        ax, ay, bx, by = pa.x(), pa.y(), pb.x(), pb.y()
        x0, x1 = (ax, bx) if ax <= bx else (bx, ax)
        y0, y1 = (ay, by) if ay <= by else (by, ay)
        self._bounds = QRectF(x0 - margin, y0 - margin, x1 - x0 + 2 * margin,
                              y1 - y0 + 2 * margin)
        self._shape = None
        self._badge_at = None
        self._badge_paint = None

    def boundingRect(self) -> QRectF:
        return self._bounds

    def shape(self) -> QPainterPath:
        if self._shape is None:  # only hit tests need it: built on first use
            path = QPainterPath(self.line.p1())
            path.lineTo(self.line.p2())
            stroker = QPainterPathStroker()
            stroker.setWidth(max(self.width, 6.0))
            self._shape = stroker.createStroke(path)
        return self._shape

    # ---------------------------------------------------------------- colour
    def set_color(self, color: QColor | None) -> None:
        """Recolour without touching geometry (utilisation colours); None restores the
        technology colour.  Cheap: the scene repaints once for any number of calls."""
        self.color = color if color is not None else self.base_color
        self._rekey()
        scene = self.scene()
        if scene is not None and hasattr(scene, "links_recoloured"):
            scene.links_recoloured(self)
        else:
            self.update()

    def failed(self) -> bool:
        return False

    # ---------------------------------------------------------------- painting
    def _badge_width(self) -> float:
        width = _BADGE_WIDTH.get(self.count)
        if width is None:
            width = _BADGE_WIDTH[self.count] = _badge_static(self.count).size().width() + 8
        return width

    def _badge_center(self) -> QPointF:
        """The first spot along the line where the badge covers no node (cached)."""
        if self._badge_at is None:
            self._badge_at = self.line.pointAt(0.5)
            scene = self.scene()
            if scene is not None:
                w = self._badge_width()
                shift = 0.08 * (self.offset / 7.0)  # parallel bundles stagger their badges
                obstacles = getattr(scene, "badge_obstacles", None)
                for t in _BADGE_TS:
                    c = self.line.pointAt(min(0.9, max(0.1, t + shift)))
                    box = QRectF(c.x() - w / 2, c.y() - 7, w, 14)
                    if not _covers_node(scene, obstacles, box):
                        self._badge_at = c
                        break
        return self._badge_at

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        # Hundreds of these run per frame where rails cross: keep the common path short.
        if self.isSelected():
            painter.setPen(QPen(self.theme.selection, self.width + 4))
            painter.drawLine(self.line)
        key = (self.batch_key, self.width, id(self.theme))
        if self._pen_key != key:
            self._pen_key = key
            # Opaque even for a translucent colour (an idle link's grey, say): a
            # translucent wide line costs ten times more to rasterise.
            color = self.color if self.color.alpha() == 255 else opaque_over(
                self.color, self.theme.background)
            self._pen = (QPen(FAILED_COLOR, self.width, Qt.PenStyle.DashLine) if self.failed()
                         else QPen(color, self.width))
        painter.setPen(self._pen)
        painter.drawLine(self.line)
        if self.count > 1 and shows_badges(lod_of(painter)):
            self._paint_badge(painter)

    def _paint_badge(self, painter: QPainter) -> None:
        # Where rails cross, hundreds of badges paint per frame: their box, text origin
        # and pen are kept until the line moves or the colour or count changes.
        st = _badge_static(self.count)
        key = (self.color.rgba(), self.count)
        cached = self._badge_paint
        if cached is None or cached[0] != key:
            c = self._badge_center()
            size = st.size()
            box = QRectF(c.x() - size.width() / 2 - 4, c.y() - 6.5, size.width() + 8, 13)
            origin = QPointF(box.left() + 4, c.y() - size.height() / 2)
            cached = self._badge_paint = (key, box, origin, QPen(self.color, 1))
        _, box, origin, pen = cached
        painter.setPen(pen)
        painter.setBrush(self.theme.badge_fill)
        painter.drawRoundedRect(box, 4, 4)
        painter.setFont(BADGE_FONT)
        painter.setPen(self.theme.text)
        painter.drawStaticText(origin, st)


def node_boxes(scene) -> np.ndarray:
    """The scene rectangles of ``scene``'s visible nodes, one ``(x0, y0, x1, y1)`` row
    each: what a badge must not cover.  A caller painting every badge at once (an
    export) sets it as the scene's ``badge_obstacles`` while the nodes stay put."""
    rects = [item.sceneBoundingRect() for item in scene.nodes.values() if item.isVisible()]
    return np.array([(r.left(), r.top(), r.right(), r.bottom()) for r in rects],
                    dtype=float).reshape(-1, 4)


def _covers_node(scene, obstacles: np.ndarray | None, box: QRectF) -> bool:
    """Whether ``box`` overlaps a visible node: by ``obstacles`` (`node_boxes`) when
    given, else by the scene's index (bounding rects, not shapes: a node's shape is its
    box anyway, and intersecting the stroked shapes of every long line passing near
    costs milliseconds per badge)."""
    if obstacles is not None:
        return bool(np.any((obstacles[:, 0] < box.right()) & (obstacles[:, 2] > box.left())
                           & (obstacles[:, 1] < box.bottom()) & (obstacles[:, 3] > box.top())))
    hits = scene.items(box, Qt.ItemSelectionMode.IntersectsItemBoundingRect)
    return any(isinstance(i, NodeItem) and i.isVisible() for i in hits)


class LinkItem(_LineItem):
    """A link bundle: one line however many physical links, with a ``xN`` badge.

    Width grows with the bundle's bandwidth; colour is the technology's until the solver
    colours it by utilisation (``set_color``).  Parallel bundles between the same two
    nodes are offset sideways by ``offset`` so each stays clickable.
    """

    Type = QGraphicsItem.UserType + 2

    def __init__(self, link: Link, a: NodeItem, b: NodeItem, color: QColor, gbps: float,
                 theme: Theme, offset: float = 0.0):
        super().__init__(a, b, color, gbps, theme, link.count)
        self.link = link
        self.offset = offset
        self._rekey()
        a.links.append(self)
        b.links.append(self)
        self.update_path()

    def type(self) -> int:
        return self.Type

    @property
    def link_id(self) -> str:
        return self.link.id

    def failed(self) -> bool:
        return self.link.failed

    def detach(self) -> None:
        for end in (self.a, self.b):
            if self in end.links:
                end.links.remove(self)

    def set_link(self, link: Link, color: QColor, gbps: float) -> None:
        recoloured = self.color != self.base_color
        self.link = link
        self.count = link.count
        self.base_color = color
        if not recoloured:
            self.color = color
        self.gbps = gbps
        self.width = link_width(gbps)
        self._rekey()
        self.update_path()
        self.update()

    def tooltip_text(self) -> str:
        lk = self.link
        return (f"{lk.id}: {self.a.node.name} — {self.b.node.name}\n"
                f"{lk.count} x {lk.tech}, plane {lk.plane}"
                + ("\nFAILED (what-if)" if lk.failed else ""))


class BundleItem(_LineItem):
    """The links between a collapsed group and one outside node or collapsed group,
    drawn as one line: summed count on the badge, width by summed bandwidth, the
    technology's colour when they share one (else a neutral grey).

    Not part of the model: the scene rebuilds bundles whenever the collapse state or
    the links change.  ``link_ids`` are the links it stands for.
    """

    Type = QGraphicsItem.UserType + 4

    def __init__(self, a, b, link_ids: list[str], count: int, gbps: float, color: QColor,
                 theme: Theme, summary: str = ""):
        super().__init__(a, b, color, gbps, theme, count)
        self.link_ids = link_ids
        self.rows = None  # the links' rows in the design's columns (set by the scene)
        self.summary = summary
        self._rekey()
        a.bundles.append(self)
        b.bundles.append(self)
        self.update_path()

    def type(self) -> int:
        return self.Type

    def detach(self) -> None:
        for end in (self.a, self.b):
            if self in end.bundles:
                end.bundles.remove(self)

    def tooltip_text(self) -> str:
        return (f"{self.count} link(s) in {len(self.link_ids)} bundle(s), "
                f"{self.gbps:,.0f} Gb/s per direction\n{self.summary}")


def link_color(protocol: str, family: str) -> QColor:
    return tech_color(protocol, family)


def help_text(item: QGraphicsItem) -> str:
    """The tooltip for ``item``: its own tool tip if one was set, else a description."""
    tip = item.toolTip()
    if tip:
        return tip
    describe = getattr(item, "tooltip_text", None)
    return describe() if describe is not None else ""


__all__ = [
    "ICON_RECT",
    "NODE_BOUNDS",
    "BundleItem",
    "GroupItem",
    "LinkItem",
    "NodeItem",
    "help_text",
    "link_color",
    "lod_of",
]

from designer.gui.canvas.groups import GroupItem  # noqa: E402  (re-exported here)
