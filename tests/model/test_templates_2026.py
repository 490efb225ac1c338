"""Templates of the 2025-2026 hardware: multi-rack NVL72 (GB200, GB300, Rubin), AMD
full-mesh nodes, TPU and Trainium tori, multi-plane rail fabrics."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from designer.model.errors import DesignError
from designer.model.rules import validate
from designer.model.templates import TEMPLATES, build_template, template_gpus

# NVIDIA DGX SuperPOD GB200 reference architecture ("DGX SuperPOD components": NVLink
# switch tray; DGX GB200 user guide): a GB200 NVL72 rack is 18 compute trays of 4 GB200
# GPUs, 2 Grace CPUs and 4 ConnectX-7 400G NICs each, plus 9 NVLink switch trays; every
# GPU runs 18 NVLinks, 2 to each switch tray.  The leaf and spine counts below are NOT
# published figures: they are derived from the same sizing rule rail-cluster uses and the
# SuperPOD leaf (64-port QM9700 at 1:1: 32 servers down, 32 links up), one rail per NIC
# of a compute tray, so a rack of 18 trays needs 4 leaves and uplinks / 64 spines.
TRAYS, SWITCH_TRAYS, GPUS_PER_TRAY, CPUS_PER_TRAY, NICS_PER_TRAY = 18, 9, 4, 2, 4
LEAF_DOWN, LEAF_RADIX = 32, 64


def count(topo, kind: str) -> int:
    return sum(1 for _ in topo.nodes(kind))


def expected_switches(racks: int) -> tuple[int, int]:
    """Leaves and spines of ``racks`` NVL72 racks by the sizing rule (see above)."""
    if racks == 1:
        return 0, 0  # one rack alone: its NICs wait for a fabric that is not drawn
    trays = racks * TRAYS
    blocks = math.ceil(trays / LEAF_DOWN)
    leaves = NICS_PER_TRAY * blocks
    uplinks = sum(NICS_PER_TRAY * min(LEAF_DOWN, trays - b * LEAF_DOWN) for b in range(blocks))
    return leaves, math.ceil(uplinks / LEAF_RADIX)


@pytest.mark.parametrize("racks", [1, 2, 8, 16])
def test_nvl72_racks_follow_the_reference_counts(racks):
    t = build_template("nvl72", racks=racks)
    assert count(t, "gpu") == racks * TRAYS * GPUS_PER_TRAY
    assert count(t, "nvlink-switch-tray") == racks * SWITCH_TRAYS
    assert count(t, "host") == racks * TRAYS * CPUS_PER_TRAY
    assert count(t, "nic") == racks * TRAYS * NICS_PER_TRAY
    assert sum(1 for g in t.groups() if g.kind == "tray") == racks * TRAYS
    assert (count(t, "leaf"), count(t, "spine"), count(t, "core")) == (
        *expected_switches(racks),
        0,
    )
    gpu = next(iter(t.nodes("gpu")))
    per_switch = Counter(
        lk.b if lk.a == gpu.id else lk.a
        for lk in t.links_of(gpu.id)
        if lk.tech == "nvlink5"
        for _ in range(lk.count)
    )
    assert sorted(per_switch.values()) == [2] * SWITCH_TRAYS
    assert validate(t) == []


def test_nvl72_racks_are_joined_rail_by_rail():
    t = build_template("nvl72", racks=2)
    for nic in t.nodes("nic"):
        (leaf,) = [lk.b for lk in t.links_of(nic.id) if lk.tech == "ib-ndr"]
        rail = int(nic.id.rsplit("nic", 1)[1])
        assert leaf.startswith(f"leaf-r{rail}-")


@pytest.mark.parametrize(
    ("gpu", "nic", "tech", "tray"),
    [
        ("GB200", "ConnectX-7", "ib-ndr", "NVLink-Switch-Tray"),
        ("GB300", "ConnectX-8", "ib-xdr", "NVLink-Switch-Tray"),
        ("Rubin", "ConnectX-9", "ib-xdr", "NVLink6-Switch-Tray"),
    ],
)
def test_nvl72_gpu_picks_its_nic_and_switch_tray(gpu, nic, tech, tray):
    t = build_template("nvl72", racks=2, gpu=gpu)
    assert {n.model for n in t.nodes("nic")} == {nic}
    assert {n.model for n in t.nodes("nvlink-switch-tray")} == {tray}
    assert {
        lk.tech for lk in t.links() if t.node(lk.a).kind == "leaf" or t.node(lk.b).kind == "leaf"
    } == {tech}


def test_nvl72_nic_rate_is_selectable():
    t = build_template("nvl72", racks=2, nic_gbps=800)
    assert {n.model for n in t.nodes("nic")} == {"ConnectX-8"}
    assert {lk.tech for lk in t.links() if lk.tech.startswith("ib-")} == {"ib-xdr"}


def test_nvl72_partition_of_several_racks_is_refused():
    with pytest.raises(DesignError, match="single rack"):
        build_template("nvl72", racks=2, gpus=8)
    assert template_gpus("nvl72", racks=16) == 16 * 72


@pytest.mark.parametrize("gpu", ["MI300X", "MI325X", "MI355X"])
def test_amd_nodes_are_a_full_xgmi_mesh(gpu):
    t = build_template("rail-cluster", gpu=gpu, nodes=2)
    assert count(t, "nvswitch") == 0
    for g in t.nodes("gpu"):
        peers = [
            lk.b if lk.a == g.id else lk.a for lk in t.links_of(g.id) if lk.tech.startswith("xgmi")
        ]
        assert len(peers) == len(set(peers)) == 7
        assert all(p.split("-")[0] == g.id.split("-")[0] for p in peers)
    assert validate(t) == []


def test_mi355x_links_run_at_its_own_rate():
    t = build_template("hgx", gpu="MI355X")
    assert {lk.tech for lk in t.links() if lk.tech.startswith("xgmi")} == {"xgmi-77"}


@pytest.mark.parametrize(
    ("gpu", "dims", "links", "tech"),
    [
        ("TPU-v5p", (4, 4, 4), 6, "ici-v5p"),
        ("TPU7x", (4, 4, 4), 6, "ici-v7"),
        ("Trainium2", (4, 4, 1), 4, "neuronlink-v3"),
    ],
)
def test_torus_accelerators_use_their_links(gpu, dims, links, tech):
    x, y, z = dims
    t = build_template("torus3d", gpu=gpu, x=x, y=y, z=z)
    for g in t.nodes("gpu"):
        own = [lk for lk in t.links_of(g.id)]
        assert {lk.tech for lk in own} == {tech}
        assert sum(lk.count for lk in own) == links
    assert validate(t) == []


def test_torus_beyond_the_pod_or_dimension_is_refused():
    with pytest.raises(DesignError, match="pod of 16"):
        build_template("torus3d", gpu="Trainium2", x=8, y=4, z=1)
    with pytest.raises(DesignError, match="2D torus"):
        build_template("torus3d", gpu="Trainium2", x=2, y=2, z=2)
    with pytest.raises(DesignError, match="pod of 8,960"):
        build_template("torus3d", gpu="TPU-v5p", x=24, y=24, z=16)


@pytest.mark.parametrize("planes", [2, 4])
def test_planes_split_every_nic_over_separate_fabrics(planes):
    t = build_template("rail-cluster", gpu="B300", nodes=2, nic_gbps=800, planes=planes)
    plane_of = {n.id: n.id.split("-")[0] for n in t.nodes() if n.kind in ("leaf", "spine")}
    assert set(plane_of.values()) == {f"p{p}" for p in range(planes)}
    for nic in t.nodes("nic"):
        fabric = [lk for lk in t.links_of(nic.id) if lk.a in plane_of or lk.b in plane_of]
        assert sorted(plane_of[lk.a if lk.a in plane_of else lk.b] for lk in fabric) == [
            f"p{p}" for p in range(planes)
        ]
        assert {t.catalog.tech(lk.tech).gbps for lk in fabric} == {800 / planes}
    for lk in t.links():
        if lk.a in plane_of and lk.b in plane_of:
            assert plane_of[lk.a] == plane_of[lk.b]
    assert validate(t) == []


def test_planes_need_a_multiplane_nic():
    with pytest.raises(DesignError, match="splits its port"):
        build_template("rail-cluster", nodes=2, planes=2)


def test_templates_list_the_new_parameters():
    names = {t: {p.name for p in TEMPLATES[t].params} for t in TEMPLATES}
    assert {
        "racks",
        "gpu",
        "nic_gbps",
        "fabric",
        "oversubscription",
        "core",
        "planes",
        "storage",
        "frontend",
        "management",
    } <= names["nvl72"]
    assert "planes" in names["rail-cluster"]
    gpu_choices = next(p.choices for p in TEMPLATES["rail-cluster"].params if p.name == "gpu")
    assert {"B300", "MI300X", "MI325X", "MI355X"} <= set(gpu_choices)
    torus_choices = next(p.choices for p in TEMPLATES["torus3d"].params if p.name == "gpu")
    assert {"TPU-v5p", "TPU7x", "Trainium2"} <= set(torus_choices)


# NVIDIA DGX SuperPOD with DGX B300 systems (XDR) reference architecture, table 3
# "Example compute fabric components": SU count -> (nodes, GPUs, leaf, spine, node-leaf
# cables, leaf-spine cables).  The 18-SU row prints 9,216 GPUs for 1,296 nodes of 8 GPUs
# (10,368, as its cable counts say): the GPUs are checked as nodes x 8.
B300_SUPERPOD = {
    1: (72, 576, 8, 4, 576, 576),
    2: (144, 1152, 16, 8, 1152, 1152),
    4: (288, 2304, 32, 18, 2304, 2304),
    8: (576, 4608, 64, 36, 4608, 4608),
    18: (1296, 9216, 144, 72, 10368, 10368),
}


@pytest.mark.parametrize(
    "sus",
    [1, 2, 4, pytest.param(8, marks=pytest.mark.slow), pytest.param(18, marks=pytest.mark.slow)],
)
def test_b300_superpod_matches_the_published_table(sus):
    nodes, gpus, leaves, spines, node_leaf, leaf_spine = B300_SUPERPOD[sus]
    t = build_template("superpod", gpu="B300", sus=sus)
    assert sum(1 for g in t.groups() if g.kind == "node") == nodes
    assert count(t, "gpu") == nodes * 8 == (gpus if sus != 18 else node_leaf)
    assert (count(t, "leaf"), count(t, "spine"), count(t, "core")) == (leaves, spines, 0)
    kinds = {n.id: n.kind for n in t.nodes()}
    cables = Counter()
    for lk in t.links():
        ends = {kinds[lk.a], kinds[lk.b]}
        if lk.tech == "ib-xdr":
            cables["leaf-spine" if ends == {"leaf", "spine"} else "node-leaf"] += lk.count
    assert (cables["node-leaf"], cables["leaf-spine"]) == (node_leaf, leaf_spine)
    # every leaf spreads its uplinks evenly over the spines
    per_pair = {lk.count for lk in t.links() if {kinds[lk.a], kinds[lk.b]} == {"leaf", "spine"}}
    assert per_pair == {72 // spines}
    if sus <= 2:
        assert validate(t) == []
