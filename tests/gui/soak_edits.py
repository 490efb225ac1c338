"""`EditOps`: the soak test's operations that edit the design (servers pasted, palette
drops, Shift-dragged links, node drags and nudges, delete, duplicate, copy/paste, cut),
mixed into `tests.gui.soak_ops.Soak`, whose helpers and state they use."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, Qt
from PySide6.QtWidgets import QApplication

from designer.gui.canvas.interactions import LinkDrawing, best_link, component_mime
from designer.model.commands import AddLink
from designer.model.topology import Link

CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier
ALT = Qt.KeyboardModifier.AltModifier
NO_MOD = Qt.KeyboardModifier.NoModifier


class EditOps:
    """Edits of the design, one per ``op_`` method, each returning what it did."""

    def _copied_server(self) -> QMimeData | None:
        """The clipboard after copying the first server of the opening design (for
        `op_add_server`), or None when it has no group with GPUs."""
        topo = self.topo
        group = next((g.id for g in topo.groups()
                      if any(topo.node(n).kind == "gpu" for n in topo.members(g.id))), None)
        if group is None:
            return None
        self._select(topo.members(group))
        self.window.actions_by_name["copy"].trigger()
        self._select()
        source = QApplication.clipboard().mimeData()
        copied = QMimeData()
        for fmt in source.formats():
            copied.setData(fmt, source.data(fmt))
        return copied

    def op_add_server(self) -> str:
        """Paste a copy of an opening server (GPUs on NVSwitches, NICs, host): random
        edits wear a design down to loose parts, an architect adds whole servers."""
        if self.server is None:
            return "no server to paste"
        copied = QMimeData()
        for fmt in self.server.formats():
            copied.setData(fmt, self.server.data(fmt))
        QApplication.clipboard().setMimeData(copied)
        before = len(self.topo)
        self._trigger_or_key("paste", Qt.Key.Key_V, CTRL)
        return f"+{len(self.topo) - before} nodes"

    def op_add_node(self) -> str:
        kind, model = self.rng.choice(self.palette)
        rect = self.window.view.viewport().rect()
        pt = QPoint(self.rng.randrange(20, rect.width() - 20),
                    self.rng.randrange(20, rect.height() - 20))
        before = len(self.topo)
        free = self.rng.random() < 0.2
        accepted = self.mouse.drop(component_mime(kind, model), pt, ALT if free else NO_MOD)
        assert accepted["drop"] and len(self.topo) == before + 1, (kind, model, accepted)
        return f"{kind}/{model}"

    def op_add_link(self) -> str:
        ids = self._node_ids()
        if len(ids) < 2:
            return "too few nodes"
        a = self.rng.choice(ids)
        link = None
        for b in self.rng.sample(ids, min(len(ids), 30)):
            got = best_link(self.window.scene, a, b) if b != a else None
            if isinstance(got, Link):
                link = got
                break
        if link is None:
            return f"no partner for {a}"
        before = self.topo.graph.number_of_edges()
        by_mouse = self.rng.random() < 0.6  # drawn first: the same stream either way
        pa, pb = self._visible_node_at(link.a), self._visible_node_at(link.b)
        if by_mouse and pa is not None and pb is not None:
            self.mouse.drag(pa, pb, SHIFT, steps=3)  # Shift-drag draws a link
            how = "shift-drag"
        elif pb is not None:  # the link tool's interaction object, released on b
            scene = self.window.scene
            drawing = LinkDrawing(scene, scene.nodes[link.a])
            drawing.move(scene.nodes[link.b].pos())
            drawing.finish(scene.nodes[link.b].pos())
            how = "link-drawing"
        else:  # b is off screen or under another node: the command the drawing pushes
            self.window.document.push(AddLink(link))
            how = "command"
        self.counts[f"add_link:{how}"] += 1
        return f"{link.a}-{link.b} {link.tech} via {how}: {before}->" \
               f"{self.topo.graph.number_of_edges()}"

    def op_drag(self) -> str:
        ids = self._node_ids()
        if not ids:
            return "empty"
        nid = self.rng.choice(ids)
        dx, dy = self.rng.uniform(-240, 240), self.rng.uniform(-160, 160)
        free = self.rng.random() < 0.2  # Alt: off the grid
        pt = self._visible_node_at(nid)
        if pt is not None:
            end = QPoint(pt.x() + round(dx / 4), pt.y() + round(dy / 4))
            self.mouse.drag(pt, end, ALT if free else NO_MOD, steps=4)
            self.counts["drag:mouse"] += 1
            return f"{nid} by mouse"
        n = self.topo.node(nid)
        self.window.scene.push_move({nid: (n.x + dx, n.y + dy)}, "Move 1 node(s)")
        return f"{nid} by push_move"

    def op_nudge(self) -> str:
        self._select(self._some_nodes())
        key = self.rng.choice([Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Up,
                               Qt.Key.Key_Down])
        before = self.stack.index()
        self._key(key, SHIFT if self.rng.random() < 0.3 else NO_MOD)
        if self.window.scene.selected_node_ids():
            assert self.stack.index() == before + 1, "an arrow key did not nudge"
        return key.name

    def op_delete(self) -> str:
        nodes = self._some_nodes(3) if self.rng.random() < 0.7 else []
        links = self._some_links() if self.rng.random() < 0.5 or not nodes else []
        self._select(nodes, links)
        selected = self.window.scene.selected_node_ids()
        how = self._trigger_or_key("delete", Qt.Key.Key_Delete, NO_MOD)
        gone = [n for n in selected if self.topo.has_node(n)]
        assert not gone, f"Delete ({how}) left selected nodes {gone}"
        return f"{len(selected)} nodes {len(links)} links via {how}"

    def op_duplicate(self) -> str:
        self._select(self._some_nodes(5))
        before = len(self.topo)
        how = self._trigger_or_key("duplicate", Qt.Key.Key_D, CTRL)
        return f"{len(self.topo) - before} nodes via {how}"

    def op_copy_paste(self) -> str:
        self._select(self._some_nodes(5))
        self._trigger_or_key("copy", Qt.Key.Key_C, CTRL)
        before = len(self.topo)
        for _ in range(self.rng.randint(1, 2)):
            self._trigger_or_key("paste", Qt.Key.Key_V, CTRL)
        return f"+{len(self.topo) - before} nodes"

    def op_cut(self) -> str:
        self._select(self._some_nodes(3))
        before = len(self.topo)
        how = self._trigger_or_key("cut", Qt.Key.Key_X, CTRL)
        return f"-{before - len(self.topo)} nodes via {how}"
