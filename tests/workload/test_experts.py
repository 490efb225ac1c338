"""Expert routing odds and the DeepEP dispatcher: against sampling, hand counts and
the simulation."""

import dataclasses
from math import comb

import numpy as np
import pytest

from designer.model.commands import SetLinkProps
from designer.model.templates import build_template
from designer.solver import take_snapshot
from designer.workload.experts import DEEPEP_EFFICIENCY, deepep_bytes, dispatch_odds, hit_odds
from designer.workload.job import Job, Parallelism
from designer.workload.lone import lone_collective, slowed
from designer.workload.memo import SimulationMemo
from designer.workload.model import ModelSpec
from designer.workload.placement import place
from designer.workload.presets import preset
from designer.workload.simulate import simulate
from designer.workload.tasks import Comm, JobTraffic
from designer.workload.traffic import ep_dispatch, iteration_traffic


def sampled(experts, top_k, expert_groups, topk_groups, sets, n=40_000, seed=7):
    """Per set of experts, the share of ``n`` tokens needing one of them: groups drawn
    uniformly, then experts uniformly among the chosen groups' (the model's router)."""
    rng = np.random.default_rng(seed)
    groups = expert_groups or 1
    per = experts // groups
    chosen = np.argsort(rng.random((n, groups)), axis=1)[:, : (topk_groups or 1)]
    pool = (chosen[:, :, None] * per + np.arange(per)).reshape(n, -1)
    pick = np.take_along_axis(pool, np.argsort(rng.random(pool.shape), axis=1)[:, :top_k], 1)
    return [np.isin(pick, list(s)).any(axis=1).mean() for s in sets]


@pytest.mark.parametrize(
    "experts, top_k, expert_groups, topk_groups, held, spans",
    [
        (256, 8, 0, 0, 32, 1),      # one of 8 ranks, no group limit
        (256, 8, 8, 4, 32, 1),      # one server of 8 (DeepSeek-V3 on EP64)
        (256, 8, 8, 4, 4, 1),       # one rank of 64
        (256, 8, 8, 4, 64, 2),      # a rank holding two whole groups
        (64, 6, 4, 2, 8, 1),        # half a group
    ],
)
def test_hit_odds_match_sampled_routing(experts, top_k, expert_groups, topk_groups, held,
                                        spans):
    per_group = experts // (expert_groups or 1)
    # The set: ``held`` experts spread over the first ``spans`` groups.
    members = [g * per_group + i for g in range(spans) for i in range(held // spans)]
    want = sampled(experts, top_k, expert_groups, topk_groups, [members])[0]
    got = hit_odds(experts, top_k, held, spans, expert_groups, topk_groups)
    assert got == pytest.approx(want, abs=0.01)


def test_hit_odds_by_hand():
    # No group limit: 1 - C(E - held, k) / C(E, k).
    assert hit_odds(256, 8, 64) == pytest.approx(1 - comb(192, 8) / comb(256, 8))
    # Two groups, a token's experts from one: a server (one group) is needed half the
    # time; a rank of one expert of its 8 when its group is chosen and it is among 2.
    assert hit_odds(16, 2, 8, 1, 2, 1) == pytest.approx(0.5)
    assert hit_odds(16, 2, 1, 1, 2, 1) == pytest.approx(0.5 * (1 - comb(7, 2) / comb(8, 2)))
    assert hit_odds(16, 2, 16) == 1.0
    with pytest.raises(ValueError):
        hit_odds(16, 2, 17)


def test_model_checks_group_limited_routing():
    base = preset("tiny-moe").model
    with pytest.raises(ValueError, match="expert_groups"):
        dataclasses.replace(base, expert_groups=3, topk_groups=1)
    with pytest.raises(ValueError, match="topk_groups"):
        dataclasses.replace(base, expert_groups=2, topk_groups=3)
    with pytest.raises(ValueError, match="top_k"):
        dataclasses.replace(base, experts=4, top_k=3, expert_groups=4, topk_groups=1)
    assert dataclasses.replace(base, expert_groups=2, topk_groups=1).topk_groups == 1


def test_unknown_dispatcher_is_one_line_naming_the_field():
    job = Job.from_preset("a", preset("tiny-moe"), tflops=100.0)
    job = dataclasses.replace(job, config=dataclasses.replace(job.config, ep_dispatcher="x"))
    with pytest.raises(ValueError, match=r"ep_dispatcher must be one of alltoall, deepep"):
        job.check()


def moe_job(dispatcher, expert_groups=2, topk_groups=1):
    """16 experts, top-2, EP16 over the 16 GPUs of two 8-GPU servers."""
    job = Job.from_preset("moe", preset("tiny-moe"), tflops=100.0)
    model = dataclasses.replace(job.model, experts=16, expert_groups=expert_groups,
                                topk_groups=topk_groups)
    return dataclasses.replace(
        job, model=model, parallel=Parallelism(tp=1, pp=1, dp=16, ep=16),
        config=dataclasses.replace(job.config, ep_dispatcher=dispatcher, global_batch=32))


@pytest.fixture(scope="module")
def rail():
    return take_snapshot(build_template("rail-cluster", nodes=2))


def test_deepep_legs_by_hand(rail):
    job = moe_job("deepep")
    placement = place(job, rail)
    tokens, token_bytes = 256.0, 512.0
    legs = {label: (groups, size)
            for label, groups, size in ep_dispatch(job, placement, (placement.gpus,), tokens,
                                                   token_bytes)}
    assert set(legs) == {"deepep rdma", "deepep nvl"}
    rails, rdma = legs["deepep rdma"]
    servers, nvl = legs["deepep nvl"]
    domain = dict(zip(placement.gpus, placement.rank_domain.tolist(), strict=True))
    # The RDMA leg: 8 groups (local indices) of one GPU per server; NVLink: 2 servers.
    assert len(rails) == 8 and all(len({domain[g] for g in r}) == 2 for r in rails)
    assert len(servers) == 2 and all(len({domain[g] for g in s}) == 1 for s in servers)
    # A token needs a server half the time (its 2 experts from one of 2 groups), a rank
    # (one expert) half the time times 1 - C(7, 2) / C(8, 2).
    p_rank = 0.5 * (1 - comb(7, 2) / comb(8, 2))
    assert dispatch_odds(job.model, 16, 8) == pytest.approx((0.5, p_rank))
    assert rdma == pytest.approx(2 * tokens * 0.5 * token_bytes)
    assert nvl == pytest.approx(8 * 2 * tokens * p_rank * token_bytes)
    assert (rdma, nvl) == pytest.approx(deepep_bytes(tokens, token_bytes, 2, 8, 0.5, p_rank))
    # The all-to-all dispatcher: one all-to-all of a copy per chosen expert.
    plain = ep_dispatch(moe_job("alltoall"), placement, (placement.gpus,), tokens, token_bytes)
    assert plain == [("a2a", (placement.gpus,), tokens * 2 * token_bytes)]


def test_deepep_iteration_sends_both_legs_at_its_efficiency(rail):
    job = moe_job("deepep")
    t = iteration_traffic(job, place(job, rail))
    ep = [x for x in t.tasks if isinstance(x, Comm) and x.lane == "ep"]
    assert ep and {x.label.split()[2] for x in ep} == {"rdma", "nvl"}
    assert all(x.efficiency == DEEPEP_EFFICIENCY for x in ep)
    # The two legs of one pass start together (the same dependencies).
    by_deps = {}
    for x in ep:
        by_deps.setdefault(x.deps, []).append(x.label.split()[2])
    assert all(sorted(v) == ["nvl", "rdma"] for v in by_deps.values())
    plain = iteration_traffic(moe_job("alltoall"), place(job, rail))
    assert all(x.efficiency == 1.0 for x in plain.tasks if isinstance(x, Comm))


def test_slowed_collective_takes_its_bandwidth_term_over_the_efficiency(rail):
    ranks = tuple(range(16))
    lone = lone_collective(rail, "alltoall", ranks, 1 << 24, cache={})
    slow = slowed(lone, 0.5)
    assert slow.fixed_s == lone.fixed_s
    assert slow.time_s == pytest.approx(lone.fixed_s + 2 * lone.bandwidth_s)
    gpus = tuple(rail.node_ids[g] for g in rail.gpus[:16].tolist())
    runs = [simulate(rail, [JobTraffic("a", (Comm(0, "ep", "alltoall", (gpus,), 1 << 24,
                                                   efficiency=e),))]) for e in (1.0, 0.5)]
    assert runs[1].jobs[0].iteration_s == pytest.approx(slow.time_s, rel=1e-12)
    # The same bytes on every link, moved at half the rate.
    bytes_ = [{k["id"]: k["bytes"] for k in r.links.to_json()} for r in runs]
    assert bytes_[0].keys() == bytes_[1].keys()
    assert all(bytes_[1][k] == pytest.approx(v, rel=1e-9) for k, v in bytes_[0].items())
    with pytest.raises(ValueError, match="efficiency"):
        JobTraffic("a", (Comm(0, "ep", "alltoall", (gpus,), 1.0, efficiency=0.0),)).validate()


def test_a_memo_keeps_slowed_results_and_agrees_with_a_fresh_simulation():
    topo = build_template("rail-cluster", nodes=2)
    job = moe_job("deepep")
    snap = take_snapshot(topo)
    traffic = iteration_traffic(job, place(job, snap))
    memo = SimulationMemo()
    simulate(snap, [traffic], memo=memo)
    held = {k: [id(x) for x in v] for k, v in memo.slowed.items()}
    assert held
    # An edit away from the job's GPUs: the slowed results are handed on as they were.
    spine = next(lk.id for lk in topo.links()
                 if {topo.node(lk.a).kind, topo.node(lk.b).kind} == {"leaf", "spine"})
    SetLinkProps([spine], failed=True).do(topo)
    snap2 = take_snapshot(topo)
    again = simulate(snap2, [traffic], memo=memo)
    assert {k: [id(x) for x in v] for k, v in memo.slowed.items()} == held
    fresh = simulate(snap2, [traffic])
    assert again.jobs[0].iteration_s == fresh.jobs[0].iteration_s


def test_model_spec_fields_are_in_the_file_format():
    # Saved and read back through the job file functions.
    from designer.workload.files import job_from_dict, job_to_dict

    job = moe_job("deepep")
    back = job_from_dict(job_to_dict(job))
    assert back.model.expert_groups == 2 and back.config.ep_dispatcher == "deepep"
    assert isinstance(back.model, ModelSpec)


def test_one_gpu_per_server_has_no_nvlink_leg(rail):
    # EP groups of one GPU per server (pipeline stages along the rails): the RDMA leg
    # delivers each token to the rank that needs it; no NVLink group of one GPU.
    job = moe_job("deepep")
    placement = place(job, rail)
    domain = dict(zip(placement.gpus, placement.rank_domain.tolist(), strict=True))
    first = {}
    for g in placement.gpus:
        first.setdefault(domain[g], g)
    pair = tuple(first.values())
    assert len(pair) == 2
    legs = ep_dispatch(job, placement, (pair,), 256.0, 512.0)
    assert [label for label, _, _ in legs] == ["deepep rdma"]
    # Two ranks of 8 experts each, one per group: a token needs one of them.
    assert dispatch_odds(job.model, 2, 1) == (0.5, 0.5)
    assert legs[0][2] == pytest.approx(2 * 256.0 * 0.5 * 512.0)
