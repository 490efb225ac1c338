"""Training-step estimate: the domain brief's gradient arithmetic and the overlap rule."""

import pytest

from designer.solver.errors import SolverError
from designer.solver.training.step import (
    DTYPE_BYTES,
    TrainingWorkload,
    compute_time,
    estimate_step,
    gradient_bytes,
    naive_link_time,
    ring_allreduce_bytes_per_rank,
)


def ring_over_link(n: int, gbps: float):
    """An all-reduce predictor: each rank's ring bytes through one link of ``gbps``."""
    return lambda nbytes: naive_link_time(ring_allreduce_bytes_per_rank(nbytes, n), gbps)


def test_gradient_bytes_70b_fp16():
    assert gradient_bytes(70e9, "fp16") == 140e9
    assert gradient_bytes(70e9, "fp32") == 280e9
    assert gradient_bytes(70e9, "fp8") == 70e9
    with pytest.raises(SolverError, match="int4"):
        gradient_bytes(70e9, "int4")


def test_naive_single_link_is_11_2_seconds():
    # 140e9 bytes * 8 / 100e9 bit/s
    assert naive_link_time(140e9, 100) == pytest.approx(11.2, rel=1e-12)
    assert naive_link_time(140e9, 400) == pytest.approx(2.8, rel=1e-12)
    with pytest.raises(SolverError, match="link_gbps"):
        naive_link_time(1.0, 0)


@pytest.mark.parametrize(("n", "factor"), [(1, 0.0), (2, 1.0), (8, 1.75), (1024, 2 * 1023 / 1024)])
def test_ring_factor(n, factor):
    assert ring_allreduce_bytes_per_rank(1000.0, n) == pytest.approx(factor * 1000.0)


def test_ring_over_one_link_is_about_twice_naive():
    w = TrainingWorkload(params=70e9, grad_dtype="fp16", dp_size=8, compute_s=0.0)
    est = estimate_step(w, ring_over_link(8, 100), link_gbps=100)
    assert est.gradient_bytes == 140e9
    assert est.naive_single_link_s == pytest.approx(11.2)
    assert est.comm_s == pytest.approx(1.75 * 11.2)  # 19.6 s
    assert est.comm_s == pytest.approx(19.6)
    # No compute: the step is all communication.
    assert est.step_s == pytest.approx(19.6)
    assert est.comm_share == pytest.approx(1.0)
    assert est.idle_gpu_s_per_step == pytest.approx(8 * 19.6)


def test_naive_link_is_none_without_a_rate():
    w = TrainingWorkload(params=1e9, compute_s=1.0)
    assert estimate_step(w, lambda nbytes: 0.5).naive_single_link_s is None


def test_comm_time_fn_receives_the_gradient_bytes():
    seen = []
    w = TrainingWorkload(params=3e9, grad_dtype="bf16", compute_s=1.0)
    estimate_step(w, lambda nbytes: seen.append(nbytes) or 0.0)
    assert seen == [3e9 * DTYPE_BYTES["bf16"]]


@pytest.mark.parametrize(
    ("compute", "comm", "overlap", "exposed"),
    [
        (1.0, 0.4, 0.0, 0.4),  # nothing hidden
        (1.0, 0.4, 0.5, 0.2),  # half hidden
        (1.0, 0.4, 1.0, 0.0),  # fully hidden behind enough compute
        (0.1, 0.4, 1.0, 0.3),  # only as much as there is compute to hide behind
        (0.0, 0.4, 0.8, 0.4),  # no compute, nothing to hide behind
    ],
)
def test_overlap_hides_up_to_compute(compute, comm, overlap, exposed):
    w = TrainingWorkload(params=1e9, dp_size=16, compute_s=compute, overlap=overlap)
    est = estimate_step(w, lambda nbytes: comm)
    assert est.exposed_comm_s == pytest.approx(exposed)
    assert est.step_s == pytest.approx(compute + exposed)
    assert est.comm_share == pytest.approx(exposed / (compute + exposed))
    assert est.idle_gpu_s_per_step == pytest.approx(16 * exposed)


def test_empty_step_has_zero_share():
    w = TrainingWorkload(params=1e9, compute_s=0.0)
    est = estimate_step(w, lambda nbytes: 0.0)
    assert est.step_s == 0.0 and est.comm_share == 0.0


def test_compute_time_from_flops():
    # 8.0e15 FLOPs per GPU at 989 TFLOP/s peak and 40% MFU
    w = TrainingWorkload(params=1e9, model_flops_per_step=8.0e15, gpu_tflops=989.0, mfu=0.4)
    assert compute_time(w) == pytest.approx(8.0e15 / (989e12 * 0.4))
    # An explicit compute_s wins over FLOPs.
    w2 = TrainingWorkload(params=1e9, compute_s=2.5, model_flops_per_step=1e15, gpu_tflops=1.0)
    assert compute_time(w2) == 2.5


def test_compute_time_needs_something():
    w = TrainingWorkload(params=1e9, model_flops_per_step=1e15)
    with pytest.raises(SolverError, match="compute_s"):
        compute_time(w)
    with pytest.raises(SolverError, match="gpu_tflops"):
        estimate_step(w, lambda nbytes: 1.0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"params": 0}, "params"),
        ({"params": 1e9, "grad_dtype": "int4"}, "grad_dtype"),
        ({"params": 1e9, "dp_size": 0}, "dp_size"),
        ({"params": 1e9, "mfu": 0.0}, "mfu"),
        ({"params": 1e9, "overlap": -0.1}, "overlap"),
        ({"params": 1e9, "compute_s": -1.0}, "compute_s"),
        ({"params": 1e9, "gpu_tflops": 0.0}, "gpu_tflops"),
    ],
)
def test_invalid_workload_names_the_field(kwargs, field):
    with pytest.raises(SolverError, match=field):
        TrainingWorkload(**kwargs)


def test_bad_comm_time_is_reported():
    w = TrainingWorkload(params=1e9, compute_s=1.0)
    with pytest.raises(SolverError, match="comm_time_fn"):
        estimate_step(w, lambda nbytes: float("nan"))
