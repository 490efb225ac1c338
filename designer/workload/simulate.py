"""Several jobs' iterations on one fabric at once: a flow-level event simulation.

``simulate(snap, jobs)`` runs every job's task graph (`designer.workload.tasks`) from
time 0, all jobs together, and each job alone on the same idle fabric, and reports per
job its iteration time shared and alone, the slowdown and where the time went, and per
link its utilisation and who sent what over it.

The model, in short (``docs/model.md`` has it in full):

* Each group of a communication task runs today's collective (`solve_collective` at the
  task's size: the same algorithm choice, protocol, channels and latencies).  Its time
  alone ``T`` splits into the bandwidth term ``B``, its phases at their exact max-min
  rates alone, and a fixed part ``T - B`` (latencies, protocol and channel limits;
  `designer.workload.lone`).
* The group first waits the fixed part; then its phases' flows join every other flow in
  flight in one exact max-min problem, each flow capped at its pace alone.  A phase
  advances at ``speed = min over its flows of shared rate / pace alone``, so its share
  of ``B`` stretches by the ratio of its alone rate to its shared rate, as the rates
  change over time (`designer.workload.shares`, `designer.workload.events`).  Alone,
  every speed is 1 and the group takes exactly ``T``.
* The groups of one task that take the same time alone advance together, at the pace
  of the most slowed of them (`lone.merged`); groups with other times advance apart.
* While a phase runs, a link carries its flows at their pace times its speed: per-link
  bytes are the collective's bytes, utilisation is load / capacity.
* Jobs whose transfers share no link cannot change each other's rates: each set of
  jobs that do share links runs in its own event loop (and, with a memo, keeps its run
  while nothing it uses changed).

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver import solve_collective, take_snapshot
>>> from designer.workload.tasks import Comm, JobTraffic
>>> snap = take_snapshot(build_template("hgx"))
>>> gpus = tuple(snap.node_ids[g] for g in snap.gpus[:4])
>>> job = JobTraffic("a", (Comm(0, "tp", "allreduce", (gpus,), 1 << 26),))
>>> res = simulate(snap, [job])
>>> t = float(solve_collective(snap, sizes=[1 << 26], ranks=[0, 1, 2, 3]).time_s[0])
>>> abs(res.jobs[0].iteration_s - t) <= 1e-12 * t
True
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from designer.workload.events import Run, merge_runs, run_jobs
from designer.workload.linktrace import LinkTrace
from designer.workload.lone import LoneCollective
from designer.workload.lonecache import LoneCache
from designer.workload.memo import SimulationMemo
from designer.workload.report import (
    BUSIEST,
    JobResult,
    LinkStats,
    Timeline,
    TimelineColumns,
    breakdown,
    job_columns,
    link_stats,
    mean_of_stages,
    stage_times,
    timeline,
)
from designer.workload.shares import SharedRates
from designer.workload.tasks import Comm, JobTraffic

__all__ = ["SimulationResult", "simulate"]


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """What `simulate` found (``to_json`` gives the issue's JSON contract).

    Attributes
    ----------
    jobs : tuple of JobResult
        Per job, in the order given.
    links : LinkStats
        Per link: utilisation (time-averaged over the longest iteration, and peak),
        bytes, and each job's bytes.
    timeline : Timeline
        Every task of every job as it ran together (a sequence of `TimelineEvent`,
        each made when read).
    busiest : tuple of (str, float)
        The most utilised links (link id, time-averaged utilisation), busiest first.
    timing_ms : dict
        Wall-clock time of the stages.
    stats : dict
        Event steps, max-min solves and collectives solved alone (for benchmarks).
    trace : LinkTrace or None
        With ``simulate(..., trace=True)``: any link's load over the iteration and the
        collectives that crossed it (`designer.workload.linktrace`).
    timeline_columns : TimelineColumns or None
        ``timeline`` as columns (job, lane, start, end), for plots.
    """

    jobs: tuple[JobResult, ...]
    links: LinkStats
    timeline: Timeline
    busiest: tuple[tuple[str, float], ...]
    timing_ms: dict[str, float] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)
    trace: LinkTrace | None = None
    timeline_columns: TimelineColumns | None = None

    def to_json(self, *, timeline: bool = True) -> dict:
        """The JSON contract: ``{"jobs", "links", "busiest", "timeline", "timing_ms"}``
        (links that carried no byte left out)."""
        return {
            "jobs": [j.to_json() for j in self.jobs],
            "links": self.links.to_json(),
            "busiest": [{"id": k, "mean_util": round(u, 6)} for k, u in self.busiest],
            "timeline": [e.to_json() for e in self.timeline] if timeline else [],
            "timing_ms": {k: round(v, 3) for k, v in self.timing_ms.items()},
        }


def simulate(
    snap,
    jobs: Sequence[JobTraffic],
    *,
    routing: str | None = None,
    alone: bool | None = None,
    launch: str = "eager",
    reuse: bool = True,
    memo: SimulationMemo | None = None,
    cancelled: Callable[[], bool] | None = None,
    trace: bool = False,
    split: bool = True,
    progress: Callable[[float], None] | None = None,
) -> SimulationResult:
    """Simulate one iteration of every job at once on ``snap``'s fabric.

    Parameters
    ----------
    snap : Snapshot
        The design (`designer.solver.take_snapshot`).
    jobs : sequence of JobTraffic
        The jobs; their GPUs must be GPUs of the design, each GPU in one job.
    routing : {"ecmp", "adaptive", "static"}, optional
        Routing to use instead of the design's own.
    alone : bool, optional
        Also run each job alone on the idle fabric for its ``alone_s`` (default: when
        there are several jobs; one job alone is its shared run).
    launch : {"eager", "graph"}
        Kernel launch mode of every collective.
    reuse : bool
        Reuse max-min solutions of sets of phases seen before and of identical
        independent parts (`shares.SharedRates`), and time the pairs of a send task by
        class (`pairs.lone_pairs`); False solves every set afresh and every pair on its
        own (the reference the tests compare with).
    memo : SimulationMemo, optional
        Kept by a caller that simulates snapshot after snapshot of ONE design (after
        each what-if edit): the collectives solved alone for the previous snapshot are
        reused where the edit cannot have changed them (`designer.workload.memo`).
    cancelled : callable, optional
        Polled between events; True raises `designer.solver.Cancelled`.
    trace : bool
        Keep the run's log for per-link time series (`SimulationResult.trace`).
    split : bool
        Run jobs whose transfers share no link as separate simulations (one event
        loop per set of jobs that share links: the others cannot change their rates),
        and with a memo keep a set's run while nothing it uses changed; a job that
        shares no link with another is then its own run alone.  False runs every job in
        one event loop (the reference the tests compare with).
    progress : callable, optional
        Called now and then during the run of every job together with the fraction of
        their tasks ended (0 to 1; the sets of jobs a memo keeps count as ended).

    Returns
    -------
    SimulationResult

    Raises
    ------
    SolverError
        A task the fabric cannot run (GPUs it does not connect, a GPU not in the
        design), naming the job, the task and the group.
    ValueError
        A malformed job (`JobTraffic.validate`), two jobs with one name or sharing a GPU.
    """
    t0 = time.perf_counter()
    if routing is not None and routing != snap.routing:
        snap = dataclasses.replace(snap, routing=routing)
    jobs = list(jobs)
    settings = (launch, reuse)
    gpus_of: dict[int, list[str]] = {}  # job index -> its GPUs (asked twice)
    _check(jobs, gpus_of, {} if memo is None else memo.checked)
    lones = LoneCache(snap, jobs, launch, batch=reuse)
    rates = None
    if memo is not None:
        memo.checked = {id(job): (job, gpus_of[jx]) for jx, job in enumerate(jobs)}
        lones.solver_cache["memo"] = memo.routes
        lones.known = memo.carry(snap, settings)
        lones.joined = dict(memo.joined)
        lones.slowed = dict(memo.slowed)
        lones.revive = memo.revive
        lones.still = memo.still
        lones.plan = memo.plan
        rates = memo.rates
    if rates is None:
        rates = SharedRates(snap.arc_cap, reuse=reuse)
    parts = _sharing(jobs, lones, snap.n_arcs, memo) if split else [list(range(len(jobs)))]
    runs, reused = [], 0
    live = lones.known_ids()
    total = max(sum(len(job.tasks) for job in jobs), 1)
    ended = 0  # tasks of the sets run (or kept) so far
    for part in parts:
        key = tuple(id(jobs[jx]) for jx in part)
        before = None if memo is None else memo.runs.get(key)
        if (
            before is not None
            and all(a is jobs[jx] for a, jx in zip(before[0], part, strict=True))
            and (before[1].trace is not None or not trace)
            and live.issuperset(before[2])
        ):
            run, reused = before[1], reused + 1  # nothing it uses changed since
        else:
            run = run_jobs(
                [jobs[jx] for jx in part],
                lambda k, c, part=part: lones(part[k], c),
                rates,
                snap.n_arcs,
                cancelled,
                trace=trace,
                progress=(
                    None
                    if progress is None
                    else lambda n, base=ended: progress(min((base + n) / total, 1.0))
                ),
            )
        ended += sum(len(jobs[jx].tasks) for jx in part)
        if progress is not None:
            progress(ended / total)
        if memo is not None:
            used = frozenset().union(*(lones.used[jx] for jx in part))
            memo.runs[key] = (tuple(jobs[jx] for jx in part), run, used)
        runs.append(run)
    together = merge_runs(parts, runs, len(jobs), snap.n_arcs)
    t1 = time.perf_counter()
    if alone is None:
        alone = len(jobs) > 1
    alone_s = []
    part_of = {jx: part for part in parts for jx in part}
    live = lones.known_ids()
    for jx, job in enumerate(jobs):
        before = None if memo is None else memo.alone.get(id(job))
        if alone and len(jobs) > 1 and len(part_of[jx]) == 1:
            alone_s.append(together.makespan_of(jx))  # it shares no link: its own run
        elif (
            alone
            and len(jobs) > 1
            and before is not None
            and before[0] is job
            and live.issuperset(before[2])
        ):
            alone_s.append(before[1])  # nothing it uses changed since
        elif alone and len(jobs) > 1:
            own = run_jobs([job], lambda _, c, jx=jx: lones(jx, c), rates, snap.n_arcs, cancelled)
            alone_s.append(own.makespan)
            if memo is not None:
                memo.alone[id(job)] = (job, own.makespan, frozenset(lones.used[jx]))
        elif len(jobs) == 1:
            alone_s.append(together.makespan)
        else:
            alone_s.append(None)
    if memo is not None:
        # Only what the jobs of this call can ask for again (old jobs' runs held theirs).
        memo.keep(snap, settings, lones.known, lones.joined, rates, tuple(jobs),
                  {tuple(id(jobs[jx]) for jx in part) for part in parts}, lones.slowed)
    t2 = time.perf_counter()
    # A job's stages and timeline follow from its run alone: kept while the run is.
    told = {} if memo is None else memo.told
    each = []
    for jx, job in enumerate(jobs):
        got = told.get(id(job))
        if got is None or got[0] is not job or got[1] is not together.start[jx]:
            start, end = together.start[jx], together.end[jx]
            got = (job, start, stage_times(job, start, end), job_columns(job, start, end))
        each.append(got)
    if memo is not None:
        memo.told = {id(got[0]): got for got in each}
    results = tuple(
        _job_result(job, together, jx, alone_s[jx], gpus_of, each[jx][2])
        for jx, job in enumerate(jobs)
    )
    links = link_stats(snap, together, [j.job for j in jobs])
    lists = [got[3] for got in each]
    merged = None if memo is None else memo.merged
    if merged is not None and len(merged[0]) == len(lists) and all(
        a is b for a, b in zip(merged[0], lists, strict=True)
    ):
        events, columns = merged[1]  # every job's timeline as before: the same merge
    else:
        events, columns = timeline(jobs, together, lists)
    if memo is not None:
        memo.merged = (lists, (events, columns))
    t3 = time.perf_counter()
    return SimulationResult(
        jobs=results,
        links=links,
        timeline=events,
        timeline_columns=columns,
        busiest=links.busiest(BUSIEST),
        timing_ms={
            "together": (t1 - t0) * 1e3,
            "alone": (t2 - t1) * 1e3,
            "report": (t3 - t2) * 1e3,
            "total": (t3 - t0) * 1e3,
        },
        stats={
            "events": together.events,
            "maxmin_solves": rates.solves,
            "lone_collectives": len(lones.known),
            "solved_alone": lones.counts["solved"],
            "revived": lones.counts["revived"],
            "unchanged": lones.counts["unchanged"],
            "runs": len(parts),
            "runs_reused": reused,
        },
        trace=(LinkTrace(together.trace, jobs, snap.arc_cap, together.makespan) if trace else None),
    )


def _sharing(
    jobs: list[JobTraffic], lones: LoneCache, n_arcs: int, memo: SimulationMemo | None
) -> list[list[int]]:
    """The jobs in sets whose transfers share no link with another set's (a job's
    links: every arc of every phase of every collective it runs alone), each set in
    job order, the sets by their first job.  With a memo, a job's links are kept while
    the job and the collectives they came from are."""
    links = _job_links(jobs, lones, memo)
    owner = np.full(n_arcs, -1, dtype=np.int64)
    head = list(range(len(jobs)))  # union-find over jobs

    def find(x: int) -> int:
        while head[x] != x:
            head[x] = head[head[x]]
            x = head[x]
        return x

    for jx, mine in enumerate(links):
        for other in np.unique(owner[mine]).tolist():
            if other >= 0:
                head[find(other)] = find(jx)
        owner[mine] = jx
    sets: dict[int, list[int]] = {}
    for jx in range(len(jobs)):
        sets.setdefault(find(jx), []).append(jx)
    return sorted(sets.values())


def _job_links(jobs: list[JobTraffic], lones: LoneCache, memo: SimulationMemo | None) -> list:
    """Per job, the distinct arcs its collectives' phases load (see `_sharing`)."""
    kept = None
    out = []
    for jx, job in enumerate(jobs):
        got = None if memo is None else memo.links.get(id(job))
        if got is not None and got[0] is job:
            if kept is None:
                kept = {id(v) for v in lones.known.values()}
            if kept.issuperset(got[1]):
                lones.used[jx].update(got[1])  # as if asked again: the runs memo reads it
                out.append(got[2])
                continue
            comms = got[3]  # a task of each (collective, groups, size): the same answers
        else:
            # Tasks share their groups' tuples: keyed by identity, not by content (a
            # content hash reads every GPU name of every group of every task).
            first: dict[tuple, Comm] = {}
            for t in job.tasks:
                if isinstance(t, Comm):
                    first.setdefault((t.collective, id(t.groups), t.nbytes), t)
            comms = tuple(first.values())
        seen: dict[int, LoneCollective] = {}
        for task in comms:
            for lone in lones(jx, task):
                seen.setdefault(id(lone), lone)
        arcs = [p.arcs for lone in seen.values() for p in lone.phases]
        mine = np.unique(np.concatenate(arcs)) if arcs else np.zeros(0, dtype=np.int64)
        if memo is not None:
            memo.links[id(job)] = (job, frozenset(lones.used[jx]), mine, comms)
        out.append(mine)
    if memo is not None:
        memo.links = {id(job): memo.links[id(job)] for job in jobs}
    return out


def _check(jobs: list[JobTraffic], gpus_of: dict[int, list[str]], seen: dict) -> None:
    """Validate each job (those in ``seen``, by identity, were: their GPUs are
    taken from it), then that names and GPUs are each one job's; fills ``gpus_of``."""
    names: set[str] = set()
    owner: dict[str, str] = {}
    for jx, job in enumerate(jobs):
        got = seen.get(id(job))
        if got is not None and got[0] is job:
            gpus_of[jx] = got[1]
        else:
            job.validate()
        if job.job in names:
            raise ValueError(f"two jobs are named {job.job!r}")
        names.add(job.job)
        if jx not in gpus_of:
            gpus_of[jx] = _gpus(job)
        for gpu in gpus_of[jx]:
            other = owner.setdefault(gpu, job.job)
            if other != job.job:
                raise ValueError(f"GPU {gpu!r} is in job {other!r} and in job {job.job!r}")


def _gpus(job: JobTraffic) -> list[str]:
    """The job's GPUs (in its communication and compute spans), each once, in order of
    first use."""
    seen: dict[str, None] = {}
    looked: set[int] = set()  # tasks share their groups' tuples: look at each once
    for t in job.tasks:
        gpus = t.groups if isinstance(t, Comm) else (t.gpus,)
        if id(gpus) not in looked:
            looked.add(id(gpus))
            seen.update(dict.fromkeys(chain.from_iterable(gpus)))
    return list(seen)


def _job_result(
    job: JobTraffic,
    run: Run,
    jx: int,
    alone_s: float | None,
    gpus_of: dict[int, list[str]],
    stages: tuple[dict, ...],
) -> JobResult:
    ends = run.end[jx]
    iteration = float(ends.max()) if ends.size else 0.0
    slowdown = (iteration / alone_s if alone_s else 1.0) if alone_s is not None else None
    return JobResult(
        name=job.job,
        gpus=len(gpus_of[jx] if jx in gpus_of else _gpus(job)),
        iteration_s=iteration,
        alone_s=alone_s,
        slowdown=slowdown,
        breakdown=mean_of_stages(stages) if stages else breakdown(job, run.start[jx], ends),
        stages=stages,
    )
