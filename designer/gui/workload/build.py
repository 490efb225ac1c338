"""One simulation of a design's jobs, as the GUI runs it on a worker thread (no Qt).

`simulate_jobs` does what ``fabric-designer simulate`` does for a design's own jobs:
place each job on GPUs no earlier job holds, check its memory, build one iteration of
its traffic and run every job at once on the fabric (`designer.workload.simulate`).

Two things carry from one edit to the next, so a live re-simulation after an edit only
redoes what the edit can have changed:

* a `designer.workload.memo.SimulationMemo` (collectives solved alone), and
* a `TrafficCache`: a job whose definition, GPUs and compute speed are unchanged keeps
  the very same `JobTraffic` object, which is what the memo recognises a job by.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from designer.workload.job import Job
from designer.workload.memo import SimulationMemo

__all__ = ["TrafficCache", "WorkloadResult", "simulate_jobs"]


@dataclass(frozen=True)
class WorkloadResult:
    """A simulation of the design's jobs, tagged with the design's generation.

    Attributes
    ----------
    generation : int
        `Topology.generation` of the design simulated.
    simulation : SimulationResult
        Per job (memory fit filled in), per link, and the timeline of every task.
    jobs : tuple of Job
        The jobs simulated, in the result's order.
    seconds : float
        Wall-clock time of the whole simulation (snapshot to report).
    placements : tuple of Placement
        Where each job ran (GPU ids in rank order), in the jobs' order: what the canvas
        tints.
    snapshot : Snapshot or None
        The design simulated (link ids and positions of ``simulation.links``).
    prepared : dict
        What the panels draw, computed from the result on the worker thread so that
        the GUI thread only draws it (by name; a panel computes what is missing).
    """

    generation: int
    simulation: object
    jobs: tuple[Job, ...]
    seconds: float
    placements: tuple = ()
    snapshot: object = None
    prepared: dict = dataclasses.field(default_factory=dict, compare=False)


class TrafficCache:
    """The last `JobTraffic` built for each job, reused while nothing it depends on
    changed (the job, the GPUs it was placed on, the compute and memory speeds)."""

    def __init__(self) -> None:
        self._built: dict[str, tuple[tuple, object]] = {}

    def get(self, job: Job, gpus: tuple[str, ...], speeds: tuple, build: Callable[[], object]):
        key = (job, gpus, speeds)
        seen = self._built.get(job.name)
        if seen is not None and seen[0] == key:
            return seen[1]
        traffic = build()
        self._built[job.name] = (key, traffic)
        return traffic

    def keep_only(self, names: set[str]) -> None:
        """Forget jobs no longer in the design."""
        self._built = {k: v for k, v in self._built.items() if k in names}


def simulate_jobs(
    capture,
    jobs: tuple[Job, ...],
    *,
    memo: SimulationMemo,
    traffic: TrafficCache,
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[float], None] | None = None,
) -> WorkloadResult:
    """Simulate ``jobs`` together on the captured design (see the module).

    Parameters
    ----------
    capture : DesignCapture
        `designer.solver.capture_design` of the design, taken on the GUI thread.
    jobs : tuple of Job
        The design's jobs (already checked), placed in this order.
    memo, traffic
        Carried from simulation to simulation of one design, used by one call at a time.
    cancelled : callable, optional
        Polled during the simulation; True raises `designer.solver.Cancelled`.
    progress : callable, optional
        Given the fraction of the jobs' tasks simulated now and then (`simulate`).

    Raises
    ------
    ValueError, SolverError, DesignError
        A job the fabric cannot hold or run, one line naming it.
    """
    import time

    from designer.solver import build_snapshot
    from designer.workload.memory import memory_fit
    from designer.workload.placement import place
    from designer.workload.simulate import simulate
    from designer.workload.traffic import gpu_memory_gb, iteration_traffic, job_speeds

    t0 = time.perf_counter()
    snap = build_snapshot(capture)
    taken: dict[str, str] = {}
    traffics, fits, placements = [], [], []
    for job in jobs:
        placement = place(job, snap, taken)
        placements.append(placement)
        taken.update(dict.fromkeys(placement.gpus, job.name))
        fits.append(memory_fit(job, gpu_memory_gb(snap, placement, capture.catalog)))
        speeds = job_speeds(job, snap, placement)
        traffics.append(
            traffic.get(
                job,
                tuple(placement.gpus),
                speeds,
                lambda job=job, placement=placement, speeds=speeds: iteration_traffic(
                    job, placement, *speeds
                ),
            )
        )
    traffic.keep_only({j.name for j in jobs})
    res = simulate(snap, traffics, memo=memo, cancelled=cancelled, trace=True,
                   progress=progress)
    res.trace.prepare()  # here on the worker, not when a view first asks
    res = dataclasses.replace(
        res,
        jobs=tuple(
            dataclasses.replace(j, memory_gb_per_gpu=fit.total_GB, fits=fit.fits)
            for j, fit in zip(res.jobs, fits, strict=True)
        ),
    )
    return WorkloadResult(
        capture.generation,
        res,
        tuple(jobs),
        time.perf_counter() - t0,
        tuple(placements),
        snap,
    )
