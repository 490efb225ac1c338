"""The traffic of one iteration against volumes computed by hand."""

import dataclasses

import pytest

from designer.model.templates import build_template
from designer.solver import take_snapshot
from designer.workload.job import Job, Parallelism
from designer.workload.placement import place
from designer.workload.presets import preset
from designer.workload.tasks import Comm, Compute
from designer.workload.traffic import _schedule, iteration_traffic, lane_volumes, stage_layers

# tiny: 4 layers, h 256, ffn 1024 (GELU), 8 heads, vocab 1024, seq 128; bf16.
H, S, V, A = 256, 128, 1024, 2
LAYER = 4 * H * H + 2 * H * 1024 + 2 * H      # attention + MLP + two norms
TFLOPS = 100.0


@pytest.fixture(scope="module")
def snap():
    return take_snapshot(build_template("rail-cluster", nodes=2))


def traffic(snap, name="tiny", model=None, **changes):
    p = preset(name)
    par = changes.pop("parallel", None)
    cfg = changes.pop("config", {})
    job = Job.from_preset("a", p, tflops=TFLOPS)
    job = dataclasses.replace(
        job, model=model or job.model,
        parallel=Parallelism(**par) if par else job.parallel,
        config=dataclasses.replace(job.config, **cfg), **changes)
    t = iteration_traffic(job, place(job, snap))
    t.validate()
    return job, t


def comms(t, lane, kind=None):
    return [x for x in t.tasks if isinstance(x, Comm) and x.lane == lane
            and (kind is None or x.collective == kind)]


def total(t, lane, kind=None):
    """Sum of nccl-tests sizes over every group's collective."""
    return sum(c.nbytes * len(c.groups) for c in comms(t, lane, kind))


def test_tp_with_sequence_parallelism(snap):
    # tp2 pp2 dp2, micro-batch 2, 4 micro-batches: per micro-batch, forward stage 0 has
    # 2 layers x 2 + the embedding's 1, stage 1 2 x 2; backward 2 x 2 and the head's 1.
    _, t = traffic(snap)
    act = 2 * S * H * A
    per_group = 4 * (5 + 4 + 4 + 5) * act
    assert total(t, "tp", "allgather") == total(t, "tp", "reducescatter") == 2 * per_group
    assert not comms(t, "tp", "allreduce")
    assert all(len(c.groups) == 2 and len(c.groups[0]) == 2 for c in comms(t, "tp"))


def test_tp_without_sequence_parallelism_and_full_recompute(snap):
    _, t = traffic(snap, config={"sequence_parallel": False, "recompute": "full"})
    act = 2 * S * H * A
    # backward recomputes the forward's 2 all-reduces per layer.
    assert total(t, "tp", "allreduce") == 2 * 4 * (5 + 4 + 8 + 9) * act
    assert not comms(t, "tp", "allgather")


def test_pipeline_messages(snap):
    _, t = traffic(snap)
    pp = comms(t, "pp")
    # 4 micro-batches, one boundary, forward and backward; (dp 2 x tp 2) pairs each.
    assert len(pp) == 8 and all(len(c.groups) == 4 for c in pp)
    assert {c.nbytes for c in pp} == {2 * S * H * A / 2}   # sharded by sequence parallelism
    _, t = traffic(snap, config={"sequence_parallel": False})
    assert {c.nbytes for c in comms(t, "pp")} == {2 * S * H * A}


def test_interleaved_pipeline_crosses_every_virtual_boundary(snap):
    model = dataclasses.replace(preset("tiny").model, layers=16)
    _, t = traffic(snap, model=model, parallel=dict(tp=1, pp=4, dp=4, vp=2),
                   config={"global_batch": 32})
    m = 32 // (2 * 4)
    assert len(comms(t, "pp")) == 2 * m * (4 * 2 - 1)


def test_schedule_is_megatron_1f1b():
    ops = _schedule(pp=4, vp=1, m=6, x=1)
    assert [k for k, _, _ in ops] == list("FFFBFBFBFBBB")
    assert [mb for k, mb, _ in ops if k == "F"] == list(range(6))
    inter = _schedule(pp=2, vp=2, m=4, x=0)
    assert [(mb, ch) for k, mb, ch in inter if k == "F"][:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert [(mb, ch) for k, mb, ch in inter if k == "B"][:2] == [(0, 1), (1, 1)]


def test_data_parallel_gradients(snap):
    # stage 0: 2 layers + embedding; stage 1: 2 layers + head + final norm; / tp 2, fp32.
    _, t = traffic(snap)
    stage0, stage1 = (2 * LAYER + V * H) / 2, (2 * LAYER + V * H + H) / 2
    assert total(t, "dp", "allreduce") == pytest.approx(2 * 4 * (stage0 + stage1))
    _, z1 = traffic(snap, config={"zero": "1"})
    assert total(z1, "dp", "reducescatter") == pytest.approx(2 * 4 * (stage0 + stage1))
    assert total(z1, "dp", "allgather") == pytest.approx(2 * A * (stage0 + stage1))
    _, z3 = traffic(snap, config={"zero": "3"})
    # parameters gathered in every forward and backward of the 4 micro-batches,
    # gradients reduce-scattered after every backward.
    assert total(z3, "dp", "allgather") == pytest.approx(2 * 2 * 4 * A * (stage0 + stage1))
    assert total(z3, "dp", "reducescatter") == pytest.approx(2 * 4 * 4 * (stage0 + stage1))


def test_buckets_overlap_the_last_backward(snap):
    _, t = traffic(snap, config={"bucket_mb": 0.5})
    dp = comms(t, "dp")
    assert len(dp) == 4   # 2 buckets (of 2 layers) per stage
    by_id = {x.id: x for x in t.tasks}
    first = by_id[dp[0].deps[0]]
    assert isinstance(first, Compute) and "bwd mb3" in first.label and "1/2" in first.label


def test_expert_all_to_all(snap):
    # tiny-moe: tp1 pp2 dp4 ep2, micro-batch 2, 2 micro-batches, 2 MoE layers per stage.
    _, t = traffic(snap, name="tiny-moe")
    size = 2 * S * 2 * H * A           # tokens x top-2 x hidden x bytes
    ep = comms(t, "ep", "alltoall")
    assert all(len(c.groups) == 2 and len(c.groups[0]) == 2 for c in ep)
    # dispatch + combine per MoE layer, forward and backward.
    assert total(t, "ep") == 2 * 2 * 2 * (2 * 2) * 2 * size


def test_context_parallel_kv_exchange(snap):
    _, t = traffic(snap, parallel=dict(tp=1, cp=2, pp=1, dp=4), config={"global_batch": 16})
    kv = 2 * S * (2 * 8 * 32) * A      # micro-batch x sequence x K and V x bytes
    m = 16 // (2 * 4)
    assert total(t, "cp", "allgather") == 4 * m * 4 * (1 + 1) * kv
    assert total(t, "cp", "reducescatter") == 4 * m * 4 * kv


def test_compute_matches_the_megatron_flop_count(snap):
    """Narayanan et al. 2021: 72 B s l h^2 (1 + s / 6h + V / 12 l h) FLOPs per iteration
    without recompute, for a GPT-style model."""
    model = dataclasses.replace(preset("gpt3-175b").model, layers=8, learned_positions=False,
                                tied_embeddings=False)
    _, t = traffic(snap, name="gpt3-175b", model=model, parallel=dict(tp=8, pp=2, dp=1),
                   config={"global_batch": 4, "recompute": "none"})
    job = Job.from_preset("a", preset("gpt3-175b"))
    speed = TFLOPS * 1e12 * job.mfu
    flops = sum(x.seconds for x in t.tasks if isinstance(x, Compute)) * speed * 8
    B, s, L, h, vocab = 4, 2048, 8, 12288, 50257
    # The head counts twice in this paper's formula (untied head in backward too).
    expected = 72 * B * s * L * h * h * (1 + s / (6 * h) + vocab / (12 * L * h))
    assert flops == pytest.approx(expected, rel=0.01)


def _spans(t, label):
    return [x.seconds for x in t.tasks if isinstance(x, Compute) and x.label == label]


@pytest.mark.parametrize("flash", [True, False])
def test_memory_bound_work_adds_the_activation_bytes_at_hbm_speed(snap, flash):
    """A forward span is its GEMMs at peak x MFU plus the bytes its layers write at the
    memory bandwidth (Korthikanti's per-layer activations; the attention scores only
    without fused attention; the fp32 logits on the last stage)."""
    par = dict(tp=1, pp=2, dp=8)
    cfg = {"global_batch": 8, "micro_batch": 1, "recompute": "none", "sequence_parallel": False,
           "flash_attention": flash}
    job, bare = traffic(snap, parallel=par, config=cfg)
    with_memory = iteration_traffic(job, place(job, snap), hbm_gbps=2000.0)
    # tiny, tp 1, micro-batch 1: s b h (34 + 5 a s / h) per layer (a = 8 heads), two
    # layers a stage.
    layer = S * H * (34 + (5 * 8 * S / H if not flash else 0))
    for label, extra in (("fwd mb0 stage0", 2 * layer),
                         ("fwd mb0 stage1", 2 * layer + 4 * S * V)):
        (a,), (b,) = _spans(bare, label), _spans(with_memory, label)
        assert b - a == pytest.approx(extra / 2000e9)
    (a,), (b,) = _spans(bare, "bwd mb0 stage0"), _spans(with_memory, "bwd mb0 stage0")
    assert b - a == pytest.approx(2 * 2 * layer / 2000e9)


def test_memory_bound_share_falls_with_the_hidden_size(snap):
    """Memory traffic grows with h, GEMM FLOPs with h^2: a wider model spends less of its
    compute on memory-bound work (why Megatron-LM's larger models reach more TFLOP/s)."""
    shares = []
    for hidden in (256, 512, 1024):
        model = dataclasses.replace(preset("tiny").model, hidden=hidden, ffn=4 * hidden)
        job, bare = traffic(snap, model=model)
        full = iteration_traffic(job, place(job, snap), hbm_gbps=2000.0)
        gemm = sum(x.seconds for x in bare.tasks if isinstance(x, Compute))
        shares.append(sum(x.seconds for x in full.tasks if isinstance(x, Compute)) / gemm - 1)
    assert shares[0] > shares[1] > shares[2] > 0


def test_job_speeds_read_the_catalog(snap):
    """The design's GPUs (H100 in the rail cluster) give peak and memory bandwidth; a
    job's own tflops wins; per-layer times need no peak."""
    from designer.workload.traffic import job_speeds

    job = Job.from_preset("a", preset("tiny"))
    placement = place(job, snap)
    assert job_speeds(job, snap, placement) == (989.0, 3350.0)
    assert job_speeds(dataclasses.replace(job, tflops=5.0), snap, placement) == (5.0, 3350.0)
    timed = dataclasses.replace(job, layer_times=(1e-3, 2e-3))
    assert job_speeds(timed, snap, placement) == (0.0, 3350.0)


def test_stage_layers_even_split():
    assert [len(r) for r in stage_layers(10, 4)] == [3, 3, 2, 2]


def test_lane_volumes_sum_groups(snap):
    _, t = traffic(snap)
    v = lane_volumes(t)
    assert v["tp"]["bytes"] == total(t, "tp") and v["pp"]["collectives"] == 32


def test_bytes_sent_use_the_bus_bandwidth_factors(snap):
    _, t = traffic(snap, config={"sequence_parallel": False})
    v = lane_volumes(t)
    # all-reduce over 2 ranks: each sends 2 (n - 1) / n = 1 x the size; a send/recv pair
    # sends its size once.
    assert v["tp"]["sent"] == pytest.approx(2 * v["tp"]["bytes"])
    assert v["dp"]["sent"] == pytest.approx(2 * v["dp"]["bytes"])
    assert v["pp"]["sent"] == pytest.approx(v["pp"]["bytes"])
