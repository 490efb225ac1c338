"""DOT (NVIDIA Air, UFM), NetBox and cabling-plan exports: they parse with the tools'
own readers, carry the columns the importers require, agree with the BOM, neutralise
spreadsheet formulas, and a failed export leaves nothing half-written."""

from __future__ import annotations

import csv
import io
import os
import warnings

import pydot
import pytest
import yaml

from designer.io.exports import FORMATS, export, format_for
from designer.io.exports.cabling import cable_counts
from designer.io.exports.netbox import netbox_files
from designer.model.bom import bom
from designer.model.errors import DesignError
from designer.model.templates import build_template
from designer.model.topology import Link, Node, Topology


def parse_dot(path) -> pydot.Dot:
    """The one graph in the DOT file ``path``, as pydot reads it."""
    with warnings.catch_warnings():
        # pydot 4 calls pyparsing names that pyparsing 3.3 deprecates: theirs, not ours.
        warnings.simplefilter("ignore", DeprecationWarning)
        (graph,) = pydot.graph_from_dot_file(str(path))
    return graph


def rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))


def evil_fabric() -> Topology:
    """Two leaves and a spine whose names try to break DOT and CSV."""
    t = Topology(name='fab"ric\n} graph x {')
    t.add_node(Node("s", "spine", "QM9700", '=cmd|" /C calc"!A0', x=0, y=0))
    t.add_node(Node("l1", "leaf", "QM9700", 'leaf"1\\"; evil -- x', x=-500, y=400))
    t.add_node(Node("l2", "leaf", "QM9700", "+SUM(A1)\n@x", x=500, y=400))
    t.add_node(Node("l3", "leaf", "QM9700", "-2+3", x=900, y=400))
    for leaf in ("l1", "l2", "l3"):
        t.add_link(Link(f"{leaf}-s", leaf, "s", "ib-ndr", count=2))
    return t


@pytest.mark.parametrize(
    "suffix, attr, roles",
    [
        (".dot", "function", {"spine", "leaf", "server"}),
        (".ufm.dot", "role", {"spine", "leaf"}),
    ],
)
def test_dot_parses_with_pydot(tmp_path, suffix, attr, roles):
    t = build_template("rail-cluster")
    path = tmp_path / f"f{suffix}"
    export(t, path)
    graph = parse_dot(path)
    nodes = {n.get_name().strip('"'): n for n in graph.get_nodes()}
    assert {n.get(attr).strip('"') for n in nodes.values() if n.get(attr)} == roles
    edges = graph.get_edges()
    assert len(edges) == sum(cable_counts(t).values())
    # every end names a port ("device":"port"), each port used once
    ends = [e.get_source() for e in edges] + [e.get_destination() for e in edges]
    assert all(":" in end for end in ends)
    assert len(set(ends)) == len(ends)


def test_dot_survives_hostile_names(tmp_path):
    t = evil_fabric()
    export(t, tmp_path / "f.dot")
    graph = parse_dot(tmp_path / "f.dot")
    assert len(graph.get_nodes()) == 4
    assert len(graph.get_edges()) == 6
    text = (tmp_path / "f.dot").read_text(encoding="utf-8")
    assert text.count("\n") == 1 + 4 + 6 + 1  # no name broke a line


# NetBox's bulk-import forms, netbox/dcim/forms/bulk_import.py (netbox-community/netbox):
# DeviceImportForm (with BaseDeviceImportForm) requires role, manufacturer, device_type,
# status and site; CableImportForm requires side_a_device, side_a_type, side_a_name,
# side_b_device, side_b_type, side_b_name; SiteImportForm name, slug, status;
# RackImportForm site, name, status; ManufacturerImportForm and DeviceRoleImportForm
# name, slug.  Custom fields are columns named cf_<name>.
REQUIRED = {
    "devices.csv": {"name", "role", "manufacturer", "device_type", "status", "site"},
    "cables.csv": {
        "side_a_device",
        "side_a_type",
        "side_a_name",
        "side_b_device",
        "side_b_type",
        "side_b_name",
    },
    "sites.csv": {"name", "slug", "status"},
    "racks.csv": {"site", "name", "status"},
    "manufacturers.csv": {"name", "slug"},
    "device-roles.csv": {"name", "slug"},
}


def test_netbox_files_have_the_required_columns_and_agree():
    t = build_template("rail-cluster")
    files = netbox_files(t)
    for name, columns in REQUIRED.items():
        header = next(csv.reader(io.StringIO(files[name].decode())))
        assert columns <= set(header), name
    devices = rows(files["devices.csv"])
    assert len(devices) == len(t)
    assert len({d["name"] for d in devices}) == len(devices)  # unique per site
    by_name = {d["name"]: d for d in devices}
    types = {}
    for name, data in files.items():
        if name.startswith("device-types/"):
            doc = yaml.safe_load(data)
            assert {"manufacturer", "model", "slug", "u_height", "interfaces"} <= set(doc)
            types[doc["model"]] = {i["name"] for i in doc["interfaces"]}
    assert set(types) == {n.model for n in t.nodes()}
    cables = rows(files["cables.csv"])
    assert len(cables) == sum(cable_counts(t).values()) > 0
    for c in cables:
        for side in ("a", "b"):
            device = by_name[c[f"side_{side}_device"]]
            assert c[f"side_{side}_name"] in types[device["device_type"]]
            assert c[f"side_{side}_type"] == "dcim.interface"
    coords = {d["cf_coordinates"] for d in devices}
    node = next(t.nodes())
    assert f"{node.x:g};{node.y:g}" in coords


def test_cabling_counts_match_the_bom(tmp_path):
    for template in ("superpod", "rail-cluster", "fat-tree"):
        t = build_template(template)
        path = tmp_path / f"{template}.cabling.csv"
        export(t, path)
        plan = rows(path.read_bytes())
        counted: dict[str, int] = {}
        for row in plan:
            counted[row["tech"]] = counted.get(row["tech"], 0) + 1
        billed = {r.tech: r.links for r in bom(t).cables}
        cabled = {
            tech for tech in billed if t.catalog.tech(tech).family in ("infiniband", "ethernet")
        }
        assert cabled and set(counted) == cabled, template
        for tech in cabled:
            assert counted[tech] == billed[tech], (template, tech)
        for row in plan:
            assert float(row["length_m"]) > 0
            assert row["cable_type"] in {"DAC", "AEC", "AOC", "MMF", "SMF"}
            assert row["transceivers"] == ("2" if row["cable_type"] in ("MMF", "SMF") else "0")


@pytest.mark.parametrize("name", ["cabling.csv", "netbox"])
def test_every_csv_neutralises_formulas(tmp_path, name):
    export(evil_fabric(), tmp_path / f"f.{name}")
    paths = (
        [tmp_path / f"f.{name}"]
        if name.endswith("csv")
        else sorted((tmp_path / f"f.{name}").glob("*.csv"))
    )
    seen = 0
    for path in paths:
        for row in csv.reader(io.StringIO(path.read_text(encoding="utf-8"))):
            for cell in row:
                seen += 1
                if cell[:1] in ("=", "+", "-", "@"):
                    float(cell)  # only plain numbers may start so
    assert seen > 20
    text = "".join(p.read_text(encoding="utf-8") for p in paths)
    assert "'=cmd" in text and "'+SUM" in text


@pytest.mark.parametrize("suffix", [f.suffix for f in FORMATS if f.write and not f.folder])
def test_failed_file_export_leaves_the_old_file(tmp_path, monkeypatch, suffix):
    path = tmp_path / f"out{suffix}"
    path.write_bytes(b"old")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises((OSError, DesignError)):  # .json ones say FileFormatError
        export(build_template("hgx"), path)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_failed_folder_export_leaves_nothing(tmp_path, monkeypatch):
    real = os.replace
    calls = []

    def fail_last(src, dst):
        calls.append(dst)
        if str(dst).endswith("out.netbox"):
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", fail_last)
    with pytest.raises(OSError, match=r"out\.netbox"):
        export(evil_fabric(), tmp_path / "out.netbox")
    assert list(tmp_path.iterdir()) == []


def test_folder_export_refuses_a_folder_of_other_files(tmp_path):
    target = tmp_path / "mine.netbox"
    target.mkdir()
    (target / "thesis.docx").write_bytes(b"precious")
    with pytest.raises(Exception, match="holds other files"):
        export(evil_fabric(), target)
    assert (target / "thesis.docx").read_bytes() == b"precious"
    export(evil_fabric(), tmp_path / "again.netbox")
    export(evil_fabric(), tmp_path / "again.netbox")  # its own earlier export: replaced
    assert (tmp_path / "again.netbox" / "cables.csv").exists()


def test_registry_resolves_the_longest_suffix():
    assert format_for("a.UFM.DOT").suffix == ".ufm.dot"
    assert format_for("a.dot").suffix == ".dot"
    assert format_for("a.cabling.csv").suffix == ".cabling.csv"
    assert format_for("a.csv") is None
    assert format_for("a.fabric.json").suffix == ".fabric.json"
    assert format_for("a.json").suffix == ".json"


def test_shared_names_are_qualified_by_their_groups(tmp_path):
    """Eight servers each with a "GPU 0": NetBox, DOT and the cabling plan say which."""
    t = build_template("rail-cluster")
    devices = rows(netbox_files(t)["devices.csv"])
    names = [d["name"] for d in devices]
    assert len(set(names)) == len(names)
    assert not any(name.endswith(")") for name in names)
    servers = {g.name for g in t.groups() if g.kind == "node"}
    assert {f"{s}/GPU 0" for s in servers} <= set(names)
    export(t, tmp_path / "f.cabling.csv")
    plan = rows((tmp_path / "f.cabling.csv").read_bytes())
    assert {r["b_device"] for r in plan} | {r["a_device"] for r in plan} <= set(names)
