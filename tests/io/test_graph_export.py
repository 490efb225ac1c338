"""GraphML and node-link JSON exports: networkx reads them back with every node, edge
and attribute; ``export`` picks the format from the file name."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import networkx as nx
import pytest

from designer.io import fabric_json, graph_export
from designer.io.fabric_json import FileFormatError
from designer.io.graph_export import export, export_graphml, export_node_link_json
from designer.model.topology import Group, Link, Node, Topology

# (``shape_type`` is networkx's reading of the yFiles shape; ``design_id`` survives yEd.)
NODE_ATTRS = (
    "kind",
    "model",
    "name",
    "label",
    "x",
    "y",
    "group",
    "plane",
    "failed",
    "design_id",
    "shape_type",
)
EDGE_ATTRS = ("tech", "count", "plane", "failed", "gbps_per_direction", "design_id")


def devices(g: nx.MultiGraph) -> nx.MultiGraph:
    """The device graph of a GraphML export: groups are nodes of kind "group" there."""
    return g.subgraph(n for n, d in g.nodes(data=True) if d.get("kind") != "group")


def design() -> Topology:
    """GPUs with parallel NVLink bundles to one NVSwitch, NICs, a leaf outside any group."""
    t = Topology(name="Export <test> & “quotes”")
    t.add_group(Group("n0", "node", "DGX 0"))
    t.add_node(Node("sw", "nvswitch", "NVSwitch-gen3", "NVS", x=10.5, y=-3.25, group="n0"))
    t.add_node(Node("leaf", "leaf", "QM9700", "Leaf \x01 bell", plane="storage"))
    for g in range(3):
        t.add_node(
            Node(f"gpu-{g}", "gpu", "H100", f"GPU {g} – ✓", x=g * 0.1, group="n0", failed=g == 1)
        )
        t.add_node(Node(f"nic-{g}", "nic", "ConnectX-7", f"NIC {g}", group="n0"))
        # Two parallel bundles per GPU: the multigraph must keep both, keyed by link id.
        t.add_link(Link(f"nvl-{g}a", f"gpu-{g}", "sw", "nvlink4", count=5))
        t.add_link(Link(f"nvl-{g}b", f"gpu-{g}", "sw", "nvlink4", count=4, failed=True))
        t.add_link(Link(f"pcie-{g}", f"gpu-{g}", f"nic-{g}", "pcie5"))
        t.add_link(Link(f"ib-{g}", f"nic-{g}", "leaf", "ib-ndr", count=2, plane="storage"))
    return t


def expected_gbps(t: Topology, link: Link) -> float:
    return link.count * t.catalog.tech(link.tech).gbps


def test_graphml_reads_back_with_all_attributes(tmp_path):
    t = design()
    path = tmp_path / "d.graphml"
    export_graphml(t, path)
    g = devices(nx.read_graphml(path, force_multigraph=True))
    assert g.is_multigraph() and not g.is_directed()
    assert g.number_of_nodes() == len(t) == 8
    assert g.number_of_edges() == len(list(t.links())) == 12
    for node in t.nodes():
        attrs = g.nodes[node.id]
        assert set(attrs) == set(NODE_ATTRS)
        assert attrs["kind"] == node.kind
        assert attrs["model"] == node.model
        assert attrs["x"] == node.x and attrs["y"] == node.y
        assert attrs["group"] == (node.group or "")
        assert attrs["plane"] == node.plane
        assert attrs["failed"] is node.failed
        assert attrs["label"] == attrs["name"]
    assert g.nodes["gpu-2"]["name"] == "GPU 2 – ✓"
    assert g.nodes["leaf"]["name"] == "Leaf \ufffd bell"  # XML 1.0 has no \x01
    for link in t.links():
        attrs = g.edges[link.a, link.b, link.id]
        assert set(attrs) == set(EDGE_ATTRS)
        assert attrs["tech"] == link.tech
        assert attrs["count"] == link.count
        assert attrs["plane"] == link.plane
        assert attrs["failed"] is link.failed
        assert attrs["gbps_per_direction"] == pytest.approx(expected_gbps(t, link))
    assert g.graph["name"] == t.name


def test_graphml_types_and_no_empty_values(tmp_path):
    path = tmp_path / "d.graphml"
    export_graphml(design(), path)
    root = ET.parse(path).getroot()
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    types = {
        (k.get("for"), k.get("attr.name")): k.get("attr.type") for k in root.findall("g:key", ns)
    }
    assert types[("node", "x")] == "double"
    assert types[("node", "failed")] == "boolean"
    assert types[("edge", "count")] in ("int", "long")
    assert types[("edge", "gbps_per_direction")] == "double"
    edge_ids = [e.get("id") for e in root.iter("{http://graphml.graphdrawing.org/xmlns}edge")]
    assert sorted(edge_ids) == sorted(link.id for link in design().links())


def test_gbps_figure_matches_the_catalog(tmp_path):
    t = Topology()
    t.add_node(Node("g", "gpu", "H100", "G"))
    t.add_node(Node("s", "nvswitch", "NVSwitch-gen3", "S"))
    t.add_link(Link("l", "g", "s", "nvlink4", count=18))
    # NVLink 4: 25 GB/s per direction per link = 200 Gb/s; 18 links = 3600 Gb/s.
    assert t.catalog.tech("nvlink4").GBps == 25.0
    graph = graph_export.export_graph(t)
    assert graph.edges["g", "s", "l"]["gbps_per_direction"] == 3600.0


def test_exports_are_stable(tmp_path):
    t = design()
    a, b = tmp_path / "a.graphml", tmp_path / "b.graphml"
    export_graphml(t, a)
    export_graphml(t, b)
    assert a.read_bytes() == b.read_bytes()
    c, d = tmp_path / "c.json", tmp_path / "d.json"
    export_node_link_json(t, c)
    export_node_link_json(t, d)
    assert c.read_bytes() == d.read_bytes()


def test_nodes_are_written_in_natural_id_order():
    t = Topology()
    for i in (10, 2, 1):
        t.add_node(Node(f"gpu-{i}", "gpu", "H100", f"GPU {i}"))
    assert list(graph_export.export_graph(t)) == ["gpu-1", "gpu-2", "gpu-10"]


def test_node_link_json_reads_back(tmp_path):
    t = design()
    path = tmp_path / "d.json"
    export_node_link_json(t, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert set(data) >= {"nodes", "links", "multigraph", "directed", "graph"}
    assert data["multigraph"] is True
    g = nx.node_link_graph(data, edges="links")
    assert g.number_of_nodes() == 8 and g.number_of_edges() == 12
    assert g.nodes["leaf"]["group"] is None  # JSON has null, unlike GraphML
    assert g.nodes["leaf"]["name"] == "Leaf \x01 bell"
    for link in t.links():
        attrs = g.edges[link.a, link.b, link.id]
        assert attrs["count"] == link.count and attrs["tech"] == link.tech
        assert attrs["gbps_per_direction"] == expected_gbps(t, link)


def test_export_dispatches_on_the_suffix(tmp_path):
    t = design()
    export(t, tmp_path / "d.GraphML")
    assert devices(nx.read_graphml(tmp_path / "d.GraphML")).number_of_nodes() == 8
    export(t, tmp_path / "d.json")
    assert "links" in json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))
    export(t, tmp_path / "d.fabric.json")
    assert fabric_json.load(tmp_path / "d.fabric.json").state() == t.state()
    with pytest.raises(FileFormatError, match=r"d\.png: unknown export format '\.png'"):
        export(t, tmp_path / "d.png")
    with pytest.raises(FileFormatError, match="unknown export format '\\(none\\)'"):
        export(t, tmp_path / "noext")
    assert not (tmp_path / "d.png").exists()


def test_export_failures_are_file_format_errors(tmp_path, monkeypatch):
    missing = tmp_path / "gone" / "d.graphml"
    with pytest.raises(FileFormatError, match="cannot save: No such file or directory"):
        export(design(), missing)
    path = tmp_path / "d.json"
    path.write_text("old", encoding="utf-8")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(FileFormatError, match=r"d\.json: cannot save: No space left"):
        export(design(), path)
    assert path.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json"]


def test_empty_design_exports(tmp_path):
    t = Topology()
    export(t, tmp_path / "e.graphml")
    export(t, tmp_path / "e.json")
    assert nx.read_graphml(tmp_path / "e.graphml").number_of_nodes() == 0
    assert json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))["nodes"] == []


def test_example_template_exports(tmp_path):
    templates = pytest.importorskip("designer.model.templates")
    t = templates.build_template("example")
    links = list(t.links())
    export(t, tmp_path / "x.graphml")
    g = devices(nx.read_graphml(tmp_path / "x.graphml", force_multigraph=True))
    assert g.number_of_nodes() == len(t)
    assert g.number_of_edges() == len(links)
    for link in links[:: max(1, len(links) // 20)]:
        assert g.edges[link.a, link.b, link.id]["gbps_per_direction"] == pytest.approx(
            expected_gbps(t, link)
        )
