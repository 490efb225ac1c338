"""Tests of collective plans and their bandwidth ceilings, derived by hand (ECMP against
adaptive routing, and batches of transfers: `test_collectives_routing`).

Capacities used below (catalog): NVLink4 20.6 GB/s per link (18 per H100 = 370.8), NVLink3
20 (12 per A100 = 240), NVLink5 40.1 (18 per B200 = 721.8), NDR 50 x 0.94 = 47 per NIC,
HDR 25 x 0.96 = 24, PCIe5 63 x 0.87 = 54.8 (never the bottleneck here).
"""

from __future__ import annotations

import numpy as np
import pytest
from fabrics import host_nic_fabric, small_fabric

from designer.model.catalog import default_catalog
from designer.model.templates import build_template
from designer.model.topology import Link, Node, Topology
from designer.solver.errors import SolverError
from designer.solver.flows.collectives import (
    btree,
    candidate_plans,
    plan_alltoall,
    plan_ring,
    plan_sendrecv,
    plan_tree,
    ring_order,
)
from designer.solver.pipeline import _shape, solve_collective, solve_phase
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot

CAT = default_catalog()
NDR = 50 * CAT.tech("ib-ndr").efficiency  # 47 GB/s
HDR = 25 * CAT.tech("ib-hdr").efficiency  # 24 GB/s
H100_NV = 18 * 25 * 0.824  # 370.8 GB/s
BIG = [16 << 30]


def ceiling(topo_or_snap, collective="allreduce", algorithm="auto", ranks=None) -> float:
    snap = topo_or_snap if hasattr(topo_or_snap, "arc_cap") else take_snapshot(topo_or_snap)
    res = solve_collective(snap, collective, sizes=BIG, algorithm=algorithm, ranks=ranks)
    return res.ceiling_busbw_GBps


def plan_ceiling(snap, collective: str, algorithm: str = "ring", seed: int = 0) -> float:
    """Ceiling of one plan with an explicit ECMP seed (solve_collective uses seed 0)."""
    router = Router(snap, seed=seed)
    plan = candidate_plans(router, np.arange(snap.n_gpus), collective, algorithm)[0]
    phases = [solve_phase(snap, p) for p in plan.phases]
    return _shape(plan, snap, phases).ceiling_GBps


# ----------------------------------------------------------------- ring
def test_a_ring_channel_is_one_flow_over_all_its_arcs():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    plan = plan_ring(Router(snap), np.arange(8), "allreduce")
    (phase,) = plan.phases
    assert plan.pipelined and plan.n_nodes == 1
    assert phase.n_flows == 8  # one channel per GPU
    assert phase.flow_bytes == pytest.approx([2 * 7 / 8 / 8] * 8)
    assert phase.steps == 14
    flow, _, weight = phase.pairs()
    for f in range(8):
        mine = flow == f
        # 8 ring edges, each sprayed over 4 switches on 2 hops
        assert mine.sum() == 8 * 4 * 2
        assert weight[mine].sum() == pytest.approx(8 * 2)


@pytest.mark.parametrize(
    ("gpu", "expect"),
    [("H100", 18 * 25 * 0.824), ("A100", 12 * 25 * 0.80), ("B200", 18 * 50 * 0.802)],
)
def test_ring_allreduce_ceiling_on_one_hgx(gpu, expect):
    assert ceiling(build_template("hgx", gpu=gpu), algorithm="ring") == pytest.approx(expect)


def test_ring_ceiling_h100_is_370_8():
    assert ceiling(build_template("hgx", gpu="H100"), algorithm="ring") == pytest.approx(370.8)


@pytest.mark.parametrize("nodes", [2, 4])
def test_ring_ceiling_across_a100_hdr_servers_is_the_nic_rate(nodes):
    topo = build_template("rail-cluster", nodes=nodes, gpu="A100", nic_gbps=200)
    assert ceiling(topo, algorithm="ring") == pytest.approx(8 * HDR)  # ~192
    assert pytest.approx(192.0) == 8 * HDR


def test_ring_ceiling_across_h100_ndr_servers():
    assert ceiling(build_template("rail-cluster", nodes=2), algorithm="ring") == pytest.approx(
        8 * NDR
    )


def test_ring_allgather_and_reducescatter_ceiling_equals_allreduce():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    for coll in ("allgather", "reducescatter"):
        assert ceiling(snap, coll, algorithm="ring") == pytest.approx(H100_NV)


def test_ring_broadcast_is_a_chain():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    (phase,) = plan_ring(Router(snap), np.arange(8), "broadcast").phases
    flow = phase.pairs()[0]
    for f in range(phase.n_flows):
        assert (flow == f).sum() == 7 * 4 * 2  # n-1 edges, no wrap-around


@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_ring_broadcast_is_bounded_by_the_root(collective):
    # One root must send (broadcast) or receive (reduce) the whole buffer through its
    # 370.8 GB/s of NVLink: algbw = busbw <= 370.8, reached with every channel at full rate.
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    assert ceiling(snap, collective, algorithm="ring") == pytest.approx(H100_NV)


# ----------------------------------------------------------------- NVLS, tree, hierarchical
def test_nvls_ceiling_on_h100():
    # each GPU sends and receives S(1 + 1/n) over its 370.8 GB/s: busbw = 370.8 x 2(n-1)/(n+1)
    assert ceiling(build_template("hgx", gpu="H100"), algorithm="nvls") == pytest.approx(
        370.8 * 2 * 7 / 9
    )


def test_nvls_is_refused_where_it_cannot_run():
    with pytest.raises(SolverError, match="NVLS"):
        ceiling(build_template("hgx", gpu="A100"), algorithm="nvls")
    with pytest.raises(SolverError, match="inside one NVLink domain"):
        ceiling(build_template("rail-cluster", nodes=2), algorithm="nvls")
    with pytest.raises(SolverError, match="all-reduce algorithm"):
        ceiling(build_template("hgx"), "allgather", algorithm="nvls")


def test_auto_skips_nvls_at_four_gpus_or_fewer():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    names = {p.algorithm for p in candidate_plans(Router(snap), np.arange(4), "allreduce")}
    assert names == {"ring", "tree"}
    names = {p.algorithm for p in candidate_plans(Router(snap), np.arange(8), "allreduce")}
    assert names == {"ring", "tree", "nvls"}


def test_chain_inside_one_domain():
    # NCCL's intra-node tree is a chain: the middle GPUs send 2S each way, so busbw is
    # B (n-1)/n = 370.8 x 7/8, below the ring.
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    plan = plan_tree(Router(snap), np.arange(8), "allreduce")
    assert plan.n_nodes == 1 and plan.phases[0].n_flows == 8
    assert ceiling(snap, algorithm="tree") == pytest.approx(H100_NV * 7 / 8)
    assert ceiling(snap, algorithm="tree") < ceiling(snap, algorithm="ring")


def _tree_shape(snap):
    """The tree's `CollectiveShape` on every GPU of ``snap``."""
    plan = candidate_plans(Router(snap), np.arange(snap.n_gpus), "allreduce", "tree")[0]
    return _shape(plan, snap, [solve_phase(snap, p) for p in plan.phases])


@pytest.mark.parametrize(
    ("kw", "nic"), [({"nodes": 3}, NDR), ({"nodes": 4, "gpu": "A100", "nic_gbps": 200}, HDR)]
)
def test_tree_rating_is_the_node_nic_rate_times_n_minus_1_over_n(kw, nic):
    # NCCL's tuner rates a tree across more than two nodes at half the node's NICs
    shape = _tree_shape(take_snapshot(build_template("rail-cluster", **kw)))
    n = 8 * kw["nodes"]
    assert shape.tuner_ceiling_GBps == pytest.approx(8 * nic * (n - 1) / n)


def test_two_node_tree_beats_the_nic_bound_and_is_rated_so():
    # On two nodes each node sends S over its NICs (a ring 2(n-1)/n S): NCCL rates the
    # tree by its intra-node bandwidth there, and the tree's busbw exceeds the NICs'.
    shape = _tree_shape(take_snapshot(build_template("rail-cluster", nodes=2)))
    assert shape.tuner_ceiling_GBps is None
    assert shape.ceiling_GBps > 8 * NDR * 15 / 16


@pytest.mark.parametrize("n", range(2, 17))
def test_btree_gives_two_valid_trees(n):
    for mirror in (False, True):
        parent = btree(n, mirror)
        assert parent.count(-1) == 1
        for r in range(n):  # every chain of parents reaches the root without a loop
            seen, x = set(), r
            while parent[x] >= 0:
                assert x not in seen
                seen.add(x)
                x = parent[x]
        assert all(0 <= p < n for p in parent if p >= 0)
    if n % 2 == 0 and n > 2:
        inner = [{p for p in btree(n, m) if p >= 0} for m in (False, True)]
        assert not inner[0] & inner[1]  # interior in one tree, a leaf in the other


def test_hierarchical_ceiling_by_hand():
    snap = take_snapshot(build_template("rail-cluster", nodes=2))
    n, g = 16, 8
    # reduce-scatter in the domain (7/8 S per GPU over 370.8), a 2-node ring of the 1/8
    # shard per rail (S/8 over a 47 GB/s NIC), all-gather in the domain; one after another.
    per_byte = 2 * ((g - 1) / g) / H100_NV + (1 / g) / NDR
    expect = 2 * (n - 1) / n / per_byte
    assert ceiling(snap, algorithm="hierarchical") == pytest.approx(expect)
    assert ceiling(snap, algorithm="collnet") == pytest.approx(expect)  # S/8 up, S/8 down
    res = solve_collective(snap, sizes=BIG, algorithm="hierarchical")
    assert [p.name for p in res.phases] == [
        "intra-domain reduce-scatter",
        "inter-domain all-reduce per rail",
        "intra-domain all-gather",
    ]
    bars = res.timeline
    assert len(bars) == 3
    assert bars[0].start_s == 0 and bars[1].start_s == pytest.approx(bars[0].end_s)
    assert bars[-1].end_s == pytest.approx(res.time_s[-1])


def test_hierarchical_and_collnet_refusals():
    snap = take_snapshot(build_template("rail-cluster", nodes=2))
    with pytest.raises(SolverError, match="more than one NVLink domain"):
        ceiling(snap, algorithm="hierarchical", ranks=range(8))
    with pytest.raises(SolverError, match="same number of ranks"):
        ceiling(snap, algorithm="hierarchical", ranks=[0, 1, 2, 8, 9])
    roce = take_snapshot(build_template("rail-cluster", nodes=2, fabric="roce"))
    with pytest.raises(SolverError, match="SHARP"):
        ceiling(roce, algorithm="collnet")


# ----------------------------------------------------------------- all-to-all, send/recv
def test_alltoall_on_a_full_bisection_leaf_spine_is_nic_bound():
    # 4 GPUs, 2 per leaf: each NIC carries 3 flows (47/3 each); each leaf's 4 cross flows
    # share 2 x 47 of uplinks (23.5 each), so the NIC binds: busbw = (n-1) x 47/3 = 47.
    assert ceiling(small_fabric(), "alltoall") == pytest.approx(NDR)


def test_alltoall_on_an_oversubscribed_leaf_spine():
    # one spine: 4 cross flows per leaf on one 47 GB/s uplink -> 11.75 each; busbw 3 x 11.75
    assert ceiling(small_fabric(spines=1), "alltoall") == pytest.approx(3 * NDR / 4)


def test_alltoall_on_the_leaf_spine_template():
    # 16 GPUs, 4 per leaf, 2 spines x 1 uplink: per leaf 4 x 12 = 48 cross flows share
    # 2 x 47 GB/s; busbw = (n-1) x rate = 15 x 94/48 = 29.375
    topo = build_template("leaf-spine")
    assert ceiling(topo, "alltoall") == pytest.approx(15 * 2 * NDR / 48)
    assert ceiling(topo, "alltoall") == pytest.approx(29.375)


def test_alltoall_on_a_fat_tree_runs_at_the_nic_rate():
    assert ceiling(build_template("fat-tree", k=4), "alltoall") == pytest.approx(NDR)


def test_alltoall_inside_one_hgx():
    # each GPU sends 7/8 S through 370.8 GB/s: busbw = 7/8 x algbw = 370.8
    assert ceiling(build_template("hgx"), "alltoall") == pytest.approx(H100_NV)
    plan = plan_alltoall(Router(take_snapshot(build_template("hgx"))), np.arange(8))
    assert plan.phases[0].n_flows == 8 * 7


def test_alltoall_on_a_torus_by_hand():
    # 4x1x1 ring of GPUs, 3 NVLinks (61.8 GB/s) to each neighbour: a GPU sends S/4 one hop
    # each way and S/4 two hops (split over both ways), so S of link traffic per GPU over
    # 2 x 61.8; algbw 123.6, busbw 3/4 of it.
    nv = 3 * 25 * 0.824
    assert ceiling(build_template("torus3d", x=4, y=1, z=1), "alltoall") == pytest.approx(
        3 / 4 * 2 * nv
    )
    # 4x4x4: 3 hops on average over all 64 destinations -> 3S over 6 x 61.8
    assert ceiling(build_template("torus3d"), "alltoall") == pytest.approx(63 / 64 * 6 * nv / 3)


def test_nvl72_ring_and_nvls():
    snap = take_snapshot(build_template("nvl72"))
    per_gpu = 18 * 50 * 0.802  # 721.8 GB/s of NVLink 5
    assert ceiling(snap, algorithm="ring") == pytest.approx(per_gpu)
    assert ceiling(snap, algorithm="nvls") == pytest.approx(per_gpu * 2 * 71 / 73)


def test_failing_a_spine_halves_cross_leaf_bandwidth():
    # 2 leaves x 4 GPUs: 16 cross flows per leaf on 2 x 47 (5.875 each, below the NIC's
    # 47/7): busbw = 7 x 5.875 = 41.125.  One spine left: half of that.
    topo = build_template("leaf-spine", leaves=2, hosts_per_leaf=4)
    full = ceiling(topo, "alltoall")
    assert full == pytest.approx(7 * 2 * NDR / 16)
    topo.update_node("spine-1", failed=True)
    assert ceiling(topo, "alltoall") == pytest.approx(full / 2)
    topo.update_node("spine-0", failed=True)
    with pytest.raises(SolverError, match="no fabric path from leaf-0 to leaf-1"):
        ceiling(topo, "alltoall")


def test_sendrecv():
    assert ceiling(build_template("hgx"), "sendrecv") == pytest.approx(H100_NV)
    assert ceiling(small_fabric(), "sendrecv") == pytest.approx(NDR)
    snap = take_snapshot(small_fabric())
    plan = plan_sendrecv(Router(snap), np.array([0, 3]))
    assert plan.phases[0].n_flows == 1  # a pair is one flow, not two
    plan = plan_sendrecv(Router(snap), np.arange(4))
    assert plan.phases[0].flow_label == ("0->1", "1->2", "2->3", "3->0")


# ----------------------------------------------------------------- ranks
def test_a_subset_of_ranks():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    res = solve_collective(snap, sizes=BIG, algorithm="ring", ranks=[0, 2, 4, 6])
    assert res.n_ranks == 4
    assert res.ceiling_busbw_GBps == pytest.approx(H100_NV)
    # the unused GPUs carry nothing
    for g in snap.gpus[[1, 3, 5, 7]].tolist():
        assert not res.arc_load_GBps[snap.arc_src == g].any()
    # one GPU per server on the same rail: a 2-rank ring over one NIC
    rail = take_snapshot(build_template("rail-cluster", nodes=2))
    assert ceiling(rail, algorithm="ring", ranks=[0, 8]) == pytest.approx(NDR)


@pytest.mark.parametrize(
    ("ranks", "match"),
    [
        ([0, 8], "between 0 and 7"),
        ([-1, 2], "between"),
        ([1, 1], "must not repeat"),
        ([3], "at least 2 ranks"),
    ],
)
def test_bad_ranks(ranks, match):
    with pytest.raises(SolverError, match=match):
        ceiling(build_template("hgx"), ranks=ranks)


def test_unknown_collective_and_algorithm():
    snap = take_snapshot(build_template("hgx"))
    with pytest.raises(SolverError, match="unknown collective 'gather'"):
        ceiling(snap, "gather")
    with pytest.raises(SolverError, match="unknown algorithm 'bruck'"):
        ceiling(snap, algorithm="bruck")
    with pytest.raises(SolverError, match="all-reduce algorithm"):
        ceiling(snap, "allgather", algorithm="tree")


# ----------------------------------------------------------------- errors on broken designs
def test_gpu_without_a_nic_across_domains_is_named():
    # One GPU per server: when its NIC fails there is no sibling to relay through.
    topo = build_template("rail-cluster", nodes=2, gpus_per_node=1)
    topo.update_node("n02-nic0", failed=True)
    snap = take_snapshot(topo)
    with pytest.raises(SolverError, match="GPU n02-gpu0 has no NIC"):
        ceiling(snap, algorithm="ring")
    with pytest.raises(SolverError, match="n02-gpu0"):
        ceiling(snap)


@pytest.mark.parametrize("failed", ["node", "link"])
def test_a_failed_nic_falls_back_to_a_sibling_nic_through_nvlink(failed):
    # GPU 3 of server 2 loses its NIC (or the NIC its cable): it reaches the network
    # through GPU 2's NIC over NVLink (PXN).  The ring runs one channel per NIC of the
    # poorer server (7), starting at the first GPU of each NIC: every NIC, n02-nic2
    # included, sends one channel and receives one, so busbw = 7 x 47 (8 x 47 healthy).
    topo = build_template("rail-cluster", nodes=2)
    if failed == "node":
        topo.update_node("n02-nic3", failed=True)
    else:
        topo.update_link(next(lk.id for lk in topo.links_of("n02-nic3") if lk.b.startswith("leaf")
                              or lk.a.startswith("leaf")), failed=True)
    snap = take_snapshot(topo)
    assert snap.node_ids[snap.gpu_nic[11]] == "n02-nic2"
    assert snap.node_ids[snap.gpu_nic_via[11]] == "n02-gpu2"
    assert ceiling(snap, algorithm="ring") == pytest.approx(7 * NDR)
    # inside its own server the GPU is fine
    assert ceiling(snap, algorithm="ring", ranks=range(8, 16)) == pytest.approx(H100_NV)
    res = solve_collective(snap, sizes=BIG)
    assert 0 < res.busbw_GBps[0] < solve_collective(
        take_snapshot(build_template("rail-cluster", nodes=2)), sizes=BIG
    ).busbw_GBps[0]


@pytest.mark.parametrize("template", ["leaf-spine", "fat-tree"])
def test_auto_allreduce_on_one_gpu_hosts(template):
    # Every rank is its own NVLink domain: hierarchical does not apply and the ring is the
    # NIC ring, 47 GB/s (this crashed with a ValueError before df48d36).
    snap = take_snapshot(build_template(template))
    names = {p.algorithm for p in candidate_plans(Router(snap), np.arange(16), "allreduce")}
    assert "hierarchical" not in names and "collnet" not in names
    res = solve_collective(snap, sizes=BIG)
    assert res.algorithm == "ring"
    assert res.ceiling_busbw_GBps == pytest.approx(NDR)
    with pytest.raises(SolverError, match="at least 2 ranks per domain"):
        ceiling(snap, algorithm="hierarchical")


def test_forced_ring_on_one_gpu_hosts():
    for template in ("leaf-spine", "fat-tree"):
        assert ceiling(build_template(template), algorithm="ring") == pytest.approx(NDR)


def test_servers_with_fewer_nics_than_gpus():
    # rail-cluster nics_per_node=4: NIC j hangs off GPU 2j.  NCCL reaches the network
    # from every GPU through the node's NICs; all 4 busy give a ring 4 x 47 GB/s.
    topo = build_template("rail-cluster", nodes=2, nics_per_node=4)
    assert ceiling(topo, algorithm="ring") == pytest.approx(4 * NDR)
    assert ceiling(topo) > 0


@pytest.mark.parametrize("nodes", [2, 3])
def test_rings_on_shared_nics_stay_on_their_rails(nodes):
    # 4 NICs per server: 4 channels, channel c entering on NIC c and leaving on NIC c-1
    # (PXN from GPU 2c-1), so every inter-server hop joins two NICs of one rail (leaf),
    # with an odd number of servers too.
    snap = take_snapshot(build_template("rail-cluster", nodes=nodes, nics_per_node=4))
    router = Router(snap)
    ranks = np.arange(snap.n_gpus)
    plan = plan_ring(router, ranks, "allreduce")
    assert plan.phases[0].n_flows == 4
    for c in range(4):
        order = ring_order(snap, ranks, c)
        assert sorted(order.tolist()) == ranks.tolist()
        assert snap.gpu_local[order[0]] == 2 * c
        for a, b in zip(order, np.roll(order, -1), strict=True):
            if snap.gpu_domain[a] != snap.gpu_domain[b]:
                leaf_a = snap.arc_dst[router.edge_arc(int(snap.gpu_nic[a]))]
                leaf_b = snap.arc_dst[router.edge_arc(int(snap.gpu_nic[b]))]
                assert leaf_a == leaf_b
    assert ceiling(snap, algorithm="ring") == pytest.approx(4 * NDR)


def test_hierarchical_and_collnet_on_shared_nics_by_hand():
    # 4 NICs per 8-GPU server: the 1/8 shards of two GPUs share each NIC (S/4 per NIC).
    snap = take_snapshot(build_template("rail-cluster", nodes=2, nics_per_node=4))
    n, g = 16, 8
    per_byte = 2 * ((g - 1) / g) / H100_NV + (2 / g) / NDR
    expect = 2 * (n - 1) / n / per_byte
    assert ceiling(snap, algorithm="hierarchical") == pytest.approx(expect)
    assert ceiling(snap, algorithm="collnet") == pytest.approx(expect)


def test_tree_cap_counts_a_shared_nic_once():
    snap = take_snapshot(build_template("rail-cluster", nodes=3, nics_per_node=4))
    n = 24
    assert _tree_shape(snap).tuner_ceiling_GBps <= 4 * NDR * (n - 1) / n * (1 + 1e-9)


def test_half_a_servers_nics_failed():
    # Server 1 keeps NICs 0-3; its GPUs 4-7 use them through NVLink, two GPUs per NIC.
    # 4 channels (its NIC count), each NIC of either server sends one and receives one:
    # the ring runs at 4 x 47, half the healthy 8 x 47.
    topo = build_template("rail-cluster", nodes=2)
    for j in range(4, 8):
        topo.update_node(f"n01-nic{j}", failed=True)
    assert ceiling(topo, algorithm="ring") == pytest.approx(4 * NDR)


def test_nics_behind_the_host():
    # 4 one-GPU domains whose GPUs reach host NICs through the CPU: one channel, each
    # NIC sends and receives it once, 47 GB/s; the flow crosses both PCIe hops.
    snap = take_snapshot(host_nic_fabric())
    assert ceiling(snap, algorithm="ring") == pytest.approx(NDR)
    (phase,) = plan_ring(Router(snap), np.arange(4), "allreduce").phases
    crossed = {(snap.node_ids[snap.arc_src[a]], snap.node_ids[snap.arc_dst[a]])
               for a in phase.pairs()[1].tolist()}
    assert {("g00", "h0"), ("h0", "c00"), ("c01", "h0"), ("h0", "g01")} <= crossed


@pytest.mark.parametrize("collective", ["sendrecv", "allreduce"])
def test_two_servers_cabled_back_to_back(collective):
    # g0 -PCIe- c0 =NDR= c1 -PCIe- g1: one 47 GB/s cable each way, nothing else.
    t = Topology()
    for i in range(2):
        t.add_node(Node(f"g{i}", "gpu", "H100", f"g{i}"))
        t.add_node(Node(f"c{i}", "nic", "ConnectX-7", f"c{i}"))
        t.add_link(Link(f"g{i}-c{i}", f"g{i}", f"c{i}", "pcie5"))
    t.add_link(Link("c0-c1", "c0", "c1", "ib-ndr"))
    assert ceiling(
        t, collective, algorithm="ring" if collective == "allreduce" else "auto"
    ) == pytest.approx(NDR)


def test_isolated_gpus_are_a_solver_error():
    t = Topology()
    t.add_node(Node("g0", "gpu", "H100", "g0"))
    t.add_node(Node("g1", "gpu", "H100", "g1"))
    with pytest.raises(SolverError, match="GPU g0 has no NIC"):
        ceiling(t, algorithm="ring")
