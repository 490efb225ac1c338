"""Names a paste or duplicate gives its copies: unique where they land, and readable."""

from __future__ import annotations

from designer.model import commands as C
from designer.model.naming import UniqueNames
from designer.model.topology import Group, Link, Node, Topology


def test_a_free_name_is_kept_and_a_taken_one_gets_the_next_free_form():
    names = UniqueNames(["Board A", "Node 1", "Node 2", "Node 4", "leaf07"])
    assert names.claim("Spine") == "Spine"
    assert names.claim("Board A") == "Board A (2)"
    assert names.claim("Board A") == "Board A (3)"
    # A trailing number continues after the highest one in use, keeping its width.
    assert names.claim("Node 2") == "Node 5"
    assert names.claim("Node 1") == "Node 6"
    assert names.claim("leaf07") == "leaf08"
    # A copy of a copy counts on from the same base.
    assert names.claim("Board A (2)") == "Board A (4)"


def _design() -> Topology:
    t = Topology()
    t.add_group(Group("rack", "rack", "Rack 1"))
    t.add_group(Group("b", "node", "Board A", parent="rack"))
    for i in range(2):
        t.add_node(Node(f"g{i}", "gpu", "H100", f"GPU {i}", group="b"))
    t.add_node(Node("s0", "nvswitch", "NVSwitch-gen3", "NVSwitch", group="b"))
    t.add_link(Link("l0", "g0", "s0", "nvlink4", count=5))
    return t


def test_a_pasted_group_gets_a_name_no_other_group_has():
    t = _design()
    cmd = C.PasteSubgraph([t.group("b")], [t.node(n) for n in t.members("b")], list(t.links()))
    cmd.do(t)
    names = [g.name for g in t.groups()]
    assert len(names) == len(set(names)) == 3
    # Inside the new group its members keep their names: they have no namesakes there.
    (copy,) = cmd.groups
    assert sorted(t.node(n).name for n in t.members(copy.id)) == ["GPU 0", "GPU 1", "NVSwitch"]


def test_nodes_pasted_beside_their_originals_get_names_unique_in_their_group():
    t = _design()
    cmd = C.PasteSubgraph([], [t.node("g0"), t.node("s0")], list(t.links()))
    cmd.do(t)
    siblings = [t.node(n).name for n in t.members("b")]
    assert len(siblings) == len(set(siblings)) == 5
    assert {n.group for n in cmd.nodes} == {"b"}
    ids = [n.id for n in cmd.nodes]
    names = [n.name for n in cmd.nodes]
    cmd.undo(t)
    cmd.do(t)  # redo gives the same copies, names included
    assert [n.id for n in cmd.nodes] == ids and [n.name for n in cmd.nodes] == names
