"""Jitter / straggler Monte Carlo: exactness without noise, tails, the max sampler."""

import itertools
import math

import numpy as np
import pytest

from designer.solver.errors import SolverError
from designer.solver.training.jitter import (
    EXACT_COMM_STEPS,
    JitterModel,
    exponential_max_moments,
    max_of_exponentials,
    max_of_lognormals,
    normal_quantile,
    simulate_steps,
    straggler_cost,
)


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sample Kolmogorov-Smirnov statistic: largest gap between empirical CDFs."""
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, grid, side="right") / a.size
    cdf_b = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(cdf_a - cdf_b)))


# Two samples of 20,000: the 0.1% critical value of the KS statistic is
# 1.95 * sqrt(2 / 20000) ~ 0.0195.
N_KS = 20_000
KS_LIMIT = 0.0195


def test_straggler_cost_matches_domain_brief():
    # 10,000 GPUs x 20 us = 0.2 GPU-seconds per step.
    assert straggler_cost(10_000, 20e-6) == pytest.approx(0.2, rel=1e-12)
    assert straggler_cost(1, 0.5) == 0.5
    with pytest.raises(SolverError, match="lag_s"):
        straggler_cost(8, -1.0)


def test_normal_quantile_round_trips_through_erfc():
    p = np.concatenate([np.logspace(-300, -2, 60), np.linspace(0.01, 0.99, 99)])
    z = normal_quantile(p)
    phi = np.array([0.5 * math.erfc(-x / math.sqrt(2.0)) for x in z])
    # Relative error 1e-9 in z becomes ~z^2 * 1e-9 in the lower tail's probability.
    assert np.allclose(phi, p, rtol=2e-6, atol=0)
    # Symmetric, and the ends map to infinities.
    assert np.allclose(normal_quantile(1 - p[-99:]), -z[-99:], rtol=1e-9)
    assert list(normal_quantile(np.array([0.0, 0.5, 1.0]))) == [-np.inf, 0.0, np.inf]


def test_zero_noise_every_sample_is_ideal():
    model = JitterModel(compute_s=0.8, compute_cv=0.0, comm_s=0.3, comm_steps=14, overlap=0.5)
    dist = simulate_steps(model, n_gpus=1024, n_steps=300, seed=3)
    # compute 0.8 + comm 0.3 - hidden min(0.15, 0.8) = 0.95
    assert dist.ideal_s == pytest.approx(0.95)
    assert np.all(dist.samples_s == dist.ideal_s)
    assert dist.p50_s == dist.p99_s == dist.ideal_s
    assert dist.mean_s == pytest.approx(dist.ideal_s, rel=1e-12)  # summation rounding
    assert dist.straggler_gpu_s_per_step == 0.0
    assert dist.samples_s.shape == (300,)


def test_overlap_hides_at_most_the_compute_time():
    model = JitterModel(compute_s=0.1, compute_cv=0.0, comm_s=1.0, overlap=1.0)
    # Fully overlappable, but only 0.1 s of compute to hide behind: step = 1.0.
    assert simulate_steps(model, n_gpus=8, n_steps=10).ideal_s == pytest.approx(1.0)


def test_tails_and_noise_only_add_time():
    model = JitterModel(
        compute_s=0.5, compute_cv=0.03, comm_s=0.1, comm_steps=30, hop_jitter_s=2e-4
    )
    dist = simulate_steps(model, n_gpus=64, n_steps=2000, seed=1)
    assert dist.p99_s >= dist.p50_s
    assert dist.samples_s.min() > dist.ideal_s  # max of noisy draws exceeds their mean here
    assert dist.straggler_gpu_s_per_step > 0


def test_p99_grows_with_gpu_count():
    model = JitterModel(
        compute_s=0.5, compute_cv=0.02, comm_s=0.1, comm_steps=16, hop_jitter_s=1e-4
    )
    p99 = [simulate_steps(model, n, n_steps=1000, seed=7).p99_s for n in (8, 128, 2048, 16384)]
    assert all(b > a for a, b in itertools.pairwise(p99))
    strag = [
        simulate_steps(model, n, n_steps=1000, seed=7).straggler_gpu_s_per_step
        for n in (8, 128, 2048)
    ]
    assert all(b > a for a, b in itertools.pairwise(strag))


def test_p99_grows_with_hop_jitter():
    p99 = []
    for jitter in (0.0, 1e-5, 1e-4, 1e-3):
        model = JitterModel(
            compute_s=0.5, compute_cv=0.01, comm_s=0.1, comm_steps=14, hop_jitter_s=jitter
        )
        p99.append(simulate_steps(model, n_gpus=8, n_steps=1000, seed=2).p99_s)
    assert all(b > a for a, b in itertools.pairwise(p99))


def test_compute_straggler_cost_matches_extreme_value_expectation():
    # n GPUs, unit-mean lognormal with small cv: slowest ~ mean * (1 + cv * E[max of n
    # standard normals]); E[max of 2] = 1/sqrt(pi) exactly.
    cv, n = 0.01, 2
    dist = simulate_steps(JitterModel(compute_s=1.0, compute_cv=cv), n, n_steps=50_000, seed=4)
    expected = n * cv / math.sqrt(math.pi)
    assert dist.straggler_gpu_s_per_step == pytest.approx(expected, rel=0.05)


def test_comm_straggler_cost_matches_harmonic_number():
    # Each ring step waits for the max of n exponential delays (mean s * H_n) instead of
    # one (mean s): the group idles n * steps * s * (H_n - 1) GPU-seconds.
    n, steps, s = 16, 10, 1e-5
    model = JitterModel(compute_s=1.0, compute_cv=0.0, comm_steps=steps, hop_jitter_s=s)
    dist = simulate_steps(model, n, n_steps=20_000, seed=5)
    harmonic = sum(1.0 / k for k in range(1, n + 1))
    assert dist.straggler_gpu_s_per_step == pytest.approx(n * steps * s * (harmonic - 1), rel=0.02)
    assert dist.mean_s == pytest.approx(1.0 + steps * s * harmonic, rel=1e-5)


@pytest.mark.parametrize("n", [1, 3, 16])
def test_max_of_lognormals_matches_brute_force(n):
    mean, cv = 2.0, 0.3
    sigma = math.sqrt(math.log1p(cv * cv))
    mu = math.log(mean) - sigma * sigma / 2
    brute = np.random.default_rng(10).lognormal(mu, sigma, size=(N_KS, n)).max(axis=1)
    fast = max_of_lognormals(np.random.default_rng(11), mean, cv, n, N_KS)
    assert ks_statistic(brute, fast) < KS_LIMIT
    # The check can fail: a max over twice as many draws is clearly another distribution.
    other = max_of_lognormals(np.random.default_rng(11), mean, cv, 2 * n, N_KS)
    assert ks_statistic(brute, other) > 5 * KS_LIMIT


@pytest.mark.parametrize("n", [1, 5, 32])
def test_max_of_exponentials_matches_brute_force(n):
    scale = 3e-6
    brute = np.random.default_rng(20).exponential(scale, size=(N_KS, n)).max(axis=1)
    fast = max_of_exponentials(np.random.default_rng(21), scale, n, N_KS)
    assert ks_statistic(brute, fast) < KS_LIMIT
    mean, var = exponential_max_moments(scale, n)
    assert fast.mean() == pytest.approx(mean, rel=0.03)
    assert fast.var() == pytest.approx(var, rel=0.08)


def test_many_comm_steps_use_moment_matched_sum():
    # Above EXACT_COMM_STEPS the jitter sum is drawn from a gamma law; its mean and
    # spread must agree with the exact per-step sampling just below the threshold.
    n, s = 64, 1e-6

    def jitter_part(steps):
        model = JitterModel(compute_s=0.0, compute_cv=0.0, comm_steps=steps, hop_jitter_s=s)
        return simulate_steps(model, n, n_steps=4000, seed=9).samples_s / steps

    exact, approx = jitter_part(EXACT_COMM_STEPS), jitter_part(EXACT_COMM_STEPS + 1)
    mean1, var1 = exponential_max_moments(s, n)
    assert exact.mean() == pytest.approx(mean1, rel=0.01)
    assert approx.mean() == pytest.approx(mean1, rel=0.01)
    # The sum of `steps` iid maxima, divided by steps, has variance var1 / steps.
    assert approx.var() == pytest.approx(var1 / (EXACT_COMM_STEPS + 1), rel=0.1)
    assert approx.std() == pytest.approx(exact.std(), rel=0.1)
    assert approx.min() > 0


def test_deterministic_by_seed():
    model = JitterModel(
        compute_s=0.5, compute_cv=0.05, comm_s=0.2, comm_steps=20, hop_jitter_s=1e-5
    )
    a = simulate_steps(model, 256, n_steps=500, seed=42)
    b = simulate_steps(model, 256, n_steps=500, seed=42)
    c = simulate_steps(model, 256, n_steps=500, seed=43)
    assert np.array_equal(a.samples_s, b.samples_s)
    assert a.p99_s == b.p99_s and a.straggler_gpu_s_per_step == b.straggler_gpu_s_per_step
    assert not np.array_equal(a.samples_s, c.samples_s)


def test_full_scale_ring_stays_small():
    # 16,384 GPUs x 1,000 steps of a ring all-reduce (2(n-1) latency steps): O(steps) memory.
    n = 16_384
    model = JitterModel(
        compute_s=0.5,
        compute_cv=0.02,
        comm_s=0.2,
        comm_steps=2 * (n - 1),
        hop_jitter_s=1e-7,
        overlap=0.3,
    )
    dist = simulate_steps(model, n, n_steps=1000, seed=0)
    assert dist.samples_s.shape == (1000,)
    assert dist.n_gpus == n
    assert np.all(np.isfinite(dist.samples_s))
    assert dist.p99_s > dist.p50_s > dist.ideal_s


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"compute_s": -1.0}, "compute_s"),
        ({"compute_s": 1.0, "compute_cv": -0.1}, "compute_cv"),
        ({"compute_s": 1.0, "comm_steps": 2.5}, "comm_steps"),
        ({"compute_s": 1.0, "overlap": 1.5}, "overlap"),
        ({"compute_s": 1.0, "hop_jitter_s": float("nan")}, "hop_jitter_s"),
    ],
)
def test_invalid_model_names_the_field(kwargs, field):
    with pytest.raises(SolverError, match=field):
        JitterModel(**kwargs)


def test_invalid_counts_are_rejected():
    model = JitterModel(compute_s=1.0)
    with pytest.raises(SolverError, match="n_gpus"):
        simulate_steps(model, 0)
    with pytest.raises(SolverError, match="n_steps"):
        simulate_steps(model, 8, n_steps=0)
