"""The headline answer (time, bus bandwidth, bottleneck) is on screen without scrolling
at the window sizes people use: 1400x900 and a 1280x720 laptop screen."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication, QLabel

SOLVE_TIMEOUT_MS = 10_000


def _shown_whole(widget, window) -> list[str]:
    """Where ``widget`` is cut off: its own height, when shorter than its text needs,
    and each ancestor up to ``window`` (a scroll area's viewport, a dock, the window)
    whose rectangle does not hold the widget's."""
    cut = []
    if widget.hasHeightForWidth():  # a word-wrapped label: its height at its width
        need = widget.heightForWidth(widget.width())
    else:
        need = widget.minimumSizeHint().height()
    if need > widget.height():
        cut.append(f"its own height ({widget.height()} px for {need})")
    parent = widget.parentWidget()
    while parent is not None:
        rect = QRect(widget.mapTo(parent, widget.rect().topLeft()), widget.size())
        if not parent.rect().contains(rect):
            cut.append(f"{type(parent).__name__} {parent.objectName()!r}")
        if parent is window:
            break
        parent = parent.parentWidget()
    return cut


def _labels_with(root, *words):
    return [label for label in root.findChildren(QLabel)
            if all(w in label.text() for w in words)]


@pytest.fixture(params=[(1400, 900), (1280, 720)], ids=["1400x900", "1280x720"])
def sized(request, window, qtbot):
    width, height = request.param
    window.resize(width, height)
    runner = window.analysis.runner
    if runner.latest is None or runner.busy:
        with qtbot.waitSignal(runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
            pass
    qtbot.waitUntil(lambda: window.width() == width and window.height() == height)
    QApplication.processEvents()
    yield window
    runner.shutdown()


def test_the_scenario_dock_shows_the_answer_above_the_fold(sized, qtbot):
    dock = sized.analysis.scenario
    dock.raise_()
    qtbot.waitUntil(dock.isVisible)
    QApplication.processEvents()
    labels = [lb for lb in _labels_with(dock, "Time", "Bus bandwidth", "Bottleneck")
              if lb.isVisible()]
    assert labels, "no label in the Scenario dock shows the headline answer"
    for label in labels:
        assert _shown_whole(label, sized) == []


def test_the_status_bar_shows_the_answer_whatever_tab_is_raised(sized, qtbot):
    sized.inspector.raise_()
    QApplication.processEvents()
    labels = [lb for lb in _labels_with(sized.statusBar(), "GB/s", "bottleneck")
              if lb.isVisible()]
    assert len(labels) == 1
    assert _shown_whole(labels[0], sized) == []


def test_the_window_fits_a_1280x720_screen_whatever_is_shown(window, qtbot):
    # A node's form in the inspector and the scenario's answer each raised in turn:
    # neither may hold the window taller than the screen (its status bar would be off
    # the bottom, with the answer in it).
    window.resize(1280, 720)
    first = min(n.id for n in window.document.topology.nodes())
    window.scene.select_ids(node_ids=[first])
    for dock in (window.inspector, window.analysis.scenario, window.inspector):
        dock.raise_()
        QApplication.processEvents()
        assert window.minimumSizeHint().height() <= 720, dock.objectName()
        qtbot.waitUntil(lambda: window.height() == 720)
    window.analysis.runner.shutdown()
