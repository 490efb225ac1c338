"""`auto` across nodes follows NCCL's tuner (``src/graph/tuning.cc``): the algorithms it
weighs, how it rates them, and NCCL's point-to-point protocol rule for all-to-all."""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.solver.errors import SolverError
from designer.solver.flows.collectives import candidate_plans
from designer.solver.pipeline import solve_collective
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot
from designer.solver.timing.nccl_model import CollectiveShape, choose, predict

MiB, GiB = 1 << 20, 1 << 30


def _solve(sizes, **kw):
    """2 servers of 8 GPUs on a rail-optimised fabric (16 ranks)."""
    topo = build_template("rail-cluster", nodes=2, **kw)
    return solve_collective(take_snapshot(topo), sizes=sizes)


def test_two_node_mid_size_all_reduce_picks_the_tree():
    # A100 (no NVLS) on RoCE (no SHARP): NCCL runs a tree on 2 nodes at mid sizes, where
    # its 2 log2(nodes) network steps beat the ring's 2(n - 1) steps.
    res = _solve([16 * MiB, 64 * MiB], gpu="A100", nic_gbps=200, fabric="roce")
    assert res.algorithm_by_size == ("tree", "tree")


def test_two_hopper_nodes_reduce_in_switch_and_beat_the_nic_ceiling():
    # H100 boards reduce in their NVSwitches: NCCL's NVLS-tree; its busbw at 1 GiB is
    # above what a ring gets from the node's 8 NICs (8 x 47 GB/s).
    res = _solve([GiB], gpu="H100", fabric="roce")
    assert res.algorithm_by_size == ("nvlstree",)
    assert res.busbw_GBps[0] > 8 * 47.0 * 1.1


def test_auto_weighs_only_nccl_algorithms():
    snap = take_snapshot(build_template("rail-cluster", nodes=2, gpu="A100", fabric="roce"))
    names = {p.algorithm for p in candidate_plans(Router(snap), np.arange(16), "allreduce")}
    assert "hierarchical" not in names  # the flow solver's own scheme: forced only
    assert {"ring", "tree"} <= names


def test_pat_runs_all_gather_with_one_gpu_per_node_only():
    one = take_snapshot(build_template("rail-cluster", nodes=4, gpus_per_node=1, gpu="H100"))
    names = {p.algorithm for p in candidate_plans(Router(one), np.arange(4), "allgather")}
    assert names == {"ring", "pat"}
    eight = take_snapshot(build_template("rail-cluster", nodes=2, gpu="H100"))
    with pytest.raises(SolverError, match="one GPU per node"):
        candidate_plans(Router(eight), np.arange(16), "allgather", "pat")


def test_choice_is_by_nccl_rating_and_time_by_what_runs():
    # Same latencies; the tree is rated below the ring (as NCCL rates trees across more
    # than two nodes) but moves more: auto keeps the ring, a forced tree is faster.
    ring = CollectiveShape("allreduce", "ring", 64, 8, 376.0, 1, 3)
    tree = CollectiveShape("allreduce", "tree", 64, 8, 500.0, 1, 3, tuner_ceiling_GBps=300.0)
    best, preds = choose([ring, tree], [16 * GiB])
    assert best.tolist() == [0]
    assert preds[1].time_s[0] < preds[0].time_s[0]


@pytest.mark.parametrize(("nbytes", "proto"), [(128 * MiB, "Simple"), (8 * MiB, "LL")])
def test_all_to_all_protocol_is_nccls_per_peer_rule(nbytes, proto):
    # 1,024 ranks on 128 nodes: 128 MiB is 128 KiB per peer, far above NCCL's 16 KiB LL
    # threshold (Simple); 8 MiB is 8 KiB per peer (LL).
    shape = CollectiveShape("alltoall", "p2p", 1024, 128, 46.0, 1, 3)
    assert str(predict(shape, nbytes).protocol[0]) == proto


def test_large_all_to_all_is_bandwidth_bound():
    # Latency is paid per round of peers, not per peer: at 128 MiB on 1,024 ranks the
    # time is within 10 % of the bytes over the ceiling.
    shape = CollectiveShape("alltoall", "p2p", 1024, 128, 46.0, 1, 3)
    p = predict(shape, 128 * MiB)
    assert p.busbw_GBps[0] > 0.9 * 46.0 * 0.99


def test_nccls_medium_size_tree_correction_steers_the_choice_only():
    # One 8-GPU board, 1 MiB: the chain (tree) would be faster, but NCCL's tuner scales a
    # tree's medium-size bandwidth down (treeCorrectionFactor) and picks the ring.
    ring = CollectiveShape("allreduce", "ring", 8, 1, 240.0, 1, 0)
    tree = CollectiveShape("allreduce", "tree", 8, 1, 210.0, 1, 0)
    best, preds = choose([ring, tree], [MiB])
    assert best.tolist() == [0]
    assert preds[1].time_s[0] < preds[0].time_s[0]
    # at sizes past the table (512 MiB and up) the rating is the time
    assert predict(tree, 4 * GiB, rated=True).time_s[0] == predict(tree, 4 * GiB).time_s[0]


def test_multi_node_simple_ring_pays_nccls_plateau_latency():
    # NCCL multiplies a multi-node Simple ring all-reduce's latency by 1.4 once each
    # rank's share of a channel reaches 64 B; on one node it does not.
    from designer.solver.timing.nccl_model import protocol_times
    from designer.solver.timing.nccl_params import load_params

    per_channel = load_params().channel_GBps * 1e9

    def latency(n_nodes):
        shape = CollectiveShape("allreduce", "ring", 16, n_nodes, 376.0, 1, int(n_nodes > 1))
        t = protocol_times(shape, [1024, 64 * MiB, 128 * MiB], launch="graph")["Simple"]
        small = t[0] - 1024 * 2 * 15 / 16 / per_channel  # one channel at 1 KiB
        return small, 2 * t[1] - t[2]  # the intercept of the large sizes

    small, large = latency(2)
    assert large == pytest.approx(1.4 * small, rel=1e-6)
    small, large = latency(1)
    assert large == pytest.approx(small, rel=1e-6)
