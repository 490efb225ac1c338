"""The event loop: every job's tasks in time, communication sharing the links.

A task starts the moment its last dependency ends.  A compute span ends after its fixed
time.  A communication task is one collective per group; each group's collective first
waits its fixed time (`lone.LoneCollective.fixed_s`: latencies and protocol
losses, no traffic), then runs its phases
(one after the other, or all at once when pipelined), each phase a bandwidth term that
advances at the phase's speed (`shares.SharedRates`): ``dt`` of wall time completes
``speed * dt`` of the phase's alone seconds.  The task ends when its last group ends.

Between two events nothing changes, so the loop jumps from event to event: the next
compute end, fixed-time end or phase end; the speeds are re-solved whenever the set of
running phases changed (the caches of `shares` make a repeated set free).  Link loads
are constant between events, so bytes are integrated exactly.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from designer.solver import Cancelled
from designer.workload.lone import LoneCollective
from designer.workload.shares import SharedRates
from designer.workload.tasks import Comm, JobTraffic

__all__ = ["Run", "run_jobs"]

#: Relative slack under which two event times are one (rounding of sums of times).
_SAME_TIME = 1e-12


@dataclass(frozen=True, eq=False)
class Run:
    """What one simulation of some jobs produced.

    Attributes
    ----------
    start, end : list of ndarray
        Per job, per task (in the job's task order), when it started and ended (s).
    arc_bytes : ndarray, shape (jobs, arcs)
        Bytes each job put on each arc.
    arc_peak_GBps : ndarray, shape (arcs,)
        The highest load each arc carried at any moment.
    makespan : float
        When the last task of any job ended.
    events : int
        Event steps taken.
    trace : StepLog, optional
        With ``trace=True``: each step with traffic, from which any arc's load over
        time and who put it there follow (`designer.workload.linktrace`).
    """

    start: list[np.ndarray]
    end: list[np.ndarray]
    arc_bytes: np.ndarray
    arc_peak_GBps: np.ndarray
    makespan: float
    events: int
    trace: StepLog | None = None


class StepLog:
    """The steps of a run with traffic, column by column: step ``s`` started at
    ``start[s]`` and lasted ``seconds[s]``, with ``count[s]`` phases running; those
    phases (`lone.PhaseFlows`), their speeds and their ``(job, task)`` follow one
    another in ``phases``, ``speeds`` (one array per step), ``jobs`` and ``tasks``.

    Columns rather than a tuple of lists per step: a long run has 10^5 steps, and
    containers made per step would each be walked by the cyclic garbage collector, on
    the GUI thread when the GUI runs the simulation (`designer.gui.main_thread_gc`).
    """

    def __init__(self) -> None:
        self.start: list[float] = []
        self.seconds: list[float] = []
        self.count: list[int] = []
        self.phases: list = []
        self.speeds: list[np.ndarray] = []
        self.jobs: list[int] = []
        self.tasks: list[int] = []

    def __len__(self) -> int:
        return len(self.start)

    def add(self, start: float, seconds: float, flowing: list, flat: list,
            speeds: np.ndarray) -> None:
        """One step: the phases ``flat`` of the groups ``flowing`` at ``speeds``."""
        self.start.append(start)
        self.seconds.append(seconds)
        self.count.append(len(flat))
        self.phases.extend(flat)
        self.speeds.append(np.asarray(speeds, dtype=float))
        for g in flowing:
            n = len(g.phases())
            self.jobs.extend([g.job] * n)
            self.tasks.extend([g.task] * n)


class _Group:
    """One group's collective in flight: its stage (-1 fixed time, then phase index or 0
    for all pipelined phases) and what is left of the stage, in alone seconds."""

    __slots__ = ("job", "lone", "remaining", "stage", "task")

    def __init__(self, job: int, task: int, lone: LoneCollective):
        self.job, self.task, self.lone = job, task, lone
        self.stage, self.remaining = -1, lone.fixed_s

    def phases(self):
        if self.stage < 0:
            return ()
        return self.lone.phases if self.lone.pipelined else (self.lone.phases[self.stage],)

    def advance(self) -> bool:
        """Move to the next stage; False once the collective is done."""
        n = 1 if self.lone.pipelined else len(self.lone.phases)
        while True:
            self.stage += 1
            if self.stage >= n or not self.lone.phases:
                return False
            self.remaining = (
                self.lone.bandwidth_s
                if self.lone.pipelined
                else self.lone.phases[self.stage].seconds
            )
            if self.remaining > 0:
                return True


def run_jobs(
    jobs: Sequence[JobTraffic],
    lones: Callable[[int, Comm], list[LoneCollective]],
    rates: SharedRates,
    n_arcs: int,
    cancelled: Callable[[], bool] | None = None,
    trace: bool = False,
) -> Run:
    """Simulate ``jobs`` together from time 0 (each already validated).

    Parameters
    ----------
    jobs : sequence of JobTraffic
    lones : callable
        ``lones(job_index, comm)``: the comm's collective alone, one per group.
    rates : SharedRates
        The shared max-min solver (and its caches) of the fabric.
    n_arcs : int
    cancelled : callable, optional
        Polled between events; True raises `designer.solver.Cancelled`.
    trace : bool
        Keep each step's running phases and speeds (`Run.trace`).
    """
    n_jobs = len(jobs)
    pos = [{t.id: i for i, t in enumerate(j.tasks)} for j in jobs]
    waiting = [np.array([len(t.deps) for t in j.tasks], dtype=np.int64) for j in jobs]
    after: list[list[list[int]]] = [[[] for _ in j.tasks] for j in jobs]
    for jx, j in enumerate(jobs):
        for i, t in enumerate(j.tasks):
            for d in t.deps:
                after[jx][pos[jx][d]].append(i)
    start = [np.full(len(j.tasks), np.nan) for j in jobs]
    end = [np.full(len(j.tasks), np.nan) for j in jobs]
    left = [np.zeros(len(j.tasks), dtype=np.int64) for j in jobs]  # groups still running
    clock: list[tuple[float, int, int]] = []  # compute ends: (time, job, task)
    groups: list[_Group] = []
    peak = np.zeros(n_arcs)
    now, events = 0.0, 0
    loads = _Loads(n_arcs)
    steps = StepLog() if trace else None
    ready: list[tuple[int, int]] = [
        (jx, i) for jx in range(n_jobs) for i in np.flatnonzero(waiting[jx] == 0).tolist()
    ]

    def finish(jx: int, i: int) -> None:
        end[jx][i] = now
        for k in after[jx][i]:
            waiting[jx][k] -= 1
            if waiting[jx][k] == 0:
                ready.append((jx, k))

    while True:
        while ready:
            jx, i = ready.pop()
            task = jobs[jx].tasks[i]
            start[jx][i] = now
            if isinstance(task, Comm):
                mine = [_Group(jx, i, lone) for lone in lones(jx, task)]
                mine = [g for g in mine if g.remaining > 0 or g.advance()]
                left[jx][i] = len(mine)
                groups.extend(mine)
                if not mine:
                    finish(jx, i)
            else:
                heapq.heappush(clock, (now + task.seconds, jx, i))
        if not groups and not clock:
            break
        if cancelled is not None and cancelled():
            raise Cancelled
        events += 1
        flowing, flat, where, first = [], [], [], []  # where: index in groups
        for k, g in enumerate(groups):
            if g.stage >= 0:
                flowing.append(g)
                where.append(k)
                first.append(len(flat))
                flat.extend(g.phases())
        speed_of = rates.speeds(flat)
        speed = np.ones(len(groups))
        if flat:  # each group at the pace of its most slowed phase
            speed[where] = np.minimum.reduceat(speed_of, first)
        need = np.array([g.remaining for g in groups]) / speed if groups else np.zeros(0)
        dt = float(need.min()) if groups else np.inf
        if clock and clock[0][0] - now <= dt:
            dt = max(clock[0][0] - now, 0.0)
            until = clock[0][0]
        else:
            until = now + dt
        if flat and dt > 0:
            loads.add(flowing, flat, speed_of, dt, peak)
            if steps is not None:
                steps.add(now, dt, flowing, flat, speed_of)
        now = until
        done: list[_Group] = []
        for k, g in enumerate(groups):
            if need[k] <= dt * (1 + _SAME_TIME) + 1e-18:
                done.append(g)
            else:
                g.remaining -= speed[k] * dt
        for g in done:
            if not g.advance():
                groups.remove(g)
                left[g.job][g.task] -= 1
                if left[g.job][g.task] == 0:
                    finish(g.job, g.task)
        while clock and clock[0][0] <= now * (1 + _SAME_TIME) + 1e-18:
            _, jx, i = heapq.heappop(clock)
            finish(jx, i)
    return Run(
        start,
        end,
        loads.bytes(n_jobs),
        peak,
        max((float(e.max()) for e in end if e.size), default=0.0),
        events,
        steps,
    )


class _Loads:
    """What the running phases put on the arcs, integrated over time.

    A phase's load only scales with its speed, so its bytes are its load times the
    integral of its speed (one number per phase, added up event by event and spread
    over its arcs once, at the end).  The peak is the largest load of any moment; the
    speeds follow from the set of running phases, so each set is looked at once.
    """

    def __init__(self, n_arcs: int):
        self.n_arcs = n_arcs
        # Per list of running phases (their ids, in order): [jobs, phases, speeds, time].
        # The same list always runs at the same speeds (`SharedRates.speeds`), so its
        # time is summed and spread over its phases once, at the end.
        self.spans: dict[tuple[int, ...], list] = {}
        # The load of the moment, kept up to date by what changed since the last step
        # (phases that started, stopped or changed speed), so that a step costs the arcs
        # of what changed rather than those of everything running.
        self.now = np.zeros(n_arcs)
        self.running: dict[tuple[int, int], tuple] = {}  # (job, id) -> (phase, speed)

    def add(
        self,
        flowing: list[_Group],
        flat: list,
        speed_of: np.ndarray,
        dt: float,
        peak: np.ndarray,
    ) -> None:
        """``dt`` (> 0) seconds of the running phases ``flat`` (of the groups
        ``flowing``, in order) at their speeds."""
        key = tuple(map(id, flat))
        span = self.spans.get(key)
        if span is None:
            jobs = [g.job for g in flowing for _ in g.phases()]
            span = self.spans[key] = [jobs, list(flat), np.asarray(speed_of, float).copy(), 0.0]
        span[3] += dt
        jobs, _, speeds, _ = span
        running: dict[tuple[int, int], tuple] = {}
        for job, p, speed in zip(jobs, flat, speeds.tolist(), strict=True):
            k = (job, id(p))
            was = running.get(k)
            # A phase listed twice (two collectives with the same flows) loads twice.
            running[k] = (p, speed if was is None else was[1] + speed)
        changed = []
        now = self.now
        for k, (p, old) in self.running.items():
            new = running.get(k)
            if new is None or new[1] != old:
                now[p.arcs] += p.load_GBps * ((0.0 if new is None else new[1]) - old)
                changed.append(p.arcs)
        for k, (p, speed) in running.items():
            if k not in self.running:
                now[p.arcs] += p.load_GBps * speed
                changed.append(p.arcs)
        self.running = running
        if changed:
            arcs = changed[0] if len(changed) == 1 else np.concatenate(changed)
            peak[arcs] = np.maximum(peak[arcs], now[arcs])

    def bytes(self, n_jobs: int) -> np.ndarray:
        """Bytes each job put on each arc, shape (jobs, arcs)."""
        spent: dict[tuple[int, int], list] = {}  # (job, id(phase)) -> [phase, s*dt]
        for jobs, flat, speeds, seconds in self.spans.values():
            for job, p, speed in zip(jobs, flat, speeds.tolist(), strict=True):
                entry = spent.get((job, id(p)))
                if entry is None:
                    entry = spent[(job, id(p))] = [p, 0.0]
                entry[1] += speed * seconds
        out = np.zeros(n_jobs * self.n_arcs)
        for (job, _), (p, seconds) in spent.items():
            out[p.arcs + job * self.n_arcs] += p.load_GBps * (seconds * 1e9)
        return out.reshape(n_jobs, self.n_arcs)
