"""`SlicedImage`: a cached picture redrawn in slices between events."""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QColor

from designer.gui.canvas.sliced_image import SlicedImage
from designer.gui.idle import IdleWork

SIZE = QSize(40, 30)


def fill(color: str, chunks: int = 1, chunk_ms: float = 0.0, log: list | None = None):
    """A drawing that fills the image with ``color`` in ``chunks`` chunks of
    ``chunk_ms`` each (busy-waiting, as rasterising does)."""

    def draw(painter):
        for i in range(chunks):
            end = time.perf_counter() + chunk_ms / 1000
            while time.perf_counter() < end:
                pass
            painter.fillRect(0, i * SIZE.height() // chunks, SIZE.width(),
                             SIZE.height() // chunks + 1, QColor(color))
            if log is not None:
                log.append(i)
            yield

    return draw


def colour(image) -> str:
    return QColor(image.pixel(SIZE.width() // 2, SIZE.height() - 1)).name()


@pytest.fixture
def picture(qapp):
    p = SlicedImage(first_ms=5.0)
    yield p
    p.discard()


def test_first_picture_and_new_geometry_are_drawn_at_once(picture):
    slow = fill("#ff0000", chunks=20, chunk_ms=2.0)
    assert colour(picture.image("g1", 1, SIZE, 1.0, slow)) == "#ff0000"
    assert not picture.pending
    # Another geometry (a pan, a zoom): the old image is useless, drawn at once.
    assert colour(picture.image("g2", 1, SIZE, 1.0, fill("#00ff00", 20, 2.0))) == "#00ff00"
    assert not picture.pending


def test_a_small_change_shows_at_once(picture):
    picture.image("g", 1, SIZE, 1.0, fill("#ff0000"))
    assert colour(picture.image("g", 2, SIZE, 1.0, fill("#0000ff"))) == "#0000ff"
    assert not picture.pending


def test_a_big_change_is_drawn_in_slices_while_the_old_picture_shows(picture, qtbot):
    picture.image("g", 1, SIZE, 1.0, fill("#ff0000"))
    log: list[int] = []
    shown = picture.image("g", 2, SIZE, 1.0, fill("#0000ff", chunks=30, chunk_ms=2.0, log=log))
    assert colour(shown) == "#ff0000"  # the old one, until the new one is complete
    assert picture.pending and 0 < len(log) < 30
    # A further change meanwhile waits for the picture being drawn (no restart).
    again = picture.image("g", 3, SIZE, 1.0, fill("#00ff00"))
    assert colour(again) == "#ff0000" and picture.pending
    with qtbot.waitSignal(picture.changed, timeout=5000):
        pass
    assert log == list(range(30))
    assert colour(picture.image("g", 2, SIZE, 1.0, fill("#000000"))) == "#0000ff"
    # Version 3 is asked for again by the repaint that `changed` triggers.
    assert colour(picture.image("g", 3, SIZE, 1.0, fill("#00ff00"))) == "#00ff00"


def test_slices_leave_the_event_loop_free(picture, qtbot, monkeypatch):
    """No turn of the event loop spends much more than its budget drawing."""
    picture.image("g", 1, SIZE, 1.0, fill("#ff0000"))
    idle = IdleWork.instance()
    log: list[int] = []
    chunks_per_turn: list[int] = []
    real = idle.run_turn

    def counted():
        before = len(log)
        real()
        chunks_per_turn.append(len(log) - before)

    monkeypatch.setattr(idle, "run_turn", counted)
    picture.image("g", 2, SIZE, 1.0, fill("#0000ff", chunks=100, chunk_ms=1.0, log=log))
    with qtbot.waitSignal(picture.changed, timeout=5000):
        pass
    assert log == list(range(100))  # the first slice draws some before any turn
    assert len([c for c in chunks_per_turn if c]) >= 5  # spread over turns
    # Counted, not timed: a chunk busy-waits at least 1 ms, so a turn that stops at its
    # budget has drawn at most budget / 1 ms chunks, plus the one that crossed it.
    assert max(chunks_per_turn) <= idle.turn_ms / 1.0 + 1


def test_discard_stops_the_drawing(picture, qtbot):
    picture.image("g", 1, SIZE, 1.0, fill("#ff0000"))
    log: list[int] = []
    picture.image("g", 2, SIZE, 1.0, fill("#0000ff", chunks=50, chunk_ms=2.0, log=log))
    assert picture.pending
    picture.discard()
    done = len(log)
    qtbot.wait(50)
    assert len(log) == done and not picture.pending
