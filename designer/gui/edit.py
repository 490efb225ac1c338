"""`EditController`: clipboard, delete, select all, align/distribute, auto layout, group
and ungroup, find.

Each operation is one model command (or macro) pushed on the document, so every one is
a single undo step.  The clipboard carries a sub-graph as JSON under a private MIME type
(plus a plain-text summary), so copy/paste also works between two windows.
"""

from __future__ import annotations

import atexit
import json
from dataclasses import asdict

from PySide6.QtCore import QMimeData, QObject, Signal
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QInputDialog,
    QLineEdit,
    QWidget,
)

from designer.gui.canvas.placement import copies_rect, paste_offset
from designer.gui.canvas.scene import FabricScene
from designer.gui.canvas.view import FabricView
from designer.gui.document import Document
from designer.model.commands import (
    Macro,
    MoveNodes,
    PasteSubgraph,
    RemoveLinks,
    RemoveNodes,
    group_nodes,
    ungroup,
)
from designer.model.errors import DesignError
from designer.model.templates.layout import layered_layout
from designer.model.topology import GROUP_KINDS, Group, Link, Node

SUBGRAPH_MIME = "application/x-fabric-designer-subgraph"


_clipboard_release_registered = False


def _release_clipboard_at_exit() -> None:
    """The clipboard owns our QMimeData; Qt deletes it from a C++ exit handler after
    Python is gone, which crashes the process at exit.  Clear the clipboard while Python
    still runs (an atexit hook), once."""
    global _clipboard_release_registered
    if not _clipboard_release_registered:
        atexit.register(_clear_clipboard)
        _clipboard_release_registered = True


def _clear_clipboard() -> None:
    if QApplication.instance() is not None:
        QApplication.clipboard().clear()


class EditController(QObject):
    """Edit operations on the selection of ``scene``."""

    message = Signal(str)

    def __init__(self, document: Document, scene: FabricScene, view: FabricView,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.document = document
        self.scene = scene
        self.view = view

    def _push(self, command) -> bool:
        try:
            self.document.push(command)
            return True
        except DesignError as exc:
            self.message.emit(str(exc))
            return False

    # ------------------------------------------------------------ clipboard
    def selection_subgraph(self) -> tuple[list[Group], list[Node], list[Link]]:
        """Selected nodes, the links among them, and groups wholly inside the selection."""
        topo = self.document.topology
        ids = set(self.scene.selected_node_ids())
        nodes = [topo.node(n) for n in sorted(ids)]
        links = [lk for lk in topo.links() if lk.a in ids and lk.b in ids]
        groups = [g for g in topo.groups()
                  if (members := topo.members(g.id)) and set(members) <= ids]
        return groups, nodes, links

    def copy(self) -> bool:
        groups, nodes, links = self.selection_subgraph()
        if not nodes:
            self.message.emit("Nothing selected to copy")
            return False
        payload = {"groups": [asdict(g) for g in groups], "nodes": [asdict(n) for n in nodes],
                   "links": [asdict(lk) for lk in links]}
        mime = QMimeData()
        mime.setData(SUBGRAPH_MIME, json.dumps(payload).encode())
        mime.setText(f"{len(nodes)} node(s), {len(links)} link(s) from Fabric Designer")
        QApplication.clipboard().setMimeData(mime)
        _release_clipboard_at_exit()
        self.message.emit(f"Copied {len(nodes)} node(s) and {len(links)} link(s)")
        return True

    def cut(self) -> None:
        if self.copy():
            self.delete(text="Cut")

    def paste(self) -> None:
        mime = QApplication.clipboard().mimeData()
        if mime is None or not mime.hasFormat(SUBGRAPH_MIME):
            self.message.emit("The clipboard holds no Fabric Designer items")
            return
        try:
            payload = json.loads(bytes(mime.data(SUBGRAPH_MIME)).decode())
            groups = [Group(**g) for g in payload["groups"]]
            nodes = [Node(**n) for n in payload["nodes"]]
            links = [Link(**lk) for lk in payload["links"]]
        except (ValueError, KeyError, TypeError) as exc:
            self.message.emit(f"The clipboard's Fabric Designer data is damaged: {exc}")
            return
        if self._add_copies(groups, nodes, links, "Paste"):
            self.message.emit(f"Pasted {len(nodes)} node(s), {len(links)} link(s)")

    def duplicate(self) -> None:
        groups, nodes, links = self.selection_subgraph()
        if not nodes:
            self.message.emit("Nothing selected to duplicate")
            return
        self._add_copies(groups, nodes, links, "Duplicate")

    def _add_copies(self, groups: list[Group], nodes: list[Node], links: list[Link],
                    verb: str) -> bool:
        """Add copies in the nearest free spot (`paste_offset`), under names unique where
        they land (`PasteSubgraph`), as one undo step; select and show them."""
        self.scene.refresh()  # frames fitted to the latest edit (refitting is deferred)
        frames = {gid: item.frame_rect() for gid, item in self.scene.groups.items()}
        offset = paste_offset(self.document.topology, frames, groups, nodes)
        cmd = PasteSubgraph(groups, nodes, links, offset=offset)
        cmd.text = f"{verb} {len(nodes)} node(s)"
        if not self._push(cmd):
            return False
        self.scene.select_ids([n.id for n in cmd.nodes], [lk.id for lk in cmd.links])
        self.view.ensureVisible(copies_rect(cmd.groups, cmd.nodes), 40, 40)
        return True

    # ------------------------------------------------------------ delete / select
    def delete(self, text: str = "Delete") -> None:
        node_ids = self.scene.selected_node_ids()
        link_ids = [lid for lid in self.scene.selected_link_ids()
                    if not ({self.document.topology.link(lid).a,
                             self.document.topology.link(lid).b} & set(node_ids))]
        if not node_ids and not link_ids:
            return
        # Drop the selection first, in one go: Qt announces every removed selected item
        # (each listener rescanning the selection), quadratic for Select All + Delete.
        self.scene.select_ids()
        parts = []
        if link_ids:
            parts.append(RemoveLinks(link_ids))
        if node_ids:
            parts.append(RemoveNodes(node_ids))
        self._push(Macro(parts, f"{text} {len(node_ids)} node(s), {len(link_ids)} link(s)"))

    def select_all(self) -> None:
        # The model's ids: a big design's collapsed boxes have no items for their nodes.
        self.scene.select_ids([n.id for n in self.document.topology.nodes()],
                              list(self.scene.links))

    # ------------------------------------------------------------ arrange
    def _selected_nodes(self) -> list[Node]:
        topo = self.document.topology
        return [topo.node(n) for n in self.scene.selected_node_ids()]

    def align(self, how: str) -> None:
        """``left``, ``hcenter``, ``top`` or ``vcenter`` for the selected nodes."""
        nodes = self._selected_nodes()
        if len(nodes) < 2:
            self.message.emit("Select at least two nodes to align")
            return
        xs, ys = [n.x for n in nodes], [n.y for n in nodes]
        target = {"left": min(xs), "hcenter": sum(xs) / len(xs),
                  "top": min(ys), "vcenter": sum(ys) / len(ys)}[how]
        vertical_line = how in ("left", "hcenter")
        pos = {n.id: ((target, n.y) if vertical_line else (n.x, target)) for n in nodes}
        self._push(MoveNodes(pos, f"Align {how}"))

    def distribute(self, axis: str) -> None:
        """Even spacing along ``h`` or ``v`` between the outermost selected nodes."""
        nodes = self._selected_nodes()
        if len(nodes) < 3:
            self.message.emit("Select at least three nodes to distribute")
            return
        key = (lambda n: n.x) if axis == "h" else (lambda n: n.y)
        nodes.sort(key=key)
        lo, hi = key(nodes[0]), key(nodes[-1])
        step = (hi - lo) / (len(nodes) - 1)
        pos = {n.id: ((lo + i * step, n.y) if axis == "h" else (n.x, lo + i * step))
               for i, n in enumerate(nodes)}
        self._push(MoveNodes(pos, "Distribute"))

    def auto_layout(self) -> None:
        pos = layered_layout(self.document.topology)
        if pos and self._push(MoveNodes(pos, "Auto layout")):
            self.view.fit()

    # ------------------------------------------------------------ groups
    def group_selection(self, kind: str | None = None, name: str | None = None,
                        parent: QWidget | None = None) -> str | None:
        """Put the selected nodes in a new group (asks for its kind and name unless
        given); returns the group's id.  One undo step."""
        node_ids = self.scene.selected_node_ids()
        if not node_ids:
            self.message.emit("Select the nodes to group")
            return None
        if kind is None:
            answer = ask_group(parent, len(node_ids))
            if answer is None:
                return None
            kind, name = answer
        try:
            cmd = group_nodes(self.document.topology, node_ids, kind, name or "")
        except DesignError as exc:
            self.message.emit(str(exc))
            return None
        if not self._push(cmd):
            return None
        gid = cmd.commands[0].group.id
        self.scene.select_ids(node_ids)
        self.message.emit(f"Grouped {len(node_ids)} node(s) as {cmd.commands[0].group.name}")
        return gid

    def ungroup_selection(self) -> None:
        """Dissolve the innermost group holding every selected node (its members and
        sub-groups move up a level).  One undo step."""
        topo = self.document.topology
        node_ids = self.scene.selected_node_ids()
        if not node_ids:
            self.message.emit("Select nodes of the group to ungroup")
            return
        chains = []
        for nid in node_ids:
            chain, g = [], topo.node(nid).group
            while g is not None:
                chain.append(g)
                g = topo.group(g).parent
            chains.append(chain)
        common = set(chains[0]).intersection(*map(set, chains[1:]))
        gid = next((g for g in chains[0] if g in common), None)  # innermost first
        if gid is None:
            self.message.emit("The selected nodes share no group")
            return
        name = topo.group(gid).name
        if self._push(ungroup(topo, gid)):
            self.message.emit(f"Ungrouped {name}")

    # ------------------------------------------------------------ find
    def find(self, text: str | None = None, parent: QWidget | None = None) -> str | None:
        """Select and centre the first node whose name or id contains ``text``."""
        if text is None:
            text, ok = QInputDialog.getText(parent, "Find", "Node name or id:")
            if not ok or not text:
                return None
        needle = text.lower()
        topo = self.document.topology
        exact = [n for n in topo.nodes() if needle in (n.name.lower(), n.id.lower())]
        hits = exact or [n for n in topo.nodes()
                         if needle in n.name.lower() or needle in n.id.lower()]
        if not hits:
            self.message.emit(f"No node matches {text!r}")
            return None
        node = hits[0]
        self.scene.select_ids([node.id])
        self.view.center_on_node(node.id)
        more = f" (1 of {len(hits)})" if len(hits) > 1 else ""
        self.message.emit(f"Found {node.name}{more}")
        return node.id


def ask_group(parent: QWidget | None, n_nodes: int) -> tuple[str, str] | None:
    """Ask for a new group's kind and name; None if cancelled."""
    dialog = QDialog(parent)
    dialog.setWindowTitle("Group")
    form = QFormLayout(dialog)
    kind = QComboBox(dialog)
    kind.addItems(list(GROUP_KINDS))
    kind.setCurrentText("rack")
    name = QLineEdit(dialog)
    name.setPlaceholderText("e.g. Rack 12")
    form.addRow(f"Group {n_nodes} node(s) as a", kind)
    form.addRow("Name", name)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                               | QDialogButtonBox.StandardButton.Cancel, dialog)
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    form.addRow(buttons)
    name.setFocus()
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return None
    return kind.currentText(), name.text().strip()
