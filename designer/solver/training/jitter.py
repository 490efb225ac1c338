"""Step-time distribution of synchronous training under compute noise and latency jitter.

Synchronous data-parallel training is lockstep: a step ends when the *slowest* GPU has
finished its compute and the gradient collective has completed, and every step of a
ring collective waits for the slowest of its participants.  So the tail, not the mean,
sets the step time, and every GPU that finished early idles ("straggler cost", the
domain brief's 10,000 GPUs x 20 us = 0.2 GPU-seconds per step).

The model, per training step ``k``:

* compute: each of the ``n`` GPUs draws a lognormal time with mean ``compute_s`` and
  coefficient of variation ``compute_cv``; the step waits for the maximum ``T_k``.
* collective: ``comm_s`` is its jitter-free time (from the flow solver); each of its
  ``comm_steps`` latency-bearing steps adds the *maximum* over the ``n`` participants
  of an exponential extra delay with standard deviation (and mean) ``hop_jitter_s``.
  Exponential because a queueing delay is non-negative and memoryless; the catalog's
  per-technology ``jitter_ns`` is its standard deviation.  ``C_k = comm_s + J_k``.
* overlap: a fraction ``overlap`` of the collective runs under compute, hidden up to
  the compute time: ``step_k = T_k + C_k - min(overlap * C_k, T_k)``.

Nothing here allocates ``n_gpus x n_steps``: the maximum of ``n`` iid draws has CDF
``F**n``, so it is sampled directly as ``F^-1(U**(1/n))`` with one uniform ``U`` per
sample (:func:`max_of_lognormals`, :func:`max_of_exponentials`).  When a collective has
many latency steps (a 16,384-GPU ring has 32,766) the sum of its per-step maxima is
drawn from a gamma law with the exact mean and variance of that sum (the maximum of
``n`` exponentials with scale ``s`` has mean ``s H_n`` and variance ``s^2 sum 1/k^2``).

Example
-------
>>> model = JitterModel(compute_s=0.5, compute_cv=0.02, comm_s=0.1, comm_steps=14,
...                     hop_jitter_s=5e-6)
>>> dist = simulate_steps(model, n_gpus=8, n_steps=200, seed=1)
>>> bool(dist.p99_s >= dist.p50_s >= dist.ideal_s)
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.solver.errors import SolverError

# Above this many latency steps the per-step maxima are not sampled one by one; their
# sum is drawn from a moment-matched gamma law (exact mean and variance).
EXACT_COMM_STEPS = 256

# Rational approximation of the standard normal quantile (P. J. Acklam's published
# algorithm, relative error < 1.2e-9): a central branch and a tail branch.
_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
      1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)  # fmt: skip
_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
      6.680131188771972e01, -1.328068155288572e01)  # fmt: skip
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
      -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)  # fmt: skip
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00,
      3.754408661907416e00)  # fmt: skip
_P_LOW = 0.02425

_TINY = np.finfo(float).tiny


@dataclass(frozen=True)
class JitterModel:
    """What varies in one synchronous training step (all times in seconds).

    Attributes
    ----------
    compute_s : float
        Mean compute time per step per GPU.
    compute_cv : float
        Per-GPU compute noise as a coefficient of variation (lognormal).
    comm_s : float
        Collective time without jitter (from the flow solver).
    comm_steps : int
        Latency-bearing steps of the collective, e.g. ``2 (n - 1)`` for a ring all-reduce.
    hop_jitter_s : float
        Standard deviation of the extra latency of one step on one participant (the
        path's combined jitter; the catalog gives ``jitter_ns`` per technology).
    overlap : float
        Fraction of the collective hidden behind compute, 0..1.
    """

    compute_s: float
    compute_cv: float = 0.01
    comm_s: float = 0.0
    comm_steps: int = 0
    hop_jitter_s: float = 0.0
    overlap: float = 0.0

    def __post_init__(self) -> None:
        for name in ("compute_s", "compute_cv", "comm_s", "hop_jitter_s"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0:
                raise SolverError(f"JitterModel.{name} must be a finite number >= 0, got {value!r}")
        if int(self.comm_steps) != self.comm_steps or self.comm_steps < 0:
            raise SolverError(
                f"JitterModel.comm_steps must be a whole number >= 0, got {self.comm_steps!r}"
            )
        if not 0.0 <= self.overlap <= 1.0:
            raise SolverError(f"JitterModel.overlap must be within 0..1, got {self.overlap!r}")

    def step_time(self, compute_s: np.ndarray | float, comm_s: np.ndarray | float):
        """Step time from the slowest compute and the collective's time, after overlap."""
        hidden = np.minimum(self.overlap * np.asarray(comm_s), compute_s)
        return compute_s + comm_s - hidden


@dataclass(frozen=True)
class StepDistribution:
    """Simulated step times of one configuration.

    Attributes
    ----------
    samples_s : numpy.ndarray
        One step time per simulated step, seconds.
    p50_s, p99_s, mean_s : float
        Median, 99th percentile and mean of ``samples_s``.
    ideal_s : float
        Step time with no noise and no jitter.
    straggler_gpu_s_per_step : float
        GPU-seconds per step spent waiting for the slowest GPU (compute) and for the
        slowest participant of each collective step (jitter), averaged over steps.
    n_gpus : int
        GPUs in lockstep.
    """

    samples_s: np.ndarray
    p50_s: float
    p99_s: float
    mean_s: float
    ideal_s: float
    straggler_gpu_s_per_step: float
    n_gpus: int


def normal_quantile(p: np.ndarray | float) -> np.ndarray:
    """Quantile (inverse CDF) of the standard normal distribution, pure numpy.

    Parameters
    ----------
    p : array_like
        Probabilities in (0, 1); 0 and 1 map to -inf and +inf.

    Returns
    -------
    numpy.ndarray
        ``z`` with ``Phi(z) = p`` (relative error below ~1.2e-9).

    Examples
    --------
    >>> round(float(normal_quantile(0.975)), 6)
    1.959964
    """
    p = np.asarray(p, dtype=float)
    z = np.empty_like(p)
    low = p < _P_LOW
    high = p > 1.0 - _P_LOW
    mid = ~(low | high)

    q = p[mid] - 0.5
    r = q * q
    num = ((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]
    den = ((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1.0
    z[mid] = q * num / den

    # Tails: the same formula on the smaller of p and 1 - p, mirrored for the upper tail.
    with np.errstate(divide="ignore"):
        tail_p = np.where(low, p, 1.0 - p)[low | high]
        t = np.sqrt(-2.0 * np.log(tail_p))
    num = ((((_C[0] * t + _C[1]) * t + _C[2]) * t + _C[3]) * t + _C[4]) * t + _C[5]
    den = (((_D[0] * t + _D[1]) * t + _D[2]) * t + _D[3]) * t + 1.0
    with np.errstate(invalid="ignore"):
        tail_z = num / den
    tail_z = np.where(np.isinf(t), -np.inf, tail_z)  # p == 0 (or 1 in the mirror)
    sign = np.where(low, 1.0, -1.0)[low | high]
    z[low | high] = sign * tail_z
    return z


def _upper_tail_of_max(rng: np.random.Generator, n: int, size) -> np.ndarray:
    """``1 - U**(1/n)`` for uniform ``U``: the upper-tail probability of a max of ``n``.

    Computed as ``-expm1(log(U) / n)`` so it keeps full precision when it is tiny (large
    ``n``), and clipped away from 0 and 1 so quantiles stay finite.
    """
    u = np.maximum(rng.random(size), _TINY)
    q = -np.expm1(np.log(u) / n)
    return np.clip(q, _TINY, np.nextafter(1.0, 0.0))


def max_of_lognormals(rng: np.random.Generator, mean: float, cv: float, n: int, size) -> np.ndarray:
    """Sample the maximum of ``n`` iid lognormals without drawing the ``n`` of them.

    The maximum has CDF ``F**n``, so it is ``F^-1(U**(1/n))`` for one uniform ``U``;
    one uniform per sample, whatever ``n`` is.

    Parameters
    ----------
    rng : numpy.random.Generator
    mean, cv : float
        Mean and coefficient of variation of each lognormal.
    n : int
        How many iid draws the maximum is taken over (>= 1).
    size : int or tuple
        Shape of the returned sample.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> m = max_of_lognormals(rng, 1.0, 0.1, 1000, 10_000)
    >>> bool(1.25 < m.mean() < 1.4)   # about 3.2 sigma above the mean
    True
    """
    if cv == 0 or mean == 0:  # a constant (a zero-length compute phase has no log)
        return np.full(size, float(mean))
    sigma = np.sqrt(np.log1p(cv * cv))
    mu = np.log(mean) - 0.5 * sigma * sigma
    q = _upper_tail_of_max(rng, n, size)
    return np.exp(mu - sigma * normal_quantile(q))  # quantile(1 - q) = -quantile(q)


def max_of_exponentials(rng: np.random.Generator, scale: float, n: int, size) -> np.ndarray:
    """Sample the maximum of ``n`` iid exponentials of mean ``scale`` (inverse CDF of U^(1/n)).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> m = max_of_exponentials(rng, 1.0, 4, 100_000)
    >>> round(float(m.mean()), 1)   # H_4 = 1 + 1/2 + 1/3 + 1/4 = 2.083
    2.1
    """
    if scale == 0:
        return np.zeros(size)
    return -scale * np.log(_upper_tail_of_max(rng, n, size))


def exponential_max_moments(scale: float, n: int) -> tuple[float, float]:
    """Mean and variance of the maximum of ``n`` iid exponentials of mean ``scale``.

    The maximum is distributed as ``scale * sum_k E_k / k`` for independent unit
    exponentials ``E_k`` (Renyi), hence mean ``scale H_n``, variance ``scale^2 sum 1/k^2``.
    """
    k = np.arange(1, n + 1, dtype=float)
    return float(scale * np.sum(1.0 / k)), float(scale * scale * np.sum(1.0 / (k * k)))


def _comm_jitter(rng: np.random.Generator, model: JitterModel, n: int, n_steps: int):
    """Total jitter of the collective per training step: sum of its per-step maxima."""
    steps = int(model.comm_steps)
    if steps == 0 or model.hop_jitter_s == 0:
        return np.zeros(n_steps)
    if steps <= EXACT_COMM_STEPS:
        return max_of_exponentials(rng, model.hop_jitter_s, n, (n_steps, steps)).sum(axis=1)
    # Many steps: the sum of `steps` iid maxima, drawn from the gamma law with its exact
    # mean and variance (keeps the right skew, never negative; CLT makes it close).
    mean1, var1 = exponential_max_moments(model.hop_jitter_s, n)
    mean, var = steps * mean1, steps * var1
    return rng.gamma(mean * mean / var, var / mean, size=n_steps)


def simulate_steps(
    model: JitterModel, n_gpus: int, n_steps: int = 1000, seed: int = 0
) -> StepDistribution:
    """Monte-Carlo step times of ``n_gpus`` GPUs in lockstep.

    Vectorised over steps; memory is O(n_steps), independent of ``n_gpus`` (maxima are
    sampled by inverse CDF of ``U**(1/n)``).  Deterministic for a given ``seed``.

    Parameters
    ----------
    model : JitterModel
        Compute time and noise, collective time, its latency steps and jitter, overlap.
    n_gpus : int
        GPUs that wait for each other (>= 1).
    n_steps : int
        Training steps to simulate (>= 1).
    seed : int
        Seed of the random generator.

    Returns
    -------
    StepDistribution

    Examples
    --------
    >>> dist = simulate_steps(JitterModel(compute_s=1.0, compute_cv=0.0), n_gpus=4)
    >>> float(dist.p99_s), float(dist.straggler_gpu_s_per_step)
    (1.0, 0.0)
    """
    if int(n_gpus) != n_gpus or n_gpus < 1:
        raise SolverError(f"simulate_steps: n_gpus must be a whole number >= 1, got {n_gpus!r}")
    if int(n_steps) != n_steps or n_steps < 1:
        raise SolverError(f"simulate_steps: n_steps must be a whole number >= 1, got {n_steps!r}")
    n_gpus, n_steps = int(n_gpus), int(n_steps)
    rng = np.random.default_rng(seed)

    slowest_compute = max_of_lognormals(rng, model.compute_s, model.compute_cv, n_gpus, n_steps)
    jitter = _comm_jitter(rng, model, n_gpus, n_steps)
    samples = model.step_time(slowest_compute, model.comm_s + jitter)
    ideal = float(model.step_time(model.compute_s, model.comm_s))

    if n_gpus == 1:
        straggler = 0.0  # nobody to wait for
    else:
        # Sum over GPUs of (slowest - own) = n * max - sum; E[sum] is n * mean exactly.
        jitter_mean = model.comm_steps * model.hop_jitter_s  # exponential: mean = std
        waited = (slowest_compute.mean() - model.compute_s) + (jitter.mean() - jitter_mean)
        straggler = max(0.0, float(n_gpus * waited))

    return StepDistribution(
        samples_s=samples,
        p50_s=float(np.percentile(samples, 50)),
        p99_s=float(np.percentile(samples, 99)),
        mean_s=float(samples.mean()),
        ideal_s=ideal,
        straggler_gpu_s_per_step=straggler,
        n_gpus=n_gpus,
    )


def straggler_cost(n_gpus: int, lag_s: float) -> float:
    """GPU-seconds idled per step when one GPU lags ``lag_s`` behind ``n_gpus`` in lockstep.

    Everyone waits for the straggler, so the cost is ``n_gpus * lag_s`` (the domain
    brief counts all ``n`` GPUs).

    Examples
    --------
    >>> round(straggler_cost(10_000, 20e-6), 6)
    0.2
    """
    if int(n_gpus) != n_gpus or n_gpus < 0:
        raise SolverError(f"straggler_cost: n_gpus must be a whole number >= 0, got {n_gpus!r}")
    if not np.isfinite(lag_s) or lag_s < 0:
        raise SolverError(f"straggler_cost: lag_s must be a finite number >= 0, got {lag_s!r}")
    return float(n_gpus * lag_s)
