"""A link's load over one simulated iteration, and who put it there.

`simulate(..., trace=True)` keeps every event step of the run together: when it
started, how long it lasted, the phases running (`lone.PhaseFlows`), each one's speed
and the ``(job, task)`` it belongs to.  A phase puts ``load_GBps * speed`` on each of its
arcs for the step, so any link's utilisation over time, and the share of its bytes
that each job and each collective sent, follow from the steps without keeping a
per-arc time series of the whole fabric (which would be steps x arcs numbers).

The steps are flattened into arrays once, on first use; a question about a link is
then a few vectorised passes over them.

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver import take_snapshot
>>> from designer.workload.simulate import simulate
>>> from designer.workload.tasks import Comm, JobTraffic
>>> snap = take_snapshot(build_template("hgx"))
>>> gpus = tuple(snap.node_ids[g] for g in snap.gpus[:4])
>>> res = simulate(snap, [JobTraffic("a", (Comm(0, "tp", "allreduce", (gpus,), 1 << 26),))],
...                trace=True)
>>> k = int(res.links.mean_util.argmax())
>>> t, util = res.trace.series(k)
>>> bool(abs(res.trace.mean_util(k) - res.links.mean_util[k]) < 1e-9)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Crossing", "LinkTrace"]


@dataclass(frozen=True)
class Crossing:
    """One collective (a task of a job) that crossed a link: its bytes there (both
    directions) and their share of everything the link carried."""

    job: str
    lane: str
    label: str
    bytes: float
    share: float


class LinkTrace:
    """The steps of one run (see the module).

    Parameters
    ----------
    steps : StepLog
        `events.Run.trace`.
    jobs : sequence of JobTraffic
        The jobs run, in the run's order (for names and task labels).
    arc_cap : ndarray
        Capacity of each arc (GB/s).
    makespan : float
        End of the run (s): the mean is over ``[0, makespan]``.
    """

    def __init__(self, steps: list, jobs: Sequence, arc_cap: np.ndarray, makespan: float):
        self.steps = steps
        self.jobs = tuple(jobs)
        self.arc_cap = np.asarray(arc_cap, dtype=float)
        self.makespan = float(makespan)
        self._flat = None
        self._times = None

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def prepare(self) -> LinkTrace:
        """Flatten the steps now (a worker thread's job: seconds for a long run of big
        jobs), so later questions on the GUI thread are quick; returns self."""
        self._arrays()
        self.times()
        return self

    def _arrays(self):
        """Flatten once: per entry (a phase in a step) its step, distinct phase, speed
        and owner; per distinct phase its arcs and loads, concatenated."""
        if self._flat is None:
            log = self.steps
            ids: dict[int, int] = {}
            phases = []
            e_phase = []
            for p in log.phases:
                k = ids.get(id(p))
                if k is None:
                    k = ids[id(p)] = len(phases)
                    phases.append(p)
                e_phase.append(k)
            lengths = np.array([len(p.arcs) for p in phases], dtype=np.int64)
            self._flat = (
                np.repeat(np.arange(len(log), dtype=np.int64),
                          np.asarray(log.count, dtype=np.int64)),
                np.array(e_phase, dtype=np.int64),
                np.concatenate(log.speeds) if log.speeds else np.zeros(0),
                np.array(log.jobs, dtype=np.int64),
                np.array(log.tasks, dtype=np.int64),
                np.concatenate([p.arcs for p in phases]) if phases else np.zeros(0, np.int64),
                np.concatenate([p.load_GBps for p in phases]) if phases else np.zeros(0),
                np.repeat(np.arange(len(phases)), lengths),
                len(phases),
            )
        return self._flat

    def _entry_load(self, arc: int) -> np.ndarray:
        """Per entry, the GB/s it put on ``arc``."""
        _s, e_phase, e_speed, _j, _t, arcs, loads, owner, n_phases = self._arrays()
        on = arcs == arc
        per_phase = np.bincount(owner[on], weights=loads[on], minlength=n_phases)
        return per_phase[e_phase] * e_speed if n_phases else np.zeros(0)

    def times(self) -> tuple[np.ndarray, np.ndarray]:
        """Start and length (s) of each step."""
        if self._times is None:
            self._times = (
                np.array(self.steps.start, dtype=float),
                np.array(self.steps.seconds, dtype=float),
            )
        return self._times

    def series(self, link: int) -> tuple[np.ndarray, np.ndarray]:
        """Link ``link``'s utilisation over the run (busier direction, load / capacity)
        as a step function: ``(edges, util)`` with ``len(edges) == len(util) + 1``;
        spans with no traffic anywhere are 0."""
        t, dt = self.times()
        step = self._arrays()[0]
        util = np.zeros(len(t))
        for arc in (2 * link, 2 * link + 1):
            cap = self.arc_cap[arc]
            if cap <= 0:
                continue
            load = np.bincount(step, weights=self._entry_load(arc), minlength=len(t))
            util = np.maximum(util, load / cap)
        return _steps_to_edges(t, dt, util, self.makespan)

    def mean_util(self, link: int) -> float:
        """Time-averaged utilisation of the busier direction over the run."""
        t, dt = self.times()
        step = self._arrays()[0]
        best = 0.0
        for arc in (2 * link, 2 * link + 1):
            cap = self.arc_cap[arc]
            if cap > 0 and self.makespan > 0:
                load = np.bincount(step, weights=self._entry_load(arc), minlength=len(t))
                best = max(best, float((load * dt).sum() / (cap * self.makespan)))
        return best

    def crossings(self, link: int) -> list[Crossing]:
        """The collectives that crossed link ``link``, most bytes first (ties by job,
        then label), each with its share of the link's bytes."""
        e_step, _p, _s, e_job, e_task = self._arrays()[:5]
        _t, dt = self.times()
        load = self._entry_load(2 * link) + self._entry_load(2 * link + 1)
        nbytes = load * dt[e_step] * 1e9 if len(e_step) else np.zeros(0)
        keep = nbytes > 0
        if not keep.any():
            return []
        key = e_job[keep] * (1 + int(e_task.max(initial=0))) + e_task[keep]
        uniq, inv = np.unique(key, return_inverse=True)
        total = np.bincount(inv, weights=nbytes[keep])
        first = np.zeros(len(uniq), dtype=np.int64)
        first[inv[::-1]] = np.flatnonzero(keep)[::-1]
        whole = float(total.sum())
        out = []
        for u, b in zip(first.tolist(), total.tolist(), strict=True):
            jx, task = int(e_job[u]), int(e_task[u])
            t = self.jobs[jx].tasks[task]
            out.append(Crossing(self.jobs[jx].job, t.lane, t.label, b, b / whole))
        out.sort(key=lambda c: (-c.bytes, c.job, c.label))
        return out


def _steps_to_edges(t: np.ndarray, dt: np.ndarray, util: np.ndarray, end: float):
    """Steps ``[t, t + dt)`` of value ``util`` as one step function from 0 to ``end``:
    ``(edges, values)``, the gaps between steps (no traffic) at 0."""
    stop = t + dt
    before = np.concatenate([[0.0], stop[:-1]])
    gap = t > before + 1e-15
    n = len(t) + int(gap.sum())
    at = np.arange(len(t)) + np.cumsum(gap)  # where each step lands
    starts, values = np.empty(n), np.zeros(n)
    starts[at], values[at] = t, util
    starts[at[gap] - 1] = before[gap]  # the idle span before it
    last = float(stop[-1]) if len(t) else 0.0
    edges = np.concatenate([starts, [last]])
    if end > last + 1e-15:
        edges = np.concatenate([edges, [end]])
        values = np.concatenate([values, [0.0]])
    return edges, values
