"""Memory fit per rank: Korthikanti et al. 2022 activations, ZeRO sharding."""

import dataclasses

import pytest

from designer.workload.job import Job, Parallelism
from designer.workload.memory import activation_bytes_per_layer, memory_fit
from designer.workload.presets import preset


def tiny(par=None, **cfg):
    job = Job.from_preset("a", preset("tiny"))   # GELU MLP of 4h: Korthikanti's layer
    return dataclasses.replace(job, parallel=Parallelism(**(par or {"tp": 2, "pp": 2, "dp": 2})),
                               config=dataclasses.replace(job.config, **cfg))


S, B, H, A, T = 128, 2, 256, 8, 2


@pytest.mark.parametrize("cfg,expected", [
    ({"sequence_parallel": False, "recompute": "none", "flash_attention": False},
     S * B * H * (10 + 24 / T + 5 * A * S / (H * T))),
    ({"sequence_parallel": True, "recompute": "none", "flash_attention": False},
     S * B * H / T * (34 + 5 * A * S / H)),
    # fused attention never writes the scores: the same as selective recompute
    ({"sequence_parallel": True, "recompute": "none"}, S * B * H / T * 34),
    ({"sequence_parallel": True, "recompute": "selective"}, S * B * H / T * 34),
    ({"sequence_parallel": False, "recompute": "selective"}, S * B * H * (10 + 24 / T)),
    ({"sequence_parallel": True, "recompute": "full"}, 2 * S * B * H / T),
])
def test_activations_per_layer_are_korthikanti_table_2(cfg, expected):
    assert activation_bytes_per_layer(tiny(**cfg), moe=False) == pytest.approx(expected)


def test_first_stage_holds_pp_micro_batches():
    job = tiny(recompute="selective")
    fit = memory_fit(job)
    per_layer = S * B * H / T * 34
    # stage 0: 2 layers x 2 micro-batches in flight (pp 2); the last stage 1 micro-batch
    # plus fp32 logits.
    assert fit.stage == 0
    assert fit.activations_GB * 1e9 == pytest.approx(2 * 2 * per_layer)


def test_zero_shards_the_optimizer_then_everything():
    layer = 4 * H * H + 2 * H * 1024 + 2 * H
    stage0 = (2 * layer + 1024 * H) / T
    none = memory_fit(tiny(zero="none"))
    z1 = memory_fit(tiny(zero="1"))
    z3 = memory_fit(tiny(zero="3"))
    assert none.weights_GB * 1e9 == pytest.approx(2 * stage0)
    assert none.grads_GB * 1e9 == pytest.approx(4 * stage0)
    assert none.optimizer_GB * 1e9 == pytest.approx(12 * stage0)
    assert z1.optimizer_GB * 1e9 == pytest.approx(12 * stage0 / 2)
    assert z1.weights_GB == none.weights_GB
    assert z3.weights_GB * 1e9 == pytest.approx(2 * stage0 / 2)


def test_the_verdict_against_hbm():
    job = Job.from_preset("a", preset("llama3.1-70b"))
    big, small = memory_fit(job, hbm_GB=80), memory_fit(job, hbm_GB=40)
    assert big.fits and not small.fits
    assert "does NOT fit in 40 GB" in small.summary()
    assert memory_fit(job).fits and "unknown" in memory_fit(job).summary()
