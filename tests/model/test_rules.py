"""Design rules: each rule fires on a minimal bad design and stays quiet on a good one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from designer.model.rules import CODES, Finding, validate
from designer.model.topology import Link, Node, Topology


def codes(findings):
    return [(f.severity, f.code, f.subject) for f in findings]


def add(t: Topology, node_id: str, kind: str, model: str, **kw) -> None:
    t.add_node(Node(node_id, kind, model, node_id, **kw))


def link(t: Topology, link_id: str, a: str, b: str, tech: str, count: int = 1, **kw) -> None:
    t.add_link(Link(link_id, a, b, tech, count=count, **kw))


def good_design() -> Topology:
    """Two H100s on an NVSwitch, each with its own NIC to one NDR leaf; a host; and an
    out-of-band management switch reaching the host and the leaf's own OOB port."""
    t = Topology(name="good")
    add(t, "g0", "gpu", "H100")
    add(t, "g1", "gpu", "H100")
    add(t, "nvs", "nvswitch", "NVSwitch-gen3")
    add(t, "host", "host", "Host-x86")
    add(t, "nic0", "nic", "ConnectX-7")
    add(t, "nic1", "nic", "ConnectX-7")
    add(t, "leaf", "leaf", "QM9700")
    add(t, "oob", "switch", "SN2201", plane="management")
    link(t, "nv0", "g0", "nvs", "nvlink4", 18)
    link(t, "nv1", "g1", "nvs", "nvlink4", 18)
    link(t, "p0", "g0", "nic0", "pcie5")
    link(t, "p1", "g1", "nic1", "pcie5")
    link(t, "h0", "host", "g0", "pcie5")
    link(t, "h1", "host", "g1", "pcie5")
    link(t, "ib0", "nic0", "leaf", "ib-ndr")
    link(t, "ib1", "nic1", "leaf", "ib-ndr")
    link(t, "m0", "oob", "host", "eth-1g", plane="management")
    link(t, "m1", "oob", "leaf", "eth-1g", plane="management")
    return t


def test_good_design_has_no_findings():
    assert validate(good_design()) == []


def test_finding_is_a_frozen_value_with_a_readable_str():
    f = Finding("error", "port-budget", "g0", "g0 (H100) uses 19 NVLink ports but has only 18")
    with pytest.raises(AttributeError):
        f.code = "x"  # type: ignore[misc]
    assert str(f) == "error: g0 (H100) uses 19 NVLink ports but has only 18 [port-budget]"
    assert set(CODES) >= {
        "port-budget",
        "incompatible-tech",
        "speed-mismatch",
        "isolated-gpu",
        "disconnected",
        "management-shared",
        "no-gpus",
    }


# ----------------------------------------------------------------------- port budget


def test_port_budget_exceeded_names_node_counts_and_family():
    t = good_design()
    t.update_link("nv0", count=19)
    found = validate(t)
    assert codes(found) == [("error", "port-budget", "g0")]
    msg = found[0].message
    assert "g0 (H100)" in msg and "19" in msg and "18" in msg and "NVLink" in msg


def test_port_budget_exactly_full_is_fine():
    t = Topology()
    add(t, "g0", "gpu", "H100")
    add(t, "g1", "gpu", "H100")
    link(t, "l0", "g0", "g1", "nvlink4", 18)
    assert validate(t) == []


@pytest.mark.parametrize(("nics", "over"), [(128, False), (129, True)])
def test_breakout_ports_count_by_rate_like_topology_port_usage(nics, over):
    # 400G links on 800G breakout ports use half a port each: 128 fit in 64 ports
    t = Topology()
    add(t, "s", "leaf", "SN5600")
    for i in range(nics):
        add(t, f"n{i}", "nic", "ConnectX-7")
        link(t, f"l{i}", f"n{i}", "s", "roce-400")
    budget = [f for f in validate(t) if f.code == "port-budget"]
    assert [f.subject for f in budget] == [n for n, *_ in t.over_subscribed_ports()]
    assert bool(budget) == over
    if over:
        assert budget[0].message == "s (SN5600) uses 64.5 Ethernet ports but has only 64"


# ----------------------------------------------------------------------- technology


def test_nvlink_into_an_infiniband_switch_is_incompatible():
    t = good_design()
    link(t, "l7", "g0", "leaf", "nvlink4", 1)
    t.update_link("nv0", count=17)  # keep g0's NVLink budget intact
    found = validate(t)
    assert codes(found) == [("error", "incompatible-tech", "l7")]
    assert found[0].message == (
        "link l7 (nvlink4) cannot plug into leaf (QM9700): it has no NVLink ports"
    )


def test_nvlink_generation_mismatch_is_incompatible_and_says_the_generations():
    t = Topology()
    add(t, "g0", "gpu", "H100")
    add(t, "g1", "gpu", "H100")
    add(t, "nvs", "nvswitch", "NVSwitch-gen4")  # speaks NVLink 5 only
    link(t, "a", "g0", "nvs", "nvlink4", 18)
    link(t, "b", "g1", "nvs", "nvlink4", 18)
    found = validate(t)
    assert codes(found) == [
        ("error", "incompatible-tech", "a"),
        ("error", "incompatible-tech", "b"),
    ]
    assert "nvs (NVSwitch-gen4)" in found[0].message
    assert "generation 5" in found[0].message and "generation 4" in found[0].message


# ----------------------------------------------------------------------- speed


def nic_to_switch(nic: str, switch: str, tech: str) -> Topology:
    """Two GPUs, one NIC on g0 and a switch; PCIe-Gen4 NICs get Gen4 GPUs (A100)."""
    gen4 = nic == "ConnectX-6"
    t = Topology()
    add(t, "g0", "gpu", "A100" if gen4 else "H100")
    add(t, "g1", "gpu", "A100" if gen4 else "H100")
    add(t, "n", "nic", nic)
    add(t, "s", "leaf", switch)
    link(t, "nv", "g0", "g1", "nvlink3" if gen4 else "nvlink4", 12 if gen4 else 18)
    link(t, "p", "g0", "n", "pcie4" if gen4 else "pcie5")
    link(t, "x", "n", "s", tech)
    return t


def test_link_faster_than_a_port_is_a_speed_error():
    found = validate(nic_to_switch("ConnectX-7", "Q3400", "ib-xdr"))
    assert codes(found) == [("error", "speed-mismatch", "x")]
    assert "n (ConnectX-7)" in found[0].message and "400 Gb/s" in found[0].message
    assert "faster" in found[0].message


def test_link_slower_than_a_port_goes_is_a_speed_error():
    found = validate(nic_to_switch("ConnectX-7", "SN5600", "eth-100"))
    assert codes(found) == [("error", "speed-mismatch", "x")]
    assert "s (SN5600)" in found[0].message and "slower" in found[0].message


def test_different_native_rates_without_breakout_is_a_speed_warning():
    # a 400G NIC on a 200G HDR switch: the NIC's port runs at half its rate
    found = validate(nic_to_switch("ConnectX-7", "QM8700", "ib-hdr"))
    assert codes(found) == [("warning", "speed-mismatch", "x")]
    assert "n (ConnectX-7)" in found[0].message and "200 Gb/s" in found[0].message


@pytest.mark.parametrize(
    ("nic", "switch", "tech"),
    [
        ("ConnectX-7", "SN5600", "roce-400"),  # 800G port split 2 x 400G: normal breakout
        ("ConnectX-6", "QM9700", "ib-hdr"),  # NDR200 split of an NDR port
        ("ConnectX-7", "QM9700", "ib-ndr"),  # same rate both ends
    ],
)
def test_matched_or_breakout_rates_are_fine(nic, switch, tech):
    assert validate(nic_to_switch(nic, switch, tech)) == []


def test_pcie_generation_downgrade_warns_about_the_faster_end():
    t = Topology()
    add(t, "g0", "gpu", "A100")
    add(t, "g1", "gpu", "A100")
    add(t, "n", "nic", "ConnectX-7")
    link(t, "nv", "g0", "g1", "nvlink3", 12)
    link(t, "p", "g0", "n", "pcie4")
    found = validate(t)
    assert codes(found) == [("warning", "speed-mismatch", "p")]
    assert "n (ConnectX-7)" in found[0].message


# ----------------------------------------------------------------------- isolated GPU


def test_gpu_without_links_is_isolated():
    t = good_design()
    add(t, "g2", "gpu", "H100")
    found = validate(t)
    assert ("error", "isolated-gpu", "g2") in codes(found)
    assert "g2 (H100)" in next(f for f in found if f.code == "isolated-gpu").message


def test_failed_link_isolates_a_gpu_but_only_that_one():
    t = good_design()
    add(t, "g2", "gpu", "H100")
    link(t, "nv2", "g2", "nvs", "nvlink4", 18)
    for lk in ("nv1", "p1", "h1"):
        t.update_link(lk, failed=True)
    found = validate(t)
    assert codes(found) == [("error", "isolated-gpu", "g1")]
    assert "no working links" in found[0].message


def test_gpu_whose_links_lead_nowhere_is_isolated():
    t = good_design()
    t.update_node("nvs", failed=True)
    t.update_node("leaf", failed=True)
    t.update_node("host", failed=True)
    found = validate(t)
    assert codes(found) == [
        ("error", "isolated-gpu", "g0"),
        ("error", "isolated-gpu", "g1"),
        # the failed leaf leaves the NICs without a fabric, too
        ("warning", "nic-no-fabric", "nic0"),
        ("warning", "nic-no-fabric", "nic1"),
    ]
    assert "no working path" in found[0].message


def test_management_network_is_not_a_gpu_path():
    t = Topology()
    add(t, "oob", "switch", "SN2201", plane="management")
    for i in range(2):
        add(t, f"g{i}", "gpu", "H100")
        add(t, f"h{i}", "host", "Host-x86")
        link(t, f"p{i}", f"g{i}", f"h{i}", "pcie5")
        link(t, f"m{i}", f"h{i}", "oob", "eth-1g", plane="management")
    assert [f.subject for f in validate(t) if f.code == "isolated-gpu"] == ["g0", "g1"]


def test_a_single_gpu_is_not_isolated():
    t = Topology()
    add(t, "g0", "gpu", "H100")
    assert validate(t) == []


# ----------------------------------------------------------------------- GPUs apart


def _two_leaves_per_rail():
    """4 servers of 2 GPUs; rail r's leaves leaf-r{r}-0 (n01, n02) and leaf-r{r}-1 (n03,
    n04) meet only through the spines, like the SUs of a SuperPOD."""
    return _build("rail-cluster", nodes=4, leaf_radix=4, gpus_per_node=2)


def test_gpus_split_by_failed_spines_are_unreachable():
    t = _two_leaves_per_rail()
    assert validate(t) == []
    for spine in ("spine-0", "spine-1"):
        t.update_node(spine, failed=True)
    found = validate(t)
    assert codes(found) == [("error", "gpus-unreachable", "")]
    assert "2 groups" in found[0].message and "(4, 4 GPUs)" in found[0].message
    assert "n01-gpu0 (H100) cannot reach n03-gpu0 (H100)" in found[0].message
    # one spine left joins them again
    t.update_node("spine-1", failed=False)
    assert validate(t) == []


def test_unreachable_names_the_same_gpus_whatever_the_node_order():
    t = _two_leaves_per_rail()
    for spine in ("spine-0", "spine-1"):
        t.update_node(spine, failed=True)
    shuffled = Topology(name="shuffled")
    nodes = sorted(t.nodes(), key=lambda n: n.id[::-1])
    shuffled.extend(
        groups=list(t.groups()), nodes=nodes, links=sorted(t.links(), key=lambda lk: lk.id[::-1])
    )
    assert [f.message for f in validate(shuffled)] == [f.message for f in validate(t)]


def test_an_isolated_gpu_is_not_also_a_group():
    t = good_design()
    add(t, "g2", "gpu", "H100")
    assert [f.code for f in validate(t) if f.severity == "error"] == ["isolated-gpu"]


# ----------------------------------------------------------------------- NVLink lanes


def board(lanes: int, model: str = "H100", nvswitch: str = "NVSwitch-gen3") -> Topology:
    """Four GPUs on up to four NVSwitches, ``lanes`` NVLinks each spread over the
    switches (link ``nv{gpu}-{switch}``); no NIC, no host."""
    tech = {"H100": "nvlink4", "H800": "nvlink4", "A100": "nvlink3"}[model]
    t = Topology()
    switches = min(4, lanes)
    for k in range(switches):
        add(t, f"nvs{k}", "nvswitch", nvswitch)
    for i in range(4):
        add(t, f"g{i}", "gpu", model)
        for k in range(switches):
            if n := lanes // switches + (k < lanes % switches):
                link(t, f"nv{i}-{k}", f"g{i}", f"nvs{k}", tech, n)
    return t


def test_gpus_using_fewer_nvlinks_than_the_board_warn():
    found = validate(board(1))
    assert codes(found) == [("warning", "nvlink-lanes", f"g{i}") for i in range(4)]
    assert found[0].message == (
        "GPU g0 (H100) has 1 of its 18 NVLink lanes cabled (25 of 450 GB/s): below the "
        "H100 board's NVLink bandwidth"
    )
    assert validate(board(18)) == []


def test_nvlink_lanes_follow_the_gpu_model():
    assert validate(board(8, "H800")) == []  # an H800 has 8 NVLinks
    assert validate(board(12, "A100", "NVSwitch-gen2")) == []
    assert [f.code for f in validate(board(6, "A100", "NVSwitch-gen2"))] == ["nvlink-lanes"] * 4


def test_lanes_split_over_several_links_add_up():
    t = board(18)
    t.update_link("nv0-0", count=3)
    link(t, "nv0-0b", "g0", "nvs0", "nvlink4", 2)
    assert validate(t) == []
    t.remove_link("nv0-0b")
    assert codes(validate(t)) == [("warning", "nvlink-lanes", "g0")]


# ----------------------------------------------------------------------- NICs


def test_gpus_whose_nics_failed_have_no_nic():
    t = good_design()
    t.update_node("nic1", failed=True)
    assert validate(t) == []  # g1 reaches nic0 over NVLink to g0 (PXN)
    t.update_node("nic0", failed=True)
    found = validate(t)
    assert codes(found) == [("warning", "gpu-no-nic", "g0"), ("warning", "gpu-no-nic", "g1")]
    assert "g0 (H100) has no working path to a compute-fabric NIC" in found[0].message


def test_a_design_without_nics_is_a_scale_up_sketch():
    assert [f.code for f in validate(board(18))] == []


def test_nic_without_a_cable_to_the_fabric_warns():
    t = good_design()
    t.update_link("ib1", failed=True)
    found = validate(t)
    assert codes(found) == [("warning", "nic-no-fabric", "nic1")]
    assert found[0].message == (
        "NIC nic1 (ConnectX-7) has no working cable to a compute fabric switch: the GPUs "
        "behind it cannot use it"
    )
    t.remove_link("ib1")
    assert codes(validate(t)) == [("warning", "nic-no-fabric", "nic1")]


def test_nics_of_a_board_drawn_without_a_fabric_are_fine():
    t = good_design()
    for node in ("leaf", "oob"):
        t.remove_node(node)
    assert validate(t) == []


@pytest.mark.slow
def test_reach_rules_on_a_16k_gpu_superpod_with_failed_spines():
    """The one finding on 16,384 GPUs (its time: benchmarks/design_checks.py)."""
    t = _build("superpod", gpu="B200", sus=64)
    for n in [n.id for n in t.nodes("spine")]:
        t.update_node(n, failed=True)
    found = validate(t)
    assert [f.code for f in found] == ["gpus-unreachable"]


# ----------------------------------------------------------------------- disconnected


def test_disconnected_parts_are_one_finding_with_sizes_and_examples():
    t = good_design()  # 8 nodes
    add(t, "g2", "gpu", "H100")
    add(t, "g3", "gpu", "H100")
    link(t, "nv23", "g2", "g3", "nvlink4", 18)
    add(t, "s9", "leaf", "QM9700")
    found = [f for f in validate(t) if f.code == "disconnected"]
    assert codes(found) == [("warning", "disconnected", "")]
    assert "3 separate parts of 8, 2, 1 nodes" in found[0].message
    assert "g2" in found[0].message and "s9" in found[0].message


def test_failed_links_do_not_make_a_design_disconnected():
    t = good_design()
    t.update_link("m0", failed=True)
    t.update_link("m1", failed=True)
    assert not [f for f in validate(t) if f.code == "disconnected"]


# ----------------------------------------------------------------------- management


def test_compute_switch_switching_management_traffic_is_flagged():
    t = good_design()
    link(t, "m2", "host", "leaf", "eth-1g", plane="management")  # host's 2nd 1G port
    t.remove_link("m1")
    link(t, "m3", "oob", "leaf", "eth-1g", plane="management")
    found = validate(t)
    # the leaf has one 1G port, so the port budget also complains; that is right
    assert ("error", "port-budget", "leaf") in codes(found)
    found = [f for f in found if f.code == "management-shared"]
    assert codes(found) == [("warning", "management-shared", "leaf")]
    assert "leaf (QM9700)" in found[0].message


def test_management_switch_with_compute_links_is_flagged():
    t = good_design()
    t.update_node("oob", plane="management")
    link(t, "c", "oob", "leaf", "eth-1g")  # a compute-plane link on the OOB switch
    t.remove_link("m1")
    found = [f for f in validate(t) if f.code == "management-shared"]
    assert [f.subject for f in found] == ["oob"]


def test_management_link_between_compute_switches_is_flagged():
    t = good_design()
    add(t, "spine", "spine", "QM9700")
    link(t, "up", "leaf", "spine", "ib-ndr", 2)
    t.remove_link("m1")
    link(t, "oob-oob", "leaf", "spine", "eth-1g", plane="management")
    found = validate(t)
    assert codes(found) == [("warning", "management-shared", "oob-oob")]
    assert "leaf (QM9700)" in found[0].message and "spine (QM9700)" in found[0].message


# ----------------------------------------------------------------------- no GPUs, order


def test_no_gpus_is_a_warning():
    t = Topology()
    add(t, "s", "leaf", "QM9700")
    assert codes(validate(t)) == [("warning", "no-gpus", "")]


def test_findings_are_ordered_errors_first_then_code_then_natural_subject():
    t = good_design()
    for i in (10, 2, 3):
        add(t, f"g{i}", "gpu", "H100")
    link(t, "bad", "g3", "leaf", "nvlink4")
    found = validate(t)
    assert codes(found) == [
        ("error", "incompatible-tech", "bad"),
        ("error", "isolated-gpu", "g2"),
        ("error", "isolated-gpu", "g10"),
        ("warning", "disconnected", ""),
        ("warning", "gpu-no-nic", "g3"),
        ("warning", "nvlink-lanes", "g3"),
    ]


# ----------------------------------------------------------------------- templates


def _build(name, **params):
    templates = pytest.importorskip("designer.model.templates")
    if not hasattr(templates, "build_template"):
        pytest.skip("templates not written yet")
    return templates.build_template(name, **params)


@pytest.mark.parametrize(
    "name",
    ["hgx", "nvl72", "rail-cluster", "superpod", "fat-tree", "leaf-spine", "torus3d", "example"],
)
def test_templates_are_clean(name):
    assert validate(_build(name)) == []


@pytest.mark.parametrize("name", ["rail-cluster", "fat-tree", "leaf-spine"])
@pytest.mark.parametrize("fabric", ["infiniband", "roce", "efa"])
def test_templates_with_every_plane_are_clean(name, fabric):
    # zero trust: the management plane the templates add must not trip the rule
    t = _build(name, fabric=fabric, storage=True, frontend=True, management=True)
    assert validate(t) == []


@pytest.mark.slow
def test_validate_finds_nothing_on_a_4096_gpu_superpod():
    """A clean 4,096-GPU design (its time: benchmarks/design_checks.py)."""
    t = _build("superpod", gpu="B200", sus=16, management=True)
    assert validate(t) == []


def test_every_rule_has_a_line_in_the_docs():
    doc = (Path(__file__).parents[2] / "docs" / "design-checks.md").read_text()
    rows = set(re.findall(r"^\| `([a-z-]+)` \|", doc, flags=re.MULTILINE))
    assert rows == set(CODES)
