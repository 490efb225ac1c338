"""`PathHalo`: the links that carry a selected GPU's flows, outlined on the canvas.

One item draws every outline, just beneath the links (so a link keeps its utilisation
colour and its badge on top): a wide stroke in reddish purple (Okabe-Ito; neither
cividis' blue-to-yellow nor the vermillion of saturated links) with a thin gap in the
background colour between it and the link, so the outline reads on any link colour, in
the light and the dark theme.  The outline is at least `HALO_PX` screen pixels wide
whatever the zoom.  Far out, where the view paints its batched schematic instead of the
items, the view paints this item on top of the schematic (it is one of the scene's
``overlays``), links included.
"""

from __future__ import annotations

from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from designer.gui.canvas.style import opaque_over, uses_schematic

HALO = QColor("#CC79A7")
HALO_PX = 3.5      # outline width beyond the link, each side, in screen pixels
GAP_PX = 1.5       # background-coloured gap between link and outline
HALO_Z = 0.9       # links are at 1, group frames below 0
_MARGIN = 60.0     # scene units around the lines: covers the outline down to ~0.1 zoom


class PathHalo(QGraphicsItem):
    """Outlines under a set of link (or bundle) items; see the module docstring."""

    def __init__(self):
        super().__init__()
        self.setZValue(HALO_Z)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, False)
        self.items: list = []
        self._lines: list[QLineF] = []
        self._bounds = QRectF()
        self.hide()

    def set_items(self, items: list) -> None:
        """Outline these line items (``LinkItem`` or ``BundleItem``); none hides it."""
        self.items = list(items)
        self.sync()
        self.setVisible(bool(self.items))
        self.update()

    def sync(self) -> None:
        """Follow the lines after nodes moved (cheap when nothing did)."""
        lines = [QLineF(i.line) for i in self.items]
        if lines == self._lines:
            return
        self._lines = lines
        bounds = QRectF()
        for i in self.items:
            r = QRectF(i.line.p1(), i.line.p2()).normalized()
            pad = i.width / 2 + _MARGIN
            bounds = bounds.united(r.adjusted(-pad, -pad, pad, pad))
        self.prepareGeometryChange()
        self._bounds = bounds

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        scale = max(abs(painter.worldTransform().m11()), 1e-6)
        items = [i for i in self.items if not i.hidden and i.scene() is self.scene()]
        if not items:
            return
        background = self.scene().theme.background if hasattr(self.scene(), "theme") \
            else QColor("white")
        schematic = uses_schematic(scale)
        halo = HALO_PX / 2 if schematic else HALO_PX  # far out, lines are 1-2 px
        for width_of, color_of in (
            (lambda i: _px(i, scale, schematic) + 2 * (GAP_PX + halo), lambda _i: HALO),
            (lambda i: _px(i, scale, schematic) + 2 * GAP_PX, lambda _i: background),
            # The link itself: the items paint it over this anyway, the schematic not.
            (lambda i: _px(i, scale, schematic),
             lambda i: opaque_over(i.color, background)),
        ):
            for i in items:
                pen = QPen(color_of(i), width_of(i))
                pen.setCosmetic(True)  # widths above are in screen pixels
                pen.setCapStyle(Qt.PenCapStyle.FlatCap)
                painter.setPen(pen)
                painter.drawLine(i.line)


def _px(item, scale: float, schematic: bool) -> float:
    """The link's drawn width in screen pixels (the schematic draws thin lines)."""
    if schematic:
        return 2.0
    return max(1.0, item.width * scale)
