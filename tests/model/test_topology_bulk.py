"""`Topology.add_parts` / `from_parts` build exactly the design that one call per item
(`Topology.extend`) builds, and refuse the same first bad item with the same message."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from designer.model.elements import GROUP_FIELDS, LINK_FIELDS, NODE_FIELDS
from designer.model.errors import DesignError
from designer.model.naming import natural_key
from designer.model.templates import build_template
from designer.model.topology import Group, Link, Node, PartError, Topology


def _hand_made() -> tuple[list[Group], list[Node], list[Link]]:
    """Nested groups, failed nodes and links, parallel bundles, several planes, integer
    and float positions, a node outside any group."""
    groups = [
        Group("su0", "su", "SU 0"),
        Group("r0", "rack", "Rack 0", parent="su0"),
        Group("n0", "node", "Node 0", parent="r0"),
    ]
    nodes = [
        Node("g-10", "gpu", "H100", "GPU 10", x=3, y=-2.5, group="n0"),
        Node("g-2", "gpu", "H100", "GPU 2", x=100.0, group="n0", failed=True),
        Node("sw", "nvswitch", "NVSwitch-gen3", "NVSwitch", y=-100, group="n0"),
        Node("leaf:1", "leaf", "QM9700", "Leaf 1", plane="storage"),
        Node("nic/0", "nic", "ConnectX-7", "NIC 0", group="r0"),
    ]
    links = [
        Link("l0", "g-10", "sw", "nvlink4", count=9),
        Link("l1", "sw", "g-10", "nvlink4", count=9),  # parallel, ends the other way
        Link("l2", "g-2", "sw", "nvlink4", count=18, failed=True),
        Link("l3", "nic/0", "leaf:1", "ib-ndr", plane="storage"),
        Link("l4", "g-10", "sw", "nvlink4"),
    ]
    return groups, nodes, links


def _parts(t: Topology) -> tuple[list[Group], list[Node], list[Link]]:
    """A design's items in its own order (groups parents first, as it holds them)."""
    return list(t.groups()), list(t.nodes()), list(t.links())


def _as_dicts(items: list, names: tuple[str, ...]) -> list[dict]:
    return [{f: getattr(item, f) for f in names} for item in items]


def _assert_same(bulk: Topology, one_by_one: Topology) -> None:
    """Same state, the same graph (node and edge order, attributes, adjacency), the
    same solver columns."""
    assert bulk.state() == one_by_one.state()
    gb, go = bulk.graph, one_by_one.graph
    assert list(gb.nodes(data=True)) == list(go.nodes(data=True))
    assert list(gb.edges(keys=True, data=True)) == list(go.edges(keys=True, data=True))
    assert {n: dict(gb.adj[n]) for n in gb} == {n: dict(go.adj[n]) for n in go}
    assert list(bulk.links()) == list(one_by_one.links())
    assert bulk.link_count() == one_by_one.link_count()
    cb, co = bulk.columns(), one_by_one.columns()
    for f in dataclasses.fields(cb):
        a, b = getattr(cb, f.name), getattr(co, f.name)
        if hasattr(a, "tolist"):
            a, b = a.tolist(), b.tolist()
        assert a == b, f.name
    # Both stay editable the same way afterwards.
    for t in (bulk, one_by_one):
        first = next(t.links())
        t.remove_link(first.id)
        t.add_link(first)
    assert bulk.state() == one_by_one.state()


def _one_by_one(groups, nodes, links, name="x") -> Topology:
    t = Topology(name=name)
    t.extend(groups, nodes, links)
    return t


@pytest.mark.parametrize(
    "template, params",
    [
        ("hgx", {}),
        ("superpod", {"sus": 1, "storage": True}),
        ("rail-cluster", {"nodes": 6, "nics_per_node": 8}),
        ("fat-tree", {"k": 4}),
        ("torus3d", {"x": 3, "y": 2, "z": 2}),
        ("leaf-spine", {}),
        ("nvl72", {}),
    ],
)
def test_templates_build_the_same_both_ways(template, params):
    built = build_template(template, **params)
    groups, nodes, links = _parts(built)
    bulk = Topology.from_parts(groups, nodes, links, name=built.name)
    _assert_same(bulk, _one_by_one(groups, nodes, links, built.name))
    # As mappings of field names too (what a file holds), defaults left out.
    dict_nodes = _as_dicts(nodes, NODE_FIELDS)
    for d in dict_nodes[::2]:
        if d["plane"] == "compute" and not d["failed"]:
            del d["plane"], d["failed"]
    bulk = Topology.from_parts(
        _as_dicts(groups, GROUP_FIELDS),
        dict_nodes,
        _as_dicts(links, LINK_FIELDS),
        name=built.name,
    )
    _assert_same(bulk, _one_by_one(groups, nodes, links, built.name))


def test_hand_made_design_with_groups_failures_and_parallel_links():
    groups, nodes, links = _hand_made()
    bulk = Topology.from_parts(groups, nodes, links)
    _assert_same(bulk, _one_by_one(groups, nodes, links, "untitled"))
    assert bulk.graph.number_of_edges("g-10", "sw") == 3
    assert bulk.columns().gpus_in_order is False  # g-10 before g-2


def test_adding_parts_to_a_design_that_has_some():
    groups, nodes, links = _hand_made()
    bulk = Topology.from_parts(groups[:2])
    bulk.add_parts(groups[2:], nodes[:3], links[:1])
    bulk.add_parts((), nodes[3:], links[1:])
    _assert_same(bulk, _one_by_one(groups, nodes, links, "untitled"))


def test_one_changed_event_and_item_events_only_when_someone_listens():
    groups, nodes, links = _hand_made()
    quiet = Topology()
    changes = []
    quiet.events.changed.connect(lambda: changes.append(1))
    quiet.add_parts(groups, nodes, links)
    assert changes == [1]
    assert quiet.generation == len(groups) + len(nodes) + len(links)

    watched = Topology()
    seen = []
    watched.events.group_added.connect(lambda g: seen.append(g.id))
    watched.events.node_added.connect(lambda n: seen.append(n.id))
    watched.events.link_added.connect(lambda lk: seen.append(lk.id))
    watched.add_parts(groups, _as_dicts(nodes, NODE_FIELDS), links)
    assert seen == [item.id for item in (*groups, *nodes, *links)]


def _bad_cases():
    """(section, index of the bad item, the item): one of each refusal."""
    node = Node("new", "gpu", "H100", "New")
    link = Link("new", "g-10", "sw", "nvlink4")
    return [
        ("groups", Group("n0", "node", "again")),
        ("groups", Group("bad id", "node", "x")),
        ("groups", Group("x", "toaster", "x")),
        ("groups", Group("x", "node", "x", parent="nowhere")),
        ("groups", Group("g-2", "node", "x")),
        ("nodes", dataclasses.replace(node, id="g-2")),
        ("nodes", dataclasses.replace(node, id="l0")),
        ("nodes", dataclasses.replace(node, id="r0")),
        ("nodes", dataclasses.replace(node, id="x" * 129)),
        ("nodes", dataclasses.replace(node, id="a\nb")),
        ("nodes", dataclasses.replace(node, kind="teapot")),
        ("nodes", dataclasses.replace(node, model="H900")),
        ("nodes", dataclasses.replace(node, model="QM9700")),
        ("nodes", dataclasses.replace(node, plane="astral")),
        ("nodes", dataclasses.replace(node, group="nowhere")),
        ("nodes", dataclasses.replace(node, x=float("nan"))),
        ("nodes", dataclasses.replace(node, y=2e9)),
        ("nodes", dataclasses.replace(node, x="1")),
        ("links", dataclasses.replace(link, id="l1")),
        ("links", dataclasses.replace(link, id="sw")),
        ("links", dataclasses.replace(link, id="n0")),
        ("links", dataclasses.replace(link, id="")),
        ("links", dataclasses.replace(link, b="nope")),
        ("links", dataclasses.replace(link, b="g-10")),
        ("links", dataclasses.replace(link, tech="warp-drive")),
        ("links", dataclasses.replace(link, count=0)),
        ("links", dataclasses.replace(link, count=True)),
        ("links", dataclasses.replace(link, count=2.0)),
        ("links", dataclasses.replace(link, plane="astral")),
    ]


@pytest.mark.parametrize("section, bad", _bad_cases(), ids=lambda v: repr(v)[:60])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_bad_item_gets_the_message_of_one_call_per_item(section, bad, where):
    groups, nodes, links = _hand_made()
    parts = {"groups": groups, "nodes": nodes, "links": links}
    items = parts[section]
    at = {"first": 0, "middle": len(items) // 2, "last": len(items)}[where]
    if section == "groups" and at < len(items):
        at = len(items)  # parents first: an earlier place would orphan the rest
    items.insert(at, bad)
    # Later items that are wrong too must not be the one named.
    if section != "links":
        links.append(Link("late", "g-10", "nowhere", "nvlink4"))

    with pytest.raises(DesignError) as slow:
        _one_by_one(groups, nodes, links)
    with pytest.raises(PartError) as fast:
        Topology.from_parts(groups, nodes, links)
    assert str(fast.value) == str(slow.value)
    named = parts[fast.value.section][fast.value.index]
    if "already used" in str(slow.value):  # the later of the two is refused
        assert fast.value.index == max(
            i for i, item in enumerate(parts[fast.value.section]) if item.id == named.id
        )
        assert named is bad or fast.value.section != section or fast.value.index > at
    else:
        assert (fast.value.section, fast.value.index) == (section, at)
    if section == "nodes":  # as mappings of field names too
        with pytest.raises(PartError) as fast:
            Topology.from_parts(groups, _as_dicts(nodes, NODE_FIELDS), links)
        assert str(fast.value) == str(slow.value)


def test_a_refused_part_adds_nothing():
    groups, nodes, links = _hand_made()
    t = Topology.from_parts(groups[:1])
    before = t.state()
    with pytest.raises(PartError):
        t.add_parts(groups[1:], nodes, [*links, Link("bad", "g-10", "g-10", "nvlink4")])
    assert t.state() == before
    assert t.graph.number_of_nodes() == 0 and t.columns().node_ids == ()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.from_regex(r"(n0?[0-9]-)?(gpu|g)?[0-9]{0,3}(x|/0?[0-9])?", fullmatch=True),
        min_size=1,
        max_size=6,
    )
)
def test_natural_order_of_gpu_ids_as_natural_key_says(ids):
    from designer.model.columns import in_natural_order

    keys = [natural_key(i) for i in ids]
    assert in_natural_order(ids) == all(a <= b for a, b in itertools.pairwise(keys))
    assert in_natural_order(sorted(ids, key=natural_key))


def test_progress_while_writing_and_adopted_dicts():
    groups, nodes, links = _hand_made()
    calls = []
    t = Topology()
    t.add_parts(groups, nodes, links, progress=calls.append, every=4)
    assert calls == [4, 8, 12]  # 3 groups, 5 nodes, 5 links: counted groups first
    _assert_same(t, _one_by_one(groups, nodes, links, "untitled"))

    node_dicts, link_dicts = _as_dicts(nodes, NODE_FIELDS), _as_dicts(links, LINK_FIELDS)
    del node_dicts[0]["failed"], link_dicts[0]["plane"]  # defaults filled in
    adopted = Topology()
    adopted.add_parts(groups, node_dicts, link_dicts, adopt=True)
    _assert_same(adopted, _one_by_one(groups, nodes, links, "untitled"))
    assert "id" not in node_dicts[0] and node_dicts[0]["failed"] is False


def test_a_progress_callback_that_raises_stops_the_writing():
    groups, nodes, links = _hand_made()

    def stop(done):
        raise KeyboardInterrupt

    t = Topology()
    with pytest.raises(KeyboardInterrupt):
        t.add_parts(groups, nodes, links, progress=stop, every=4)
    assert t.graph.number_of_nodes() < len(nodes)


def test_lazy_edges_are_written_when_the_graph_is_read():
    groups, nodes, links = _hand_made()
    eager, lazy = Topology(), Topology()
    eager.add_parts(groups, nodes, links)
    lazy.add_parts(groups, nodes, links, lazy_edges=True)
    # The columns, the ids and the nodes are in at once.
    assert lazy.link_count() == len(links) and lazy.has_link(links[0].id)
    assert dict(lazy.node_data()) == dict(eager.node_data())
    assert lazy.columns().keys == eager.columns().keys
    assert sorted(lazy.graph.edges(keys=True)) == sorted(eager.graph.edges(keys=True))
    _assert_same(lazy, eager)
