"""draw.io and yEd GraphML exports import back to the same design (positions, groups,
models, links), whatever order the design lists its items in; plain networkx still
reads the GraphML; the importers refuse unknown models with one clear line."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import networkx as nx
import pytest

from designer.io.exports import export
from designer.io.fabric_json import FileFormatError
from designer.io.imports import read_design
from designer.model.templates import build_template
from designer.model.topology import Group, Link, Node, Topology

HOSTILE = [
    "a<b>&c\"d'e",
    "end]]>of cdata",
    "two\nlines\r\tand tab",
    "\u202eRTL override\u200b zero-width",
    '=HYPERLINK("x")',
    "nul\x00byte",
]


def hostile_design() -> Topology:
    """Nested groups, every hostile name, parallel bundles, a failed link."""
    t = Topology(name='Review <draft> & "v2"')
    t.add_group(Group("rack1", "rack", "Rack ]]> 1"))
    t.add_group(Group("srv", "node", HOSTILE[2], parent="rack1"))
    t.add_node(Node("sw", "nvswitch", "NVSwitch-gen3", HOSTILE[0], x=200.5, y=-40, group="srv"))
    t.add_node(Node("leaf", "leaf", "QM9700", HOSTILE[4], x=300, y=-400))
    for g in range(3):
        t.add_node(
            Node(
                f"gpu{g}",
                "gpu",
                "H100",
                HOSTILE[(g + 1) % len(HOSTILE)],
                x=g * 70.25,
                y=100,
                group="srv",
                failed=g == 1,
            )
        )
        t.add_node(Node(f"nic{g}", "nic", "ConnectX-7", f"NIC {g}", x=g * 70, y=200, group="srv"))
        t.add_link(Link(f"nv{g}a", f"gpu{g}", "sw", "nvlink4", count=5))
        t.add_link(Link(f"nv{g}b", "sw", f"gpu{g}", "nvlink4", count=4, failed=True))
        t.add_link(Link(f"pc{g}", f"gpu{g}", f"nic{g}", "pcie5"))
        t.add_link(Link(f"ib{g}", f"nic{g}", "leaf", "ib-ndr", count=2))
    t.add_node(Node("nul", "host", "Host-x86", HOSTILE[5], x=-100, y=0, group="rack1"))
    return t


def shuffled(t: Topology, seed: int) -> Topology:
    """The same design with groups, nodes and links added in another order."""
    rng = random.Random(seed)
    groups, nodes, links = list(t.groups()), list(t.nodes()), list(t.links())
    for items in (nodes, links):
        rng.shuffle(items)
    out = Topology(name=t.name)
    out.extend(groups=groups, nodes=nodes, links=links)
    return out


def expected_name(name: str) -> str:
    return name.replace("\x00", "\ufffd")  # XML 1.0 cannot hold NUL at all


def same_design(a: Topology, b: Topology) -> None:
    assert b.name == expected_name(a.name)
    assert {g.id: (g.kind, expected_name(g.name), g.parent) for g in a.groups()} == {
        g.id: (g.kind, g.name, g.parent) for g in b.groups()
    }
    nodes_b = {n.id: n for n in b.nodes()}
    assert set(nodes_b) == {n.id for n in a.nodes()}
    for n in a.nodes():
        m = nodes_b[n.id]
        assert (m.kind, m.model, m.group, m.plane, m.failed, m.name) == (
            n.kind,
            n.model,
            n.group,
            n.plane,
            n.failed,
            expected_name(n.name),
        )
        assert m.x == pytest.approx(n.x, abs=1e-6) and m.y == pytest.approx(n.y, abs=1e-6)
    assert {lk.id: lk for lk in a.links()} == {lk.id: lk for lk in b.links()}


@pytest.mark.parametrize("suffix", [".drawio", ".graphml"])
def test_hostile_design_round_trips(tmp_path, suffix):
    t = hostile_design()
    path = tmp_path / f"d{suffix}"
    export(t, path)
    ET.parse(path)  # well-formed whatever the names hold
    same_design(t, read_design(path))


@pytest.mark.parametrize("suffix", [".drawio", ".graphml"])
@pytest.mark.parametrize("template", ["hgx", "rail-cluster"])
def test_templates_round_trip(tmp_path, suffix, template):
    t = build_template(template)
    path = tmp_path / f"t{suffix}"
    export(t, path)
    same_design(t, read_design(path))


@pytest.mark.parametrize(
    "suffix", [".drawio", ".graphml", ".dot", ".ufm.dot", ".cabling.csv", ".json", ".ns3.txt"]
)
def test_export_does_not_depend_on_listing_order(tmp_path, suffix):
    t = build_template("rail-cluster")
    export(t, tmp_path / f"a{suffix}")
    export(shuffled(t, 1), tmp_path / f"b{suffix}")
    assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()


def test_netbox_does_not_depend_on_listing_order(tmp_path):
    t = build_template("rail-cluster")
    export(t, tmp_path / "a.netbox")
    export(shuffled(t, 2), tmp_path / "b.netbox")
    a = {
        p.relative_to(tmp_path / "a.netbox"): p.read_bytes()
        for p in (tmp_path / "a.netbox").rglob("*")
        if p.is_file()
    }
    b = {
        p.relative_to(tmp_path / "b.netbox"): p.read_bytes()
        for p in (tmp_path / "b.netbox").rglob("*")
        if p.is_file()
    }
    assert a == b and len(a) > 5


def test_plain_networkx_reads_the_yed_graphml(tmp_path):
    t = hostile_design()
    export(t, tmp_path / "d.graphml")
    g = nx.read_graphml(tmp_path / "d.graphml", force_multigraph=True)
    groups = {n: d for n, d in g.nodes(data=True) if d["kind"] == "group"}
    assert {d["design_id"] for d in groups.values()} == {"rack1", "srv"}
    assert g.number_of_nodes() - len(groups) == len(t)
    assert g.number_of_edges() == t.link_count()
    assert g.nodes["gpu0"]["x"] == 0.0 and g.nodes["gpu1"]["x"] == 70.25


def test_yed_graphics_are_there(tmp_path):
    export(hostile_design(), tmp_path / "d.graphml")
    y = "{http://www.yworks.com/xml/graphml}"
    root = ET.parse(tmp_path / "d.graphml").getroot()
    shapes = list(root.iter(f"{y}ShapeNode"))
    assert len(shapes) == len(hostile_design())
    geo = next(s.find(f"{y}Geometry") for s in shapes if s.find(f"{y}NodeLabel").text == "NIC 2")
    assert (float(geo.get("x")), float(geo.get("y"))) == (140 - 20, 200 - 20)
    assert len(list(root.iter(f"{y}GroupNode"))) == 2


def test_graphml_moved_in_yed_takes_the_new_position(tmp_path):
    """yEd moves the yFiles geometry and renumbers element ids; both are followed."""
    t = hostile_design()
    path = tmp_path / "d.graphml"
    export(t, path)
    text = path.read_text(encoding="utf-8")
    y = "{http://www.yworks.com/xml/graphml}"
    ET.register_namespace("", "http://graphml.graphdrawing.org/xmlns")
    ET.register_namespace("y", "http://www.yworks.com/xml/graphml")
    tree = ET.ElementTree(ET.fromstring(text))
    for i, node in enumerate(tree.getroot().iter("{http://graphml.graphdrawing.org/xmlns}node")):
        geo = node.find(f".//{y}ShapeNode/{y}Geometry")
        old = node.get("id")
        node.set("id", f"n{i}")
        for edge in tree.getroot().iter("{http://graphml.graphdrawing.org/xmlns}edge"):
            for end in ("source", "target"):
                if edge.get(end) == old:
                    edge.set(end, f"n{i}")
        if geo is not None and old == "gpu0":
            geo.set("x", str(float(geo.get("x")) + 1000))
    tree.write(path, encoding="utf-8")
    back = read_design(path)
    assert back.node("gpu0").x == pytest.approx(1000.0)
    assert back.node("gpu1").x == pytest.approx(70.25)
    assert back.link_count() == t.link_count()


@pytest.mark.parametrize("suffix", [".drawio", ".graphml"])
def test_unknown_model_is_one_clear_line(tmp_path, suffix):
    path = tmp_path / f"d{suffix}"
    export(hostile_design(), path)
    path.write_text(
        path.read_text(encoding="utf-8")
        .replace('"QM9700"', '"QM9999"')
        .replace(">QM9700<", ">QM9999<"),
        encoding="utf-8",
    )
    with pytest.raises(FileFormatError) as err:
        read_design(path)
    message = str(err.value)
    assert "unknown model 'QM9999'" in message and "leaf" in message
    assert "\n" not in message


def test_not_a_design_file_is_refused(tmp_path):
    path = tmp_path / "x.drawio"
    path.write_text(
        "<mxfile><diagram name='p'><mxGraphModel><root><mxCell id='0'/>"
        "</root></mxGraphModel></diagram></mxfile>",
        encoding="utf-8",
    )
    with pytest.raises(FileFormatError, match="no Fabric Designer nodes"):
        read_design(path)
    path.write_text("<!DOCTYPE x [<!ENTITY a 'b'>]><mxfile/>", encoding="utf-8")
    with pytest.raises(FileFormatError, match="document type"):
        read_design(path)
    path.write_text("<mxfile><oops", encoding="utf-8")
    with pytest.raises(FileFormatError, match="not well-formed"):
        read_design(path)


def renamed(t: Topology, seed: int) -> Topology:
    """The same design with every node, link and group id replaced by a random one."""
    import dataclasses

    rng = random.Random(seed)

    def fresh(prefix: str) -> str:
        return f"{prefix}{rng.randrange(10**9):09d}"

    gmap = {g.id: fresh("g") for g in t.groups()}
    nmap = {n.id: fresh("n") for n in t.nodes()}
    out = Topology(name=t.name)
    out.extend(
        groups=[
            dataclasses.replace(g, id=gmap[g.id], parent=gmap.get(g.parent)) for g in t.groups()
        ],
        nodes=[dataclasses.replace(n, id=nmap[n.id], group=gmap.get(n.group)) for n in t.nodes()],
        links=[
            dataclasses.replace(lk, id=fresh("l"), a=nmap[lk.a], b=nmap[lk.b]) for lk in t.links()
        ],
    )
    return out


def test_exports_by_name_do_not_depend_on_ids(tmp_path):
    """DOT, NetBox devices and the cabling plan's ends name devices, never ids: new ids
    change none of them (the cabling plan's cable and link columns show ids)."""
    import csv
    import io

    t = build_template("rail-cluster")
    other = renamed(t, 3)
    for suffix in (".dot", ".ufm.dot"):
        export(t, tmp_path / f"a{suffix}")
        export(other, tmp_path / f"b{suffix}")
        assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()
    export(t, tmp_path / "a.netbox")
    export(other, tmp_path / "b.netbox")
    for name in ("devices.csv", "racks.csv", "sites.csv"):
        assert (tmp_path / "a.netbox" / name).read_bytes() == (
            tmp_path / "b.netbox" / name
        ).read_bytes()

    def plan(path):
        export(t if path.name.startswith("a") else other, path)
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
        return [{k: v for k, v in r.items() if k not in ("cable", "link")} for r in rows]

    assert plan(tmp_path / "a.cabling.csv") == plan(tmp_path / "b.cabling.csv")
