"""`Schematic`: the whole design drawn in a few batched calls, for far-out views.

Below `SCHEMATIC_LOD` a node is a few pixels wide and painting 8,000 items one by one
(each a call from C++ into Python) costs hundreds of milliseconds per frame.  The view
then paints this instead: group frames and collapsed boxes, links as one ``drawLines``
call per colour and width, nodes as one ``drawPoints`` call per colour with a square pen
of a few pixels, the selection on top.  Pens are cosmetic, so the batches hold scene
coordinates and survive pans and zooms; they are rebuilt only when the scene says
something changed (`invalidate`), links separately from the rest so that recolouring
every link after a solve stays cheap.  The minimap paints the same schematic.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import numpy as np
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen, QPolygonF

from designer.gui.canvas.groups import paint_box_text, title_steps
from designer.gui.canvas.line_batches import LineBatch
from designer.gui.canvas.style import NODE_SIZE, opaque_over

MIN_NODE_PX = 2.0  # a node never shrinks below this on screen
LINK_WEIGHT = 0.6  # of the link's colour, the rest background
CHUNK = 1024  # lines or points per step of `Schematic.paint_steps` (a few ms each)
FRAMES_PER_STEP = 8  # filled frames (or boxes) per step: a big one fills much of the picture
MOVES_PER_STEP = 1024  # recoloured links moved between batches per step (~5-10 ms)


class Schematic:
    """Batched low-detail drawing of a `FabricScene` (see the module docstring).

    ``version`` grows with every invalidation, so a cache (the minimap's pixmap) can
    tell when to redraw.
    """

    def __init__(self, scene):
        self.scene = scene
        self.version = 0
        self._links_dirty = True
        self._rest_dirty = True
        self._links: list[tuple[int, float, bool, np.ndarray]] | None = []
        # The link batches by key (colour, width, failed) and each item's key: a
        # recolour moves the recoloured items between batches, each move O(1), instead
        # of re-sorting 100,000 links (`recolour`).
        self._members: dict[tuple[int, float, bool], LineBatch] = {}
        self._key_of: dict = {}
        self._moved: set = set()
        self._nodes: list[tuple[int, list[QPolygonF]]] = []
        self._frames: list[tuple[QRectF, str, int]] = []
        self._boxes: list[tuple[QRectF, str, str, bool]] = []
        self._sel_points: list[QPointF] = []
        self._sel_lines: list[QLineF] = []

    def invalidate(self, links_only: bool = False) -> None:
        """Rebuild the batches before the next paint (links only: links changed)."""
        self._links_dirty = True
        self._moved.clear()
        if not links_only:
            self._rest_dirty = True
        self.version += 1

    def recolour(self, item) -> None:
        """``item`` (a link) changed colour only: move it to its new batch before the next
        paint, without rebuilding the others."""
        if not self._links_dirty:
            self._moved.add(item)
        self.version += 1

    # ---------------------------------------------------------------- building
    def _build_links(self) -> None:
        members: dict[tuple[int, float, bool], dict] = defaultdict(dict)
        key_of = {}
        scene = self.scene
        for items in (scene.links.values(), scene.bundles.values()):
            for li in items:
                if not li.hidden:
                    key = li.batch_key
                    members[key][li] = li.line
                    key_of[li] = key
        self._members = {k: LineBatch.of(v.items()) for k, v in members.items()}
        self._key_of = key_of
        self._links = None
        self._moved.clear()
        self._links_dirty = False

    def _apply_moves(self, limit: int | None = None) -> None:
        """Move recoloured links to their new batches: all of them, or ``limit``."""
        members, key_of = self._members, self._key_of
        moved = self._moved
        if limit is None or limit >= len(moved):
            todo, self._moved = moved, set()
        else:
            todo = [moved.pop() for _ in range(limit)]
        for li in todo:
            old = key_of.pop(li, None)
            if old is not None:
                batch = members[old]
                batch.remove(li)
                if not len(batch):
                    del members[old]
            if li.scene() is self.scene and not li.hidden:
                key = li.batch_key
                batch = members.get(key)
                if batch is None:
                    batch = members[key] = LineBatch()
                batch.add(li, li.line)
                key_of[li] = key
        self._links = None

    def _link_batches(self) -> list[tuple[int, float, bool, np.ndarray]]:
        if self._links is None:
            # Wide bundles last so they stay on top of thin ones.  Each batch's lines
            # are an object array view that later moves leave alone (`LineBatch`).
            self._links = sorted(((k[0], k[1], k[2], v.lines())
                                  for k, v in self._members.items()), key=lambda b: b[1])
        return self._links

    def _build_rest(self) -> None:
        scene = self.scene
        nodes: dict[int, list[QPointF]] = defaultdict(list)
        selected = set(scene.selectedItems())
        self._sel_points = []
        for item in scene.nodes.values():
            if item.hidden:
                continue
            p = item.pos()
            nodes[item.color().rgba()].append(p)
            if item in selected:
                self._sel_points.append(p)
        # Kept as polygons, not lists of QPointF: 40,000 point wrappers living on would
        # make every pass of Python's cyclic garbage collector ~50 ms longer.
        self._nodes = [(rgba, [QPolygonF(points[at:at + CHUNK])
                               for at in range(0, len(points), CHUNK)])
                       for rgba, points in nodes.items()]
        del nodes
        self._sel_lines = [i.line for i in selected if hasattr(i, "line") and not i.hidden]
        frames, boxes = [], []
        for g in sorted(scene.groups.values(), key=lambda g: g.zValue()):
            if g.hidden:
                continue
            if g.collapsed:
                boxes.append((g.box_rect().translated(g.pos()), g.group.name, g.summary,
                               g in selected))
            elif g.frame_rect().isValid():
                frames.append((g.frame_rect().translated(g.pos()), g.group.name, g.depth))
        self._frames, self._boxes = frames, boxes
        self._rest_dirty = False

    # ---------------------------------------------------------------- painting
    def paint(self, painter: QPainter, exposed: QRectF, labels: bool = True) -> None:
        """Draw into ``painter`` (its world transform maps scene to device) the part of
        the design inside ``exposed`` (scene coordinates)."""
        for _ in self.paint_steps(painter, exposed, labels):
            pass

    def paint_steps(self, painter: QPainter, exposed: QRectF,
                    labels: bool = True) -> Iterator[None]:
        """`paint`, yielding after every `CHUNK` lines or points, so that a
        `SlicedImage` can spread a big design over several turns of the event loop.

        What it draws is fixed when it starts: later changes to the scene go to the
        next drawing (the batches it holds are never changed in place).
        """
        if self._links_dirty:
            self._build_links()
        # A recolour of the whole fabric moves 100,000 links (~4 us each): in chunks.
        while self._moved and not self._links_dirty:
            self._apply_moves(MOVES_PER_STEP)
            if self._moved:
                yield
        if self._links_dirty:
            self._build_links()
        if self._rest_dirty:
            self._build_rest()
        frames, boxes, nodes = self._frames, self._boxes, self._nodes
        sel_lines, sel_points = self._sel_lines, self._sel_points
        batches = self._link_batches()
        theme = self.scene.theme
        t = painter.worldTransform()
        scale = max(abs(t.m11()), 1e-6)
        smooth = painter.testRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)

        outline = QPen(theme.group_outline, 1)
        outline.setCosmetic(True)
        painter.setPen(outline)
        for i, (r, _, depth) in enumerate(frames, 1):
            if r.intersects(exposed):
                painter.setBrush(theme.frame_fill(depth))
                painter.drawRect(r)
            if i % FRAMES_PER_STEP == 0:  # filling a frame costs more than a line
                yield

        back = theme.background
        for rgba, step, failed, lines in batches:
            # Lightened towards the background, so a thousand crossing rails do not make
            # a wall; blended here, not with alpha, which is far slower to rasterise.
            color = opaque_over(QColor.fromRgba(rgba), back, LINK_WEIGHT)
            pen = QPen(color, max(1.0, min(step, step * scale * 4)))
            pen.setCosmetic(True)
            if failed:
                pen.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(pen)
            for at in range(0, len(lines), CHUNK):
                painter.drawLines(lines[at:at + CHUNK] if len(lines) > CHUNK else lines)
                yield
        if sel_lines:
            pen = QPen(theme.selection, 2)
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.drawLines(sel_lines)

        side = max(MIN_NODE_PX, NODE_SIZE * 0.7 * scale)
        for rgba, pieces in nodes:
            pen = QPen(QColor.fromRgba(rgba), side, Qt.PenStyle.SolidLine,
                       Qt.PenCapStyle.SquareCap)
            pen.setCosmetic(True)
            painter.setPen(pen)
            for piece in pieces:
                painter.drawPoints(piece)
                yield
        if sel_points:
            pen = QPen(theme.selection, side + 3, Qt.PenStyle.SolidLine,
                       Qt.PenCapStyle.SquareCap)
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.drawPoints(sel_points)

        painter.setRenderHint(QPainter.RenderHint.Antialiasing, smooth)
        for i, (box, name, summary, selected) in enumerate(boxes, 1):
            if i % FRAMES_PER_STEP == 0:
                yield
            if not box.intersects(exposed):
                continue
            pen = QPen(theme.selection if selected else theme.box_outline,
                       2.5 if selected else 1.5)
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.setBrush(theme.box_fill)
            painter.drawRect(box)
            if labels:
                paint_box_text(painter, box, name, summary, theme, scale)
        if labels:
            yield from title_steps(painter, ((f, n) for f, n, _ in frames), exposed, theme)
