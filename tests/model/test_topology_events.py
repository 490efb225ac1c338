"""`Topology.events`: one signal group, and one ``changed`` per command that still tells a
listener exactly what came, went and changed."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis.stateful import initialize, invariant, rule

from designer.model import commands as C
from designer.model.errors import DesignError
from designer.model.events import Edit
from designer.model.topology import Group, Link, Node, Topology
from tests.model.test_commands import UndoMachine


class Mirror:
    """A copy of a design kept from ``changed`` alone, as a view would keep its items."""

    def __init__(self, topo: Topology):
        self.nodes = {n.id: n for n in topo.nodes()}
        self.links = {lk.id: lk for lk in topo.links()}
        self.groups = {g.id: g for g in topo.groups()}
        self.calls = 0
        topo.events.changed.connect(self.apply)

    def apply(self, edit: Edit) -> None:
        self.calls += 1
        for name, args in edit:
            kind, what = name.split("_")
            if kind == "settings":
                continue
            store = getattr(self, kind + "s")
            item = args[-1]
            if what == "removed":
                assert store.pop(item.id) == item, name
            else:
                assert (item.id in store) == (what != "added"), name
                store[item.id] = item

    def matches(self, topo: Topology) -> bool:
        return (
            self.nodes == {n.id: n for n in topo.nodes()}
            and self.links == {lk.id: lk for lk in topo.links()}
            and self.groups == {g.id: g for g in topo.groups()}
        )


def _fabric(n: int) -> Topology:
    """``n`` GPUs in a group, each linked to one switch."""
    topo = Topology()
    topo.add_group(Group("srv", "node", "Server"))
    topo.add_node(Node("sw", "nvswitch", "NVSwitch-gen3", "NVSwitch", y=-100))
    for i in range(n):
        topo.add_node(Node(f"g{i}", "gpu", "H100", f"GPU {i}", x=10.0 * i, group="srv"))
        topo.add_link(Link(f"l{i}", f"g{i}", "sw", "nvlink4"))
    return topo


def test_a_listener_can_follow_every_event_at_once():
    topo = Topology()
    seen = []
    topo.events.connect(lambda info: seen.append(info.signal.name))
    topo.add_node(Node("g0", "gpu", "H100", "GPU 0"))
    topo.update_node("g0", x=3.0)
    topo.set_setting("routing", "ecmp")
    assert seen == ["node_added", "changed", "node_moved", "changed", "settings_changed", "changed"]


@pytest.mark.parametrize("n", [10, 1000])
def test_bulk_commands_emit_changed_once_whatever_their_size(n):
    topo = _fabric(n)
    mirror = Mirror(topo)
    gpus = [f"g{i}" for i in range(n)]
    commands = [
        C.PasteSubgraph(
            [topo.group("srv")],
            [topo.node(g) for g in gpus] + [topo.node("sw")],
            list(topo.links()),
        ),
        C.MoveNodes({g: (1.0, 2.0) for g in gpus}),
        C.SetLinkProps([f"l{i}" for i in range(n)], count=2),
        C.SetNodeProps(gpus, failed=True),
        C.ungroup(topo, "srv"),
        C.RemoveLinks([f"l{i}" for i in range(0, n, 2)]),
        C.RemoveNodes(gpus),
    ]
    for cmd in commands:
        before = mirror.calls
        cmd.do(topo)
        assert mirror.calls == before + 1, cmd.text
        assert mirror.matches(topo)
    for cmd in reversed(commands):
        before = mirror.calls
        cmd.undo(topo)
        assert mirror.calls == before + 1, cmd.text
        assert mirror.matches(topo)
    pasted = commands[0]
    assert len(pasted.nodes) == n + 1 and len(pasted.links) == n


def test_removing_a_node_with_its_links_is_one_change():
    topo = _fabric(3)
    edits = []
    topo.events.changed.connect(edits.append)
    topo.remove_node("sw")
    assert [e.names() for e in edits] == [("link_removed",) * 3 + ("node_removed",)]


def test_paused_blocks_nest_and_an_error_still_reports_what_was_done():
    topo = _fabric(2)
    edits = []
    topo.events.changed.connect(edits.append)
    with pytest.raises(DesignError), topo.events.paused():
        topo.update_node("g0", x=1.0)
        with topo.events.paused():
            topo.update_node("g1", x=1.0)
        assert edits == [] and topo.events.is_paused
        topo.update_node("nowhere", x=1.0)
    assert [e.names() for e in edits] == [("node_moved", "node_moved")]
    assert not topo.events.is_paused


def test_a_command_that_changes_nothing_emits_nothing():
    topo = _fabric(2)
    edits = []
    topo.events.changed.connect(edits.append)
    C.SetNodeProps(["g0", "g1"], failed=False).do(topo)
    assert edits == []


def test_a_bulk_load_tells_a_listener_every_item_in_one_change():
    source = _fabric(5)
    topo = Topology()
    mirror = Mirror(topo)
    topo.add_parts(source.groups(), source.nodes(), source.links())
    assert mirror.calls == 1 and mirror.matches(topo)


class EventMachine(UndoMachine):
    """The undo state machine, with a mirror kept from ``changed`` alone: it matches the
    design after every do, undo and redo, each of which emits ``changed`` at most once."""

    @initialize()
    def start(self):
        super().start()
        self.mirror = Mirror(self.topo)

    def _counted(self, run):
        before, calls = self.topo.state(), self.mirror.calls
        try:
            run()
        finally:
            made = self.mirror.calls - calls
            assert made <= 1
            assert made == 1 or self.topo.state() == before

    def _push(self, cmd):
        self._counted(lambda: super(EventMachine, self)._push(cmd))

    @rule()
    def undo(self):
        self._counted(super().undo)

    @rule()
    def redo(self):
        self._counted(super().redo)

    @invariant()
    def mirror_matches(self):
        if hasattr(self, "mirror"):
            assert self.mirror.matches(self.topo)


TestMirrorFollowsEveryCommand = EventMachine.TestCase
TestMirrorFollowsEveryCommand.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None
)
