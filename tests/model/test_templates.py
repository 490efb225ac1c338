"""Templates: every one builds a valid, connected, laid-out design with the right counts
(rail optimisation and the scaling of the rail cluster and SuperPOD: `test_templates_rail.py`)."""

from __future__ import annotations

from collections import Counter

import networkx as nx
import pytest
from template_checks import (
    CAT,
    assert_rail_optimised,
    assert_sound,
    built,
    kinds,
    link_sum,
    servers,
)

from designer.model.errors import DesignError
from designer.model.templates import TEMPLATES, Param, build_template, template_names
from designer.model.templates.clos_plan import plan_clos
from designer.model.templates.lookup import mgmt_capable
from designer.model.templates.parts import spread


# ----------------------------------------------------------------- registry
def test_registry_names_and_params():
    assert template_names() == [
        "hgx",
        "nvl72",
        "rail-cluster",
        "superpod",
        "fat-tree",
        "leaf-spine",
        "torus3d",
        "ualink",
        "example",
    ]
    for t in TEMPLATES.values():
        assert t.help
        for p in t.params:
            assert isinstance(p, Param)
            assert type(p.default) in (int, float, str, bool)
            if p.choices is not None:
                assert p.default in p.choices


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_every_template_builds_sound_with_defaults(name):
    t = built(name)
    assert t.name and t.name != "untitled"
    assert sum(1 for _ in t.nodes("gpu")) > 0
    assert_sound(t)


def test_builds_are_fresh_and_deterministic():
    a, b = build_template("example"), build_template("example")
    assert a is not b
    assert a.state() == b.state()
    a.remove_node("n01-gpu0")
    assert b.has_node("n01-gpu0")


# ----------------------------------------------------------------- coercion and errors
def test_build_template_coerces_cli_strings():
    t = build_template("hgx", gpu="b200", gpus="4")
    assert kinds(t)["gpu"] == 4
    assert {n.model for n in t.nodes("gpu")} == {"B200"}
    t = build_template("rail-cluster", nodes="2", oversubscription="1", storage="yes")
    assert kinds(t)["storage"] == 1
    assert build_template("torus3d", x=2.0, y="1", z=1, management=False).name.startswith("3D")


@pytest.mark.parametrize(
    ("name", "params", "needle"),
    [
        ("nope", {}, "nope"),
        ("hgx", {"gpuz": 3}, "gpuz"),
        ("hgx", {"gpus": "eight"}, "gpus"),
        ("hgx", {"gpus": True}, "gpus"),
        ("hgx", {"gpus": 2.5}, "gpus"),
        ("hgx", {"gpu": "GB200"}, "gpu"),
        ("hgx", {"gpus": 9}, "gpus"),
        ("rail-cluster", {"storage": "maybe"}, "storage"),
        ("rail-cluster", {"oversubscription": "fast"}, "oversubscription"),
        ("rail-cluster", {"oversubscription": 0}, "oversubscription"),
        ("rail-cluster", {"fabric": "myrinet"}, "fabric"),
        ("rail-cluster", {"nic_gbps": 300}, "300"),
        ("rail-cluster", {"core": "maybe"}, "core"),
        ("superpod", {"gpu": "A100"}, "gpu"),
        ("superpod", {"sus": 0}, "sus"),
        ("nvl72", {"gpus": 6}, "gpus"),
        ("fat-tree", {"k": 3}, "k"),
        ("leaf-spine", {"hosts_per_leaf": 64}, "ports"),
        ("torus3d", {"x": 0}, "x"),
    ],
)
def test_build_template_errors_name_the_culprit(name, params, needle):
    with pytest.raises(DesignError) as info:
        build_template(name, **params)
    message = str(info.value)
    assert needle in message
    assert "\n" not in message


# ----------------------------------------------------------------- hgx
@pytest.mark.parametrize(
    ("gpu", "switches", "nic", "split"),
    [
        ("A100", 6, "ConnectX-6", [2, 2, 2, 2, 2, 2]),
        ("H100", 4, "ConnectX-7", [4, 4, 5, 5]),
        ("H200", 4, "ConnectX-7", [4, 4, 5, 5]),
        ("H800", 4, "ConnectX-7", [2, 2, 2, 2]),
        ("B200", 2, "ConnectX-7", [9, 9]),
    ],
)
def test_hgx_nvlinks_match_the_catalog(gpu, switches, nic, split):
    t = build_template("hgx", gpu=gpu)
    k = kinds(t)
    assert (k["gpu"], k["nvswitch"], k["nic"], k["host"]) == (8, switches, 8, 1)
    assert {n.model for n in t.nodes("nic")} == {nic}
    links = CAT.device(gpu).specs["nvlink_links"]
    for g in t.nodes("gpu"):
        nv = [lk for lk in t.links_of(g.id) if CAT.tech(lk.tech).family == "nvlink"]
        assert sum(lk.count for lk in nv) == links
        assert sorted(lk.count for lk in nv) == split
        assert len(nv) == switches  # one bundle per NVSwitch
    assert_sound(t)


def test_hgx_ids_are_readable():
    t = build_template("hgx")
    assert t.node("n01-gpu5").name == "GPU 5"
    assert t.has_node("n01-nic5") and t.has_node("n01-nvs3") and t.has_node("n01-host")
    assert t.group("n01").kind == "node"
    assert t.has_link("n01-gpu5:n01-nvs0")


def test_hgx_single_gpu_has_no_nvswitch():
    t = build_template("hgx", gpus=1)
    assert kinds(t)["nvswitch"] == 0
    assert_sound(t)


# ----------------------------------------------------------------- nvl72
def test_nvl72_rack():
    t = build_template("nvl72")
    k = kinds(t)
    assert (k["gpu"], k["nvlink-switch-tray"], k["nic"], k["host"]) == (72, 9, 72, 36)
    trays = [g for g in t.groups() if g.kind == "tray"]
    assert len(trays) == 18
    for g in t.nodes("gpu"):
        nv = [lk for lk in t.links_of(g.id) if lk.tech == "nvlink5"]
        assert sum(lk.count for lk in nv) == 18
        assert [lk.count for lk in nv] == [2] * 9
    usage = t.port_usage()
    for s in t.nodes("nvlink-switch-tray"):
        assert usage[s.id] == [("nvlink", 144.0, 144)]


def test_nvl72_partition():
    t = build_template("nvl72", gpus=8)
    k = kinds(t)
    assert (k["gpu"], k["nvlink-switch-tray"]) == (8, 9)
    assert sum(1 for g in t.groups() if g.kind == "tray") == 2
    assert_sound(t)


# ----------------------------------------------------------------- superpod
@pytest.mark.parametrize(
    ("gpu", "sus", "gpus", "leaf", "spine", "core"),
    [
        ("B200", 4, 1024, 32, 16, 0),
        ("B200", 16, 4096, 128, 128, 64),
        ("H100", 4, 1016, 32, 16, 0),
        ("H100", 1, 248, 8, 4, 0),
    ],
)
def test_superpod_reference_sizes(gpu, sus, gpus, leaf, spine, core):
    t = built("superpod", gpu=gpu, sus=sus)
    k = kinds(t)
    assert (k["gpu"], k["leaf"], k["spine"], k["core"]) == (gpus, leaf, spine, core)
    assert len(servers(t)) == gpus // 8
    assert t.over_subscribed_ports() == []
    # Every leaf: 32 links up; never more than 64 ports used.
    assert link_sum(t, "leaf", "spine") == leaf * 32


def test_superpod_h100_matches_the_reference_cabling():
    t = built("superpod", gpu="H100", sus=4)
    assert len(servers(t)) == 127
    assert link_sum(t, "nic", "leaf") == 1020  # 127 x 8 + 4 from the UFM appliance
    assert link_sum(t, "leaf", "spine") == 1024
    assert t.node("ufm-host").kind == "host"
    assert_sound(t)


@pytest.mark.parametrize("sus", [1, 3, 9])
def test_superpod_port_budgets_hold_at_odd_sizes(sus):
    t = build_template("superpod", gpu="B200", sus=sus)
    assert t.over_subscribed_ports() == []
    assert nx.is_connected(nx.Graph(t.graph))
    leaves, spines = kinds(t)["leaf"], kinds(t)["spine"]
    assert leaves == 8 * sus
    # Two tiers up to 8 SUs (spines = leaves / 2), three beyond (spines = leaves).
    assert spines == (leaves // 2 if sus <= 8 else leaves)


def test_superpod_plan_at_64_sus():
    plan = plan_clos([32] * 512, radix=64)
    assert (plan.tiers, plan.spines, plan.cores, len(plan.pods)) == (3, 512, 256, 16)


@pytest.mark.slow
def test_superpod_b200_64_sus_builds():
    t = build_template("superpod", gpu="B200", sus=64)
    k = kinds(t)
    assert (k["gpu"], k["leaf"], k["spine"], k["core"]) == (16384, 512, 512, 256)
    assert t.over_subscribed_ports() == []


def test_superpod_ids_and_groups():
    t = build_template("superpod", gpu="B200", sus=2)
    leaf = t.node("su2-leaf-r3")
    assert leaf.name == "Leaf rail 3 SU 2"
    assert leaf.group == "su2"
    assert t.group("su2").kind == "su"
    # Servers sit in racks of the SU.
    rack = t.group(t.group("n33").parent)
    assert (rack.kind, rack.parent) == ("rack", "su2")


# ----------------------------------------------------------------- Clos templates
def test_fat_tree_counts():
    t = build_template("fat-tree", k=4)
    k = kinds(t)
    assert (k["gpu"], k["leaf"], k["spine"], k["core"]) == (16, 8, 8, 4)
    t6 = build_template("fat-tree", k=6)
    k6 = kinds(t6)
    assert (k6["gpu"], k6["leaf"], k6["spine"], k6["core"]) == (54, 18, 18, 9)
    assert_sound(t6)
    # Every aggregation switch reaches k/2 cores, every core every pod.
    for core in t6.nodes("core"):
        pods = {t6.node(lk.a if lk.b == core.id else lk.b).group for lk in t6.links_of(core.id)}
        assert len(pods) == 6


def test_fat_tree_endpoint_is_gpu_nic_leaf():
    t = build_template("fat-tree")
    nic = t.node("n01-nic0")
    ends = {t.node(lk.a if lk.b == nic.id else lk.b).kind: lk.tech for lk in t.links_of(nic.id)}
    assert ends == {"gpu": "pcie5", "leaf": "ib-ndr"}


def test_leaf_spine_counts_and_uplinks():
    t = build_template("leaf-spine", leaves=3, spines=4, hosts_per_leaf=5, uplinks=2)
    k = kinds(t)
    assert (k["gpu"], k["leaf"], k["spine"]) == (15, 3, 4)
    ls = [lk for lk in t.links() if {t.node(lk.a).kind, t.node(lk.b).kind} == {"leaf", "spine"}]
    assert len(ls) == 12 and {lk.count for lk in ls} == {2}
    assert_sound(t)


def test_spread_balances_targets():
    out = spread([("a", 5), ("b", 5), ("c", 5)], ["x", "y", "z", "w"])
    per_target = Counter()
    for _, tgt, c in out:
        per_target[tgt] += c
    assert sorted(per_target.values()) == [3, 4, 4, 4]
    assert sum(c for src, _, c in out if src == "a") == 5


# ----------------------------------------------------------------- torus
def test_torus_neighbours():
    t = build_template("torus3d")
    assert kinds(t)["gpu"] == 64
    per = CAT.device("H100").specs["nvlink_links"] // 6
    for g in t.nodes("gpu"):
        links = t.links_of(g.id)
        assert len(links) == 6 and {lk.count for lk in links} == {per}
    assert_sound(t)


def test_torus_small_dimensions():
    t = build_template("torus3d", x=2, y=1, z=1)
    (only,) = list(t.links())
    assert only.count == 2 * (18 // 6)
    t = build_template("torus3d", x=3, y=2, z=1)
    degree = {g.id: len(t.links_of(g.id)) for g in t.nodes("gpu")}
    assert set(degree.values()) == {3}  # 2 ring neighbours in x, one bundle in y
    assert_sound(t)


# ----------------------------------------------------------------- planes
PLANED = [
    ("rail-cluster", {"nodes": 8}),
    ("superpod", {"gpu": "B200", "sus": 1}),
    ("fat-tree", {}),
    ("leaf-spine", {}),
    ("torus3d", {"x": 4, "y": 2, "z": 2}),
]


@pytest.mark.parametrize(("name", "params"), PLANED)
def test_planes_are_separate_and_complete(name, params):
    t = build_template(name, storage=True, frontend=True, management=True, **params)
    assert_sound(t)
    planes = {n.plane for n in t.nodes()}
    assert {"storage", "frontend", "management"} <= planes
    assert kinds(t)["storage"] >= 1
    mgmt_nodes = {n.id for n in t.nodes() if n.plane == "management"}
    for lk in t.links():
        touches = lk.a in mgmt_nodes or lk.b in mgmt_nodes
        assert touches == (lk.plane == "management"), lk.id
        if lk.plane in ("storage", "frontend"):
            ends = [t.node(lk.a), t.node(lk.b)]
            # Data planes run on their own switches, never on compute switches.
            assert all(e.plane == lk.plane or e.kind == "host" for e in ends), lk.id
    # Every management port is cabled: hosts, switches, storage servers.
    managed = {lk.a for lk in t.links() if lk.plane == "management"} | {
        lk.b for lk in t.links() if lk.plane == "management"
    }
    for n in t.nodes():
        if n.plane != "management" and mgmt_capable(CAT, n.model):
            assert n.id in managed, n.id
    for n in t.nodes("host"):
        assert n.id in managed
    # Each server reaches storage through a BlueField on its host.
    for gid in servers(t):
        stnic = t.node(f"{gid}-stnic")
        assert stnic.model == "BlueField-3" and stnic.plane == "storage"


def test_management_switches_fit_their_ports():
    t = build_template("superpod", gpu="B200", sus=2, management=True)
    for n in t.nodes():
        if n.plane == "management" and n.kind == "leaf":
            assert n.model == "SN2201"
    assert t.over_subscribed_ports() == []
    assert any(n.id.startswith("mgmt-agg") for n in t.nodes())


# ----------------------------------------------------------------- example
def test_example_design():
    t = build_template("example")
    assert t.name == "Example: 4x HGX H100 rail-optimised"
    k = kinds(t)
    assert (k["gpu"], k["host"], k["spine"], k["storage"]) == (32, 4, 2, 1)
    compute_leaves = [n for n in t.nodes("leaf") if n.plane == "compute"]
    assert len(compute_leaves) == 8
    for leaf in compute_leaves:
        ups = [
            lk
            for lk in t.links_of(leaf.id)
            if t.node(lk.a if lk.b == leaf.id else lk.b).kind == "spine"
        ]
        assert sorted(lk.count for lk in ups) == [2, 2]
    assert_rail_optimised(t)
    assert {n.model for n in t.nodes("gpu")} == {"H100"}
