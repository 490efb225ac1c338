"""Edit commands: undoing any sequence restores the exact prior state (hypothesis)."""

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from designer.model import commands as C
from designer.model.errors import DesignError
from designer.model.topology import Group, Link, Node, Topology

MODELS = {"gpu": ["H100", "H200"], "nvswitch": ["NVSwitch-gen3"], "nic": ["ConnectX-7"]}
TECHS = ["nvlink4", "pcie5", "ib-ndr"]


class UndoMachine(RuleBasedStateMachine):
    """A QUndoStack in miniature: do pushes (and drops the redo tail), undo/redo walk."""

    @initialize()
    def start(self):
        self.topo = Topology()
        self.topo.add_group(Group("n0", "node", "Node 0"))
        self.done: list[tuple[C.Command, dict, dict]] = []  # (cmd, before, after)
        self.undone: list[tuple[C.Command, dict, dict]] = []

    def _push(self, cmd: C.Command) -> None:
        before = self.topo.state()
        try:
            cmd.do(self.topo)
        except DesignError:
            # A refused edit changes nothing (multi-edits are all-or-nothing).
            assert self.topo.state() == before
            return
        self.done.append((cmd, before, self.topo.state()))
        self.undone.clear()

    def _node_ids(self):
        return sorted(n.id for n in self.topo.nodes())

    def _link_ids(self):
        return sorted(lk.id for lk in self.topo.links())

    @rule(kind=st.sampled_from(sorted(MODELS)), data=st.data())
    def add_node(self, kind, data):
        model = data.draw(st.sampled_from(MODELS[kind]))
        nid = self.topo.new_id(kind)
        group = data.draw(st.sampled_from([None, "n0"]))
        self._push(C.AddNode(Node(nid, kind, model, nid, x=data.draw(st.integers(-500, 500)),
                                  y=0.0, group=group)))

    @rule(data=st.data())
    def add_link(self, data):
        ids = self._node_ids()
        if len(ids) < 2:
            return
        a, b = data.draw(st.lists(st.sampled_from(ids), min_size=2, max_size=2, unique=True))
        self._push(C.AddLink(Link(self.topo.new_id("link"), a, b,
                                  data.draw(st.sampled_from(TECHS)),
                                  count=data.draw(st.integers(1, 20)))))

    @rule(data=st.data())
    def remove_nodes(self, data):
        ids = self._node_ids()
        if ids:
            self._push(C.RemoveNodes(data.draw(st.lists(st.sampled_from(ids), max_size=3))))

    @rule(data=st.data())
    def remove_links(self, data):
        ids = self._link_ids()
        if ids:
            self._push(C.RemoveLinks(data.draw(st.lists(st.sampled_from(ids), max_size=3))))

    @rule(data=st.data())
    def move(self, data):
        ids = self._node_ids()
        if ids:
            chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=4))
            self._push(C.MoveNodes({n: (data.draw(st.floats(-1e4, 1e4)), 7.5) for n in chosen}))

    @rule(data=st.data())
    def set_node_props(self, data):
        ids = self._node_ids()
        if not ids:
            return
        chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3))
        change = data.draw(st.sampled_from([
            {"name": "renamed"}, {"plane": "storage"}, {"failed": True}, {"model": "H200"},
            {"group": None}, {"group": "n0"}]))
        self._push(C.SetNodeProps(chosen, **change))

    @rule(data=st.data())
    def set_link_props(self, data):
        ids = self._link_ids()
        if not ids:
            return
        chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3))
        change = data.draw(st.sampled_from([
            {"count": 3}, {"tech": "ib-ndr"}, {"plane": "management"}, {"failed": True}]))
        self._push(C.SetLinkProps(chosen, **change))

    @rule(data=st.data())
    def paste(self, data):
        ids = self._node_ids()
        if not ids:
            return
        chosen = set(data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=4)))
        nodes = [n for n in self.topo.nodes() if n.id in chosen]
        links = [lk for lk in self.topo.links() if lk.a in chosen or lk.b in chosen]
        self._push(C.PasteSubgraph([self.topo.group("n0")], nodes, links))

    @rule()
    def macro(self):
        ids = self._node_ids()
        if len(ids) >= 2:
            self._push(C.Macro([C.MoveNodes({ids[0]: (1.0, 2.0)}),
                                C.SetNodeProps([ids[1]], name="m"),
                                C.RemoveNodes([ids[0]])], "macro"))

    @rule(data=st.data())
    def group_nodes(self, data):
        ids = self._node_ids()
        if ids:
            chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=4,
                                        unique=True))
            kind = data.draw(st.sampled_from(["rack", "node", "pod"]))
            self._push(C.group_nodes(self.topo, chosen, kind, "made by hand"))

    @rule(data=st.data())
    def ungroup(self, data):
        made = sorted(g.id for g in self.topo.groups() if g.id != "n0")  # n0: other rules
        if made:
            self._push(C.ungroup(self.topo, data.draw(st.sampled_from(made))))

    @rule()
    def undo(self):
        if self.done:
            cmd, before, after = self.done.pop()
            assert self.topo.state() == after
            cmd.undo(self.topo)
            assert self.topo.state() == before
            self.undone.append((cmd, before, after))

    @rule()
    def redo(self):
        if self.undone:
            cmd, before, after = self.undone.pop()
            cmd.do(self.topo)
            assert self.topo.state() == after
            self.done.append((cmd, before, after))

    @invariant()
    def graph_matches_links(self):
        if hasattr(self, "topo"):
            assert self.topo.graph.number_of_edges() == len(self._link_ids())

    def teardown(self):
        # Undo everything: back to the very first state.
        if hasattr(self, "topo"):
            while self.done:
                self.undo()
            assert not [n for n in self.topo.nodes()]


TestUndoRestoresExactState = UndoMachine.TestCase


def test_multi_edit_is_all_or_nothing():
    t = Topology()
    t.add_node(Node("g0", "gpu", "H100", "G0"))
    t.add_node(Node("s0", "nvswitch", "NVSwitch-gen3", "S0"))
    before = t.state()
    with pytest.raises(DesignError, match="cannot be a nvswitch"):
        C.SetNodeProps(["g0", "s0"], model="H200").do(t)
    assert t.state() == before


def test_paste_remaps_ids_and_keeps_internal_links_only():
    t = Topology()
    t.add_node(Node("g0", "gpu", "H100", "G0"))
    t.add_node(Node("g1", "gpu", "H100", "G1"))
    t.add_node(Node("s0", "nvswitch", "NVSwitch-gen3", "S0"))
    t.add_link(Link("l0", "g0", "s0", "nvlink4", count=5))
    t.add_link(Link("l1", "g1", "s0", "nvlink4", count=5))
    cmd = C.PasteSubgraph([], [t.node("g0"), t.node("s0")], list(t.links()))
    cmd.do(t)
    assert len(cmd.nodes) == 2 and len(cmd.links) == 1  # l1 reaches outside the paste
    assert {n.id for n in cmd.nodes}.isdisjoint({"g0", "g1", "s0"})
    assert cmd.nodes[0].x == 40.0
    ids = [n.id for n in cmd.nodes]
    cmd.undo(t)
    cmd.do(t)  # redo keeps the same ids
    assert [n.id for n in cmd.nodes] == ids


def test_group_nodes_nests_inside_the_shared_group_and_ungroup_lifts_members():
    t = Topology()
    t.add_group(Group("su", "su", "SU"))
    for i in range(4):
        t.add_node(Node(f"g{i}", "gpu", "H100", f"GPU {i}", group="su"))
    make = C.group_nodes(t, ["g0", "g1"], "rack", "Rack A")
    make.do(t)
    rack = t.node("g0").group
    assert t.group(rack).parent == "su" and t.group(rack).name == "Rack A"
    assert t.node("g1").group == rack and t.node("g2").group == "su"
    inner = C.group_nodes(t, ["g0"], "node", "")
    inner.do(t)
    server = t.node("g0").group
    assert t.group(server).parent == rack and t.group(server).name == "node"
    C.ungroup(t, rack).do(t)  # g1 and the server group move up to the SU
    assert not t.has_group(rack)
    assert t.node("g1").group == "su" and t.group(server).parent == "su"
    mixed = C.group_nodes(t, ["g2", "g0"], "pod", "P")  # different groups: top level
    mixed.do(t)
    assert t.group(t.node("g2").group).parent is None
    with pytest.raises(DesignError):
        C.group_nodes(t, [], "rack", "none")
