"""Graphics items mirroring model values: `NodeItem`, `LinkItem`, `GroupItem`.

Items never change the model; they display a `Node`/`Link`/`Group` and are updated by
the scene when the model says something changed.  Painting follows the level of detail
of the view: zoomed far out, nodes are plain squares and labels and badges disappear.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPainterPath, QPainterPathStroker, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsObject, QStyleOptionGraphicsItem

from designer.gui.canvas.icons import paint_icon
from designer.gui.canvas.style import KIND_COLORS, NODE_SIZE, Theme, link_width, tech_color
from designer.model.topology import Group, Link, Node

LABEL_FONT = QFont("Sans Serif", 7)
BADGE_FONT = QFont("Sans Serif", 7, QFont.Weight.Bold)
GROUP_FONT = QFont("Sans Serif", 9, QFont.Weight.Bold)
_HALF = NODE_SIZE / 2


def _lod(painter: QPainter, option: QStyleOptionGraphicsItem) -> float:
    return option.levelOfDetailFromTransform(painter.worldTransform())


class NodeItem(QGraphicsObject):
    """A device on the canvas: icon plus label, selectable and movable."""

    Type = QGraphicsItem.UserType + 1

    def __init__(self, node: Node, theme: Theme):
        super().__init__()
        self.node = node
        self.theme = theme
        self.links: list[LinkItem] = []
        self.setFlags(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable
                      | QGraphicsItem.GraphicsItemFlag.ItemIsMovable
                      | QGraphicsItem.GraphicsItemFlag.ItemSendsGeometryChanges)
        self.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self.setZValue(10)
        self.setPos(node.x, node.y)
        self._refresh_tooltip()

    def type(self) -> int:
        return self.Type

    @property
    def node_id(self) -> str:
        return self.node.id

    def set_node(self, node: Node) -> None:
        """Show a changed node value."""
        self.node = node
        if (self.pos().x(), self.pos().y()) != (node.x, node.y):
            self.setPos(node.x, node.y)
        self._refresh_tooltip()
        self.update()

    def _refresh_tooltip(self) -> None:
        n = self.node
        state = " — FAILED (what-if)" if n.failed else ""
        self.setToolTip(f"{n.name}{state}\n{n.kind} · {n.model}\nid {n.id}"
                        + (f"\ngroup {n.group}" if n.group else "") + f"\nplane {n.plane}")

    def boundingRect(self) -> QRectF:
        return QRectF(-_HALF - 20, -_HALF - 2, NODE_SIZE + 40, NODE_SIZE + 16)

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRect(QRectF(-_HALF, -_HALF, NODE_SIZE, NODE_SIZE))
        return path

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = _lod(painter, option)
        rect = QRectF(-_HALF, -_HALF, NODE_SIZE, NODE_SIZE)
        color = QColor(KIND_COLORS.get(self.node.kind, "#808080"))
        if self.node.failed:
            color = QColor("#9E9E9E")
        if lod < 0.25:  # far out: a coloured square is all the eye can use
            painter.fillRect(rect.adjusted(6, 6, -6, -6), color)
        else:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            paint_icon(painter, self.node.kind, rect, self.theme, color)
            if lod >= 0.5:
                painter.setFont(LABEL_FONT)
                painter.setPen(self.theme.text)
                painter.drawText(QRectF(-_HALF - 20, _HALF - 2, NODE_SIZE + 40, 14),
                                 Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
                                 self.node.name)
        if self.node.failed:
            painter.setPen(QPen(QColor("#D55E00"), 2.5))
            painter.drawLine(rect.topLeft(), rect.bottomRight())
            painter.drawLine(rect.topRight(), rect.bottomLeft())
        if self.isSelected():
            painter.setPen(QPen(self.theme.selection, 2, Qt.PenStyle.DashLine))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(rect.adjusted(-3, -3, 3, 3))

    def itemChange(self, change, value):
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionHasChanged:
            for link in self.links:
                link.update_path()
        return super().itemChange(change, value)


class LinkItem(QGraphicsItem):
    """A link bundle: one line however many physical links, with a ``xN`` badge.

    Width grows with the bundle's bandwidth; colour is the technology's until the solver
    colours it by utilisation (``set_color``).  Parallel bundles between the same two
    nodes are offset sideways by ``offset`` so each stays clickable.
    """

    Type = QGraphicsItem.UserType + 2

    def __init__(self, link: Link, a: NodeItem, b: NodeItem, color: QColor, gbps: float,
                 theme: Theme):
        super().__init__()
        self.link = link
        self.a, self.b = a, b
        self.theme = theme
        self.base_color = color
        self.color = color
        self.width = link_width(gbps)
        self.offset = 0.0
        self._path = QPainterPath()
        self._shape = QPainterPath()
        self.setFlags(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable)
        self.setZValue(1)
        a.links.append(self)
        b.links.append(self)
        self.update_path()

    def type(self) -> int:
        return self.Type

    @property
    def link_id(self) -> str:
        return self.link.id

    def detach(self) -> None:
        for end in (self.a, self.b):
            if self in end.links:
                end.links.remove(self)

    def set_link(self, link: Link, color: QColor, gbps: float) -> None:
        self.link = link
        self.base_color = self.color = color
        self.width = link_width(gbps)
        self.update_path()

    def set_color(self, color: QColor | None) -> None:
        """Recolour without touching geometry (utilisation colours); None restores."""
        self.color = color if color is not None else self.base_color
        self.update()

    def _ends(self) -> tuple[QPointF, QPointF]:
        pa, pb = self.a.pos(), self.b.pos()
        if self.offset:
            dx, dy = pb.x() - pa.x(), pb.y() - pa.y()
            length = math.hypot(dx, dy) or 1.0
            nx_, ny_ = -dy / length * self.offset, dx / length * self.offset
            pa, pb = pa + QPointF(nx_, ny_), pb + QPointF(nx_, ny_)
        return pa, pb

    def update_path(self) -> None:
        self.prepareGeometryChange()
        pa, pb = self._ends()
        path = QPainterPath(pa)
        path.lineTo(pb)
        self._path = path
        stroker = QPainterPathStroker()
        stroker.setWidth(max(self.width, 6.0))
        self._shape = stroker.createStroke(path)

    def boundingRect(self) -> QRectF:
        return self._shape.boundingRect().adjusted(-12, -12, 12, 12)

    def shape(self) -> QPainterPath:
        return self._shape

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        lod = _lod(painter, option)
        pen = QPen(self.color, self.width)
        if self.link.failed:
            pen.setStyle(Qt.PenStyle.DashLine)
            pen.setColor(QColor("#9E9E9E"))
        if self.isSelected():
            halo = QPen(self.theme.selection, self.width + 4)
            painter.setPen(halo)
            painter.drawPath(self._path)
        painter.setPen(pen)
        painter.drawPath(self._path)
        if self.link.count > 1 and lod >= 0.6:
            pa, pb = self._ends()
            mid = (pa + pb) / 2
            text = f"x{self.link.count}"
            box = QRectF(mid.x() - 11, mid.y() - 6, 22, 12)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(self.theme.background)
            painter.drawRoundedRect(box, 3, 3)
            painter.setFont(BADGE_FONT)
            painter.setPen(self.color)
            painter.drawText(box, Qt.AlignmentFlag.AlignCenter, text)


class GroupItem(QGraphicsItem):
    """A container (server node, tray, rack, SU) drawn around its members."""

    Type = QGraphicsItem.UserType + 3
    PAD = 14.0

    def __init__(self, group: Group, theme: Theme):
        super().__init__()
        self.group = group
        self.theme = theme
        self._rect = QRectF()
        self.setZValue(-10 + self._depth_hint(group))
        self.setAcceptHoverEvents(False)

    @staticmethod
    def _depth_hint(group: Group) -> float:
        return {"cluster": 0, "pod": 1, "su": 2, "rack": 3, "plane": 3, "tray": 4,
                "node": 5}.get(group.kind, 4) * 0.5

    def type(self) -> int:
        return self.Type

    def set_rect(self, rect: QRectF) -> None:
        rect = rect.adjusted(-self.PAD, -self.PAD - 12, self.PAD, self.PAD) if rect.isValid() \
            else QRectF()
        if rect != self._rect:
            self.prepareGeometryChange()
            self._rect = rect

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        if self._rect.isEmpty():
            return
        painter.setPen(QPen(self.theme.group_outline, 1, Qt.PenStyle.DashLine))
        painter.setBrush(self.theme.group_fill)
        painter.drawRoundedRect(self._rect, 8, 8)
        if _lod(painter, option) >= 0.3:
            painter.setFont(GROUP_FONT)
            painter.setPen(self.theme.text)
            painter.drawText(self._rect.adjusted(8, 2, -8, 0),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                             self.group.name)


def link_color(protocol: str, family: str) -> QColor:
    return tech_color(protocol, family)
