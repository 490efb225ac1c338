"""Replacing the open design (Open, New, New from Template) while items are selected.

The selection belongs to the design being replaced: it must be dropped while that
design is still the document's, so no listener (status bar, inspector, overview) looks
an old id up in the new design or touches an item the scene has already deleted.
Errors in slots and Qt overrides fail these tests (pytest-qt's exception capture).
"""

from __future__ import annotations

import pytest
import shiboken6
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from designer.gui.canvas.items import GroupItem, NodeItem
from designer.io.fabric_json import save
from designer.model.templates import build_template


def _title_point(window, gid: str) -> QPoint:
    """A viewport point on group ``gid``'s title strip where the frame is the top item."""
    view, group = window.view, window.scene.groups[gid]
    frame = group.frame_rect().translated(group.pos())
    for i in range(1, 40):
        p = view.mapFromScene(QPointF(frame.left() + frame.width() * i / 40, frame.top() + 5))
        items = view.items(p)
        if items and items[0] is group:
            return p
    raise AssertionError(f"no free spot on {gid}'s title strip")


def _select_all_by_keyboard(window, qtbot) -> None:
    window.activateWindow()
    qtbot.waitActive(window)
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)


def _biggest_group(window) -> str:
    topo = window.document.topology
    return max(sorted(window.scene.groups), key=lambda g: len(topo.members(g)))


def _select(window, qtbot, mouse, how: str) -> None:
    """Select several nodes as a user does: Ctrl+A, a click on a group's frame, or a
    click on a collapsed group's box."""
    scene = window.scene
    if how == "ctrl+a":
        _select_all_by_keyboard(window, qtbot)
    elif how == "frame":
        gid = _biggest_group(window)
        mouse.click(_title_point(window, gid))
        assert scene.selected_node_ids() == sorted(window.document.topology.members(gid))
    else:
        gid = _biggest_group(window)
        scene.collapse(gid)
        scene.refresh()
        box = scene.groups[gid]
        mouse.click(box.mapToScene(box.box_rect().center()))
        assert [i for i in scene.selectedItems() if isinstance(i, GroupItem)] == [box]
    assert len(scene.selected_node_ids()) >= 2, how


def _paint_everything(window, qtbot) -> None:
    """Let every view (canvas, overview, panels) paint the new design, to the end."""
    window.repaint()
    overview = window.minimap.minimap
    overview.repaint()
    qtbot.waitUntil(lambda: not overview._picture.pending, timeout=20_000)
    qtbot.wait(50)
    QApplication.processEvents()


def _assert_shows_only(window, topology) -> None:
    scene = window.scene
    assert scene.selectedItems() == []
    assert scene.selected_node_ids() == [] and scene.selected_link_ids() == []
    assert set(scene.nodes) == {n.id for n in topology.nodes()}
    assert all(shiboken6.isValid(i) for i in scene.nodes.values())
    assert all(shiboken6.isValid(i) for i in scene.groups.values())
    items = [i for i in scene.items() if isinstance(i, NodeItem)]
    assert {i.node_id for i in items} == set(scene.nodes)
    label = window.selection_label.text()
    assert label == f"{len(topology)} nodes, {topology.link_count()} links"


@pytest.mark.parametrize("how", ["ctrl+a", "frame", "box"])
def test_open_another_design_with_nodes_selected(window, qtbot, mouse, how, tmp_path):
    _select(window, qtbot, mouse, how)
    other = build_template("superpod", sus=1)
    path = tmp_path / "other.fabric.json"
    save(other, path)
    with qtbot.captureExceptions() as errors:
        assert window.files.open_file(path)
        _paint_everything(window, qtbot)
    assert errors == []
    _assert_shows_only(window, window.document.topology)
    assert window.document.topology.state() == other.state()


@pytest.mark.parametrize("how", ["ctrl+a", "frame", "box"])
def test_create_from_a_template_with_nodes_selected(window, qtbot, mouse, how,
                                                   create_from_template):
    _select(window, qtbot, mouse, how)
    create_from_template("superpod", sus=2)
    with qtbot.captureExceptions() as errors:
        assert window.files.new_from_template()
        _paint_everything(window, qtbot)
    assert errors == []
    _assert_shows_only(window, window.document.topology)
    assert window.document.topology.state() == build_template("superpod", sus=2).state()


def test_new_design_with_nodes_selected(window, qtbot, mouse):
    _select(window, qtbot, mouse, "ctrl+a")
    with qtbot.captureExceptions() as errors:
        assert window.files.new_design()
        _paint_everything(window, qtbot)
    assert errors == []
    _assert_shows_only(window, window.document.topology)


def test_a_1016_gpu_superpod_replaces_a_selected_superpod(window, qtbot, monkeypatch,
                                                         create_from_template):
    """The reported crash: everything of a big design selected, then a new SuperPOD of
    four SUs (1,016 GPUs, 7,632 link bundles) from the template dialog, twice."""
    create_from_template("superpod")  # its defaults: 4 SUs
    # Whatever is asked about the design being replaced, the answer is Discard.
    monkeypatch.setattr(
        QMessageBox, "question", lambda *_a, **_k: QMessageBox.StandardButton.Discard
    )
    with qtbot.captureExceptions() as errors:
        assert window.files.new_from_template()
        _select_all_by_keyboard(window, qtbot)
        assert len(window.scene.selectedItems()) > 10_000
        assert window.files.new_from_template()
        _paint_everything(window, qtbot)
    assert errors == []
    topo = window.document.topology
    assert sum(1 for _ in topo.nodes("gpu")) == 1016
    _assert_shows_only(window, topo)


def test_open_a_big_file_with_nodes_selected(window, qtbot, mouse, monkeypatch, tmp_path):
    """A big file opens through the progress dialog, whose own event loop runs while the
    file is read (the old design still open and selected) and which repaints itself
    while the new design is drawn."""
    import designer.gui.files as files_mod
    from designer.gui.canvas import scene as scene_mod

    monkeypatch.setattr(files_mod, "OPEN_PROGRESS_BYTES", 0)
    monkeypatch.setattr(scene_mod, "BUILD_PROGRESS_EVERY", 256)
    _select(window, qtbot, mouse, "frame")
    other = build_template("superpod", sus=2)
    path = tmp_path / "big.fabric.json"
    save(other, path)
    with qtbot.captureExceptions() as errors:
        assert window.files.open_file(path)
        _paint_everything(window, qtbot)
    assert errors == []
    _assert_shows_only(window, window.document.topology)
    assert window.document.topology.state() == other.state()
