"""Drawing links on the canvas: Shift-drag or the link tool, best technology, refusals."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt

from designer.gui.canvas.items import LinkItem
from designer.model.commands import AddNode
from designer.model.topology import Node

SHIFT = Qt.KeyboardModifier.ShiftModifier


@pytest.fixture
def spare_gpu(window):
    """A fresh H100 placed in empty canvas above server 1 (all 18 NVLinks free)."""
    node = Node("gpu-spare", "gpu", "H100", "Spare GPU", x=60.0, y=-100.0)
    window.document.push(AddNode(node))
    window.document.undo_stack.clear()  # setup, not part of the test's history
    window.view.fit()
    return node


def _links_between(topo, a, b):
    return [lk for lk in topo.links() if {lk.a, lk.b} == {a, b}]


def _at(window, node_id) -> QPointF:
    return window.scene.nodes[node_id].pos()


def test_shift_drag_links_a_gpu_to_an_nvswitch_with_nvlink(window, mouse, spare_gpu):
    topo = window.document.topology
    switch = "n01-nvs0"
    edges = topo.graph.number_of_edges()
    mouse.drag(_at(window, spare_gpu.id), _at(window, switch), modifiers=SHIFT)
    (link,) = _links_between(topo, spare_gpu.id, switch)
    assert link.tech == "nvlink4"  # the only (and fastest) technology both ends take
    assert (link.a, link.b, link.count) == (spare_gpu.id, switch, 1)
    assert topo.graph.number_of_edges() == edges + 1
    item = window.scene.links[link.id]
    assert isinstance(item, LinkItem) and item.isSelected()
    assert window.scene.selected_link_ids() == [link.id]
    # Nothing moved: the Shift-drag drew, it did not drag the node.
    assert topo.node(spare_gpu.id).x == spare_gpu.x
    assert _at(window, spare_gpu.id) == QPointF(spare_gpu.x, spare_gpu.y)
    # One undo step removes the link again.
    assert window.document.undo_stack.count() == 1
    window.document.undo_stack.undo()
    assert _links_between(topo, spare_gpu.id, switch) == []
    assert link.id not in window.scene.links


def test_the_rubber_line_follows_the_mouse_and_goes_away(window, mouse, spare_gpu):
    from PySide6.QtWidgets import QGraphicsLineItem

    scene = window.scene
    start = _at(window, spare_gpu.id)
    mouse.press(start, SHIFT)
    mouse.move(start + QPointF(30, -40), SHIFT)
    (line,) = [i for i in scene.items() if isinstance(i, QGraphicsLineItem)]
    end = line.line().p2()
    # Within a pixel or two of where the mouse is (viewport pixels map to scene units).
    tolerance = 2 / window.view.scale_factor
    assert abs(end.x() - (start.x() + 30)) <= tolerance
    assert abs(end.y() - (start.y() - 40)) <= tolerance
    mouse.release(start + QPointF(30, -40), SHIFT)
    assert not [i for i in scene.items() if isinstance(i, QGraphicsLineItem)]
    assert window.document.undo_stack.count() == 0  # released on empty canvas


def test_incompatible_pair_is_refused_with_a_message(window, mouse, spare_gpu):
    topo = window.document.topology
    leaf = "leaf-r0-0"  # an InfiniBand leaf: a GPU has no InfiniBand port
    before = topo.state()
    mouse.drag(_at(window, spare_gpu.id), _at(window, leaf), modifiers=SHIFT)
    assert topo.state() == before
    assert window.document.undo_stack.count() == 0
    message = window.statusBar().currentMessage()
    assert message.startswith("Link refused")
    assert spare_gpu.name in message and "Leaf rail 0" in message


def test_port_exhausted_gpu_is_refused(window, mouse):
    topo = window.document.topology
    gpu, switch = "n01-gpu0", "n01-nvs0"
    assert topo.ports_free(gpu, "nvlink4") == 0  # all 18 NVLinks already go to NVSwitches
    assert topo.ports_free(switch, "nvlink4") > 0
    before = topo.state()
    mouse.drag(_at(window, gpu), _at(window, switch), modifiers=SHIFT)
    assert topo.state() == before
    message = window.statusBar().currentMessage()
    assert message.startswith("Link refused") and "GPU 0" in message and "port" in message


def test_release_on_the_same_node_does_nothing(window, mouse, spare_gpu):
    before = window.document.topology.state()
    pos = _at(window, spare_gpu.id)
    mouse.drag(pos, pos + QPointF(3, 2), modifiers=SHIFT)
    assert window.document.topology.state() == before
    assert not window.statusBar().currentMessage().startswith("Link refused")


def test_escape_cancels_a_link_being_drawn(window, mouse, qtbot, spare_gpu):
    from PySide6.QtWidgets import QGraphicsLineItem

    start = _at(window, spare_gpu.id)
    mouse.press(start, SHIFT)
    mouse.move(_at(window, "n01-nvs0"), SHIFT)
    qtbot.keyClick(window.view, Qt.Key.Key_Escape)
    assert not [i for i in window.scene.items() if isinstance(i, QGraphicsLineItem)]
    mouse.release(_at(window, "n01-nvs0"), SHIFT)
    assert _links_between(window.document.topology, spare_gpu.id, "n01-nvs0") == []


def test_link_tool_action_toggles_link_drawing(window, mouse, spare_gpu):
    topo = window.document.topology
    tool = window.actions_by_name["link_tool"]
    assert tool.isCheckable() and not tool.isChecked()
    tool.trigger()
    assert window.view.link_tool
    # With the tool on, a plain drag (no Shift) draws a link.
    mouse.drag(_at(window, spare_gpu.id), _at(window, "n01-nvs1"))
    (link,) = _links_between(topo, spare_gpu.id, "n01-nvs1")
    assert link.tech == "nvlink4"
    assert topo.node(spare_gpu.id).x == spare_gpu.x
    tool.trigger()
    assert not window.view.link_tool and not tool.isChecked()
    # With the tool off, the same drag moves the node instead (at 1:1, so the drag is
    # well clear of the snapping grid whatever size the docks leave the canvas).
    window.view.resetTransform()
    window.view.centerOn(window.scene.nodes[spare_gpu.id])
    mouse.drag(_at(window, spare_gpu.id), _at(window, spare_gpu.id) + QPointF(0, 60))
    assert len(_links_between(topo, spare_gpu.id, "n01-nvs1")) == 1
    assert topo.node(spare_gpu.id).y > spare_gpu.y  # it moved down instead of linking


def test_link_tool_shortcut_is_l(window):
    assert window.actions_by_name["link_tool"].shortcut().toString() == "L"


def test_a_second_link_between_the_same_nodes_is_a_parallel_bundle(window, mouse, spare_gpu):
    topo = window.document.topology
    for _ in range(2):
        mouse.drag(_at(window, spare_gpu.id), _at(window, "n01-nvs2"), modifiers=SHIFT)
    links = _links_between(topo, spare_gpu.id, "n01-nvs2")
    assert len(links) == 2 and len({lk.id for lk in links}) == 2
    a, b = (window.scene.links[lk.id] for lk in links)
    assert a.offset == -b.offset != 0  # drawn side by side, both clickable
    assert topo.ports_free(spare_gpu.id, "nvlink4") == 16


def test_a_nic_to_a_leaf_gets_the_fastest_common_technology(window, mouse):
    """ConnectX-7 to a QM9700 leaf: NDR InfiniBand (the fastest both take)."""
    topo = window.document.topology
    nic = Node("nic-spare", "nic", "ConnectX-7", "Spare NIC", x=-100.0, y=-100.0)
    window.document.push(AddNode(nic))
    window.view.fit()
    mouse.drag(_at(window, nic.id), _at(window, "leaf-r0-0"), modifiers=SHIFT)
    (link,) = _links_between(topo, nic.id, "leaf-r0-0")
    techs = topo.catalog.compatible_techs("ConnectX-7", "QM9700")
    assert link.tech == techs[0].key == "ib-ndr"
    assert all(techs[0].gbps >= t.gbps for t in techs)
