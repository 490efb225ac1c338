"""`InspectorDock`: view and edit the selection's properties.

Nodes: name, model, group, plane, failed.  Links: technology, count, plane, failed.  With
several items selected, a field shows a value only when all agree, and an edit applies
to all of them as one undoable command.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDockWidget,
    QFormLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from designer.gui.canvas.scene import FabricScene
from designer.gui.document import Document
from designer.gui.wheel import guard_wheel
from designer.model.catalog import PLANES
from designer.model.commands import SetLinkProps, SetNodeProps
from designer.model.errors import DesignError

MIXED = "(mixed)"


def _common(values):
    values = list(values)
    return values[0] if values and all(v == values[0] for v in values) else None


class InspectorDock(QDockWidget):
    """Properties of the selected nodes or links."""

    message = Signal(str)

    def __init__(self, document: Document, scene: FabricScene, parent: QWidget | None = None):
        super().__init__("Inspector", parent)
        self.setObjectName("inspector")
        self.document = document
        self.scene = scene
        self._updating = False
        body = QWidget(self)
        outer = QVBoxLayout(body)
        self.summary = QLabel("Nothing selected", body)
        self.summary.setWordWrap(True)
        outer.addWidget(self.summary)
        self.node_form = QWidget(body)
        nf = QFormLayout(self.node_form)
        self.name = QLineEdit(self.node_form)
        self.model = QComboBox(self.node_form)
        self.group = QComboBox(self.node_form)
        self.node_plane = QComboBox(self.node_form)
        self.node_plane.addItems(PLANES)
        self.node_failed = QCheckBox("failed (what-if)", self.node_form)
        nf.addRow("Name", self.name)
        nf.addRow("Model", self.model)
        nf.addRow("Group", self.group)
        nf.addRow("Plane", self.node_plane)
        nf.addRow("", self.node_failed)
        self.link_form = QWidget(body)
        lf = QFormLayout(self.link_form)
        self.tech = QComboBox(self.link_form)
        self.count = QSpinBox(self.link_form)
        self.count.setRange(1, 100_000)
        self.link_plane = QComboBox(self.link_form)
        self.link_plane.addItems(PLANES)
        self.link_failed = QCheckBox("failed (what-if)", self.link_form)
        self.link_info = QLabel(self.link_form)
        lf.addRow("Technology", self.tech)
        lf.addRow("Count", self.count)
        lf.addRow("Plane", self.link_plane)
        lf.addRow("", self.link_failed)
        lf.addRow("", self.link_info)
        outer.addWidget(self.node_form)
        outer.addWidget(self.link_form)
        outer.addStretch(1)
        # Scrolls rather than hold the window taller than a 720 px screen when a node's
        # form shows (it is in a tab group with the Scenario dock).
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumHeight(40)
        scroll.setWidget(body)
        self.setWidget(scroll)
        self.name.editingFinished.connect(lambda: self._edit_nodes(name=self.name.text()))
        self.model.activated.connect(lambda _i: self._edit_nodes(model=self.model.currentText()))
        self.group.activated.connect(lambda _i: self._edit_nodes(group=self.group.currentData()))
        self.node_plane.activated.connect(
            lambda _i: self._edit_nodes(plane=self.node_plane.currentText()))
        self.node_failed.clicked.connect(lambda on: self._edit_nodes(failed=bool(on)))
        self.tech.activated.connect(lambda _i: self._edit_links(tech=self.tech.currentData()))
        self.count.editingFinished.connect(lambda: self._edit_links(count=self.count.value()))
        self.link_plane.activated.connect(
            lambda _i: self._edit_links(plane=self.link_plane.currentText()))
        self.link_failed.clicked.connect(lambda on: self._edit_links(failed=bool(on)))
        scene.selectionChanged.connect(self.refresh)
        # A bound slot: PySide drops the connection when the dock is deleted.
        document.undo_stack.indexChanged.connect(self._on_undo_stack_index_changed)
        scroll.setMinimumWidth(340)  # the canvas must not jump as the selection changes kind
        for combo in (self.model, self.group, self.node_plane, self.tech, self.link_plane):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(16)
        guard_wheel(body)  # the wheel edits only a focused box
        self.refresh()

    def _on_undo_stack_index_changed(self, _index: int) -> None:
        self.refresh()

    # ------------------------------------------------------------ model -> form
    def refresh(self) -> None:
        if not shiboken6.isValid(self.scene) or not shiboken6.isValid(self):
            return  # the window is being torn down
        self._updating = True
        try:
            self._refresh()
        finally:
            self._updating = False

    def _refresh(self) -> None:
        topo = self.document.topology
        node_ids = [n for n in self.scene.selected_node_ids() if topo.has_node(n)]
        link_ids = [lk for lk in self.scene.selected_link_ids() if topo.has_link(lk)]
        self.node_form.setVisible(bool(node_ids))
        self.link_form.setVisible(bool(link_ids) and not node_ids)
        if not node_ids and not link_ids:
            self.summary.setText("Nothing selected.\nClick a node or link, or drag a "
                                 "rubber band, to inspect it.")
            return
        if node_ids:
            nodes = [topo.node(n) for n in node_ids]
            kinds = sorted({n.kind for n in nodes})
            self.summary.setText(f"{len(nodes)} node(s): {', '.join(kinds)}"
                                 if len(nodes) > 1 else f"{nodes[0].kind} · id {nodes[0].id}")
            name = _common(n.name for n in nodes)
            self.name.setText(name or "")
            self.name.setPlaceholderText(MIXED if name is None else "")
            self.model.clear()
            kind = _common(n.kind for n in nodes)
            models = ([d.key for d in topo.catalog.models_for_kind(kind)] if kind else [])
            self.model.addItems(sorted(models))
            self.model.setEnabled(bool(models))
            current = _common(n.model for n in nodes)
            self.model.setCurrentIndex(self.model.findText(current) if current else -1)
            self.group.clear()
            self.group.addItem("(none)", None)
            for g in sorted(topo.groups(), key=lambda g: g.name):
                self.group.addItem(f"{g.name} ({g.kind})", g.id)
            grp = _common(n.group for n in nodes)
            self.group.setCurrentIndex(self.group.findData(grp) if len({n.group for n in nodes})
                                       == 1 else -1)
            plane = _common(n.plane for n in nodes)
            self.node_plane.setCurrentIndex(self.node_plane.findText(plane) if plane else -1)
            self.node_failed.setChecked(all(n.failed for n in nodes))
            return
        links = [topo.link(lk) for lk in link_ids]
        cat = topo.catalog
        self.summary.setText(f"{len(links)} link bundle(s)" if len(links) > 1 else
                             f"link {links[0].id}: {topo.node(links[0].a).name} — "
                             f"{topo.node(links[0].b).name}")
        self.tech.clear()
        keys = self._compatible_techs(links)
        current = _common(lk.tech for lk in links)
        if current is not None and current not in keys:
            keys.insert(0, current)
        for key in keys:
            self.tech.addItem(f"{cat.tech(key).name} ({key})", key)
        tech = _common(lk.tech for lk in links)
        self.tech.setCurrentIndex(self.tech.findData(tech) if tech else -1)
        count = _common(lk.count for lk in links)
        self.count.setValue(count or 1)
        plane = _common(lk.plane for lk in links)
        self.link_plane.setCurrentIndex(self.link_plane.findText(plane) if plane else -1)
        self.link_failed.setChecked(all(lk.failed for lk in links))
        total = sum(lk.count * cat.tech(lk.tech).GBps for lk in links)
        self.link_info.setText(f"{total:,.1f} GB/s per direction (line rate)")

    def _compatible_techs(self, links) -> list[str]:
        """Technologies every selected link's two ends can take, fastest first."""
        topo = self.document.topology
        common: list[str] | None = None
        for lk in links:
            keys = [t.key for t in topo.catalog.compatible_techs(topo.node(lk.a).model,
                                                                 topo.node(lk.b).model)]
            common = keys if common is None else [k for k in common if k in keys]
        return common or []

    # ------------------------------------------------------------ form -> commands
    def _push(self, command) -> None:
        try:
            self.document.push(command)
        except DesignError as exc:
            self.message.emit(str(exc))
            self.refresh()

    def _refuse(self, text: str) -> None:
        self.message.emit(text)
        self.refresh()

    def _edit_nodes(self, **change) -> None:
        if self._updating:
            return
        ids = self.scene.selected_node_ids()
        topo = self.document.topology
        key, value = next(iter(change.items()))
        if not ids or all(getattr(topo.node(n), key) == value for n in ids):
            return
        if key == "name":
            value = change["name"] = value.strip()
            if not value:
                return self._refuse("A node needs a name")
        if key == "model":
            problem = self._stranded_link(ids, value)
            if problem:
                return self._refuse(problem)
        self._push(SetNodeProps(ids, **change))

    def _stranded_link(self, node_ids: list[str], model: str) -> str | None:
        """Why changing these nodes to ``model`` would leave a link without a port."""
        topo = self.document.topology
        dev = topo.catalog.device(model)
        for nid in node_ids:
            for lk in topo.links_of(nid):
                tech = topo.catalog.tech(lk.tech)
                group = dev.port_group_for(tech)
                if group is None or not group.speed_ok(tech):
                    return (f"{topo.node(nid).name} cannot become a {model}: its link {lk.id} "
                            f"({tech.name}) would have no port")
        return None

    def _edit_links(self, **change) -> None:
        if self._updating:
            return
        ids = self.scene.selected_link_ids()
        topo = self.document.topology
        key, value = next(iter(change.items()))
        if not ids or value is None or all(getattr(topo.link(lk), key) == value for lk in ids):
            return
        links = [topo.link(lk) for lk in ids]
        if key == "tech" and value not in self._compatible_techs(links):
            return self._refuse(f"{topo.catalog.tech(value).name} does not fit the ports at "
                                "both ends of every selected link")
        if key == "count":
            for lk in links:
                extra = value - lk.count
                for end in (lk.a, lk.b):
                    if extra > 0 and topo.ports_free(end, lk.tech) < extra:
                        free = max(topo.ports_free(end, lk.tech), 0)
                        return self._refuse(
                            f"{topo.node(end).name} has {free:g} free port(s) for "
                            f"{topo.catalog.tech(lk.tech).name}; {lk.id} cannot grow by {extra}")
        self._push(SetLinkProps(ids, **change))
