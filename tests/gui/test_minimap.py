"""The overview dock: the whole design, the canvas's visible area, click to move there."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QMouseEvent
from PySide6.QtWidgets import QApplication

from designer.gui.minimap import MinimapDock


def _press(widget, at: QPoint, kind=QEvent.Type.MouseButtonPress,
           buttons=Qt.MouseButton.LeftButton) -> None:
    vp = widget.viewport()
    event = QMouseEvent(kind, QPointF(at), QPointF(vp.mapToGlobal(at)),
                        Qt.MouseButton.LeftButton if kind != QEvent.Type.MouseMove
                        else Qt.MouseButton.NoButton, buttons, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(vp, event)


def _canvas_centre(view) -> QPointF:
    return view.mapToScene(view.viewport().rect().center())


def test_the_minimap_is_a_dock_under_the_inspector_toggled_from_the_view_menu(window):
    dock = window.minimap
    assert isinstance(dock, MinimapDock) and dock.isVisible()
    assert window.dockWidgetArea(dock) == Qt.DockWidgetArea.RightDockWidgetArea
    assert dock.geometry().top() >= window.inspector.geometry().bottom()
    toggle = dock.toggleViewAction()
    assert toggle in window.view_menu.actions()
    toggle.trigger()
    assert not dock.isVisible()
    toggle.trigger()
    assert dock.isVisible()


def test_the_minimap_shows_the_whole_design(window):
    mini = window.minimap.minimap
    shown = mini.mapToScene(mini.viewport().rect()).boundingRect()
    assert shown.contains(window.scene.design_rect())


def test_clicking_the_minimap_recentres_the_canvas(window):
    view, mini = window.view, window.minimap.minimap
    for _ in range(6):
        view.zoom_in()
    target = window.scene.nodes["n04-gpu6"].pos()
    at = mini.mapFromScene(target)
    _press(mini, at)
    _press(mini, at, QEvent.Type.MouseButtonRelease, Qt.MouseButton.NoButton)
    # One minimap pixel is several scene units: the canvas centres within that much.
    tolerance = 2 / mini.transform().m11()
    centre = _canvas_centre(view)
    assert abs(centre.x() - target.x()) <= tolerance
    assert abs(centre.y() - target.y()) <= tolerance


def test_dragging_in_the_minimap_pans_the_canvas(window):
    view, mini = window.view, window.minimap.minimap
    for _ in range(6):
        view.zoom_in()
    a = window.scene.nodes["n01-gpu0"].pos()
    b = window.scene.nodes["n03-gpu7"].pos()
    _press(mini, mini.mapFromScene(a))
    _press(mini, mini.mapFromScene(b), QEvent.Type.MouseMove)
    _press(mini, mini.mapFromScene(b), QEvent.Type.MouseButtonRelease, Qt.MouseButton.NoButton)
    assert abs(_canvas_centre(view).x() - b.x()) <= 2 / mini.transform().m11()


def test_the_minimap_marks_the_visible_area(window):
    view, mini = window.view, window.minimap.minimap
    for _ in range(8):
        view.zoom_in()
    view.centerOn(window.scene.nodes["n02-gpu0"])
    QApplication.processEvents()
    area = mini.mapFromScene(mini.visible_area()).boundingRect()
    assert area.width() < mini.viewport().width() / 2
    image = mini.viewport().grab().toImage()
    edge = QColor(image.pixel(area.left(), area.center().y()))
    selection = window.scene.theme.selection
    assert abs(edge.hue() - selection.hue()) <= 12 and edge.saturation() > 80


def test_a_design_of_one_device_is_not_blown_up_to_fill_the_overview(window):
    """The first device of a new design is a small square in the overview, as on the
    canvas, not a block filling it."""
    from designer.model.commands import AddNode
    from designer.model.topology import Node

    window.files.new_design()
    window.document.push(AddNode(Node("g0", "gpu", "H100", "GPU 0")))
    window.scene.refresh()
    mini = window.minimap.minimap
    mini.refit()
    item = window.scene.nodes["g0"]
    on_screen = mini.mapFromScene(item.sceneBoundingRect()).boundingRect()
    viewport = mini.viewport().rect()
    assert on_screen.width() < viewport.width() / 8
    assert viewport.contains(on_screen.center())
