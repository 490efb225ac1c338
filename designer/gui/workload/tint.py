"""`JobTint`: the design's GPUs tinted by the job that runs on them, and each job's
outline, drawn on the canvas.

One item paints every tint, just under the devices (so a GPU's icon, label and
selection mark stay on top): a rounded square in the job's colour behind each of its
GPUs.  The job colours are the Workloads dock's (Okabe-Ito, colour-blind safe, or the
user's own).  With outlines on, each job's GPUs are framed rack by rack (the GPUs of one
group) in a dashed line of its colour, labelled with the job's name, so a job spread
over several racks reads at a glance.

The item is one of the scene's ``overlays`` (far-out views paint it over their
schematic) and says ``exported``: diagram exports keep it, so an exported picture shows
who runs where.  GPUs hidden in a collapsed group have no item and are not tinted.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem

from designer.gui.canvas.geometry import ICON_RECT

__all__ = ["TINT_ALPHA", "JobTint"]

TINT_Z = 9.5  # devices are at 10, links at 1
TINT_ALPHA = 150
_PAD = 6.0  # tint beyond the icon, scene units
_OUTLINE_PAD = 14.0
_LABEL_FONT = QFont()
_LABEL_FONT.setPointSizeF(9)
_LABEL_FONT.setBold(True)


class JobTint(QGraphicsItem):
    """Tints and outlines of the jobs (see the module).

    Attributes
    ----------
    jobs : list of (str, QColor, list of str)
        Each job's name, colour and GPU node ids.
    outlines : bool
        Frame each job's GPUs rack by rack.
    """

    #: `designer.gui.export` keeps items that say so in the pictures it writes.
    exported = True

    def __init__(self, scene):
        super().__init__()
        self.fabric = scene
        self.setZValue(TINT_Z)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, False)
        self.jobs: list[tuple[str, QColor, list[str]]] = []
        self.outlines = False
        self._spots: list[tuple[QColor, list[QRectF]]] = []
        self._frames: list[tuple[str, QColor, QRectF]] = []
        self._key: tuple = ()
        self._bounds = QRectF()
        self.hide()

    def set_jobs(self, jobs: list[tuple[str, QColor, list[str]]], outlines: bool) -> None:
        """Tint these jobs' GPUs (none hides the item); the same jobs on the same GPUs
        (a new result after an edit of the links, say) keep what is drawn."""
        same = outlines == self.outlines and len(jobs) == len(self.jobs) and all(
            a[0] == b[0] and a[1] == b[1] and list(a[2]) == list(b[2])
            for a, b in zip(jobs, self.jobs, strict=True)
        )
        if same and self.isVisible() == any(gpus for _, _, gpus in self.jobs):
            return
        self.jobs, self.outlines = list(jobs), outlines
        self._key = ()
        self.sync()
        self.setVisible(any(gpus for _, _, gpus in self.jobs))
        self.update()

    def tinted(self) -> dict[str, str]:
        """``{GPU id: job name}`` of the GPUs drawn tinted now (for tests and tooltips)."""
        return {gid: name for name, _, gpus in self.jobs for gid in gpus if self._shown(gid)}

    def _shown(self, gid: str) -> bool:
        item = self.fabric.nodes.get(gid)
        return item is not None and not item.hidden

    def _positions(self) -> tuple:
        """Where the shown GPUs are: the model's positions (no call into Qt, each of
        which waits for the interpreter lock while a simulation runs on a worker
        thread), the items' own during a drag (the model moves on release)."""
        nodes = self.fabric.nodes
        dragging = getattr(self.fabric, "dragging", False)
        out = []
        for _, _, gpus in self.jobs:
            for gid in gpus:
                item = nodes.get(gid)
                if item is None or item.hidden:
                    continue
                if dragging:
                    p = item.pos()
                    out.append((gid, p.x(), p.y()))
                else:
                    out.append((gid, item.node.x, item.node.y))
        return tuple(out)

    def sync(self) -> None:
        """Follow the devices after they moved or a group opened (cheap when nothing
        did)."""
        nodes = self.fabric.nodes
        positions = self._positions()
        key = (id(self.jobs), self.outlines, positions)
        if key == self._key:
            return
        self._key = key
        at = {gid: (x, y) for gid, x, y in positions}
        spots, frames = [], []
        bounds = QRectF()
        for name, colour, gpus in self.jobs:
            rects = []
            racks: dict[str, QRectF] = {}
            for gid in gpus:
                if gid not in at:
                    continue
                item = nodes[gid]
                x, y = at[gid]
                r = ICON_RECT.translated(x, y).adjusted(-_PAD, -_PAD, _PAD, _PAD)
                rects.append(r)
                rack = item.node.group or ""
                racks[rack] = racks.get(rack, QRectF()).united(r)
            spots.append((colour, rects))
            for r in rects:
                bounds = bounds.united(r)
            if self.outlines:
                for rack in sorted(racks):
                    frame = racks[rack].adjusted(-_OUTLINE_PAD, -_OUTLINE_PAD - 14, 8, 8)
                    frames.append((name, colour, frame))
                    bounds = bounds.united(frame.adjusted(-4, -4, 4, 4))
        self.prepareGeometryChange()
        self._spots, self._frames, self._bounds = spots, frames, bounds

    def boundingRect(self) -> QRectF:
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget=None) -> None:
        painter.setPen(Qt.PenStyle.NoPen)
        for colour, rects in self._spots:
            fill = QColor(colour)
            fill.setAlpha(TINT_ALPHA)
            painter.setBrush(fill)
            for r in rects:
                painter.drawRoundedRect(r, 6, 6)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setFont(_LABEL_FONT)
        for name, colour, frame in self._frames:
            pen = QPen(colour, 2.0, Qt.PenStyle.DashLine)
            pen.setCosmetic(True)
            painter.setPen(pen)
            painter.drawRoundedRect(frame, 8, 8)
            painter.setPen(colour.darker(140))
            painter.drawText(QPointF(frame.left() + 6, frame.top() + 12), name)
