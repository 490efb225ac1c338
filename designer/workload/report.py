"""What a simulation reports: per job (times, slowdown, breakdown), per link
(utilisation, bytes, which jobs), and the timeline of tasks.

The **breakdown** of a job's iteration follows its critical path: from the task that
ends last back through, at each step, the dependency that ended last.  The path covers
the iteration without overlap; its time in compute spans is ``compute``, its time in
communication tasks is charged to their lane (``tp``, ``pp``, ``dp``, ``ep``, ``cp``,
``storage``, ``background``: communication that nothing hid), ``exposed_comm`` is their
sum, and ``bubble`` is the time the path waited with nothing of its own running (a task
that started after its last dependency ended, or the path's first task starting late).

When the compute spans name their GPUs (`tasks.Compute.gpus`: the traffic generator
names each pipeline stage's), the breakdown is the **stages'** instead (`stage_times`):
each stage's iteration splits into compute (its GPUs computing), each lane's exposed
communication (its GPUs in a collective or send of that lane and not computing; where
lanes overlap, the first in `LANES` order takes the time) and its **bubble** (its GPUs
doing nothing), and the job's breakdown is the mean over its GPUs.  A 1F1B pipeline of
``p`` even stages and ``m`` micro-batches then shows the textbook bubble
``(p - 1) / (m + p - 1)`` of the iteration.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from designer.workload.tasks import LANES, Comm, Compute, JobTraffic

__all__ = [
    "BUSIEST",
    "JobResult",
    "LinkStats",
    "Timeline",
    "TimelineColumns",
    "TimelineEvent",
    "breakdown",
    "job_columns",
    "link_stats",
    "mean_of_stages",
    "stage_times",
    "timeline",
]

#: How many links `SimulationResult.busiest` names.
BUSIEST = 10

#: The breakdown's keys, in order.
BREAKDOWN = (*LANES, "bubble", "exposed_comm")


@dataclass(frozen=True)
class JobResult:
    """One job's figures (seconds).  ``memory_gb_per_gpu`` and ``fits`` are the
    memory check's, filled by a caller that has the job's model (None: unknown).
    ``stages``: per pipeline stage (`stage_times`), empty when its compute spans name
    no GPUs."""

    name: str
    gpus: int
    iteration_s: float
    alone_s: float | None
    slowdown: float | None
    breakdown: dict[str, float]
    memory_gb_per_gpu: float | None = None
    fits: bool | None = None
    stages: tuple[dict, ...] = ()

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "gpus": self.gpus,
            "iteration_s": self.iteration_s,
            "alone_s": self.alone_s,
            "slowdown": self.slowdown,
            "breakdown": dict(self.breakdown),
            "memory_gb_per_gpu": self.memory_gb_per_gpu,
            "fits": self.fits,
            "stages": [dict(st) for st in self.stages],
        }


@dataclass(frozen=True)
class TimelineEvent:
    """One task as it ran: ``bytes`` is a communication's message size per group
    (nccl-tests size), run by ``groups`` groups at once; 0 for compute."""

    job: str
    task: int
    lane: str
    label: str
    start_s: float
    end_s: float
    bytes: float
    groups: int

    def to_json(self) -> dict:
        return {
            "job": self.job,
            "task": self.task,
            "lane": self.lane,
            "label": self.label,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "bytes": self.bytes,
            "groups": self.groups,
        }


@dataclass(frozen=True, eq=False)
class LinkStats:
    """Per link (``ids``, the design's link ids), over the simulated iteration.

    ``mean_util`` and ``peak_util`` are the busier direction's (load / capacity, the
    mean over the whole run, the peak at any moment); ``bytes`` counts both directions,
    ``job_bytes[j]`` job ``j``'s part of it.
    """

    ids: Sequence[str]
    jobs: tuple[str, ...]
    mean_util: np.ndarray
    peak_util: np.ndarray
    bytes: np.ndarray
    job_bytes: np.ndarray

    def busiest(self, top: int) -> tuple[tuple[str, float], ...]:
        """The ``top`` links of highest mean utilisation (ties in link order)."""
        order = np.argsort(-np.round(self.mean_util, 9), kind="stable")[:top]
        return tuple(
            (self.ids[k], float(self.mean_util[k])) for k in order.tolist() if self.mean_util[k] > 0
        )

    def to_json(self) -> list[dict]:
        out = []
        for k in np.flatnonzero(self.bytes > 0).tolist():
            total = float(self.bytes[k])
            out.append(
                {
                    "id": self.ids[k],
                    "mean_util": round(float(self.mean_util[k]), 6),
                    "peak_util": round(float(self.peak_util[k]), 6),
                    "bytes": total,
                    "jobs": {
                        name: round(float(self.job_bytes[j, k]) / total, 6)
                        for j, name in enumerate(self.jobs)
                        if self.job_bytes[j, k] > 0
                    },
                }
            )
        return out


def link_stats(snap, run, names: Sequence[str]) -> LinkStats:
    """Per-link figures of ``run`` on ``snap`` (a link's arcs are ``2k`` and ``2k+1``)."""
    cap = np.asarray(snap.arc_cap, dtype=float)
    arc_total = run.arc_bytes.sum(axis=0)
    span = run.makespan
    mean = np.divide(
        arc_total, cap * 1e9 * span, out=np.zeros_like(arc_total), where=(cap > 0) & (span > 0)
    )
    peak = np.divide(run.arc_peak_GBps, cap, out=np.zeros_like(cap), where=cap > 0)
    by_link = lambda a: a.reshape(*a.shape[:-1], -1, 2)  # noqa: E731
    return LinkStats(
        ids=snap.link_ids,
        jobs=tuple(names),
        mean_util=by_link(mean).max(axis=-1),
        peak_util=by_link(peak).max(axis=-1),
        bytes=by_link(arc_total).sum(axis=-1),
        job_bytes=by_link(run.arc_bytes).sum(axis=-1),
    )


def breakdown(job: JobTraffic, start: np.ndarray, end: np.ndarray) -> dict[str, float]:
    """Where the job's iteration went, along its critical path (see the module)."""
    out = dict.fromkeys(BREAKDOWN, 0.0)
    if not job.tasks:
        return out
    pos = {t.id: i for i, t in enumerate(job.tasks)}
    ids = np.array([t.id for t in job.tasks])
    # The task that ends last (the highest id among equals: independent of list order).
    cur = int(np.lexsort((ids, end))[-1])
    while True:
        task = job.tasks[cur]
        out[task.lane if isinstance(task, Comm) else "compute"] += float(end[cur] - start[cur])
        if not task.deps:
            out["bubble"] += float(start[cur])
            break
        deps = [pos[d] for d in task.deps]
        prev = max(deps, key=lambda i: (end[i], job.tasks[i].id))
        out["bubble"] += float(start[cur] - end[prev])
        cur = prev
    out["exposed_comm"] = sum(out[k] for k in LANES if k != "compute")
    return out


def stage_times(job: JobTraffic, start: np.ndarray, end: np.ndarray) -> tuple[dict, ...]:
    """Per stage (a set of GPUs its compute spans name), where its iteration went.

    Each stage is a dict of the `BREAKDOWN` keys (seconds, summing with the bubble to
    the job's iteration, ``exposed_comm`` apart) plus ``gpus`` (how many) and
    ``first_gpu`` (the lowest id, to name it); stages in order of their first compute
    span's start (then ``first_gpu``).  Empty when no compute span names its GPUs.
    """
    index: dict[frozenset, int] = {}
    by_tuple: dict[int, int] = {}  # id(gpus tuple) -> stage (stages share one tuple)
    of_gpu: dict[str, list[int]] = {}
    member: list[list[int]] = []  # stage -> its tasks
    codes = np.zeros(len(job.tasks), dtype=np.int64)
    for i, t in enumerate(job.tasks):
        if not isinstance(t, Compute) or not t.gpus:
            continue
        k = by_tuple.get(id(t.gpus))
        if k is None:
            key = frozenset(t.gpus)
            k = index.get(key)
            if k is None:
                k = index[key] = len(index)
                member.append([])
                for g in key:
                    of_gpu.setdefault(g, []).append(k)
            by_tuple[id(t.gpus)] = k
        member[k].append(i)
    if not index:
        return ()
    touches: dict[int, set[int]] = {}  # id(groups) -> stages whose GPUs it uses
    single = all(len(ks) == 1 for ks in of_gpu.values())
    one = {g: ks[0] for g, ks in of_gpu.items()} if single else {}
    for i, t in enumerate(job.tasks):
        if not isinstance(t, Comm):
            continue
        got = touches.get(id(t.groups))
        if got is None and single:  # each GPU in one stage: a lookup per GPU, in C
            got = set(map(one.get, chain.from_iterable(t.groups)))
            got.discard(None)
            touches[id(t.groups)] = got
        elif got is None:
            got = touches[id(t.groups)] = {
                k for grp in t.groups for g in grp for k in of_gpu.get(g, ())
            }
        codes[i] = LANES.index(t.lane)
        for k in got:
            member[k].append(i)
    iteration = float(np.nanmax(end)) if len(end) else 0.0
    out = []
    for key, k in index.items():
        rows = np.array(sorted(member[k]), dtype=np.int64)
        row = _stage_split(start[rows], end[rows], codes[rows], iteration)
        first = min(start[i] for i in member[k] if isinstance(job.tasks[i], Compute))
        row.update(gpus=len(key), first_gpu=min(key))
        out.append((float(first), min(key), row))
    out.sort(key=lambda x: (x[0], x[1]))
    return tuple(row for _, _, row in out)


def _stage_split(s: np.ndarray, e: np.ndarray, code: np.ndarray, iteration: float) -> dict:
    """Time covered by each lane (``code``: index in `LANES`), lower codes first where
    they overlap; the rest of ``iteration`` is the bubble."""
    out = dict.fromkeys(BREAKDOWN, 0.0)
    keep = e > s
    s, e, code = s[keep], e[keep], code[keep]
    if s.size:
        pts = np.unique(np.concatenate([s, e]))
        seg = np.diff(pts)
        lo, hi = np.searchsorted(pts, s), np.searchsorted(pts, e)
        owner = np.full(len(seg), -1, dtype=np.int64)
        for c in np.unique(code).tolist():
            mine = code == c
            depth = np.zeros(len(pts), dtype=np.int64)
            np.add.at(depth, lo[mine], 1)
            np.add.at(depth, hi[mine], -1)
            covered = (np.cumsum(depth)[:-1] > 0) & (owner < 0)
            owner[covered] = c
        spent = np.bincount(owner[owner >= 0], weights=seg[owner >= 0], minlength=len(LANES))
        for c, lane in enumerate(LANES):
            out[lane] = float(spent[c])
    busy = sum(out[k] for k in LANES)
    out["bubble"] = max(iteration - busy, 0.0)
    out["exposed_comm"] = busy - out["compute"]
    return out


def mean_of_stages(stages: Sequence[dict]) -> dict[str, float]:
    """The job's breakdown from its stages': the mean over its GPUs."""
    gpus = sum(st["gpus"] for st in stages)
    return {k: sum(st[k] * st["gpus"] for st in stages) / gpus for k in BREAKDOWN}


@dataclass(frozen=True, eq=False)
class TimelineColumns:
    """A timeline as columns, entry ``i`` describing its event ``i``: what a plot of
    80,000 events reads without touching the event objects.

    Attributes
    ----------
    job : ndarray of int
        The event's job, as its place in the jobs simulated.
    lane : ndarray of object
        The event's lane name.
    start, end : ndarray of float
        Seconds from the start of the iteration.
    """

    job: np.ndarray
    lane: np.ndarray
    start: np.ndarray
    end: np.ndarray


def job_columns(job: JobTraffic, start: np.ndarray, end: np.ndarray) -> tuple:
    """``(task ids, lanes, start, end)`` of the job's tasks, in its task order."""
    ids = np.fromiter((t.id for t in job.tasks), dtype=np.int64, count=len(job.tasks))
    lanes = np.array([t.lane for t in job.tasks], dtype=object)
    return ids, lanes, np.asarray(start, dtype=float), np.asarray(end, dtype=float)


class Timeline(Sequence[TimelineEvent]):
    """Every task of every job as it ran, as a sequence of `TimelineEvent`, each made
    when read.

    A result of 80,000 tasks holds four columns here rather than 80,000 event objects,
    which the garbage collector would walk (on the GUI thread, in the application) and
    which plots do not read (`TimelineColumns`).  Two timelines are equal when their
    events are.
    """

    __slots__ = ("_end", "_job", "_jobs", "_pos", "_start")

    def __init__(self, jobs: Sequence[JobTraffic], job: np.ndarray, pos: np.ndarray,
                 start: np.ndarray, end: np.ndarray):
        self._jobs = tuple(jobs)
        self._job, self._pos, self._start, self._end = job, pos, start, end

    def __len__(self) -> int:
        return len(self._job)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("timeline index out of range")
        i %= n
        return self._event(int(self._job[i]), int(self._pos[i]), float(self._start[i]),
                           float(self._end[i]))

    def __iter__(self) -> Iterator[TimelineEvent]:
        for args in zip(self._job.tolist(), self._pos.tolist(), self._start.tolist(),
                        self._end.tolist(), strict=True):
            yield self._event(*args)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def _event(self, jx: int, pos: int, start: float, end: float) -> TimelineEvent:
        job = self._jobs[jx]
        t = job.tasks[pos]
        comm = isinstance(t, Comm)
        return TimelineEvent(job.job, t.id, t.lane, t.label, start, end,
                             float(t.nbytes) if comm else 0.0, len(t.groups) if comm else 0)


def timeline(
    jobs: Sequence[JobTraffic],
    run,
    columns: Sequence[tuple] | None = None,
) -> tuple[Timeline, TimelineColumns]:
    """Every task of every job, by start time (then job name and task id), as events
    and as columns; ``columns``: the jobs' `job_columns` when already made."""
    if columns is None:
        columns = [
            job_columns(job, run.start[jx], run.end[jx]) for jx, job in enumerate(jobs)
        ]
    names = sorted({job.job for job in jobs})
    rank = {n: k for k, n in enumerate(names)}
    sizes = [len(c[0]) for c in columns]
    task, lane, start, end = (
        np.concatenate([c[k] for c in columns]) if columns else np.zeros(0) for k in range(4)
    )
    job = np.repeat(np.arange(len(jobs), dtype=np.int64), sizes)
    pos = np.concatenate([np.arange(n, dtype=np.int64) for n in sizes]) if sizes else job
    order = np.lexsort((task, np.repeat([rank[j.job] for j in jobs], sizes), start))
    cols = TimelineColumns(job[order], lane[order], start[order], end[order])
    return Timeline(jobs, job[order], pos[order], start[order], end[order]), cols
