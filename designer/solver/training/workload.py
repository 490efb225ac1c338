"""A training workload on a design: the gradient all-reduce timed by the flow solver, the
step-time estimate, and the Monte Carlo step-time distribution with stragglers.

This is the glue between `pipeline.solve_collective` (how long the all-reduce of the
gradients takes on *this* fabric), `training.estimate_step` (compute, overlap, exposed
communication) and `jitter.simulate_steps` (latency jitter of the links the collective
actually uses, per-GPU compute noise).

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver.snapshot.build import take_snapshot
>>> from designer.solver.training.step import TrainingWorkload
>>> snap = take_snapshot(build_template("hgx"))
>>> rep = training_report(snap, TrainingWorkload(params=7e9, dp_size=8, compute_s=0.5))
>>> 0 < rep.estimate.comm_share < 1
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.flows.ring_layout import first_ranks
from designer.solver.pipeline import CollectiveResult, solve_collective
from designer.solver.snapshot.build import Snapshot
from designer.solver.timing import nccl_model
from designer.solver.training.jitter import JitterModel, StepDistribution, simulate_steps
from designer.solver.training.step import (
    StepEstimate,
    TrainingWorkload,
    estimate_step,
    gradient_bytes,
)


@dataclass(frozen=True, eq=False)
class TrainingReport:
    """What an architect asks of a training step on this design."""

    workload: TrainingWorkload
    allreduce: CollectiveResult
    estimate: StepEstimate
    distribution: StepDistribution
    hop_jitter_s: float
    comm_steps: int


def path_jitter(snap: Snapshot, result: CollectiveResult) -> float:
    """Per-step latency jitter (std-dev, seconds) of the collective's critical path.

    A step crosses the arcs of one transfer; independent per-arc jitters add in
    variance, so the step's jitter is the root of the summed variances of the busiest
    path-length's worth of arcs the collective loads (the RMS of the used arcs' jitter
    times the square root of the hop count).
    """
    used = result.arc_util > 0
    if not used.any():
        return 0.0
    rms = float(np.sqrt(np.mean(snap.arc_jitter_s[used] ** 2)))
    hops = 2 + 2 * (result.n_nodes > 1) * 2  # GPU-switch-GPU, or GPU-NIC-leaf-...-NIC-GPU
    return rms * float(np.sqrt(hops))


def training_report(snap: Snapshot, workload: TrainingWorkload, *,
                    algorithm: str = "auto", compute_cv: float = 0.02,
                    n_steps: int = 1000, seed: int = 0,
                    cache: dict | None = None) -> TrainingReport:
    """Step time, communication share, idle-GPU cost and the jitter distribution.

    The data-parallel group is the first ``workload.dp_size`` GPUs in structural order
    (whole NVLink domains first, `ring_layout.first_ranks`), whatever they are called.

    Parameters
    ----------
    snap : Snapshot
    workload : TrainingWorkload
    algorithm : str
        All-reduce algorithm (``auto`` as NCCL picks).
    compute_cv : float
        Per-GPU compute noise (coefficient of variation).
    n_steps, seed : int
        Monte Carlo samples and seed.
    cache : dict, optional
        `solve_collective`'s cache of this snapshot (shared with other solves).
    """
    if workload.dp_size > snap.n_gpus:
        raise SolverError(f"data-parallel size {workload.dp_size} exceeds the design's "
                          f"{snap.n_gpus} GPUs")
    if workload.dp_size < 2:
        raise SolverError("data-parallel size must be at least 2")
    nbytes = int(gradient_bytes(workload.params, workload.grad_dtype))
    res = solve_collective(snap, "allreduce", sizes=[nbytes], algorithm=algorithm,
                           ranks=first_ranks(snap, workload.dp_size), cache=cache)
    comm = float(res.time_s[0])
    estimate = estimate_step(workload, lambda _b: comm)
    jitter = path_jitter(snap, res)
    steps = nccl_model.steps("allreduce", res.algorithm_by_size[0], res.n_ranks, res.n_nodes)
    model = JitterModel(compute_s=estimate.compute_s, compute_cv=compute_cv, comm_s=comm,
                        comm_steps=steps, hop_jitter_s=jitter, overlap=workload.overlap)
    dist = simulate_steps(model, workload.dp_size, n_steps=n_steps, seed=seed)
    return TrainingReport(workload, res, estimate, dist, jitter, steps)
