"""Selecting, moving, nudging, deleting and arranging nodes, each one undo step."""

from __future__ import annotations

import itertools

import pytest
from PySide6.QtCore import QPointF, QRectF, Qt

from designer.gui.canvas.scene import GRID

CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier


def _pos(window, node_id) -> tuple[float, float]:
    item = window.scene.nodes[node_id]
    return item.pos().x(), item.pos().y()


def _model_pos(window, node_id) -> tuple[float, float]:
    node = window.document.topology.node(node_id)
    return node.x, node.y


# ------------------------------------------------------------------ selection
def test_click_selects_one_node_and_ctrl_click_adds(window, mouse):
    scene = window.scene
    mouse.click(scene.nodes["n01-gpu0"].pos())
    assert scene.selected_node_ids() == ["n01-gpu0"]
    mouse.click(scene.nodes["n01-gpu3"].pos(), CTRL)
    assert sorted(scene.selected_node_ids()) == ["n01-gpu0", "n01-gpu3"]
    mouse.click(scene.nodes["n01-gpu3"].pos(), CTRL)  # Ctrl-click again toggles off
    assert scene.selected_node_ids() == ["n01-gpu0"]
    mouse.click(scene.nodes["spine-0"].pos())  # a plain click replaces the selection
    assert scene.selected_node_ids() == ["spine-0"]
    assert window.document.undo_stack.count() == 0  # clicks move nothing
    assert window.inspector.summary.text().startswith("spine")


def test_click_on_empty_canvas_clears_the_selection(window, mouse):
    scene = window.scene
    scene.select_ids(["n01-gpu0", "spine-1"])
    empty = scene.itemsBoundingRect().topLeft() - QPointF(30, 30)
    mouse.click(empty)
    assert scene.selectedItems() == []


def _leaf_band(scene, topo) -> QRectF:
    """A band around the eight rail leaves (a row above the servers), a little loose."""
    band = QRectF()
    for n in topo.nodes("leaf"):
        if n.id.startswith("leaf-r"):
            band = band.united(scene.nodes[n.id].sceneBoundingRect())
    return band.adjusted(-10, -10, 10, 10)


def test_rubber_band_selects_the_nodes_inside(window, mouse):
    scene, topo = window.scene, window.document.topology
    band = _leaf_band(scene, topo)
    # The drag starts on empty canvas (not on a node or a group's frame).
    assert not [
        i for i in scene.items(band.topLeft()) if i.flags() & i.GraphicsItemFlag.ItemIsSelectable
    ]
    assert not any(g.sceneBoundingRect().contains(band.topLeft()) for g in scene.groups.values())
    mouse.drag(band.topLeft(), band.bottomRight(), steps=8)
    inside = {nid for nid, item in scene.nodes.items() if band.contains(item.sceneBoundingRect())}
    assert inside == {n.id for n in topo.nodes("leaf") if n.id.startswith("leaf-r")}
    assert set(scene.selected_node_ids()) == inside
    assert window.document.undo_stack.count() == 0


def test_rubber_band_over_empty_canvas_crossed_by_links_selects_nothing(window, mouse):
    scene, topo = window.scene, window.document.topology
    # The strip between the leaf row and the server frames: no node, many NIC-leaf links.
    leaves_bottom = max(
        scene.nodes[n.id].sceneBoundingRect().bottom()
        for n in topo.nodes("leaf")
        if n.id.startswith("leaf-r")
    )
    frames_top = min(g.sceneBoundingRect().top() for g in scene.groups.values())
    band = QRectF(QPointF(-40, leaves_bottom + 2), QPointF(2300, frames_top - 2))
    assert band.height() > 10
    assert not [i for i in scene.nodes.values() if i.sceneBoundingRect().intersects(band)]
    mouse.drag(band.topLeft(), band.bottomRight(), steps=8)
    assert scene.selected_link_ids() == []
    before = topo.state()
    window.actions_by_name["delete"].trigger()
    assert topo.state() == before


def test_select_all_selects_every_node_and_link(window):
    window.actions_by_name["select_all"].trigger()
    topo = window.document.topology
    assert set(window.scene.selected_node_ids()) == {n.id for n in topo.nodes()}
    assert set(window.scene.selected_link_ids()) == {lk.id for lk in topo.links()}
    assert window.selection_label.text().startswith(f"{len(topo)} node(s) (32 GPU)")


def test_select_all_notifies_the_views_once(window):
    emitted = []
    window.scene.selectionChanged.connect(lambda: emitted.append(1))
    window.actions_by_name["select_all"].trigger()
    assert len(window.scene.selectedItems()) == len(window.scene.nodes) + len(window.scene.links)
    assert len(emitted) <= 2


# ------------------------------------------------------------------ moving
def test_dragging_a_node_is_one_undo_step_and_snaps(window, mouse):
    stack = window.document.undo_stack
    nid = "spine-0"
    start = _model_pos(window, nid)
    grab = QPointF(*start) + QPointF(3, 4)  # grab the icon slightly off centre
    mouse.drag(grab, grab + QPointF(147, -93), steps=12)
    assert stack.count() == 1
    x, y = _model_pos(window, nid)
    assert x % GRID == 0 and y % GRID == 0
    assert abs(x - (start[0] + 147)) <= GRID / 2 and abs(y - (start[1] - 93)) <= GRID / 2
    assert _pos(window, nid) == (x, y)  # the item shows the model's (snapped) position
    stack.undo()
    assert _model_pos(window, nid) == start == _pos(window, nid)
    stack.redo()
    assert _model_pos(window, nid) == (x, y) == _pos(window, nid)


def test_links_follow_a_dragged_node(window, mouse):
    nid = "spine-1"
    link = next(lk for lk in window.document.topology.links() if nid in (lk.a, lk.b))
    item = window.scene.links[link.id]
    before = item.shape().boundingRect()
    start = QPointF(*_model_pos(window, nid))
    mouse.press(start)
    mouse.move(start + QPointF(100, 0))
    mouse.move(start + QPointF(200, 0))
    moved = item.shape().boundingRect()  # mid-drag, before the model hears of it
    assert moved != before
    assert moved.contains(window.scene.nodes[nid].pos())
    mouse.release(start + QPointF(200, 0))


def test_dragging_several_selected_nodes_moves_all_in_one_step(window, mouse):
    ids = ["spine-0", "spine-1", "leaf-r3-0"]
    window.scene.select_ids(ids)
    before = {n: _model_pos(window, n) for n in ids}
    start = QPointF(*before["spine-0"])
    mouse.drag(start, start + QPointF(0, -80), steps=6)
    assert window.document.undo_stack.count() == 1
    for n in ids:
        x, y = _model_pos(window, n)
        assert abs(x - before[n][0]) <= GRID / 2 and abs(y - (before[n][1] - 80)) <= GRID / 2
    window.document.undo_stack.undo()
    assert {n: _model_pos(window, n) for n in ids} == before


def test_dragging_a_selection_keeps_its_shape(window, mouse):
    """The rail leaves are 70 apart (off the 20 grid); a drag must not respace them."""
    ids = ["leaf-r0-0", "leaf-r1-0", "leaf-r2-0"]
    window.scene.select_ids(ids)
    before = {n: _model_pos(window, n) for n in ids}
    start = QPointF(*before["leaf-r1-0"])
    mouse.drag(start, start + QPointF(0, -80), steps=6)
    after = {n: _model_pos(window, n) for n in ids}
    dx = after["leaf-r0-0"][0] - before["leaf-r0-0"][0]
    dy = after["leaf-r0-0"][1] - before["leaf-r0-0"][1]
    assert after == {n: (x + dx, y + dy) for n, (x, y) in before.items()}


def test_alt_drag_places_the_node_off_grid(window, mouse):
    view = window.view
    view.resetTransform()
    view.scale(1.7, 1.7)
    nid = "spine-0"
    start = QPointF(*_model_pos(window, nid))
    view.centerOn(start)
    alt = Qt.KeyboardModifier.AltModifier
    mouse.drag(start, start + QPointF(33, 0), steps=4, modifiers=alt)
    x, _y = _model_pos(window, nid)
    assert x != start.x() and x % GRID != 0


def test_arrow_keys_nudge_one_grid_step_per_press(window, qtbot):
    stack = window.document.undo_stack
    ids = ["n01-gpu0", "n01-gpu1"]
    window.scene.select_ids(ids)
    before = {n: _model_pos(window, n) for n in ids}
    for key in (Qt.Key.Key_Right, Qt.Key.Key_Right, Qt.Key.Key_Down):
        qtbot.keyClick(window.view, key)
    assert stack.count() == 3
    for n in ids:
        assert _model_pos(window, n) == (before[n][0] + 2 * GRID, before[n][1] + GRID)
        assert _pos(window, n) == _model_pos(window, n)
    qtbot.keyClick(window.view, Qt.Key.Key_Left, SHIFT)  # Shift: one unit
    assert _model_pos(window, "n01-gpu0")[0] == before["n01-gpu0"][0] + 2 * GRID - 1
    for _ in range(4):
        stack.undo()
    assert {n: _model_pos(window, n) for n in ids} == before


def test_arrow_keys_without_a_selection_move_nothing(window, qtbot):
    before = window.document.topology.state()
    qtbot.keyClick(window.view, Qt.Key.Key_Right)
    assert window.document.topology.state() == before
    assert window.document.undo_stack.count() == 0


# ------------------------------------------------------------------ delete
def test_delete_and_undo_restore_nodes_and_their_links(window):
    topo, stack = window.document.topology, window.document.undo_stack
    before = topo.state()
    ids = ["n01-gpu0", "n01-nvs0", "leaf-r0-0"]
    touching = {lk.id for lk in topo.links() if {lk.a, lk.b} & set(ids)}
    assert len(touching) > 10
    window.scene.select_ids(ids)
    window.actions_by_name["delete"].trigger()
    assert not any(topo.has_node(n) for n in ids)
    assert not any(topo.has_link(lk) for lk in touching)
    assert not (set(ids) & set(window.scene.nodes)) and not (touching & set(window.scene.links))
    assert stack.count() == 1
    stack.undo()
    assert topo.state() == before
    assert set(window.scene.nodes) == {n.id for n in topo.nodes()}
    assert set(window.scene.links) == {lk.id for lk in topo.links()}
    for lid in touching:  # link items are re-attached to the restored node items
        item = window.scene.links[lid]
        assert item.a is window.scene.nodes[item.link.a]
        assert item.b is window.scene.nodes[item.link.b]
    stack.redo()
    assert not any(topo.has_node(n) for n in ids)


def test_delete_a_link_alone_keeps_its_nodes(window):
    topo = window.document.topology
    link = next(iter(topo.links()))
    window.scene.select_ids(link_ids=[link.id])
    window.actions_by_name["delete"].trigger()
    assert not topo.has_link(link.id)
    assert topo.has_node(link.a) and topo.has_node(link.b)
    window.document.undo_stack.undo()
    assert topo.link(link.id) == link


# ------------------------------------------------------------------ arrange
def test_align_left_lines_up_the_selection_in_one_step(window):
    ids = ["spine-0", "leaf-r5-0", "n02-gpu3"]
    window.scene.select_ids(ids)
    before = {n: _model_pos(window, n) for n in ids}
    window.actions_by_name["align_left"].trigger()
    left = min(x for x, _ in before.values())
    for n in ids:
        assert _model_pos(window, n) == (left, before[n][1])
        assert _pos(window, n) == (left, before[n][1])
    assert window.document.undo_stack.count() == 1
    window.document.undo_stack.undo()
    assert {n: _model_pos(window, n) for n in ids} == before


def test_align_top_and_vertical_centres(window):
    ids = ["spine-0", "leaf-r5-0", "n02-gpu3"]
    window.scene.select_ids(ids)
    ys = [_model_pos(window, n)[1] for n in ids]
    window.actions_by_name["align_top"].trigger()
    assert {_model_pos(window, n)[1] for n in ids} == {min(ys)}
    window.document.undo_stack.undo()
    window.actions_by_name["align_vcenter"].trigger()
    assert [_model_pos(window, n)[1] for n in ids] == pytest.approx([sum(ys) / 3] * 3)


def test_distribute_spaces_the_selection_evenly(window):
    ids = ["n01-gpu0", "n01-gpu1", "n01-gpu2", "n02-gpu7"]
    window.scene.select_ids(ids)
    window.actions_by_name["distribute_h"].trigger()
    xs = sorted(_model_pos(window, n)[0] for n in ids)
    gaps = [b - a for a, b in itertools.pairwise(xs)]
    assert gaps == pytest.approx([gaps[0]] * 3)
    assert xs[0] == 0.0 and xs[-1] == window.document.topology.node("n02-gpu7").x
    assert window.document.undo_stack.count() == 1


def test_arranging_too_few_nodes_says_why(window):
    window.scene.select_ids(["spine-0"])
    window.actions_by_name["align_left"].trigger()
    assert "at least two" in window.statusBar().currentMessage()
    window.actions_by_name["distribute_h"].trigger()
    assert "at least three" in window.statusBar().currentMessage()
    assert window.document.undo_stack.count() == 0


# ------------------------------------------------------------------ groups
def test_group_and_ungroup_the_selection_each_one_undo_step(window, qtbot):
    """Arrange > Group (Ctrl+G) asks for a kind and a name, frames the nodes on the
    canvas and offers the group as a scenario's ranks; Ungroup dissolves it; undo and
    redo walk both."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QComboBox, QLineEdit

    scene, topo, stack = window.scene, window.document.topology, window.document.undo_stack
    gpus = ["n01-gpu0", "n01-gpu1", "n02-gpu0", "n02-gpu1"]
    scene.select_ids(gpus)
    before = {g: topo.node(g).group for g in gpus}

    def answer() -> None:
        dialog = QApplication.activeModalWidget()
        dialog.findChild(QComboBox).setCurrentText("pod")
        dialog.findChild(QLineEdit).setText("Pair of halves")
        dialog.accept()

    QTimer.singleShot(0, answer)
    window.actions_by_name["group"].trigger()
    gid = topo.node("n01-gpu0").group
    group = topo.group(gid)
    assert (group.kind, group.name, group.parent) == ("pod", "Pair of halves", None)
    assert all(topo.node(g).group == gid for g in gpus)
    assert gid in scene.groups and stack.count() == 1
    dock = window.analysis.scenario
    qtbot.waitUntil(lambda: dock.ranks.findData(f"group:{gid}") >= 0, timeout=3000)

    scene.select_ids(["n01-gpu0", "n02-gpu1"])
    window.actions_by_name["ungroup"].trigger()
    assert not topo.has_group(gid) and gid not in scene.groups
    assert all(topo.node(g).group is None for g in gpus)  # up a level: the top
    stack.undo()  # the ungroup
    assert topo.has_group(gid) and topo.node("n02-gpu1").group == gid
    stack.undo()  # the group
    assert not topo.has_group(gid)
    assert {g: topo.node(g).group for g in gpus} == before
    stack.redo()
    assert topo.node("n01-gpu1").group == gid


def test_grouping_nothing_or_ungrouping_loose_nodes_says_why(window):
    messages = []
    window.edit.message.connect(messages.append)
    window.scene.select_ids([])
    assert window.edit.group_selection("rack", "x") is None
    window.scene.select_ids(["spine-0"])  # in no group
    window.edit.ungroup_selection()
    assert messages == ["Select the nodes to group", "The selected nodes share no group"]
    assert window.document.undo_stack.count() == 0
