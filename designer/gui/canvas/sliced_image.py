"""`SlicedImage`: a picture cached in an image and redrawn in time slices.

Painting the far-out schematic of a 16,384-GPU design (114,688 lines) takes 100-200 ms
of rasterising, and PySide holds the GIL through ``QPainter.drawLines``, so a worker
thread would freeze the GUI just the same.  Instead the picture is drawn once into an
image that every repaint blits, and when only its content changes (new link colours
after a solve, a selection) the new picture is drawn into a second image a few
milliseconds at a time between events, while the old one stays on screen; it replaces
the old one when complete (the slices are `IdleWork` tasks, sharing each turn's budget
with the other background work).  A small picture finishes within the first slice and
shows at once.  When the geometry changes (a pan, a zoom, a resize) the old image is useless:
the picture is drawn at once, as without a cache; except for a pan, when the caller
passes the translation apart (``offset``): the old picture is shifted and only the strips
the pan uncovers are drawn (clipped), a few milliseconds however big the design; a
newer content being drawn in slices then starts again at the new offset.

The drawing is a generator over a painter that yields between chunks of work
(`Schematic.paint_steps`), so a slice can stop between any two chunks.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Hashable, Iterator

import shiboken6
from PySide6.QtCore import QObject, QPointF, QRect, QSize, Signal
from PySide6.QtGui import QImage, QPainter, QRegion

from designer.gui.idle import IdleWork

Draw = Callable[[QPainter], Iterator[None]]
"""Draws the picture into the painter, yielding between chunks of work."""

FIRST_SLICE_MS = 10.0  # drawn at once when it fits: no visible lag for small designs


def view_geometry(view) -> tuple:
    """What a picture of ``view``'s viewport depends on besides its content: size, pixel
    ratio and the scene-to-viewport transform (an image key for `SlicedImage.image`)."""
    t = view.viewportTransform()
    return (view.viewport().size().toTuple(), view.devicePixelRatioF(),
            (t.m11(), t.m12(), t.m21(), t.m22(), t.dx(), t.dy()))


def device_size(widget) -> QSize:
    """``widget``'s size in device pixels (at least 1 x 1)."""
    ratio = widget.devicePixelRatioF()
    size = widget.size()
    return QSize(max(1, round(size.width() * ratio)), max(1, round(size.height() * ratio)))


class _Job:
    """One picture being drawn into its own image."""

    def __init__(self, key: tuple, size: QSize, ratio: float, draw: Draw):
        self.key = key
        self.image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
        self.image.setDevicePixelRatio(ratio)
        self.painter = QPainter(self.image)
        self.steps = draw(self.painter)

    def advance(self, deadline: float) -> bool:
        """Draw until ``time.perf_counter()`` passes ``deadline``; True once complete."""
        for _ in self.steps:
            if time.perf_counter() >= deadline:
                return False
        self.painter.end()
        return True

    def cancel(self) -> None:
        self.steps.close()
        if self.painter.isActive():
            self.painter.end()

    def __del__(self) -> None:
        # A painter must end before its image goes (a job dropped unfinished, at exit).
        with contextlib.suppress(RuntimeError, AttributeError):
            if self.painter.isActive():
                self.painter.end()


class SlicedImage(QObject):
    """A cached picture of ``geometry`` (size, transform, theme...) at content
    ``version``; see the module docstring.

    Signals
    -------
    changed()
        A newer picture replaced the one on screen: repaint.
    """

    changed = Signal()

    def __init__(self, parent: QObject | None = None, *, first_ms: float = FIRST_SLICE_MS):
        super().__init__(parent)
        self.first_ms = first_ms
        self._front: QImage | None = None
        self._front_key: tuple | None = None
        self._front_offset: tuple[float, float] | None = None
        self._job: _Job | None = None

    @property
    def pending(self) -> bool:
        """Whether a newer picture is being drawn."""
        return self._job is not None

    def image(self, geometry: Hashable, version: Hashable, size: QSize, ratio: float,
              draw: Draw, offset: tuple[float, float] | None = None) -> QImage:
        """The picture to show now: the one of ``(geometry, version)`` when ready, else
        the last one of the same geometry while the new one is drawn in slices.

        ``size`` is in device pixels; ``draw`` paints in logical ones (``ratio``).
        ``offset``: the translation part of the geometry (logical pixels), when the
        caller keeps it out of ``geometry``: a picture that only moved by whole pixels
        (a pan) is the old one shifted, with only the uncovered strips drawn (``draw``
        then paints into a clipped painter).  A content change with a new offset is
        drawn in slices after the shift, like any content change.
        """
        key = (geometry, version)
        moved = offset is not None and self._front_offset != offset
        if moved and self._front is not None and self._front_key[0] == geometry:
            # A pan: the picture on screen shifted, its uncovered strips drawn now; new
            # content (a drawing in slices, dropped here: it was for the old offset)
            # is drawn again in slices at this offset.
            if self._job is not None:
                IdleWork.instance().cancel(self)
                self._job.cancel()
                self._job = None
            if self._shifted(offset, size, ratio, draw) is not None:
                moved = False
        if self._front_key == key and self._front is not None and not moved:
            return self._front
        if self._front is None or self._front_key[0] != geometry or moved:
            self.discard()
            job = _Job(key, size, ratio, draw)
            job.advance(float("inf"))
            self._front, self._front_key, self._front_offset = job.image, key, offset
            return self._front
        if self._job is None:
            # Content changed: a newer picture in slices.  A request arriving while one
            # is being drawn waits for it (the repaint its completion triggers asks
            # again), so a stream of changes cannot keep the picture from completing.
            self._job = _Job(key, size, ratio, draw)
            if self._job.advance(time.perf_counter() + self.first_ms / 1000.0):
                self._finish()
                return self._front
            IdleWork.instance().add(self, self._step)
        return self._front

    def _shifted(self, offset: tuple[float, float], size: QSize, ratio: float,
                 draw: Draw) -> QImage | None:
        """The front picture moved to ``offset``, its uncovered strips drawn; None when
        the move is not by whole device pixels or uncovers most of the picture."""
        old = self._front_offset
        if old is None:
            return None
        dx, dy = (offset[0] - old[0]) * ratio, (offset[1] - old[1]) * ratio
        if dx != round(dx) or dy != round(dy) or size != self._front.size():
            return None
        dx, dy = round(dx), round(dy)
        w, h = size.width(), size.height()
        if abs(dx) * 2 > w or abs(dy) * 2 > h:
            return None
        image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
        image.setDevicePixelRatio(ratio)
        painter = QPainter(image)
        painter.drawImage(QPointF(dx / ratio, dy / ratio), self._front)
        kept = QRect(max(dx, 0), max(dy, 0), w - abs(dx), h - abs(dy))
        # Each uncovered strip drawn on its own, clipped to it (in logical pixels, like
        # everything `draw` paints), so `draw` can skip what lies outside
        # (``painter.clipBoundingRect()``).
        for r in QRegion(0, 0, w, h).subtracted(QRegion(kept)):
            painter.save()
            painter.setClipRect(QRect(math.floor(r.x() / ratio), math.floor(r.y() / ratio),
                                      math.ceil(r.width() / ratio) + 1,
                                      math.ceil(r.height() / ratio) + 1))
            for _ in draw(painter):
                pass
            painter.restore()
        painter.end()
        self._front, self._front_offset = image, offset
        return image

    def discard(self) -> None:
        """Forget the picture and any drawing in progress (next `image` draws anew)."""
        IdleWork.instance().cancel(self)
        if self._job is not None:
            self._job.cancel()
            self._job = None
        self._front = self._front_key = self._front_offset = None

    def _finish(self) -> None:
        job, self._job = self._job, None
        self._front, self._front_key = job.image, job.key

    def _step(self, deadline: float) -> bool:
        """A slice of the drawing (an `IdleWork` task); True when it is over."""
        if self._job is None:
            return True
        if not shiboken6.isValid(self):  # its view is gone
            self._job.cancel()
            self._job = None
            return True
        if not self._job.advance(deadline):
            return False
        self._finish()
        self.changed.emit()
        return True
