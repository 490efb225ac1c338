"""Training-step estimate: gradient volume, compute time, exposed communication.

A data-parallel step computes (forward + backward), then all-reduces the gradients over
the DP group; part of that collective can hide behind the backward pass (``overlap``).
What is left exposed stalls every GPU of the group, and that is the network's cost.

The domain brief's arithmetic, which the tests reproduce:

* a 70e9-parameter model in fp16 has 140e9 bytes of gradients;
* through one 100 Gb/s link that is 140e9 * 8 / 100e9 = 11.2 s (:func:`naive_link_time`);
* a ring all-reduce moves ``2 (n - 1) / n`` of it per GPU, ~2x: 19.6 s for n = 8
  (:func:`ring_allreduce_bytes_per_rank`).

The collective's time itself comes from outside (``comm_time_fn``): the lead passes the
flow solver's predictor, tests pass a one-line alpha-beta model.

Example
-------
>>> w = TrainingWorkload(params=70e9, grad_dtype="fp16", dp_size=8, compute_s=1.0)
>>> link = lambda nbytes: naive_link_time(ring_allreduce_bytes_per_rank(nbytes, 8), 100)
>>> round(estimate_step(w, link).comm_s, 2)
19.6
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from designer.solver.errors import SolverError

#: Bytes per gradient element by dtype name.
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


@dataclass(frozen=True)
class TrainingWorkload:
    """One data-parallel training job, as much as the step estimate needs.

    Attributes
    ----------
    params : float
        Model parameters (gradients are all-reduced once per step).
    grad_dtype : str
        Gradient dtype, a key of :data:`DTYPE_BYTES`.
    dp_size : int
        GPUs in the data-parallel group (the all-reduce's ranks).
    compute_s : float or None
        Compute time per step per GPU, seconds; if None it is derived from FLOPs.
    model_flops_per_step : float or None
        FLOPs each GPU executes per step (used when ``compute_s`` is None).
    gpu_tflops : float or None
        Peak dense throughput of one GPU for the training dtype, TFLOP/s.
    mfu : float
        Model FLOPs utilisation: fraction of peak actually achieved, 0 < mfu <= 1.
    overlap : float
        Fraction of the all-reduce hidden behind compute, 0..1.
    """

    params: float
    grad_dtype: str = "bf16"
    dp_size: int = 8
    compute_s: float | None = None
    model_flops_per_step: float | None = None
    gpu_tflops: float | None = None
    mfu: float = 0.4
    overlap: float = 0.0

    def __post_init__(self) -> None:
        if not np.isfinite(self.params) or self.params <= 0:
            raise SolverError(f"TrainingWorkload.params must be > 0, got {self.params!r}")
        if self.grad_dtype not in DTYPE_BYTES:
            known = ", ".join(DTYPE_BYTES)
            raise SolverError(
                f"TrainingWorkload.grad_dtype {self.grad_dtype!r} is not one of {known}"
            )
        if int(self.dp_size) != self.dp_size or self.dp_size < 1:
            raise SolverError(
                f"TrainingWorkload.dp_size must be a whole number >= 1, got {self.dp_size!r}"
            )
        for name in ("compute_s", "model_flops_per_step"):
            value = getattr(self, name)
            if value is not None and (not np.isfinite(value) or value < 0):
                raise SolverError(f"TrainingWorkload.{name} must be >= 0, got {value!r}")
        if self.gpu_tflops is not None and (
            not np.isfinite(self.gpu_tflops) or self.gpu_tflops <= 0
        ):
            raise SolverError(f"TrainingWorkload.gpu_tflops must be > 0, got {self.gpu_tflops!r}")
        if not 0.0 < self.mfu <= 1.0:
            raise SolverError(f"TrainingWorkload.mfu must be within (0, 1], got {self.mfu!r}")
        if not 0.0 <= self.overlap <= 1.0:
            raise SolverError(f"TrainingWorkload.overlap must be within 0..1, got {self.overlap!r}")


@dataclass(frozen=True)
class StepEstimate:
    """Where one training step's time goes.

    Attributes
    ----------
    gradient_bytes : float
        Bytes all-reduced per step (the whole gradient).
    comm_s : float
        Time of that all-reduce over the DP group.
    compute_s : float
        Compute time per step.
    exposed_comm_s : float
        Part of ``comm_s`` not hidden behind compute.
    step_s : float
        ``compute_s + exposed_comm_s``.
    comm_share : float
        ``exposed_comm_s / step_s`` (0 for an empty step).
    idle_gpu_s_per_step : float
        GPU-seconds per step the DP group spends waiting on the network:
        ``dp_size * exposed_comm_s``.
    naive_single_link_s : float or None
        The whole gradient through one link of the given rate, if a rate was given.
    """

    gradient_bytes: float
    comm_s: float
    compute_s: float
    exposed_comm_s: float
    step_s: float
    comm_share: float
    idle_gpu_s_per_step: float
    naive_single_link_s: float | None


def gradient_bytes(params: float, grad_dtype: str) -> float:
    """Bytes of one full gradient.

    Examples
    --------
    >>> gradient_bytes(70e9, "fp16")
    140000000000.0
    """
    try:
        width = DTYPE_BYTES[grad_dtype]
    except KeyError:
        known = ", ".join(DTYPE_BYTES)
        raise SolverError(f"grad_dtype {grad_dtype!r} is not one of {known}") from None
    return float(params) * width


def compute_time(workload: TrainingWorkload) -> float:
    """Compute time per step: ``compute_s`` if given, else FLOPs / achieved throughput.

    ``model_flops_per_step / (gpu_tflops * 1e12 * mfu)``, with the FLOPs counted per GPU.

    Examples
    --------
    >>> w = TrainingWorkload(params=1e9, model_flops_per_step=4e14, gpu_tflops=1000, mfu=0.4)
    >>> compute_time(w)
    1.0
    """
    if workload.compute_s is not None:
        return float(workload.compute_s)
    if workload.model_flops_per_step is None or workload.gpu_tflops is None:
        raise SolverError(
            "TrainingWorkload needs compute_s, or both model_flops_per_step and gpu_tflops"
        )
    return float(workload.model_flops_per_step / (workload.gpu_tflops * 1e12 * workload.mfu))


def naive_link_time(nbytes: float, link_gbps: float) -> float:
    """Seconds to push ``nbytes`` through one link of ``link_gbps`` (10^9 bits/s).

    Examples
    --------
    >>> round(naive_link_time(140e9, 100), 3)
    11.2
    """
    if not np.isfinite(link_gbps) or link_gbps <= 0:
        raise SolverError(f"naive_link_time: link_gbps must be > 0, got {link_gbps!r}")
    return float(nbytes) * 8.0 / (link_gbps * 1e9)


def ring_allreduce_bytes_per_rank(nbytes: float, n: int) -> float:
    """Bytes each rank sends in a ring all-reduce of ``nbytes`` over ``n`` ranks.

    ``2 (n - 1) / n * nbytes``: reduce-scatter then all-gather, each ``n - 1`` steps of
    ``nbytes / n``.  One rank sends nothing.

    Examples
    --------
    >>> ring_allreduce_bytes_per_rank(100.0, 8)
    175.0
    """
    if int(n) != n or n < 1:
        raise SolverError(
            f"ring_allreduce_bytes_per_rank: n must be a whole number >= 1, got {n!r}"
        )
    return 2.0 * (n - 1) / n * float(nbytes)


def estimate_step(
    workload: TrainingWorkload,
    comm_time_fn: Callable[[float], float],
    link_gbps: float | None = None,
) -> StepEstimate:
    """Estimate one data-parallel training step.

    Parameters
    ----------
    workload : TrainingWorkload
    comm_time_fn : callable
        ``comm_time_fn(nbytes) -> seconds`` for the all-reduce of ``nbytes`` of
        gradients over the DP group (the flow solver's predictor).
    link_gbps : float, optional
        If given, also report the naive time of the whole gradient through one link of
        this rate (``naive_single_link_s``).

    Returns
    -------
    StepEstimate
        ``step = compute + exposed``, where overlap hides ``min(overlap * comm, compute)``.

    Examples
    --------
    >>> w = TrainingWorkload(params=1e9, grad_dtype="fp32", dp_size=4, compute_s=1.0,
    ...                      overlap=0.5)
    >>> est = estimate_step(w, lambda nbytes: 2.0)
    >>> est.exposed_comm_s, est.step_s, est.idle_gpu_s_per_step
    (1.0, 2.0, 4.0)
    """
    nbytes = gradient_bytes(workload.params, workload.grad_dtype)
    compute = compute_time(workload)
    comm = float(comm_time_fn(nbytes))
    if not np.isfinite(comm) or comm < 0:
        raise SolverError(f"estimate_step: comm_time_fn returned {comm!r} for {nbytes:.3g} bytes")
    hidden = min(workload.overlap * comm, compute)
    exposed = comm - hidden
    step = compute + exposed
    return StepEstimate(
        gradient_bytes=nbytes,
        comm_s=comm,
        compute_s=compute,
        exposed_comm_s=exposed,
        step_s=step,
        comm_share=exposed / step if step > 0 else 0.0,
        idle_gpu_s_per_step=workload.dp_size * exposed,
        naive_single_link_s=None if link_gbps is None else naive_link_time(nbytes, link_gbps),
    )
