"""Templates: rail-optimised fabrics (each rail's NICs on their own leaves), and how the
rail cluster and the SuperPOD grow tiers, split uplinks and refuse what three tiers
cannot join."""

from __future__ import annotations

import pytest
from template_checks import CAT, assert_rail_optimised, assert_sound, kinds, link_sum

from designer.model.errors import DesignError
from designer.model.templates import build_template
from designer.model.templates.clos_plan import plan_clos
from designer.model.templates.lookup import fabric_choice


# ----------------------------------------------------------------- rail optimisation
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"nodes": 40},
        {"nodes": 9, "gpus_per_node": 4},
        {"nodes": 6, "nics_per_node": 4},
    ],
)
def test_rail_cluster_is_rail_optimised(params):
    t = build_template("rail-cluster", **params)
    assert_rail_optimised(t)
    assert_sound(t)
    # Each rail's leaves take the NIC of that index from every node.
    nodes = params.get("nodes", 4)
    rails = params.get("nics_per_node") or params.get("gpus_per_node", 8)
    for rail in range(rails):
        reached = {
            lk.a
            for leaf in t.nodes("leaf")
            if leaf.id.startswith(f"leaf-r{rail}-")
            for lk in t.links_of(leaf.id)
            if t.node(lk.a).kind == "nic"
        }
        assert len(reached) == nodes


def test_superpod_is_rail_optimised():
    assert_rail_optimised(build_template("superpod", gpu="B200", sus=2))


def test_rail_cluster_oversubscription_sets_uplinks():
    t = build_template("rail-cluster", nodes=48, oversubscription=3.0)
    down = link_sum(t, "nic", "leaf")
    up = link_sum(t, "leaf", "spine")
    assert down == 48 * 8
    assert down / up == pytest.approx(3.0)
    assert_sound(t)


def test_rail_cluster_grows_a_core_tier():
    # 8-port leaves: 4 servers per block, 8 rails -> 32 leaves with 4 uplinks each, too
    # few to reach 16 spines: pods of 4 leaves, 4 spines each, 16 cores.
    t = build_template("rail-cluster", nodes=16, leaf_radix=8)
    k = kinds(t)
    assert k["leaf"] == 32 and k["spine"] == 32 and k["core"] == 16
    assert any(g.kind == "pod" for g in t.groups())
    assert_sound(t)
    with pytest.raises(DesignError, match="core"):
        build_template("rail-cluster", nodes=16, leaf_radix=8, core="no")
    forced = build_template("rail-cluster", core="yes")
    assert kinds(forced)["core"] >= 1
    assert_sound(forced)


def test_every_pod_reaches_every_core():
    # Each full pod of 4 leaves has 16 uplinks: it reaches 16 cores, all there are.
    t = build_template("rail-cluster", nodes=16, leaf_radix=8)
    pod_of = {}
    for g in t.groups():
        if g.kind == "pod":
            for n in t.nodes("spine"):
                if n.group == g.id:
                    pod_of[n.id] = g.id
    cores_of: dict[str, set[str]] = {}
    for lk in t.links():
        if lk.a in pod_of and t.node(lk.b).kind == "core":
            cores_of.setdefault(pod_of[lk.a], set()).add(lk.b)
    assert len(cores_of) == 8
    assert all(c == {n.id for n in t.nodes("core")} for c in cores_of.values())


@pytest.mark.parametrize(
    ("params", "most"),
    [
        # 64-port switches: 32 servers per leaf, pods of 32 leaves (4 blocks of 8 rails)
        # with 1,024 uplinks reach at most 1,024 cores of 64 ports: 64 pods, 8,192 nodes.
        ({"nodes": 16384}, 8192),
        ({"nodes": 8193}, 8192),
        # 3:1 -> 48 servers and 16 uplinks per leaf: 64 pods of 512 uplinks, 12,288 nodes
        ({"nodes": 16000, "oversubscription": 3.0}, 12288),
        ({"nodes": 17, "leaf_radix": 8}, 16),
    ],
)
def test_rail_cluster_refuses_what_three_tiers_cannot_join(params, most):
    # Used to build fabrics whose pods share no core (two halves, nodes=16384).
    with pytest.raises(DesignError, match=rf"^rail-cluster: nodes={params['nodes']} .* at "
                       rf"most {most} nodes") as info:
        build_template("rail-cluster", **params)
    assert "\n" not in str(info.value)


def test_largest_rail_cluster_plan_is_a_folded_clos():
    # The largest size passes the check; one more block of servers does not.
    from designer.model.templates.rail import cores_join_pods

    plan = plan_clos([32] * (8192 // 32 * 8), radix=64)
    assert (plan.tiers, len(plan.pods), plan.cores) == (3, 64, 1024)
    assert cores_join_pods(plan)
    assert not cores_join_pods(plan_clos([32] * (8192 // 32 * 8 + 8), radix=64))


def test_superpod_refuses_what_three_tiers_cannot_join():
    with pytest.raises(DesignError, match=r"^superpod: sus=257 .* at most 256 SUs"):
        build_template("superpod", gpu="B200", sus=257)


@pytest.mark.parametrize(
    ("fabric", "gbps", "tech", "switch", "nic"),
    [
        ("infiniband", 100, "ib-edr", "SB7800", "ConnectX-5"),
        ("infiniband", 200, "ib-hdr", "QM8700", "ConnectX-6"),
        ("infiniband", 400, "ib-ndr", "QM9700", "ConnectX-7"),
        ("infiniband", 800, "ib-xdr", "Q3400", "ConnectX-8"),
        ("roce", 400, "roce-400", "SN5600", "ConnectX-7"),
        ("roce", 800, "roce-800", "SN5600", "ConnectX-8"),
        ("efa", 100, "efa-100", "Generic-51T", "EFA"),
        ("efa", 400, "efa-400", "Generic-51T", "EFA-400"),
    ],
)
def test_fabric_picks_switch_nic_and_tech(fabric, gbps, tech, switch, nic):
    f = fabric_choice(CAT, fabric, gbps)
    assert (f.tech, f.switch, f.nic) == (tech, switch, nic)
    t = build_template("rail-cluster", nodes=2, fabric=fabric, nic_gbps=gbps)
    assert {n.model for n in t.nodes("leaf")} == {switch}
    assert {n.model for n in t.nodes("nic")} == {nic}
    assert {
        lk.tech for lk in t.links() if t.node(lk.a).kind == "nic" and t.node(lk.b).kind == "leaf"
    } == {tech}
    assert_sound(t)


def test_more_nics_than_gpus_overflow_to_the_host():
    t = build_template("rail-cluster", nodes=2, nics_per_node=12)
    assert kinds(t)["nic"] == 24
    on_host = [lk for lk in t.links_of("n01-host") if t.node(lk.b).kind == "nic"]
    assert len(on_host) == 4  # 8 NICs on the GPUs (one PCIe port each kept for the host)
    assert_rail_optimised(t)
    assert_sound(t)
    with pytest.raises(DesignError, match="PCIe"):
        build_template("rail-cluster", nodes=2, nics_per_node=16)
