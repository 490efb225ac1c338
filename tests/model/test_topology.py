"""Topology storage, validation and events."""

import pytest

from designer.model.errors import DesignError
from designer.model.topology import Group, Link, Node, Topology


@pytest.fixture
def topo():
    t = Topology()
    t.add_group(Group("n0", "node", "Node 0"))
    t.add_node(Node("g0", "gpu", "H100", "GPU 0", group="n0"))
    t.add_node(Node("g1", "gpu", "H100", "GPU 1", x=100, group="n0"))
    t.add_node(Node("s0", "nvswitch", "NVSwitch-gen3", "NVSwitch 0", y=-100, group="n0"))
    return t


def test_graph_mirrors_model_and_is_read_only(topo):
    topo.add_link(Link("l0", "g0", "s0", "nvlink4", count=5))
    topo.add_link(Link("l1", "g0", "s0", "nvlink4", count=4))  # parallel bundles allowed
    g = topo.graph
    assert g.number_of_nodes() == 3 and g.number_of_edges() == 2
    assert g.nodes["g0"]["model"] == "H100"
    assert g.edges["g0", "s0", "l1"]["count"] == 4
    with pytest.raises(Exception):  # noqa: B017 - networkx raises NetworkXError on a frozen view
        g.add_node("x")
    assert topo.link("l1") == Link("l1", "g0", "s0", "nvlink4", count=4)


def test_no_cap_on_parallel_links(topo):
    for i in range(30):
        topo.add_link(Link(f"l{i}", "g0", "s0", "nvlink4"))
    assert len(topo.links_of("g0")) == 30
    # ...but the port budget notices: the H100 has 18 NVLink ports
    assert topo.over_subscribed_ports()[0][:2] == ("g0", "nvlink")


@pytest.mark.parametrize("link, fragment", [
    (Link("bad", "g0", "nope", "nvlink4"), "no node 'nope'"),
    (Link("bad", "g0", "g0", "nvlink4"), "both ends"),
    (Link("bad", "g0", "s0", "warp-drive"), "unknown link technology"),
    (Link("bad", "g0", "s0", "nvlink4", count=0), "count"),
    (Link("bad", "g0", "s0", "nvlink4", plane="astral"), "plane"),
    (Link("g1", "g0", "s0", "nvlink4"), "already used"),
])
def test_impossible_links_are_refused_with_a_named_reason(topo, link, fragment):
    with pytest.raises(DesignError, match=fragment):
        topo.add_link(link)
    assert not topo.has_link("bad")


@pytest.mark.parametrize("node, fragment", [
    (Node("x", "gpu", "QM9700", "X"), "cannot be a gpu"),
    (Node("x", "gpu", "H900", "X"), "unknown device model"),
    (Node("x", "teapot", "H100", "X"), "unknown kind"),
    (Node("x y", "gpu", "H100", "X"), "not a valid id"),
    (Node("x", "gpu", "H100", "X", group="nowhere"), "no group"),
    (Node("x", "gpu", "H100", "X", x=float("nan")), "finite"),
])
def test_invalid_nodes_are_refused(topo, node, fragment):
    with pytest.raises(DesignError, match=fragment):
        topo.add_node(node)


def test_events_fire_once_and_not_when_nothing_changed(topo):
    seen = []
    topo.events.node_moved.connect(lambda n: seen.append(("moved", n.id)))
    topo.events.node_changed.connect(lambda old, new: seen.append(("changed", new.id)))
    topo.events.changed.connect(lambda: seen.append("any"))
    topo.update_node("g0", x=0.0, y=0.0)  # same position: nothing
    assert seen == []
    topo.update_node("g0", x=5.0)
    topo.update_node("g0", name="GPU zero")
    assert seen == [("moved", "g0"), "any", ("changed", "g0"), "any"]


def test_remove_node_takes_its_links(topo):
    topo.add_link(Link("l0", "g0", "s0", "nvlink4", count=5))
    removed = []
    topo.events.link_removed.connect(lambda lk: removed.append(lk.id))
    node, links = topo.remove_node("g0")
    assert node.id == "g0" and [lk.id for lk in links] == ["l0"] and removed == ["l0"]
    assert not topo.has_link("l0")


def test_groups_members_and_removal_rules(topo):
    topo.add_group(Group("su0", "su", "SU 0"))
    topo.update_group("n0", parent="su0")
    assert sorted(topo.members("su0")) == ["g0", "g1", "s0"]
    with pytest.raises(DesignError, match="still has"):
        topo.remove_group("su0")
    with pytest.raises(DesignError, match="loops"):
        topo.update_group("su0", parent="n0")


def test_new_id_is_unique(topo):
    ids = {topo.new_id("gpu") for _ in range(50)}
    assert len(ids) == 50 and not any(topo.has_node(i) for i in ids)


def test_settings_validated(topo):
    assert topo.set_setting("routing", "ecmp") == "adaptive"
    with pytest.raises(DesignError, match="routing"):
        topo.set_setting("routing", "magic")


def test_ports_free_counts_links_in_the_same_port_group(topo):
    assert topo.ports_free("g0", "nvlink4") == 18
    topo.add_link(Link("l0", "g0", "s0", "nvlink4", count=5))
    assert topo.ports_free("g0", "nvlink4") == 13
    assert topo.ports_free("g0", "ib-ndr") == 0  # no InfiniBand port on a GPU


def test_scenario_and_training_settings_are_validated_and_copied(topo):
    topo.set_setting("scenario", {"collective": "alltoall", "bytes": 4096})
    assert topo.settings["scenario"]["algorithm"] == "auto"  # defaults filled in
    topo.settings["scenario"]["bytes"] = 1  # a copy: the model is not changed
    assert topo.settings["scenario"]["bytes"] == 4096
    with pytest.raises(DesignError, match="ranks"):
        topo.set_setting("scenario", {"ranks": 1})
    with pytest.raises(DesignError, match="overlap"):
        topo.set_setting("training", {"overlap": 2})
