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
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from designer.solver import Cancelled
from designer.workload.lone import LoneCollective
from designer.workload.shares import SharedRates
from designer.workload.tasks import Comm, JobTraffic

__all__ = ["Run", "SpanLog", "merge_runs", "run_jobs"]

#: Relative slack under which two event times are one (rounding of sums of times).
_SAME_TIME = 1e-12

#: Events between two progress reports of `run_jobs`.
PROGRESS_EVENTS = 512


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
    trace : SpanLog, optional
        With ``trace=True``: each phase that ran, when, at what speed and for whom,
        from which any arc's load over time and who put it there follow
        (`designer.workload.linktrace`).
    """

    start: list[np.ndarray]
    end: list[np.ndarray]
    arc_bytes: np.ndarray
    arc_peak_GBps: np.ndarray
    makespan: float
    events: int
    trace: SpanLog | None = None

    def makespan_of(self, jx: int) -> float:
        """When job ``jx``'s last task ended (0 without tasks)."""
        return float(self.end[jx].max()) if self.end[jx].size else 0.0


class SpanLog:
    """Who loaded the links when, as columns: entry ``i`` is phase
    ``phases[phase[i]]`` (`lone.PhaseFlows`) of job ``job[i]``'s task ``task[i]``,
    running from ``start[i]`` for ``seconds[i]`` at speed ``speed[i]``.

    An entry covers as many event steps as the phase kept one speed, so a run of
    10^5 steps logs about one entry per phase it ran (plus one per change of speed),
    not one per phase per step.  Columns of numbers rather than a tuple per entry: the
    cyclic garbage collector walks every container the simulation leaves behind, on
    the GUI thread when the GUI runs it (`designer.gui.main_thread_gc`).
    """

    def __init__(self) -> None:
        self.start: list[float] = []
        self.seconds: list[float] = []
        self.speed: list[float] = []
        self.job: list[int] = []
        self.task: list[int] = []
        self.phase: list[int] = []
        self.phases: list = []
        self._index: dict[int, int] = {}  # id(phase) -> its place in `phases`

    def __len__(self) -> int:
        return len(self.start)

    def add(self, start: float, seconds: float, phase, speed: float, job: int,
            task: int) -> None:
        """One entry (see the class)."""
        k = self._index.get(id(phase))
        if k is None:
            k = self._index[id(phase)] = len(self.phases)
            self.phases.append(phase)
        self.start.append(start)
        self.seconds.append(seconds)
        self.speed.append(speed)
        self.job.append(job)
        self.task.append(task)
        self.phase.append(k)

    def extend(self, other: SpanLog, jobs: Sequence[int]) -> None:
        """Append ``other``'s entries, its job ``k`` renamed ``jobs[k]``."""
        offset = len(self.phases)
        for p in other.phases:
            self._index.setdefault(id(p), len(self.phases))
            self.phases.append(p)
        self.start.extend(other.start)
        self.seconds.extend(other.seconds)
        self.speed.extend(other.speed)
        self.job.extend([jobs[k] for k in other.job])
        self.task.extend(other.task)
        self.phase.extend([k + offset for k in other.phase])

    def entries(self) -> tuple:
        """``(start, seconds, phases, phase, speed, job, task)`` as arrays (``phases``
        the list of distinct phases the ``phase`` column indexes)."""
        return (
            np.array(self.start, dtype=float),
            np.array(self.seconds, dtype=float),
            self.phases,
            np.array(self.phase, dtype=np.int64),
            np.array(self.speed, dtype=float),
            np.array(self.job, dtype=np.int64),
            np.array(self.task, dtype=np.int64),
        )


def merge_runs(parts: Sequence[Sequence[int]], runs: Sequence[Run], n_jobs: int,
               n_arcs: int) -> Run:
    """One run of ``n_jobs`` jobs from runs of disjoint sets of them: ``runs[i]``
    ran jobs ``parts[i]`` (in that order), sharing no arc with the other sets."""
    if len(runs) == 1 and list(parts[0]) == list(range(n_jobs)):
        return runs[0]
    start: list = [None] * n_jobs
    end: list = [None] * n_jobs
    arc_bytes = np.zeros((n_jobs, n_arcs))
    peak = np.zeros(n_arcs)
    logs = []
    for part, run in zip(parts, runs, strict=True):
        for k, jx in enumerate(part):
            start[jx], end[jx] = run.start[k], run.end[k]
            arc_bytes[jx] = run.arc_bytes[k]
        np.maximum(peak, run.arc_peak_GBps, out=peak)
        logs.append((part, run.trace))
    log = None
    if all(t is not None for _, t in logs):
        log = SpanLog()
        for part, t in logs:
            log.extend(t, part)
    return Run(
        start,
        end,
        arc_bytes,
        peak,
        max((r.makespan for r in runs), default=0.0),
        sum(r.events for r in runs),
        log,
    )


class _Group:
    """One group's collective in flight: its stage (-1 fixed time, then phase index or 0
    for all pipelined phases), what is left of the stage in alone seconds, and the
    phases it runs now (``current``: none during the fixed time)."""

    __slots__ = ("current", "job", "lone", "remaining", "stage", "task")

    def __init__(self, job: int, task: int, lone: LoneCollective):
        self.job, self.task, self.lone = job, task, lone
        self.stage, self.remaining, self.current = -1, lone.fixed_s, ()

    def phases(self):
        return self.current

    def advance(self) -> bool:
        """Move to the next stage; False once the collective is done."""
        lone = self.lone
        n = 1 if lone.pipelined else len(lone.phases)
        while True:
            self.stage += 1
            if self.stage >= n or not lone.phases:
                self.current = ()
                return False
            if lone.pipelined:
                self.remaining, self.current = lone.bandwidth_s, lone.phases
            else:
                phase = lone.phases[self.stage]
                self.remaining, self.current = phase.seconds, (phase,)
            if self.remaining > 0:
                return True


def run_jobs(
    jobs: Sequence[JobTraffic],
    lones: Callable[[int, Comm], list[LoneCollective]],
    rates: SharedRates,
    n_arcs: int,
    cancelled: Callable[[], bool] | None = None,
    trace: bool = False,
    progress: Callable[[int], None] | None = None,
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
        Keep when each phase ran, at what speed (`Run.trace`).
    progress : callable, optional
        Called every `PROGRESS_EVENTS` events with the number of tasks ended so far.
    """
    n_jobs = len(jobs)
    waiting = [[len(t.deps) for t in j.tasks] for j in jobs]
    after = [_successors(j) for j in jobs]
    start = [[math.nan] * len(j.tasks) for j in jobs]
    end = [[math.nan] * len(j.tasks) for j in jobs]
    left = [[0] * len(j.tasks) for j in jobs]  # groups still running
    clock: list[tuple[float, int, int]] = []  # compute ends: (time, job, task)
    groups: list[_Group] = []
    now, events = 0.0, 0
    loads = _Loads(n_arcs, SpanLog() if trace else None)
    ready: list[tuple[int, int]] = [
        (jx, i) for jx in range(n_jobs) for i, w in enumerate(waiting[jx]) if w == 0
    ]

    ended = [0]

    def finish(jx: int, i: int) -> None:
        ended[0] += 1
        end[jx][i] = now
        wait = waiting[jx]
        offsets, succ = after[jx]
        for k in succ[offsets[i]:offsets[i + 1]]:
            wait[k] -= 1
            if wait[k] == 0:
                ready.append((jx, k))

    # Per event, a few dozen groups at most: plain floats, not arrays (the same IEEE
    # operations, so the same numbers, without numpy's per-call cost).
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
        if progress is not None and events % PROGRESS_EVENTS == 0:
            progress(ended[0])
        flowing: list[_Group] = []
        flat: list = []
        for g in groups:
            if g.current:
                flowing.append(g)
                flat.extend(g.current)
        each = rates.speed_tuple(flat)
        speed: list[float] = []  # each group at the pace of its most slowed phase
        need: list[float] = []
        k = 0
        for g in groups:
            n = len(g.current)
            s = 1.0 if n == 0 else each[k] if n == 1 else min(each[k:k + n])
            k += n
            speed.append(s)
            need.append(g.remaining / s)
        dt = min(need) if need else math.inf
        if clock and clock[0][0] - now <= dt:
            dt = max(clock[0][0] - now, 0.0)
            until = clock[0][0]
        else:
            until = now + dt
        if flat and dt > 0:
            loads.add(now, flowing, flat, each, dt)
        now = until
        done: list[_Group] = []
        close = dt * (1 + _SAME_TIME) + 1e-18
        for g, s, nd in zip(groups, speed, need, strict=True):
            if nd <= close:
                done.append(g)
            else:
                g.remaining -= s * dt
        for g in done:
            if not g.advance():
                groups.remove(g)
                left[g.job][g.task] -= 1
                if left[g.job][g.task] == 0:
                    finish(g.job, g.task)
        while clock and clock[0][0] <= now * (1 + _SAME_TIME) + 1e-18:
            _, jx, i = heapq.heappop(clock)
            finish(jx, i)
    start = [np.array(x, dtype=float) for x in start]
    end = [np.array(x, dtype=float) for x in end]
    return Run(
        start,
        end,
        loads.bytes(n_jobs),
        loads.peak(),
        max((float(e.max()) for e in end if e.size), default=0.0),
        events,
        loads.close(),
    )


def _successors(job: JobTraffic) -> tuple[list[int], list[int]]:
    """Each task's dependants (positions), as offsets into one flat list: task ``i``'s
    are ``succ[offsets[i]:offsets[i + 1]]``, in task order.  Two lists rather than a
    list per task: the run holds them throughout, and the garbage collector (on the
    GUI thread, in the application) would walk 10^5 small lists on every pass."""
    pos = {t.id: i for i, t in enumerate(job.tasks)}
    dep = np.fromiter((pos[d] for t in job.tasks for d in t.deps), dtype=np.int64)
    mine = np.repeat(np.arange(len(job.tasks), dtype=np.int64),
                     [len(t.deps) for t in job.tasks]) if job.tasks else dep
    order = np.argsort(dep, kind="stable")  # by dependency, dependants in task order
    offsets = np.zeros(len(job.tasks) + 1, dtype=np.int64)
    np.cumsum(np.bincount(dep, minlength=len(job.tasks)), out=offsets[1:])
    return offsets.tolist(), mine[order].tolist()


class _Loads:
    """What the running phases put on the arcs, integrated over time.

    A phase's load only scales with its speed, so its bytes are its load times the
    integral of its speed (one number per phase, added up event by event and spread
    over its arcs once, at the end).  The peak is the largest load of any moment; the
    speeds follow from the set of running phases, so it is the largest over the sets
    that ran, looked at once each at the end (a few thousand sets for 10^5 steps).
    With a `SpanLog`, each phase's run is logged once per speed it kept.
    """

    def __init__(self, n_arcs: int, log: SpanLog | None = None):
        self.n_arcs = n_arcs
        # Per list of running phases (their ids, in order): [jobs, phases, speeds, time].
        # The same list always runs at the same speeds (`SharedRates.speeds`), so its
        # time is summed and spread over its phases once, at the end.
        self.spans: dict[tuple[int, ...], list] = {}
        # (job, task, id(phase)) -> [phase, speed, since when at that speed]
        self.running: dict[tuple[int, int, int], list] = {}
        self.log = log
        self.last_end = 0.0  # end of the last step with traffic
        self.key: tuple = ()  # the last step's phases (ids) and groups
        self.flowing: list[_Group] = []

    def add(
        self,
        at: float,
        flowing: list[_Group],
        flat: list,
        speed_of: tuple[float, ...],
        dt: float,
    ) -> None:
        """``dt`` (> 0) seconds from ``at`` of the running phases ``flat`` (of the
        groups ``flowing``, in order) at their speeds."""
        key = tuple(map(id, flat))
        span = self.spans.get(key)
        if span is None:
            jobs = [g.job for g in flowing for _ in g.current]
            span = self.spans[key] = [jobs, list(flat), speed_of, 0.0]
        span[3] += dt
        if self.log is None:
            return  # bytes and peaks follow from the spans alone
        last = self.flowing
        if key == self.key and len(last) == len(flowing) and all(
            a is b for a, b in zip(last, flowing, strict=True)
        ):
            # The same groups running the same phases (only a compute span ended):
            # the same speeds, loads and entries.
            self.last_end = at + dt
            return
        self.key, self.flowing = key, flowing  # held: their ids stay theirs
        speeds = span[2]
        running: dict[tuple[int, int, int], list] = {}
        i = 0
        for g in flowing:
            for p in g.current:
                k = (g.job, g.task, id(p))
                was = running.get(k)
                # A phase listed twice (two collectives with the same flows) loads twice.
                running[k] = [p, speeds[i] if was is None else was[1] + speeds[i], at]
                i += 1
        log, end = self.log, self.last_end
        for k, (p, old, since) in self.running.items():
            new = running.get(k)
            if new is not None and new[1] == old:
                new[2] = since  # runs on at the same speed: one entry
            elif log is not None:
                log.add(since, end - since, p, old, k[0], k[1])
        self.running = running
        self.last_end = at + dt

    def peak(self) -> np.ndarray:
        """The largest load each arc carried at any moment (GB/s).

        The sets are visited in the order they first ran, the load carried from one to
        the next by what differs (phases that start, stop or change speed: a large
        phase running through many sets is added once), the peak raised on the arcs
        that changed."""
        peak = np.zeros(self.n_arcs)
        load = np.zeros(self.n_arcs)
        before: dict[int, tuple] = {}  # id(phase) -> (phase, its summed speed)
        for _jobs, flat, speeds, _seconds in self.spans.values():
            now: dict[int, tuple] = {}
            for p, speed in zip(flat, speeds, strict=True):
                was = now.get(id(p))  # a phase listed twice loads twice
                now[id(p)] = (p, speed if was is None else was[1] + speed)
            changed = []
            for k, (p, old) in before.items():
                new = now.get(k)
                if new is None or new[1] != old:
                    load[p.arcs] += p.load_GBps * ((0.0 if new is None else new[1]) - old)
                    changed.append(p.arcs)
            for k, (p, speed) in now.items():
                if k not in before:
                    load[p.arcs] += p.load_GBps * speed
                    changed.append(p.arcs)
            if changed:
                arcs = changed[0] if len(changed) == 1 else np.concatenate(changed)
                peak[arcs] = np.maximum(peak[arcs], load[arcs])
            before = now
        return peak

    def close(self) -> SpanLog | None:
        """Log what still runs (up to the end of the last step); the log."""
        if self.log is not None:
            for (job, task, _), (p, speed, since) in self.running.items():
                self.log.add(since, self.last_end - since, p, speed, job, task)
        self.running = {}
        return self.log

    def bytes(self, n_jobs: int) -> np.ndarray:
        """Bytes each job put on each arc, shape (jobs, arcs)."""
        spent: dict[tuple[int, int], list] = {}  # (job, id(phase)) -> [phase, s*dt]
        for jobs, flat, speeds, seconds in self.spans.values():
            for job, p, speed in zip(jobs, flat, speeds, strict=True):
                entry = spent.get((job, id(p)))
                if entry is None:
                    entry = spent[(job, id(p))] = [p, 0.0]
                entry[1] += speed * seconds
        out = np.zeros(n_jobs * self.n_arcs)
        for (job, _), (p, seconds) in spent.items():
            out[p.arcs + job * self.n_arcs] += p.load_GBps * (seconds * 1e9)
        return out.reshape(n_jobs, self.n_arcs)
