"""Zoom (keys, wheel, pinch), pan, fit and Find on the canvas."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QCursor, QEnterEvent, QInputDevice, QNativeGestureEvent, QPointingDevice
from PySide6.QtWidgets import QApplication, QInputDialog

from designer.gui.canvas.view import MAX_SCALE, MIN_SCALE, ZOOM_STEP

CTRL = Qt.KeyboardModifier.ControlModifier


def _visible(view):
    return view.mapToScene(view.viewport().rect()).boundingRect()


def _hover(view, mouse, at: QPoint) -> None:
    """Bring the (offscreen) mouse cursor over the canvas to viewport point ``at``."""
    vp = view.viewport()
    glob = QPointF(vp.mapToGlobal(at))
    QCursor.setPos(glob.toPoint())
    for widget in (view, vp):
        QApplication.sendEvent(widget, QEnterEvent(QPointF(at), QPointF(at), glob))
    mouse.move(at, buttons=Qt.MouseButton.NoButton)


def _centre_error(view, scene_pt: QPointF) -> float:
    """Distance in viewport pixels between ``scene_pt`` and the viewport's centre."""
    centre = QPointF(view.viewport().rect().center())
    return (QPointF(view.mapFromScene(scene_pt)) - centre).manhattanLength()


# ------------------------------------------------------------------ zoom
def test_zoom_actions_scale_the_view_by_one_step(window):
    view = window.view
    s0 = view.scale_factor
    window.actions_by_name["zoom_in"].trigger()
    assert view.scale_factor == pytest.approx(s0 * ZOOM_STEP)
    window.actions_by_name["zoom_out"].trigger()
    window.actions_by_name["zoom_out"].trigger()
    assert view.scale_factor == pytest.approx(s0 / ZOOM_STEP)


def test_zoom_keys_change_the_scale(window, qtbot):
    window.activateWindow()
    qtbot.waitActive(window)
    view = window.view
    s0 = view.scale_factor
    with qtbot.waitSignal(view.zoom_changed) as blocker:
        qtbot.keyClick(view, Qt.Key.Key_Plus, CTRL)
    assert blocker.args == [pytest.approx(s0 * ZOOM_STEP)]
    qtbot.keyClick(view, Qt.Key.Key_Minus, CTRL)
    qtbot.keyClick(view, Qt.Key.Key_Minus, CTRL)
    assert view.scale_factor == pytest.approx(s0 / ZOOM_STEP)


def test_zoom_stays_within_limits(window):
    view = window.view
    for _ in range(60):
        view.zoom_in()
    assert view.scale_factor == pytest.approx(MAX_SCALE)
    for _ in range(120):
        view.zoom_out()
    assert view.scale_factor == pytest.approx(MIN_SCALE)


@pytest.mark.parametrize("steps", [2, -2])
def test_wheel_zoom_keeps_the_point_under_the_mouse(window, mouse, steps):
    view = window.view
    for _ in range(5):  # zoomed in on the middle: room to scroll every way
        view.zoom_in()
    view.centerOn(window.scene.nodes["n02-gpu7"])
    at = QPoint(230, 170)  # well off the viewport centre
    _hover(view, mouse, at)
    s0 = view.scale_factor
    before = view.mapToScene(at)
    mouse.wheel(at, steps)
    assert view.scale_factor == pytest.approx(s0 * ZOOM_STEP**steps)
    after_px = QPointF(view.mapFromScene(before))
    assert (after_px - QPointF(at)).manhattanLength() <= 3


def test_wheel_zoom_anchors_on_the_event_position(window, mouse):
    view = window.view
    at = QPoint(230, 170)
    before = view.mapToScene(at)
    mouse.wheel(at, 2)
    assert (QPointF(view.mapFromScene(before)) - QPointF(at)).manhattanLength() <= 3


def test_pinch_zooms(window):
    view = window.view
    at = QPointF(300, 200)
    glob = QPointF(view.viewport().mapToGlobal(at.toPoint()))
    s0 = view.scale_factor
    device = QPointingDevice.primaryPointingDevice()
    assert isinstance(device, QInputDevice)
    for kind, value in (
        (Qt.NativeGestureType.BeginNativeGesture, 0.0),
        (Qt.NativeGestureType.ZoomNativeGesture, 0.25),
        (Qt.NativeGestureType.EndNativeGesture, 0.0),
    ):
        event = QNativeGestureEvent(kind, device, 2, at, at, glob, value, QPointF())
        QApplication.sendEvent(view.viewport(), event)
    assert view.scale_factor > s0 * 1.1


# ------------------------------------------------------------------ fit and pan
def test_fit_shows_every_item(window):
    view = window.view
    for _ in range(8):
        view.zoom_in()
    view.centerOn(QPointF(-3000, -3000))
    window.actions_by_name["zoom_fit"].trigger()
    visible = _visible(view)
    for item in window.scene.nodes.values():
        assert visible.contains(item.sceneBoundingRect()), item.node_id
    # ...and uses the space: the design fills most of one viewport dimension.
    design = window.scene.itemsBoundingRect()
    assert max(design.width() / visible.width(), design.height() / visible.height()) > 0.8


def test_fit_does_not_blow_up_a_tiny_design(window):
    window.files.new_design()
    from designer.model.commands import AddNode
    from designer.model.topology import Node

    window.document.push(AddNode(Node("g", "gpu", "H100", "Lonely GPU")))
    window.view.fit()
    assert window.view.scale_factor == pytest.approx(1.5)
    item = window.scene.nodes["g"]
    assert _centre_error(window.view, item.sceneBoundingRect().center()) <= 2


def test_middle_drag_pans_without_editing(window, mouse):
    view = window.view
    for _ in range(4):
        view.zoom_in()
    view.centerOn(window.scene.nodes["n02-gpu4"])
    start = QPoint(400, 300)
    before = view.mapToScene(start)
    mouse.drag(start, start + QPoint(-120, -80), steps=4, button=Qt.MouseButton.MiddleButton)
    moved = view.mapToScene(start) - before
    # The content followed the mouse: what was at `start` is now up-left of it.
    assert moved.x() == pytest.approx(120 / view.scale_factor, abs=2 / view.scale_factor)
    assert moved.y() == pytest.approx(80 / view.scale_factor, abs=2 / view.scale_factor)
    assert window.document.undo_stack.count() == 0


def test_space_drag_pans_instead_of_moving_a_node(window, mouse, qtbot):
    view = window.view
    view.zoom_in()
    item = window.scene.nodes["spine-0"]
    view.centerOn(item)
    before_scroll = view.horizontalScrollBar().value()
    qtbot.keyPress(view, Qt.Key.Key_Space)
    at = view.mapFromScene(item.pos())
    mouse.drag(at, at + QPoint(100, 0), steps=4)
    qtbot.keyRelease(view, Qt.Key.Key_Space)
    assert view.horizontalScrollBar().value() == before_scroll - 100
    node = window.document.topology.node("spine-0")
    assert (node.x, node.y) == (item.pos().x(), item.pos().y()) == (1155.0, -320.0)
    assert window.document.undo_stack.count() == 0


# ------------------------------------------------------------------ find
def test_find_selects_and_centres_the_node(window):
    view = window.view
    view.centerOn(QPointF(-2000, 2000))
    found = window.edit.find("GPU 5")
    topo = window.document.topology
    assert topo.node(found).name == "GPU 5"
    assert window.scene.selected_node_ids() == [found]
    item = window.scene.nodes[found]
    assert _centre_error(view, item.sceneBoundingRect().center()) <= 2  # icon and label
    assert _centre_error(view, item.pos()) <= 12 * view.scale_factor
    assert view.scale_factor >= 0.8  # readable, not a speck
    message = window.statusBar().currentMessage()
    assert "GPU 5" in message and "1 of 4" in message  # one per server


def test_keyboard_zoom_after_find_keeps_the_found_node_in_view(window, mouse):
    """The pointer rests on the canvas while Find scrolls elsewhere: Ctrl++ then zooms
    about the view's centre, not back to where the pointer last moved."""
    view = window.view
    _hover(view, mouse, QPoint(20, 20))
    view.centerOn(QPointF(-2000, 2000))
    found = window.edit.find("GPU 5")
    centre = window.scene.nodes[found].sceneBoundingRect().center()
    for _ in range(3):
        window.view.zoom_in()
        assert _centre_error(view, centre) <= 2
    window.view.zoom_out()
    assert _centre_error(view, centre) <= 2


def test_find_by_id_and_by_part_of_a_name(window):
    topo = window.document.topology
    assert window.edit.find("leaf-r3-0") == "leaf-r3-0"
    hit = window.edit.find("storage 0")
    assert topo.node(hit).name == "Storage 0"
    assert window.scene.selected_node_ids() == [hit]


def test_find_with_no_match_keeps_the_selection(window):
    window.scene.select_ids(["spine-1"])
    assert window.edit.find("no such node") is None
    assert window.scene.selected_node_ids() == ["spine-1"]
    assert "no such node" in window.statusBar().currentMessage()


def test_find_action_asks_for_a_name(window, monkeypatch):
    asked = []

    def answer(parent, title, label, *args, **kwargs):
        asked.append(title)
        return "Spine 1", True

    monkeypatch.setattr(QInputDialog, "getText", answer)
    window.actions_by_name["find"].trigger()
    assert asked == ["Find"]
    assert window.scene.selected_node_ids() == ["spine-1"]


def test_cancelled_find_changes_nothing(window, dialogs):
    window.scene.select_ids(["spine-0"])
    window.actions_by_name["find"].trigger()  # the dialogs fixture cancels the box
    assert dialogs == [("getText", "Find")]
    assert window.scene.selected_node_ids() == ["spine-0"]
