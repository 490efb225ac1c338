"""Wheel events over a dock's combo and spin boxes scroll the dock, not the value.

A form in a dock sits in a scroll area: rolling the wheel to scroll it passes over the
boxes, and Qt's boxes take every wheel event they get, so each notch changed a setting
(one undo step and one solve each).  `guard_wheel` makes such boxes take the wheel only
once they have the keyboard focus (clicked or tabbed into, which ``Qt.StrongFocus`` asks
for), as in browsers and most desktop tools; otherwise the scroll area around them
scrolls.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QWidget,
)


class _WheelGuard(QObject):
    """Event filter: a wheel event over an unfocused box scrolls the scroll area around
    it instead (or, with none, is left for the box's parents)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.Wheel or watched.hasFocus():
            return False
        area = _scroll_area_of(watched)
        if area is None:
            event.ignore()  # unaccepted: Qt offers a real wheel event to the parents
            return True
        # Sent on explicitly: Qt does not pass synthesised wheel events to parents.
        viewport = area.viewport()
        local = QPointF(viewport.mapFromGlobal(event.globalPosition().toPoint()))
        copy = QWheelEvent(
            local,
            event.globalPosition(),
            event.pixelDelta(),
            event.angleDelta(),
            event.buttons(),
            event.modifiers(),
            event.phase(),
            event.inverted(),
            event.source(),
        )
        QApplication.sendEvent(viewport, copy)
        event.accept()
        return True


def _scroll_area_of(widget: QWidget) -> QAbstractScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None and not isinstance(parent, QAbstractScrollArea):
        parent = parent.parentWidget()
    return parent


def guard_wheel(root: QWidget) -> int:
    """Guard every combo and spin box under ``root`` (see the module); returns how many.

    The filter is a child of ``root``, so it lives as long as the boxes it guards.
    Boxes added to ``root`` later need another call.
    """
    guard = root.findChild(_WheelGuard, "wheel_guard", Qt.FindChildOption.FindDirectChildrenOnly)
    if guard is None:
        guard = _WheelGuard(root)
        guard.setObjectName("wheel_guard")
    boxes = root.findChildren(QComboBox) + root.findChildren(QAbstractSpinBox)
    for box in boxes:
        box.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        box.removeEventFilter(guard)  # once each, however often this is called
        box.installEventFilter(guard)
    return len(boxes)
