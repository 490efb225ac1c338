"""The inspector: shows the selection's properties and edits them, one undo step each."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget

from designer.gui.inspector import MIXED

RIGHT = Qt.DockWidgetArea.RightDockWidgetArea
GPUS = ["n01-gpu0", "n01-gpu1", "n02-gpu5"]


def _choose(combo, text: str | None = None, data=None) -> None:
    """Pick an entry as a user would (``activated`` fires only on user choice)."""
    index = combo.findText(text) if text is not None else combo.findData(data)
    offered = [combo.itemText(i) for i in range(combo.count())]
    assert index >= 0, f"{text or data!r} not offered: {offered}"
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def _type_into(qtbot, line_edit, text: str) -> None:
    line_edit.setFocus()
    line_edit.selectAll()
    qtbot.keyClicks(line_edit, text)
    qtbot.keyClick(line_edit, Qt.Key.Key_Return)


def test_nothing_selected_shows_a_hint(window):
    ins = window.inspector
    assert ins.node_form.isHidden() and ins.link_form.isHidden()
    assert "Nothing selected" in ins.summary.text()


def test_selecting_a_node_shows_its_values(window, mouse):
    ins, topo = window.inspector, window.document.topology
    node = topo.node("n02-gpu5")
    mouse.click(window.scene.nodes[node.id].pos())
    assert ins.node_form.isVisible() and ins.link_form.isHidden()
    assert ins.name.text() == node.name == "GPU 5"
    assert ins.model.currentText() == "H100"
    offered = {ins.model.itemText(i) for i in range(ins.model.count())}
    assert offered == {d.key for d in topo.catalog.models_for_kind("gpu")}
    assert ins.group.currentData() == node.group == "n02"
    assert ins.node_plane.currentText() == "compute"
    assert not ins.node_failed.isChecked()
    assert node.id in ins.summary.text() and "gpu" in ins.summary.text()


def test_editing_the_name_changes_the_model_in_one_undo_step(window, qtbot):
    topo, stack = window.document.topology, window.document.undo_stack
    window.scene.select_ids(["spine-0"])
    _type_into(qtbot, window.inspector.name, "Core spine A")
    assert topo.node("spine-0").name == "Core spine A"
    assert window.scene.nodes["spine-0"].node.name == "Core spine A"  # the label follows
    assert stack.count() == 1
    stack.undo()
    assert topo.node("spine-0").name == "Spine 0"
    assert window.inspector.name.text() == "Spine 0"  # the form follows undo too


def test_finishing_an_edit_without_a_change_records_nothing(window, qtbot):
    window.scene.select_ids(["spine-0"])
    _type_into(qtbot, window.inspector.name, "Spine 0")
    window.inspector.name.editingFinished.emit()  # focus leaving the field
    assert window.document.undo_stack.count() == 0


def test_a_multi_selection_shows_only_shared_values(window):
    ins = window.inspector
    window.scene.select_ids(GPUS)
    assert ins.name.text() == "" and ins.name.placeholderText() == MIXED
    assert ins.model.currentText() == "H100"  # all three agree
    assert ins.group.currentIndex() == -1  # servers 1 and 2 differ
    assert ins.summary.text().startswith("3 node(s)")


def test_a_multi_selection_edit_applies_to_all_in_one_undo_step(window):
    topo, stack = window.document.topology, window.document.undo_stack
    window.scene.select_ids(GPUS)
    _choose(window.inspector.node_plane, "frontend")
    assert [topo.node(n).plane for n in GPUS] == ["frontend"] * 3
    assert stack.count() == 1
    _choose(window.inspector.model, "H200")
    assert [topo.node(n).model for n in GPUS] == ["H200"] * 3
    assert stack.count() == 2
    stack.undo()
    stack.undo()
    assert [(topo.node(n).plane, topo.node(n).model) for n in GPUS] == [("compute", "H100")] * 3


def test_group_and_failed_edits(window):
    topo = window.document.topology
    window.scene.select_ids(["spine-0"])
    ins = window.inspector
    _choose(ins.group, data="rack01")
    assert topo.node("spine-0").group == "rack01"
    ins.node_failed.click()
    assert topo.node("spine-0").failed
    _choose(ins.group, data=None)
    assert topo.node("spine-0").group is None
    assert window.document.undo_stack.count() == 3


def test_a_refused_edit_shows_a_message_and_changes_nothing(window):
    """A model that cannot play the node's kind is refused by the design itself.

    The model list only offers fitting models, so the wrong entry is planted here to
    drive the refusal path a stale list would take.
    """
    topo = window.document.topology
    before = topo.state()
    window.scene.select_ids(["n01-gpu0"])
    ins = window.inspector
    ins.model.addItem("QM9700")  # a switch, not a GPU
    _choose(ins.model, "QM9700")
    assert topo.state() == before
    assert window.document.undo_stack.count() == 0
    message = window.statusBar().currentMessage()
    assert "n01-gpu0" in message and "QM9700" in message
    assert ins.model.currentText() == "H100"  # the form shows the truth again


def test_selecting_a_link_shows_its_technology_and_count(window):
    ins, topo = window.inspector, window.document.topology
    link = topo.link("n01-gpu0:n01-nvs0")
    window.scene.select_ids(link_ids=[link.id])
    assert ins.link_form.isVisible() and ins.node_form.isHidden()
    assert ins.tech.currentData() == "nvlink4"
    assert ins.count.value() == link.count == 5
    assert ins.link_plane.currentText() == "compute"
    # 5 NVLink4 links x 25 GB/s each way.
    assert ins.link_info.text().startswith("125.0 GB/s")
    assert "GPU 0" in ins.summary.text() and "NVSwitch 0" in ins.summary.text()


def test_editing_a_link_count_is_one_undo_step(window, qtbot):
    ins, topo, stack = window.inspector, window.document.topology, window.document.undo_stack
    lid = "leaf-r0-0:spine-0"  # a NIC has one port, so grow a leaf-spine bundle instead
    assert topo.has_link(lid)
    window.scene.select_ids(link_ids=[lid])
    ins.count.setFocus()
    ins.count.selectAll()
    qtbot.keyClicks(ins.count, "3")
    qtbot.keyClick(ins.count, Qt.Key.Key_Return)
    assert topo.link(lid).count == 3
    assert stack.count() == 1
    assert window.scene.links[lid].link.count == 3  # the bundle shows x3
    stack.undo()
    assert topo.link(lid).count == 2


def test_retyping_a_link_offers_only_fitting_technologies(window):
    ins, topo = window.inspector, window.document.topology
    lid = "n01-nic0:leaf-r0-0"
    window.scene.select_ids(link_ids=[lid])
    offered = [ins.tech.itemData(i) for i in range(ins.tech.count())]
    fitting = [t.key for t in topo.catalog.compatible_techs("ConnectX-7", "QM9700")]
    assert offered == fitting
    _choose(ins.tech, data="ib-hdr")
    assert topo.link(lid).tech == "ib-hdr"
    assert window.document.undo_stack.count() == 1
    window.document.undo_stack.undo()
    assert topo.link(lid).tech == "ib-ndr"


def test_a_multi_link_edit_applies_to_all(window):
    topo = window.document.topology
    ids = ["n01-nic0:leaf-r0-0", "n02-nic0:leaf-r0-0"]
    window.scene.select_ids(link_ids=ids)
    _choose(window.inspector.link_plane, "storage")
    assert [topo.link(lk).plane for lk in ids] == ["storage", "storage"]
    assert window.document.undo_stack.count() == 1


def test_retyping_links_to_a_technology_their_ports_lack_is_refused(window):
    topo = window.document.topology
    ids = ["n01-nic0:leaf-r0-0", "n02-nic0:leaf-r0-0"]
    before = topo.state()
    window.scene.select_ids(link_ids=ids)
    offered = [window.inspector.tech.itemData(i) for i in range(window.inspector.tech.count())]
    if "nvlink4" in offered:
        _choose(window.inspector.tech, data="nvlink4")
    assert topo.state() == before


def test_a_model_change_that_strands_its_links_is_refused(window):
    topo = window.document.topology
    before = topo.state()
    window.scene.select_ids(["n01-gpu0"])
    _choose(window.inspector.model, "A100")
    assert topo.state() == before
    assert "A100" in window.statusBar().currentMessage()


SELECTIONS = (
    ([], []),
    (["n01-gpu0"], []),
    ([], ["n01-gpu0:n01-nvs0"]),
    (["n01-gpu0", "n01-nvs0"], []),
    ([], []),
)


def _widths(window, qtbot):
    widths = []
    for nodes, links in SELECTIONS:
        window.scene.select_ids(nodes, links)
        qtbot.wait(1)  # let the layout settle, as a repaint would
        widths.append((window.inspector.width(), window.view.width()))
    return widths


def test_the_canvas_keeps_its_width_whatever_is_selected(window, qtbot):
    widths = _widths(window, qtbot)
    assert len(set(widths)) == 1, widths


def test_the_canvas_keeps_its_width_with_the_minimap_closed(window, qtbot):
    for dock in window.findChildren(QDockWidget):
        if dock is not window.inspector and window.dockWidgetArea(dock) == RIGHT:
            dock.close()
    widths = _widths(window, qtbot)
    assert len(set(widths)) == 1, widths


def test_an_empty_name_is_refused(window, qtbot):
    window.scene.select_ids(["spine-0"])
    window.inspector.name.setFocus()
    window.inspector.name.selectAll()
    qtbot.keyClick(window.inspector.name, Qt.Key.Key_Delete)
    qtbot.keyClick(window.inspector.name, Qt.Key.Key_Return)
    assert window.document.topology.node("spine-0").name == "Spine 0"
    assert window.statusBar().currentMessage()


def test_a_count_past_the_free_ports_is_refused_or_flagged(window):
    topo = window.document.topology
    lid = "n01-gpu0:n01-nvs0"
    window.scene.select_ids(link_ids=[lid])
    window.inspector.count.setValue(40)
    window.inspector.count.editingFinished.emit()
    refused = topo.link(lid).count == 5
    flagged = "port" in window.statusBar().currentMessage().lower()
    assert refused or flagged
