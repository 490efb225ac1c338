"""Palette -> canvas drag and drop, with synthetic drag events on the viewport."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt

from designer.gui.canvas.interactions import component_mime
from designer.gui.canvas.scene import GRID

ALT = Qt.KeyboardModifier.AltModifier


def _free_spot(view) -> QPoint:
    """A viewport point over empty canvas, off the grid (so snapping shows)."""
    item_rect = view.fabric.itemsBoundingRect()
    scene_pt = QPointF(item_rect.left() + 7.3, item_rect.top() - 200.0 + 3.1)
    view.centerOn(scene_pt)
    return view.mapFromScene(scene_pt)


def _new_nodes(window, before):
    return [n for n in window.document.topology.nodes() if n.id not in before]


def test_drop_adds_a_node_on_the_grid(window, mouse):
    view, topo = window.view, window.document.topology
    before = {n.id for n in topo.nodes()}
    where = _free_spot(view)
    accepted = mouse.drop(component_mime("gpu", "H100"), where)
    assert accepted == {"enter": True, "move": True, "drop": True}
    (node,) = _new_nodes(window, before)
    assert (node.kind, node.model) == ("gpu", "H100")
    scene_pt = view.mapToScene(where)
    assert node.x % GRID == 0 and node.y % GRID == 0
    assert abs(node.x - scene_pt.x()) <= GRID / 2 and abs(node.y - scene_pt.y()) <= GRID / 2
    item = window.scene.nodes[node.id]
    assert (item.pos().x(), item.pos().y()) == (node.x, node.y)
    # The new node is the selection, named like its siblings, and announced.
    assert window.scene.selected_node_ids() == [node.id]
    assert node.name.startswith("GPU")
    assert node.name in window.statusBar().currentMessage()
    assert window.isWindowModified()


def test_alt_drop_bypasses_the_grid(window, mouse):
    view, topo = window.view, window.document.topology
    view.resetTransform()
    view.scale(1.7, 1.7)  # a zoom where viewport pixels land between grid lines
    before = {n.id for n in topo.nodes()}
    where = _free_spot(view)
    mouse.drop(component_mime("leaf", "QM9700"), where, modifiers=ALT)
    (node,) = _new_nodes(window, before)
    scene_pt = view.mapToScene(where)
    assert (node.x, node.y) == (scene_pt.x(), scene_pt.y())
    assert node.x % GRID != 0 or node.y % GRID != 0


def test_drop_of_unrelated_data_does_nothing(window, mouse):
    topo = window.document.topology
    before = topo.state()
    mime = QMimeData()
    mime.setText("GPU H100")
    accepted = mouse.drop(mime, _free_spot(window.view))
    assert accepted == {"enter": False, "move": False, "drop": False}
    assert topo.state() == before
    assert window.document.undo_stack.count() == 0


def test_drop_of_damaged_component_data_does_nothing(window, mouse):
    topo = window.document.topology
    before = topo.state()
    mime = component_mime("gpu", "H100")
    mime.setData("application/x-fabric-designer-component", b'{"kind": "gpu"')
    accepted = mouse.drop(mime, _free_spot(window.view))
    assert accepted["enter"] is False and accepted["drop"] is False
    assert topo.state() == before


def test_drop_of_an_unknown_model_is_refused_with_a_message(window, mouse):
    topo = window.document.topology
    before = topo.state()
    accepted = mouse.drop(component_mime("gpu", "NoSuchGPU-9000"), _free_spot(window.view))
    assert accepted["drop"] is False
    assert topo.state() == before
    assert "NoSuchGPU-9000" in window.statusBar().currentMessage()
    assert window.document.undo_stack.count() == 0


def test_undo_removes_the_dropped_node_and_redo_restores_it(window, mouse):
    topo, stack = window.document.topology, window.document.undo_stack
    before = {n.id for n in topo.nodes()}
    mouse.drop(component_mime("spine", "QM9700"), _free_spot(window.view))
    (node,) = _new_nodes(window, before)
    assert stack.count() == 1
    stack.undo()
    assert not topo.has_node(node.id) and node.id not in window.scene.nodes
    assert not window.isWindowModified()
    stack.redo()
    assert topo.node(node.id) == node
    assert window.scene.nodes[node.id].pos() == QPointF(node.x, node.y)


def test_every_palette_entry_can_be_dropped(window, mouse):
    """Each (kind, model) the palette offers makes a valid node of that kind."""
    topo = window.document.topology
    entries = window.palette.entries()
    assert len(entries) >= 10
    where = _free_spot(window.view)
    for i, (kind, model) in enumerate(entries):
        before = {n.id for n in topo.nodes()}
        mouse.drop(component_mime(kind, model), where + QPoint(0, 0 if i % 2 else 3))
        (node,) = _new_nodes(window, before)
        assert (node.kind, node.model) == (kind, model)
    assert window.document.undo_stack.count() == len(entries)


@pytest.mark.parametrize(
    ("kind", "model", "prefix"),
    [("nic", "ConnectX-7", "NIC"), ("nvswitch", "NVSwitch-gen3", "NVSwitch")],
)
def test_dropped_nodes_are_named_like_the_templates_name_them(window, mouse, kind, model, prefix):
    topo = window.document.topology
    before = {n.id for n in topo.nodes()}
    assert any(n.name.startswith(prefix + " ") for n in topo.nodes(kind))
    mouse.drop(component_mime(kind, model), _free_spot(window.view))
    (node,) = _new_nodes(window, before)
    assert node.name.startswith(prefix + " ")
