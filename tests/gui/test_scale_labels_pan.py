"""Labels that read whole at every zoom (no "Rac…" stubs, outer titles never covered)
and pans that shift the far-out picture instead of redrawing it (issue 34)."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QTransform

from designer.gui.canvas.groups import paint_titles
from designer.gui.canvas.items import NodeItem
from designer.gui.canvas.sliced_image import SlicedImage
from designer.gui.canvas.style import LIGHT
from designer.gui.idle import IdleWork
from designer.model.topology import Node


class _Recording(QPainter):
    """A painter that notes every text it draws (our code calls drawText from Python)."""

    def __init__(self, device):
        super().__init__(device)
        self.texts: list[tuple[str, QRectF]] = []

    def drawText(self, *args):
        point, text = args[0], args[-1]
        m = self.fontMetrics()
        self.texts.append(
            (text, QRectF(point.x(), point.y() - m.ascent(), m.horizontalAdvance(text), m.height()))
        )
        super().drawText(*args)


def test_frame_titles_are_whole_or_absent_and_never_overlap(window):
    scene = window.scene
    frames = sorted(scene.groups.values(), key=lambda g: g.depth)
    titles = [(g.frame_rect().translated(g.pos()), g.group.name) for g in frames]
    names = {name for _, name in titles}
    for scale in (0.05, 0.1, 0.2, 0.35, 0.6, 1.0):
        image = QImage(1600, 1000, QImage.Format.Format_ARGB32_Premultiplied)
        painter = _Recording(image)
        painter.setWorldTransform(QTransform.fromScale(scale, scale))
        exposed = QRectF(0, 0, 1600 / scale, 1000 / scale)
        paint_titles(painter, titles, exposed, LIGHT)
        painter.end()
        drawn = painter.texts
        assert all(text in names for text, _ in drawn), (scale, drawn)
        for i, (_, a) in enumerate(drawn):
            assert not any(a.intersects(b) for _, b in drawn[i + 1 :]), scale
    assert drawn  # zoomed in, titles show


def test_a_long_node_name_shrinks_instead_of_being_cut(qapp):
    item = NodeItem(Node("l", "leaf", "QM9700", name="Leaf rail 7 SU 12"), LIGHT)
    text, _width, font = item._label_text()
    assert text.text() == "Leaf rail 7 SU 12"
    short = NodeItem(Node("g", "gpu", "H100", name="GPU 0"), LIGHT)
    assert short._label_text()[2].pointSizeF() > font.pointSizeF()


def _pattern(offset):
    """A picture of a fixed 'scene' seen through a view at ``offset``: stripes whose
    positions depend on the offset, and counts of the areas drawn."""
    calls = []

    def draw(painter):
        rects = list(painter.clipRegion()) if painter.hasClipping() else [QRectF(0, 0, 400, 300)]
        calls.append(sum(r.width() * r.height() for r in rects))
        painter.fillRect(QRectF(0, 0, 400, 300), QColor("white"))
        painter.setPen(QColor("black"))
        for x in range(-400, 800, 13):
            painter.drawLine(
                QPointF(x + offset[0], offset[1]), QPointF(x + offset[0] + 40, 300 + offset[1])
            )
        painter.fillRect(QRectF(100 + offset[0], 100 + offset[1], 30, 20), Qt.GlobalColor.red)
        yield

    return draw, calls


def _differing(a: QImage, b: QImage) -> int:
    import numpy as np

    def pixels(img):
        img = img.convertToFormat(QImage.Format.Format_RGB32)
        return np.frombuffer(img.constBits(), np.uint32, img.width() * img.height()).copy()

    return int(np.count_nonzero(pixels(a) != pixels(b)))


def test_a_pan_shifts_the_picture_and_draws_only_the_uncovered_strips(qapp):
    size = QSize(400, 300)
    picture = SlicedImage()
    draw, _ = _pattern((0.0, 0.0))
    picture.image("g", 1, size, 1.0, draw, offset=(0.0, 0.0))
    draw, calls = _pattern((-17.0, 5.0))
    panned = picture.image("g", 1, size, 1.0, draw, offset=(-17.0, 5.0))
    assert calls and sum(calls) < 0.2 * 400 * 300  # the uncovered strips only
    full = SlicedImage()
    draw, _ = _pattern((-17.0, 5.0))
    expected = full.image("g", 1, size, 1.0, draw, offset=(-17.0, 5.0))
    # The same picture as drawn whole, but for lines clipped at the seams, which Qt may
    # rasterise a pixel apart.
    assert _differing(panned, expected) < 0.01 * 400 * 300
    # A content change with a pan: shifted now (the strips drawn first), the new content
    # drawn whole in slices after.
    picture.first_ms = 0.0
    draw, calls = _pattern((-30.0, 5.0))
    shown = picture.image("g", 2, size, 1.0, draw, offset=(-30.0, 5.0))
    assert calls[0] < 0.2 * 400 * 300 and picture.pending
    IdleWork.instance().flush()
    assert calls[1:] == [400 * 300] and not picture.pending
    assert picture.image("g", 2, size, 1.0, draw, offset=(-30.0, 5.0)) is not shown
