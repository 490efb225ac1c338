"""The mouse wheel over a dock scrolls the dock; it edits a combo or spin box only once
that box has the keyboard focus (a click or Tab put it there)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QScrollArea


def _wheel(widget, steps: int = -1) -> QWheelEvent:
    """One notch of the wheel (down for negative ``steps``) over ``widget``'s centre."""
    local = QPointF(widget.rect().center())
    event = QWheelEvent(
        local,
        QPointF(widget.mapToGlobal(local)),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)
    return event


def _value(box):
    return box.currentIndex() if isinstance(box, QComboBox) else box.value()


def _boxes(dock):
    return dock.findChildren(QComboBox) + dock.findChildren(QAbstractSpinBox)


@pytest.fixture
def scenario(window, qtbot):
    dock = window.analysis.scenario
    dock.raise_()
    window.resize(1280, 720)  # short enough that the dock's form scrolls
    qtbot.waitUntil(lambda: dock.isVisible())
    window.view.setFocus()
    return dock


def test_the_wheel_over_an_unfocused_scenario_box_changes_nothing(scenario, window):
    stack = window.document.undo_stack
    before = stack.count()
    boxes = [b for b in _boxes(scenario) if b.isEnabled()]
    assert len(boxes) >= 8
    for box in boxes:
        value = _value(box)
        for steps in (-1, 1, -1, -1):
            _wheel(box, steps)
        assert _value(box) == value, f"{box.objectName() or type(box).__name__} changed"
        assert box.focusPolicy() == Qt.FocusPolicy.StrongFocus
    assert stack.count() == before


def test_the_wheel_over_a_box_scrolls_the_dock(scenario):
    area = scenario.findChild(QScrollArea)
    bar = area.verticalScrollBar()
    if bar.maximum() == 0:
        pytest.skip("the whole form fits: nothing to scroll")
    bar.setValue(0)
    box = scenario.collective  # the form's first box: in view at the top
    top_left = box.mapTo(area.viewport(), box.rect().topLeft())
    assert area.viewport().rect().contains(top_left)
    _wheel(box, -1)
    assert bar.value() > 0


def test_a_focused_box_takes_the_wheel(scenario, window):
    box = scenario.size
    box.setFocus()
    before = box.currentIndex()
    _wheel(box, -1)
    assert box.currentIndex() != before


def test_the_wheel_over_unfocused_inspector_boxes_changes_nothing(window):
    first = min(n.id for n in window.document.topology.nodes())
    window.scene.select_ids(node_ids=[first])
    inspector = window.inspector
    stack = window.document.undo_stack
    before = stack.count()
    boxes = [b for b in _boxes(inspector) if b.isVisible() and b.isEnabled()]
    assert boxes
    for box in boxes:
        value = _value(box)
        _wheel(box, -1)
        _wheel(box, -1)
        assert _value(box) == value
    assert stack.count() == before
