"""The canvas's context menus are deleted once closed, with what their actions held.

Found by the X11 soak (tests/gui/test_x11_soak.py): each right-click on the canvas made a
`QMenu` child of the view that was never deleted, and its what-if action's callback kept
the clicked node or link item (a wrapper, with the model object behind it) alive after
the design was replaced: the memory in use grew with every right-click.
"""

from __future__ import annotations

import gc

import pytest
from PySide6.QtCore import QCoreApplication, QEvent, QPoint
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtWidgets import QApplication, QMenu


def _close_menus() -> None:
    popup = QApplication.activePopupWidget()
    while popup is not None:
        popup.close()
        popup = QApplication.activePopupWidget()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


def _menus(view) -> int:
    return len(view.findChildren(QMenu))


@pytest.mark.parametrize("kind", ["node", "link", "group", "empty"])
def test_a_closed_context_menu_is_deleted(window, kind):
    scene, view = window.scene, window.view
    if kind == "node":
        item = next(iter(scene.nodes.values()))
        pos = view.mapFromScene(item.sceneBoundingRect().center())
    elif kind == "link":
        item = next(i for i in scene.links.values() if i.isVisible())
        pos = view.mapFromScene(item.sceneBoundingRect().center())
    elif kind == "group":
        item = next(iter(scene.groups.values()))
        r = item.sceneBoundingRect()
        pos = view.mapFromScene(r.topLeft() + (r.center() - r.topLeft()) * 0.1)
    else:
        pos = QPoint(3, 3)
    before = _menus(view)
    for _ in range(3):
        view.customContextMenuRequested.emit(pos)
        _close_menus()
    assert _menus(view) == before


def test_the_views_own_context_menu_is_deleted(window):
    scene, view = window.scene, window.view
    item = next(iter(scene.groups.values()))
    r = item.sceneBoundingRect()
    pos = view.mapFromScene(r.topLeft() + (r.center() - r.topLeft()) * 0.1)
    before = _menus(view)
    for _ in range(3):
        view.contextMenuEvent(QContextMenuEvent(QContextMenuEvent.Reason.Mouse, pos,
                                                view.viewport().mapToGlobal(pos)))
        _close_menus()
    assert _menus(view) == before


def test_a_what_if_menu_keeps_no_item_of_a_replaced_design(window):
    from designer.gui.canvas.items import NodeItem
    from designer.model.templates import build_template

    scene, view = window.scene, window.view
    item = next(iter(scene.nodes.values()))
    pos = view.mapFromScene(item.sceneBoundingRect().center())
    view.customContextMenuRequested.emit(pos)
    _close_menus()
    old = item.node_id
    del item
    window.document.replace(build_template("example"))
    QCoreApplication.processEvents()  # the old items go with deferred deletes
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.unfreeze()  # (replace freezes what survives it: list it too)
    gc.collect()
    kept = [o for o in gc.get_objects() if isinstance(o, NodeItem) and o not in
            scene.nodes.values()]
    assert not kept, f"{len(kept)} node items of the replaced design alive ({old} clicked)"


def test_the_what_if_action_still_runs_from_the_menu_deleted_on_close(window):
    """The menu hides before its action runs; the action's callback must not need it."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    scene, view, topo = window.scene, window.view, window.document.topology
    item = next(iter(scene.nodes.values()))
    node_id = item.node_id
    assert not topo.node(node_id).failed
    view.customContextMenuRequested.emit(view.mapFromScene(item.sceneBoundingRect().center()))
    menu = QApplication.activePopupWidget()
    assert isinstance(menu, QMenu)
    QTest.keyClick(menu, Qt.Key.Key_Down)
    QTest.keyClick(menu, Qt.Key.Key_Return)
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert topo.node(node_id).failed
    assert QApplication.activePopupWidget() is None
    assert _menus(view) == 0
