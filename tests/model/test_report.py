"""Design summary: counts, NVLink domains, oversubscription and bisection bandwidth."""

from __future__ import annotations

import json
import random

import networkx as nx
import pytest

from designer.model.catalog import NODE_KINDS
from designer.model.report import (
    bisection,
    format_info,
    info,
    natural_key,
    nvlink_domains,
    oversubscription,
)
from designer.model.topology import Link, Node, Topology

NDR = 400 / 8  # GB/s per direction of one NDR link


def add(t: Topology, node_id: str, kind: str, model: str, **kw) -> None:
    t.add_node(Node(node_id, kind, model, node_id, **kw))


def link(t: Topology, link_id: str, a: str, b: str, tech: str, count: int = 1, **kw) -> None:
    t.add_link(Link(link_id, a, b, tech, count=count, **kw))


def two_leaf_design(up0: int = 1, up1: int = 1, hosts_per_leaf: int = 2) -> Topology:
    """``hosts_per_leaf`` GPUs per leaf, each GPU -> its NIC -> its leaf (one NDR link);
    leaf i has ``up_i`` NDR links to a single spine."""
    t = Topology(name="two-leaf")
    add(t, "spine", "spine", "QM9700")
    gpu = 0
    for leaf, up in ((0, up0), (1, up1)):
        add(t, f"leaf{leaf}", "leaf", "QM9700")
        link(t, f"up{leaf}", f"leaf{leaf}", "spine", "ib-ndr", up)
        for _ in range(hosts_per_leaf):
            add(t, f"g{gpu}", "gpu", "H100")
            add(t, f"nic{gpu}", "nic", "ConnectX-7")
            link(t, f"p{gpu}", f"g{gpu}", f"nic{gpu}", "pcie5")
            link(t, f"ib{gpu}", f"nic{gpu}", f"leaf{leaf}", "ib-ndr")
            gpu += 1
    return t


def hgx(t: Topology, prefix: str, gpus: int = 4, switches: int = 2) -> None:
    """A small NVLink board: ``gpus`` H100s each with 4 NVLinks to every NVSwitch."""
    for s in range(switches):
        add(t, f"{prefix}s{s}", "nvswitch", "NVSwitch-gen3")
    for g in range(gpus):
        add(t, f"{prefix}g{g}", "gpu", "H100")
        for s in range(switches):
            link(t, f"{prefix}l{g}.{s}", f"{prefix}g{g}", f"{prefix}s{s}", "nvlink4", 4)


# ----------------------------------------------------------------------- counts


def test_natural_key_orders_digit_runs_by_value():
    ids = ["g10", "g2", "su1-n10-g0", "su1-n9-g1", "g1", "a"]
    assert sorted(ids, key=natural_key) == ["a", "g1", "g2", "g10", "su1-n9-g1", "su1-n10-g0"]


def test_counts_hold_every_kind_links_and_cables():
    t = two_leaf_design(up0=3, up1=2)
    counts = info(t)["counts"]
    assert set(NODE_KINDS) <= set(counts)
    assert counts["gpu"] == 4 and counts["nic"] == 4 and counts["leaf"] == 2
    assert counts["spine"] == 1 and counts["core"] == 0 and counts["host"] == 0
    assert counts["links"] == 2 + 4 + 4
    assert counts["cables"] == 3 + 2 + 4 + 4


def test_info_is_json_serialisable_and_named():
    data = info(two_leaf_design())
    assert json.loads(json.dumps(data)) == data
    assert data["name"] == "two-leaf" and data["gpus"] == 4


# ----------------------------------------------------------------------- NVLink domains


def test_nvlink_domains_are_components_over_nvlink_largest_first():
    t = Topology()
    hgx(t, "a", gpus=4)
    hgx(t, "b", gpus=3)
    add(t, "lone", "gpu", "H100")
    data = info(t)
    assert data["nvlink_domains"] == [4, 3, 1]
    assert data["nvlink_summary"] == {"domains": 3, "largest": 4, "smallest": 1}


def test_pcie_and_network_links_do_not_join_nvlink_domains():
    t = two_leaf_design()
    assert nvlink_domains(t) == [1, 1, 1, 1]


def test_failed_nvswitches_split_a_domain():
    t = Topology()
    hgx(t, "a", gpus=4, switches=1)
    t.update_node("as0", failed=True)
    assert nvlink_domains(t) == [1, 1, 1, 1]
    t.update_node("ag0", failed=True)  # a failed GPU is in no domain
    assert nvlink_domains(t) == [1, 1, 1]


# ----------------------------------------------------------------------- oversubscription


def test_two_to_one_leaf_reports_2():
    # 4 NICs x 50 GB/s down, 2 x 50 GB/s up
    t = two_leaf_design(up0=2, up1=2, hosts_per_leaf=4)
    over = info(t)["oversubscription"]
    assert over["leaf"]["ratio"] == pytest.approx(2.0)
    assert over["leaf"]["down_GBps"] == pytest.approx(8 * NDR)
    assert over["leaf"]["up_GBps"] == pytest.approx(4 * NDR)
    assert over["spine"]["ratio"] is None  # top tier: no uplinks
    assert over["spine"]["down_GBps"] == pytest.approx(4 * NDR)
    assert over["core"]["switches"] == 0


def test_tier_ratio_aggregates_and_worst_names_the_switch():
    t = two_leaf_design(up0=1, up1=2, hosts_per_leaf=2)  # leaf0 2:1, leaf1 1:1
    leaf = info(t)["oversubscription"]["leaf"]
    assert leaf["ratio"] == pytest.approx(4 / 3)
    assert leaf["worst"] == pytest.approx(2.0)
    assert leaf["worst_switch"] == "leaf0"


def test_failed_uplink_raises_oversubscription_and_management_is_ignored():
    t = two_leaf_design(up0=2, up1=2, hosts_per_leaf=2)
    add(t, "oob", "switch", "SN2201", plane="management")
    link(t, "m0", "oob", "leaf0", "eth-1g", plane="management")
    assert info(t)["oversubscription"]["leaf"]["ratio"] == pytest.approx(1.0)
    link(t, "up0b", "leaf0", "spine", "ib-ndr", 2, failed=True)
    assert info(t)["oversubscription"]["leaf"]["ratio"] == pytest.approx(1.0)
    t.update_link("up0", failed=True)
    leaf = info(t)["oversubscription"]["leaf"]
    assert leaf["ratio"] == pytest.approx(2.0)  # 4 down, 2 up in all
    assert leaf["worst_switch"] == "leaf1"  # leaf0 has no working uplink left


def test_core_tier_is_measured_against_spines():
    t = two_leaf_design(up0=2, up1=2, hosts_per_leaf=2)
    add(t, "core", "core", "QM9700")
    link(t, "c", "spine", "core", "ib-ndr", 1)
    over = info(t)["oversubscription"]
    assert over["spine"]["ratio"] == pytest.approx(4.0)
    assert over["core"]["down_GBps"] == pytest.approx(NDR)


# ----------------------------------------------------------------------- bisection


@pytest.mark.parametrize(
    ("up0", "up1", "expected"), [(1, 1, NDR), (2, 2, 2 * NDR), (3, 1, NDR), (4, 4, 2 * NDR)]
)
def test_bisection_of_two_leaves_is_the_spine_links_or_the_nics(up0, up1, expected):
    # halves {g0, g1} | {g2, g3}: the cut is the leaf-spine links, or the 2 NICs per side
    data = info(two_leaf_design(up0, up1))
    assert data["bisection_GBps"] == pytest.approx(expected)
    assert data["bisection_per_gpu_GBps"] == pytest.approx(expected / 2)
    split = data["bisection_split"]
    assert split["a"] == {"count": 2, "first": "g0", "last": "g1"}
    assert split["b"] == {"count": 2, "first": "g2", "last": "g3"}


def test_bisection_splits_gpus_in_natural_order():
    # g1, g2 | g10, g11 naturally (lexically it would be g1, g10 | g11, g2)
    t = Topology()
    for g in ("g1", "g2", "g10", "g11"):
        add(t, g, "gpu", "H100")
    link(t, "a", "g1", "g2", "nvlink4", 18)
    link(t, "b", "g10", "g11", "nvlink4", 18)
    link(t, "x", "g2", "g10", "nvlink4", 3)
    split = bisection(t)
    assert split["GBps"] == pytest.approx(3 * 25.0)
    assert (split["a"]["last"], split["b"]["first"]) == ("g2", "g10")


def test_bisection_excludes_failed_parts_and_management():
    t = two_leaf_design(2, 2)
    add(t, "oob", "switch", "SN2201", plane="management")
    add(t, "h0", "host", "Host-x86")
    add(t, "h3", "host", "Host-x86")
    link(t, "hp0", "h0", "g0", "pcie5")
    link(t, "hp3", "h3", "g3", "pcie5")
    link(t, "m0", "oob", "h0", "eth-1g", plane="management")
    link(t, "m3", "oob", "h3", "eth-1g", plane="management")
    assert bisection(t)["GBps"] == pytest.approx(2 * NDR)
    t.update_link("ib0", failed=True)
    assert bisection(t)["GBps"] == pytest.approx(NDR)  # only g1's NIC left on side A
    t.update_node("spine", failed=True)
    assert bisection(t)["GBps"] == 0.0


def odd_servers(servers: int = 3) -> Topology:
    """``servers`` boards of 2 H100s on an NVSwitch (18 NVLinks each), each GPU with its
    own NIC on one leaf: an odd number of servers cannot be halved whole."""
    t = Topology(name="odd")
    add(t, "leaf", "leaf", "QM9700")
    for s in range(servers):
        add(t, f"s{s}nvs", "nvswitch", "NVSwitch-gen3")
        for g in range(2):
            gpu = f"s{s}g{g}"
            add(t, gpu, "gpu", "H100")
            add(t, f"{gpu}nic", "nic", "ConnectX-7")
            link(t, f"{gpu}p", gpu, f"{gpu}nic", "pcie5")
            link(t, f"{gpu}ib", f"{gpu}nic", "leaf", "ib-ndr")
            link(t, f"{gpu}nv", gpu, f"s{s}nvs", "nvlink4", 18)
    return t


def test_bisection_never_counts_the_nvlinks_of_a_split_server():
    # 6 GPUs: halving 3 vs 3 in id order would cut server s1 and count its 450 GB/s of
    # NVLink.  Whole servers give 2 vs 4 GPUs (2 NICs across: 100 GB/s, 50 per GPU of the
    # smaller half); every server split in two gives 3 NICs across with no NVLink: 150.
    data = bisection(odd_servers())
    assert data["per_gpu_GBps"] == pytest.approx(NDR)
    cuts = {c["cut"]: c["GBps"] for c in data["candidates"]}
    assert cuts["servers"] == pytest.approx(2 * NDR)
    assert cuts["servers-halved"] == pytest.approx(3 * NDR)
    assert max(cuts.values()) <= 3 * NDR + 1e-9  # no cut counts a server's NVLinks
    assert (data["a"]["count"], data["b"]["count"]) == (2, 4)


def test_h100_superpod_su_bisection_is_at_most_its_nic_rate():
    # 31 DGX H100 (an odd count) on 400G rails: 50 GB/s per GPU is the fabric's rate.
    data = info(_build("superpod", sus=1))
    assert data["bisection_per_gpu_GBps"] <= NDR + 1e-9
    assert data["bisection_per_gpu_GBps"] == pytest.approx(NDR)


@pytest.mark.parametrize(
    ("template", "params"),
    [
        ("rail-cluster", [{"oversubscription": r} for r in (1.0, 2.0, 4.0)]),
        ("rail-cluster", [{"nodes": 64, "oversubscription": r} for r in (1.0, 2.0, 4.0)]),
        ("leaf-spine", [{"spines": s} for s in (4, 2, 1)]),
    ],
)
def test_bisection_falls_with_leaf_oversubscription(template, params):
    per_gpu = [bisection(_build(template, **p))["per_gpu_GBps"] for p in params]
    assert per_gpu[0] > per_gpu[1] > per_gpu[2], per_gpu


def test_rail_cluster_bisection_by_hand():
    # 4 servers, one leaf per rail, 2:1: each leaf has 4 x 400G down and 2 x 400G up.
    # The worst cut is by rail: rails 0-3 (16 GPUs) against 4-7, every byte crossing
    # the spine through 4 leaves x 2 uplinks x 50 GB/s = 400 GB/s: 25 GB/s per GPU.
    data = bisection(_build("rail-cluster", nodes=4, oversubscription=2.0))
    assert data["GBps"] == pytest.approx(4 * 2 * NDR)
    assert data["per_gpu_GBps"] == pytest.approx(25.0)
    assert data["cut"] == "gpus-by-leaf"
    assert (data["a"]["first"], data["a"]["last"]) == ("n01-gpu0", "n04-gpu3")
    text = format_info(info(_build("rail-cluster", nodes=4, oversubscription=2.0)))
    assert "balanced cut(s): GPUs grouped by edge switch (rail cut" in text


def test_bisection_does_not_depend_on_node_order():
    t = _build("rail-cluster", nodes=4, oversubscription=2.0)
    shuffled = Topology(name=t.name)
    rng = random.Random(3)
    nodes, links = list(t.nodes()), list(t.links())
    rng.shuffle(nodes)
    rng.shuffle(links)
    shuffled.extend(groups=list(t.groups()), nodes=nodes, links=links)
    assert bisection(shuffled) == bisection(t)


def test_bisection_needs_two_gpus():
    t = Topology()
    add(t, "g0", "gpu", "H100")
    data = info(t)
    assert data["bisection_GBps"] is None and data["bisection_per_gpu_GBps"] is None
    assert "fewer than two" in format_info(data)


def random_design(seed: int) -> Topology:
    """Random mesh of GPUs, NICs and switches with random bundle sizes (links may repeat,
    so parallel bundles and dead ends and chains all occur)."""
    rng = random.Random(seed)
    t = Topology()
    n_gpu, n_other = rng.randint(2, 9), rng.randint(1, 14)
    ids = [f"g{i}" for i in range(n_gpu)] + [f"x{i}" for i in range(n_other)]
    for i in ids:
        add(t, i, "gpu" if i[0] == "g" else "leaf", "H100" if i[0] == "g" else "QM9700")
    for k in range(rng.randint(1, 3 * len(ids))):
        a, b = rng.sample(ids, 2)
        link(t, f"l{k}", a, b, "ib-ndr", rng.randint(1, 4), failed=rng.random() < 0.1)
    return t


@pytest.mark.parametrize("seed", range(40))
def test_network_reductions_are_exact(seed):
    t = random_design(seed)
    exact = bisection(t, reduce=False)["GBps"]
    assert bisection(t)["GBps"] == pytest.approx(exact)
    bk = bisection(t, flow_func=nx.algorithms.flow.boykov_kolmogorov)["GBps"]
    assert bk == pytest.approx(exact)


def test_format_info_shows_the_figures():
    text = format_info(info(two_leaf_design(2, 2, hosts_per_leaf=4)))
    assert "Design: two-leaf" in text
    assert "gpu 8" in text and "leaf 2" in text
    assert "2.00" in text  # leaf oversubscription
    assert "Bisection: 100.0 GB/s" in text and "4 GPUs g0..g3 vs 4 GPUs g4..g7" in text


def test_other_planes_do_not_count_for_the_compute_fabric():
    t = two_leaf_design(1, 1)
    # a front-end Ethernet network joining g0 and g3 on its own leaf
    add(t, "fe", "leaf", "SN5600", plane="frontend")
    for g in ("g0", "g3"):
        add(t, f"fe-{g}", "nic", "BlueField-3", plane="frontend")
        link(t, f"fep-{g}", g, f"fe-{g}", "pcie5", plane="frontend")
        link(t, f"fel-{g}", f"fe-{g}", "fe", "eth-400", plane="frontend")
    data = info(t)
    assert data["bisection_GBps"] == pytest.approx(NDR)
    assert data["oversubscription"]["leaf"]["switches"] == 2
    assert data["oversubscription"]["leaf"]["ratio"] == pytest.approx(2.0)
    assert bisection(t, plane="frontend")["GBps"] == pytest.approx(NDR)
    frontend = oversubscription(t, plane="frontend")["leaf"]
    assert (frontend["switches"], frontend["down_GBps"], frontend["ratio"]) == (1, 2 * NDR, None)


# ----------------------------------------------------------------------- templates


def _build(name, **params):
    templates = pytest.importorskip("designer.model.templates")
    if not hasattr(templates, "build_template"):
        pytest.skip("templates not written yet")
    return templates.build_template(name, **params)


def test_hgx_template_is_one_nvlink_domain_of_8():
    t = _build("hgx")
    data = info(t)
    assert data["gpus"] == 8
    assert data["nvlink_domains"] == [8]


def test_nvl72_template_is_one_nvlink_domain_of_72():
    data = info(_build("nvl72"))
    assert data["nvlink_domains"] == [72]
    assert data["nvlink_summary"] == {"domains": 1, "largest": 72, "smallest": 72}


@pytest.mark.parametrize(("hosts", "spines", "uplinks"), [(4, 2, 1), (4, 2, 2), (6, 2, 1)])
def test_leaf_spine_template_oversubscription(hosts, spines, uplinks):
    # one-GPU hosts, one 400G NIC each; leaf uplinks at the same rate
    t = _build("leaf-spine", leaves=4, spines=spines, hosts_per_leaf=hosts, uplinks=uplinks)
    leaf = info(t)["oversubscription"]["leaf"]
    assert leaf["switches"] == 4
    assert leaf["ratio"] == pytest.approx(hosts / (spines * uplinks))
    assert leaf["worst"] == pytest.approx(hosts / (spines * uplinks))


def test_fat_tree_template_has_full_bisection():
    t = _build("fat-tree", k=4, storage=True, frontend=True, management=True)
    data = info(t)
    assert data["gpus"] == 16
    assert data["bisection_GBps"] == pytest.approx(8 * NDR)  # every NIC of a half at 400G
    assert data["bisection_per_gpu_GBps"] == pytest.approx(NDR)
    assert data["oversubscription"]["leaf"]["ratio"] == pytest.approx(1.0)


def test_superpod_template_bisection_is_the_same_without_reductions():
    t = _build("superpod", sus=1)
    assert bisection(t)["GBps"] == pytest.approx(bisection(t, reduce=False)["GBps"])


@pytest.mark.slow
def test_4096_gpu_superpod_is_non_blocking():
    """info on 4,096 GPUs (its time: benchmarks/design_checks.py)."""
    t = _build("superpod", gpu="B200", sus=16)
    data = info(t)
    assert data["gpus"] == 4096 and data["nvlink_domains"] == [8] * 512
    assert data["bisection_GBps"] == pytest.approx(2048 * NDR)
    for tier in ("leaf", "spine"):
        assert data["oversubscription"][tier]["ratio"] == pytest.approx(1.0)


def test_kernighan_lin_finds_a_cut_no_name_or_tier_shows():
    # One-GPU hosts on 4 leaves; spine S0 serves leaves 0 and 2, spine S1 leaves 1 and 3,
    # and one NDR link joins the spines: the worst cut is {leaf0, leaf2} | {leaf1,
    # leaf3} across that link (50 GB/s), while id, leaf-name and tier orders all pair
    # leaf0 with leaf1.
    t = Topology(name="split spines")
    for s in range(2):
        add(t, f"S{s}", "spine", "QM9700")
    link(t, "SS", "S0", "S1", "ib-ndr")
    for leaf in range(4):
        add(t, f"leaf{leaf}", "leaf", "QM9700")
        link(t, f"up{leaf}", f"leaf{leaf}", f"S{leaf % 2}", "ib-ndr", 2)
        for h in range(2):
            gpu = f"g{2 * leaf + h}"
            add(t, gpu, "gpu", "H100")
            add(t, f"{gpu}nic", "nic", "ConnectX-7")
            link(t, f"{gpu}p", gpu, f"{gpu}nic", "pcie5")
            link(t, f"{gpu}ib", f"{gpu}nic", f"leaf{leaf}", "ib-ndr")
    data = bisection(t)
    assert data["GBps"] == pytest.approx(NDR)
    assert data["cut"] == "servers-kl"
    others = [c["GBps"] for c in data["candidates"] if c["cut"] != "servers-kl"]
    assert min(others) > NDR
