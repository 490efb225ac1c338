"""Vector icons per node kind, drawn with QPainter into a square centred on the origin.

Drawn, not loaded from files, so they scale crisply, export as real SVG paths, and take
their colours from the theme.  ``kind_pixmap`` renders one for the palette;
``icon_pixmap`` keeps one raster copy per kind, colour, theme and on-screen size, so a
canvas of a thousand GPUs paints each icon as one pixmap blit instead of a dozen vector
strokes (all GPUs share one pixmap at a given zoom).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen, QPixmap

from designer.gui.canvas.style import KIND_COLORS, LIGHT, NODE_SIZE, Theme


def _chip(p: QPainter, r: QRectF, color: QColor, theme: Theme) -> None:
    """A GPU: a die with pins on every side."""
    pen = QPen(theme.node_outline, 1.2)
    p.setPen(pen)
    inner = r.adjusted(r.width() * 0.2, r.height() * 0.2, -r.width() * 0.2, -r.height() * 0.2)
    step = inner.width() / 4
    for i in range(1, 4):
        x = inner.left() + i * step
        y = inner.top() + i * step
        p.drawLine(QPointF(x, r.top() + 2), QPointF(x, inner.top()))
        p.drawLine(QPointF(x, inner.bottom()), QPointF(x, r.bottom() - 2))
        p.drawLine(QPointF(r.left() + 2, y), QPointF(inner.left(), y))
        p.drawLine(QPointF(inner.right(), y), QPointF(r.right() - 2, y))
    p.setBrush(color)
    p.drawRoundedRect(inner, 3, 3)
    p.setBrush(theme.node_fill)
    p.drawRect(inner.adjusted(inner.width() * 0.3, inner.height() * 0.3,
                              -inner.width() * 0.3, -inner.height() * 0.3))


def _switch(p: QPainter, r: QRectF, color: QColor, theme: Theme, arrows: int) -> None:
    """A switch: a flat box with ``arrows`` pairs of opposing arrows."""
    box = r.adjusted(1, r.height() * 0.22, -1, -r.height() * 0.22)
    p.setPen(QPen(theme.node_outline, 1.2))
    p.setBrush(color)
    p.drawRoundedRect(box, 4, 4)
    p.setPen(QPen(QColor("white"), 1.6))
    cy = box.center().y()
    for i in range(arrows):
        x0 = box.left() + box.width() * (0.2 + 0.6 * i / max(arrows - 1, 1))
        dy = box.height() * 0.22
        p.drawLine(QPointF(x0 - 5, cy - dy), QPointF(x0 + 5, cy - dy))
        p.drawLine(QPointF(x0 + 5, cy - dy), QPointF(x0 + 2, cy - dy - 3))
        p.drawLine(QPointF(x0 - 5, cy + dy), QPointF(x0 + 5, cy + dy))
        p.drawLine(QPointF(x0 - 5, cy + dy), QPointF(x0 - 2, cy + dy + 3))


def _nvswitch(p: QPainter, r: QRectF, color: QColor, theme: Theme) -> None:
    """An NVSwitch: a square with a crossbar."""
    box = r.adjusted(5, 5, -5, -5)
    p.setPen(QPen(theme.node_outline, 1.2))
    p.setBrush(color)
    p.drawRect(box)
    p.setPen(QPen(QColor("white"), 1.6))
    p.drawLine(box.topLeft() + QPointF(5, 5), box.bottomRight() - QPointF(5, 5))
    p.drawLine(box.topRight() + QPointF(-5, 5), box.bottomLeft() + QPointF(5, -5))


def _tray(p: QPainter, r: QRectF, color: QColor, theme: Theme) -> None:
    """An NVLink switch tray: a 1U chassis with two switch chips."""
    box = r.adjusted(1, r.height() * 0.3, -1, -r.height() * 0.3)
    p.setPen(QPen(theme.node_outline, 1.2))
    p.setBrush(color)
    p.drawRect(box)
    p.setBrush(theme.node_fill)
    w = box.width() * 0.3
    for x in (box.left() + box.width() * 0.12, box.right() - box.width() * 0.12 - w):
        p.drawRect(QRectF(x, box.top() + 3, w, box.height() - 6))


def _nic(p: QPainter, r: QRectF, color: QColor, theme: Theme) -> None:
    """A NIC: a card with a port."""
    card = r.adjusted(3, r.height() * 0.25, -3, -r.height() * 0.3)
    p.setPen(QPen(theme.node_outline, 1.2))
    p.setBrush(color)
    p.drawRoundedRect(card, 2, 2)
    p.setBrush(theme.node_fill)
    p.drawRect(QRectF(card.right() - 10, card.top() + 3, 7, card.height() - 6))
    for i in range(5):  # edge connector
        x = card.left() + 4 + i * 4
        p.drawLine(QPointF(x, card.bottom()), QPointF(x, card.bottom() + 4))


def _host(p: QPainter, r: QRectF, color: QColor, theme: Theme) -> None:
    """A host: a server with drive bays."""
    box = r.adjusted(2, r.height() * 0.2, -2, -r.height() * 0.2)
    p.setPen(QPen(theme.node_outline, 1.2))
    p.setBrush(color)
    p.drawRoundedRect(box, 3, 3)
    p.setPen(QPen(QColor("white"), 1.4))
    for i in range(3):
        y = box.top() + box.height() * (0.28 + 0.22 * i)
        p.drawLine(QPointF(box.left() + 5, y), QPointF(box.right() - 12, y))
    p.setBrush(QColor("#7CFC00"))
    p.drawEllipse(QPointF(box.right() - 6, box.center().y()), 2, 2)


def _storage(p: QPainter, r: QRectF, color: QColor, theme: Theme) -> None:
    """Storage: a disk cylinder."""
    p.setPen(QPen(theme.node_outline, 1.2))
    p.setBrush(color)
    body = r.adjusted(6, 6, -6, -6)
    eh = body.height() * 0.28
    path = QPainterPath()
    path.moveTo(body.left(), body.top() + eh / 2)
    path.lineTo(body.left(), body.bottom() - eh / 2)
    path.arcTo(QRectF(body.left(), body.bottom() - eh, body.width(), eh), 180, 180)
    path.lineTo(body.right(), body.top() + eh / 2)
    path.arcTo(QRectF(body.left(), body.top(), body.width(), eh), 0, 180)
    p.drawPath(path)
    p.setBrush(color.lighter(130))
    p.drawEllipse(QRectF(body.left(), body.top(), body.width(), eh))


_PAINTERS: dict[str, Callable[[QPainter, QRectF, QColor, Theme], None]] = {
    "gpu": _chip,
    "nvswitch": _nvswitch,
    "nvlink-switch-tray": _tray,
    "leaf": lambda p, r, c, t: _switch(p, r, c, t, 2),
    "spine": lambda p, r, c, t: _switch(p, r, c, t, 3),
    "core": lambda p, r, c, t: _switch(p, r, c, t, 4),
    "switch": lambda p, r, c, t: _switch(p, r, c, t, 2),
    "nic": _nic,
    "host": _host,
    "storage": _storage,
}


def paint_icon(p: QPainter, kind: str, rect: QRectF, theme: Theme,
               color: QColor | None = None) -> None:
    """Draw the icon of ``kind`` into ``rect``."""
    fill = color or QColor(KIND_COLORS.get(kind, "#808080"))
    _PAINTERS.get(kind, _host)(p, rect, fill, theme)


def kind_pixmap(kind: str, size: int = 32, theme: Theme = LIGHT) -> QPixmap:
    """The icon of ``kind`` as a transparent pixmap (palette, menus)."""
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    paint_icon(p, kind, QRectF(0, 0, size, size), theme)
    p.end()
    return pm


_ICON_CACHE: dict[tuple, QPixmap] = {}
_ICON_CACHE_MAX = 256  # kinds x colours x themes x a few zoom levels


def icon_pixmap(kind: str, color: QColor, theme: Theme, side_px: int) -> QPixmap:
    """The icon of ``kind`` drawn in ``color`` as a ``side_px`` square pixmap (shared).

    The pixmap covers a `NODE_SIZE` square of the scene at the scale ``side_px /
    NODE_SIZE``; callers blit it in device coordinates so it is never resampled.
    """
    key = (kind, color.rgba(), id(theme), side_px)  # themes are long-lived constants
    pm = _ICON_CACHE.get(key)
    if pm is None:
        if len(_ICON_CACHE) >= _ICON_CACHE_MAX:
            _ICON_CACHE.clear()  # zooming through many levels: start over, cheaply
        pm = QPixmap(side_px, side_px)
        pm.fill(Qt.GlobalColor.transparent)
        p = QPainter(pm)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        s = side_px / NODE_SIZE
        p.scale(s, s)
        paint_icon(p, kind, QRectF(0, 0, NODE_SIZE, NODE_SIZE), theme, color)
        p.end()
        _ICON_CACHE[key] = pm
    return pm
