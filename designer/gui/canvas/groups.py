"""`GroupItem`: a container (server node, tray, rack, pod, SU) as a frame or a box.

Expanded, a group is a translucent frame around its members with a title strip; the strip
and the border are what you grab to move the whole group (the inside stays free for
rubber-band selection).  Collapsed, it is one box standing for all its members, with a
summary ("8 GPU · 8 NIC · 4 NVSwitch · 1 host"); the scene hides the members and draws
aggregated `BundleItem` lines to it.

Titles keep a readable on-screen size when zoomed out (`GROUP_LABEL_PX`) as long as they
fit their frame, so an SU's name reads at full view while a server's stays small.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QPainterPath, QPen, QTransform
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from designer.gui.canvas.geometry import NODE_BOUNDS, lod_of
from designer.gui.canvas.style import BOX_FONT, GROUP_FONT, GROUP_LABEL_PX, Theme
from designer.model.topology import Group

PAD = 14.0  # between a frame and what it holds
TITLE = 22.0  # height of the title strip at 1:1, scene units
BOX_W, BOX_H = 170.0, 64.0  # smallest collapsed box
BOX_Z = 5.0  # above links, below nodes
MIN_TITLE_PX = 8  # titles shrink to fit their frame down to this size, then are left out
_DEPTH = {"cluster": 0, "pod": 1, "su": 2, "rack": 3, "plane": 3, "tray": 4, "node": 5}


def box_for(frame: QRectF) -> QRectF:
    """The collapsed box of a group whose frame is ``frame``: centred on it, most of its
    width (what it hides has no other use for the room, and its name reads at full view
    of a big design), never smaller than a label.

    >>> box_for(QRectF(0, 0, 1000, 400)).getRect()
    (100.0, 80.0, 800.0, 240.0)
    """
    if not frame.isValid():
        return QRectF()
    w = max(BOX_W, frame.width() * 0.8)
    h = max(BOX_H, min(frame.height() * 0.6, w * 0.4))
    c = frame.center()
    return QRectF(c.x() - w / 2, c.y() - h / 2, w, h)


def title_px(lod: float) -> float:
    """On-screen pixel size of a frame's title at ``lod``: the 1:1 size, scaled with the
    zoom, but never below `GROUP_LABEL_PX` so an SU's name reads at full view.

    >>> round(title_px(1.0), 1), title_px(0.2)
    (13.3, 11.0)
    """
    return max(GROUP_LABEL_PX, GROUP_FONT.pointSizeF() * 96 / 72 * lod)


_TITLE_FONTS: dict[int, tuple[QFont, QFontMetricsF]] = {}


def _title_font(px: int) -> tuple[QFont, QFontMetricsF]:
    if px not in _TITLE_FONTS:
        font = QFont(GROUP_FONT)
        font.setPixelSize(px)
        _TITLE_FONTS[px] = (font, QFontMetricsF(font))
    return _TITLE_FONTS[px]


def paint_titles(painter: QPainter, frames, exposed: QRectF, theme: Theme) -> None:
    """Group names at the top-left of their frames, on top of everything, in device
    pixels (crisp at any zoom).

    ``frames`` are ``(frame rect, name)`` pairs, outer groups first.  A frame too small
    on screen gets no title, and a title that would cover one already drawn is left out
    (zoomed out, nested frames' corners sit a few pixels apart): outer names win.
    """
    for _ in title_steps(painter, frames, exposed, theme):
        pass


TITLES_PER_STEP = 32  # frames looked at per step of `title_steps`


def title_steps(painter: QPainter, frames, exposed: QRectF, theme: Theme) -> Iterator[None]:
    """`paint_titles`, yielding every `TITLES_PER_STEP` frames (for a picture drawn in
    slices: a design of thousands of groups takes tens of ms).  The painter draws in
    device pixels until the last step restores its transform."""
    t = painter.worldTransform()
    lod = math.sqrt(abs(t.m11() * t.m22() - t.m12() * t.m21()))
    px = round(min(title_px(lod), 64.0))
    painter.setWorldTransform(QTransform())
    drawn: list[QRectF] = []
    for i, (frame, name) in enumerate(frames, 1):
        if i % TITLES_PER_STEP == 0:
            yield
        if not frame.intersects(exposed):
            continue
        r = t.mapRect(frame)
        if r.height() < 2.2 * MIN_TITLE_PX:
            continue
        # The whole name, smaller if it must be, or none: a stub ("Rac…") reads as noise.
        fit = fitting_font(name, px, r.width() - 12)
        if fit is None:
            continue
        f, m = fit
        box = QRectF(r.left() + 6, r.top() + 2, m.horizontalAdvance(name) + 4, m.height())
        if any(box.intersects(d) for d in drawn):  # an outer group's name is there
            continue
        drawn.append(box)
        painter.fillRect(box, theme.label_veil)  # legible where links cross the title
        painter.setFont(f)
        painter.setPen(theme.text)
        painter.drawText(QPointF(box.left() + 2, box.top() + m.ascent()), name)
    painter.setWorldTransform(t)


def fitting_font(text: str, px: int, width: float) -> tuple[QFont, QFontMetricsF] | None:
    """The title font at ``px`` pixels, or smaller down to `MIN_TITLE_PX`, in which
    ``text`` fits ``width`` pixels; None when it fits at none."""
    while px >= MIN_TITLE_PX:
        font, metrics = _title_font(px)
        if metrics.horizontalAdvance(text) <= width:
            return font, metrics
        px -= 1 if px <= 16 else max(1, px // 8)
    return None


class GroupItem(QGraphicsItem):
    """A container drawn around its members, or as one box when ``collapsed``."""

    Type = QGraphicsItem.UserType + 3
    PAD = PAD

    def __init__(self, group: Group, theme: Theme):
        super().__init__()
        self.group = group
        self.theme = theme
        self.collapsed = False
        self.hidden = False  # inside a collapsed ancestor
        self.bundles: list = []
        self.summary = ""
        self.depth = 0  # nesting level, set by the scene: deeper frames are tinted more
        self._frame = QRectF()
        self._box = QRectF()
        self.setZValue(self._base_z())
        self.setAcceptHoverEvents(False)

    def _base_z(self) -> float:
        return -10 + _DEPTH.get(self.group.kind, 4) * 0.5

    @staticmethod
    def _depth_hint(group: Group) -> float:
        return _DEPTH.get(group.kind, 4) * 0.5

    def type(self) -> int:
        return self.Type

    @property
    def group_id(self) -> str:
        return self.group.id

    # ---------------------------------------------------------------- geometry
    def set_rect(self, rect: QRectF) -> None:
        """Fit the frame around ``rect`` (the members' area, scene coordinates)."""
        frame = rect.adjusted(-PAD, -PAD - TITLE, PAD, PAD) if rect.isValid() else QRectF()
        if frame != self._frame:
            self.prepareGeometryChange()
            self._frame = frame
            self._box = box_for(frame)
            for bundle in self.bundles:
                bundle.update_path()

    def frame_rect(self) -> QRectF:
        """The expanded frame, scene coordinates (while not being dragged)."""
        return QRectF(self._frame)

    def box_rect(self) -> QRectF:
        """The collapsed box, scene coordinates (while not being dragged)."""
        return QRectF(self._box)

    def set_collapsed(self, collapsed: bool) -> None:
        """Show as one box (True) or as a frame around the members (False)."""
        if collapsed == self.collapsed:
            return
        self.prepareGeometryChange()
        self.collapsed = collapsed
        if not collapsed:
            self.setSelected(False)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, collapsed)
        self.setZValue(BOX_Z if collapsed else self._base_z())

    def tooltip_text(self) -> str:
        g = self.group
        if self.collapsed:
            return f"{g.name} ({g.kind}): {self.summary}\ndouble-click to expand"
        return f"{g.name} ({g.kind})\ndrag the title to move it; double-click to collapse"

    def anchor(self) -> QPointF:
        """Where aggregated bundles attach: the box centre, in scene coordinates."""
        return self.pos() + self._box.center()

    def boundingRect(self) -> QRectF:
        return self._box if self.collapsed else self._frame

    def _view_scale(self) -> float:
        scene = self.scene()
        return getattr(scene, "view_scale", 1.0) if scene is not None else 1.0

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        if self.collapsed:
            path.addRect(self._box)
            return path
        if self._frame.isEmpty():
            return path
        # Grab by the title strip or the border; the inside is for rubber bands.
        scale = max(self._view_scale(), 1e-3)
        f = self._frame
        strip = max(TITLE, title_px(scale) * 1.3 / scale)
        ring = max(6.0, 5.0 / scale)
        path.setFillRule(Qt.FillRule.WindingFill)
        path.addRect(QRectF(f.left(), f.top(), f.width(), min(strip, f.height())))
        for r in (QRectF(f.left(), f.top(), ring, f.height()),
                  QRectF(f.right() - ring, f.top(), ring, f.height()),
                  QRectF(f.left(), f.bottom() - ring, f.width(), ring)):
            path.addRect(r)
        return path

    # ---------------------------------------------------------------- painting
    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        if self.collapsed:
            self._paint_box(painter)
        elif not self._frame.isEmpty():
            self._paint_frame(painter)

    def _paint_frame(self, painter: QPainter) -> None:
        lod = lod_of(painter)
        pen = QPen(self.theme.group_outline, 1)
        pen.setCosmetic(True)
        painter.setPen(pen)
        painter.setBrush(self.theme.frame_fill(self.depth))
        radius = min(8.0, 4.0 / max(lod, 1e-3))
        painter.drawRoundedRect(self._frame, radius, radius)
        # The title is drawn by the scene's foreground, above the members.

    def _paint_box(self, painter: QPainter) -> None:
        box = self._box
        if box.isEmpty():
            return
        lod = lod_of(painter)
        pen = QPen(self.theme.selection if self.isSelected() else self.theme.box_outline,
                   2.5 if self.isSelected() else 1.5)
        pen.setCosmetic(True)
        painter.setPen(pen)
        painter.setBrush(self.theme.box_fill)
        painter.drawRoundedRect(box, 6, 6)
        paint_box_text(painter, box, self.group.name, self.summary, self.theme, lod)


_SIZED: dict[tuple[str, int], tuple[QFont, QFontMetricsF]] = {}


def _sized(base: QFont, px: int) -> tuple[QFont, QFontMetricsF]:
    """``base`` at ``px`` pixels and its metrics, made once (a box's text is painted
    on every frame of a pan; making a font and its metrics costs more than drawing)."""
    key = (base.key(), px)
    if key not in _SIZED:
        font = QFont(base)
        font.setPixelSize(px)
        _SIZED[key] = (font, QFontMetricsF(font))
    return _SIZED[key]


def paint_box_text(painter: QPainter, box: QRectF, name: str, summary: str, theme: Theme,
                   lod: float) -> None:
    """A collapsed box's name and member summary, sized to the box, in device pixels:
    the name alone when the box is small on screen, nothing when it is tiny."""
    t = painter.worldTransform()
    r = t.mapRect(box).adjusted(6, 2, -6, -2)
    lod_px = GROUP_FONT.pointSizeF() * 96 / 72 * 1.2 * lod  # a bit above frame titles
    title = min(r.height() * 0.42, max(GROUP_LABEL_PX, lod_px))
    if title < 6.5 or r.width() < 24:
        return
    painter.setWorldTransform(QTransform())
    if r.height() >= 16 and r.width() >= 60:  # a "+" in the corner: it opens
        side = min(10.0, r.height() * 0.35)
        mark = QRectF(r.right() - side, r.top() + 1, side, side)
        painter.setPen(QPen(theme.muted_text, 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(mark)
        c = mark.center()
        painter.drawLine(QPointF(c.x() - side * 0.3, c.y()), QPointF(c.x() + side * 0.3, c.y()))
        painter.drawLine(QPointF(c.x(), c.y() - side * 0.3), QPointF(c.x(), c.y() + side * 0.3))
        r.adjust(0, 0, -side - 2, 0)
    font, metrics = _sized(GROUP_FONT, max(1, round(title)))
    painter.setFont(font)
    painter.setPen(theme.text)
    has_summary = bool(summary) and r.height() > metrics.height() * 2.2
    head = QRectF(r.left(), r.top(), r.width(), r.height() / 2 if has_summary else r.height())
    align = Qt.AlignmentFlag.AlignHCenter | (
        Qt.AlignmentFlag.AlignBottom if has_summary else Qt.AlignmentFlag.AlignVCenter)
    while metrics.horizontalAdvance(name) > r.width() and font.pixelSize() > MIN_TITLE_PX:
        font, metrics = _sized(GROUP_FONT, font.pixelSize() - 1)  # whole, smaller: not "Po…"
        painter.setFont(font)
    if metrics.horizontalAdvance(name) <= r.width():
        painter.drawText(head, align, name)
    if has_summary:
        below = QRectF(r.left(), r.center().y() + 2, r.width(), r.height() / 2 - 2)
        px, lines = summary_lines(summary, below.width(), below.height(),
                                  max(1, round(title * 0.75)))
        small, _ = _sized(BOX_FONT, px)
        painter.setFont(small)
        painter.setPen(theme.muted_text)
        painter.drawText(below, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
                         "\n".join(lines))
    painter.setWorldTransform(t)


#: The smallest pixel size a box's member summary takes to be read whole on two lines.
MIN_SUMMARY_PX = 7


def summary_lines(summary: str, width: float, height: float, px: int) -> tuple[int, list[str]]:
    """How a box's member summary ("1024 GPU · 1024 NIC · 512 NVSwitch ...") fits in
    ``width`` x ``height`` pixels, its size being ``px``: ``(pixel size, lines)``.  One
    line when it fits; else two, split between items and as small as needed (not below
    `MIN_SUMMARY_PX`), so that the counts can be read whole; else one line elided."""
    _font, metrics = _sized(BOX_FONT, px)
    if metrics.horizontalAdvance(summary) <= width:
        return px, [summary]
    items = summary.split(" · ")
    if len(items) > 1:
        best = min(
            (
                (" · ".join(items[:k]), " · ".join(items[k:]))
                for k in range(1, len(items))
            ),
            key=lambda pair: max(metrics.horizontalAdvance(x) for x in pair),
        )
        size = px
        while size >= MIN_SUMMARY_PX:
            _font, m = _sized(BOX_FONT, size)
            if (max(m.horizontalAdvance(x) for x in best) <= width
                    and 2 * m.height() <= height):
                return size, list(best)
            size -= 1
    return px, [metrics.elidedText(summary, Qt.TextElideMode.ElideRight, width)]


def fit_frames(groups: dict[str, GroupItem], nodes) -> QRectF:
    """Fit each group's frame around its member nodes and its sub-groups' frames (so
    nested frames never share an edge), set each group's nesting ``depth``, and return
    the area of the whole design (nodes with labels, and frames).

    ``nodes`` yields ``(id, attributes)`` with ``x``, ``y`` and ``group``, as
    ``Topology.node_data().items()`` does: plain numbers, no Qt calls per node.
    """
    b = NODE_BOUNDS
    x0 = y0 = float("inf")
    x1 = y1 = float("-inf")
    box: dict[str, list[float]] = {}

    def grow(gid: str, left: float, top: float, right: float, bottom: float) -> None:
        r = box.get(gid)
        if r is None:
            box[gid] = [left, top, right, bottom]
        else:
            r[0], r[1], r[2], r[3] = min(r[0], left), min(r[1], top), max(r[2], right), \
                max(r[3], bottom)

    # Per group, the extent of its member nodes: numpy over the columns, not a Python
    # call per node (a 16k-GPU design has 44,000 of them).
    rows = [(d["x"], d["y"], d["group"]) for _nid, d in nodes]
    if rows:
        xs_, ys_, gs = zip(*rows, strict=True)
        xs, ys = np.asarray(xs_, dtype=float), np.asarray(ys_, dtype=float)
        x0, y0 = float(xs.min()) + b.left(), float(ys.min()) + b.top()
        x1, y1 = float(xs.max()) + b.right(), float(ys.max()) + b.bottom()
        code: dict[str, int] = {}
        codes = np.fromiter((-1 if g is None else code.setdefault(g, len(code)) for g in gs),
                            np.int64, len(gs))
        grouped = codes >= 0
        c, gx, gy = codes[grouped], xs[grouped], ys[grouped]
        lo_x, lo_y = np.full(len(code), np.inf), np.full(len(code), np.inf)
        hi_x, hi_y = np.full(len(code), -np.inf), np.full(len(code), -np.inf)
        np.minimum.at(lo_x, c, gx)
        np.minimum.at(lo_y, c, gy)
        np.maximum.at(hi_x, c, gx)
        np.maximum.at(hi_y, c, gy)
        for gid, left, top, right, bottom in zip(code, lo_x.tolist(), lo_y.tolist(),
                                                 hi_x.tolist(), hi_y.tolist(), strict=True):
            box[gid] = [left + b.left(), top + b.top(), right + b.right(), bottom + b.bottom()]
    depth = _depths(groups)
    for gid in sorted(groups, key=lambda g: -depth[g]):  # children before parents
        item = groups[gid]
        item.depth = depth[gid]
        r = box.get(gid)
        item.set_rect(QRectF(r[0], r[1], r[2] - r[0], r[3] - r[1]) if r else QRectF())
        if r is None:
            continue
        f = item.frame_rect()
        if item.group.parent in groups:
            grow(item.group.parent, f.left(), f.top(), f.right(), f.bottom())
        x0, y0, x1, y1 = min(x0, f.left()), min(y0, f.top()), max(x1, f.right()), \
            max(y1, f.bottom())
    return QRectF(x0, y0, x1 - x0, y1 - y0) if x1 >= x0 else QRectF()


def _depths(groups: dict[str, GroupItem]) -> dict[str, int]:
    depth: dict[str, int] = {}
    for gid, item in groups.items():
        d, g, seen = 0, item.group.parent, {gid}
        while g in groups and g not in seen:
            seen.add(g)
            d += 1
            g = groups[g].group.parent
        depth[gid] = d
    return depth
