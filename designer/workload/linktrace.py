"""A link's load over one simulated iteration, and who put it there.

`simulate(..., trace=True)` logs each phase that ran (`lone.PhaseFlows`): from when,
for how long, at what speed, for which ``(job, task)`` (`events.SpanLog`).  A phase
puts ``load_GBps * speed`` on each of its arcs while it runs, so any link's utilisation
over time, and the share of its bytes that each job and each collective sent, follow
from the log without keeping a per-arc time series of the whole fabric (which would be
steps x arcs numbers).

The log is flattened into arrays once, on first use; a question about a link is then a
few vectorised passes over them.

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
    """The phases of one run over time (see the module).

    Parameters
    ----------
    log : SpanLog
        `events.Run.trace`.
    jobs : sequence of JobTraffic
        The jobs run, in the run's order (for names and task labels).
    arc_cap : ndarray
        Capacity of each arc (GB/s).
    makespan : float
        End of the run (s): the mean is over ``[0, makespan]``.
    """

    def __init__(self, log, jobs: Sequence, arc_cap: np.ndarray, makespan: float):
        self.log = log
        self.jobs = tuple(jobs)
        self.arc_cap = np.asarray(arc_cap, dtype=float)
        self.makespan = float(makespan)
        self._flat = None

    @property
    def n_entries(self) -> int:
        return len(self.log)

    def prepare(self) -> LinkTrace:
        """Flatten the log now (a worker thread's job: seconds for a long run of big
        jobs), so later questions on the GUI thread are quick; returns self."""
        self._arrays()
        return self

    def _arrays(self):
        """Flatten once: per entry (a phase running for a while) its start, length,
        distinct phase, speed and owner; per distinct phase its arcs and loads,
        concatenated."""
        if self._flat is None:
            start, seconds, phases, e_phase, speed, job, task = self.log.entries()
            lengths = np.array([len(p.arcs) for p in phases], dtype=np.int64)
            self._flat = (
                start,
                seconds,
                e_phase,
                speed,
                job,
                task,
                np.concatenate([p.arcs for p in phases]) if phases else np.zeros(0, np.int64),
                np.concatenate([p.load_GBps for p in phases]) if phases else np.zeros(0),
                np.repeat(np.arange(len(phases)), lengths),
                len(phases),
            )
        return self._flat

    def _entry_load(self, arc: int) -> np.ndarray:
        """Per entry, the GB/s it put on ``arc``."""
        _t, _dt, e_phase, e_speed, _j, _k, arcs, loads, owner, n_phases = self._arrays()
        on = arcs == arc
        per_phase = np.bincount(owner[on], weights=loads[on], minlength=n_phases)
        return per_phase[e_phase] * e_speed if n_phases else np.zeros(0)

    def series(self, link: int) -> tuple[np.ndarray, np.ndarray]:
        """Link ``link``'s utilisation over the run (busier direction, load / capacity)
        as a step function from 0 to the end of the run: ``(edges, util)`` with
        ``len(edges) == len(util) + 1``, 0 where nothing crosses it."""
        t, dt = self._arrays()[:2]
        loads = [
            (self.arc_cap[arc], self._entry_load(arc))
            for arc in (2 * link, 2 * link + 1)
            if self.arc_cap[arc] > 0
        ]
        on = np.zeros(len(t), dtype=bool)
        for _cap, load in loads:
            on |= load > 0
        if not on.any():
            return np.array([0.0, self.makespan]), np.zeros(1)
        t0, t1 = t[on], t[on] + dt[on]
        edges = np.unique(np.concatenate([[0.0, max(self.makespan, float(t1.max()))], t0, t1]))
        i0, i1 = np.searchsorted(edges, t0), np.searchsorted(edges, t1)
        util = np.zeros(len(edges) - 1)
        for cap, load in loads:
            mine = load[on]
            delta = np.bincount(i0, mine, len(edges)) - np.bincount(i1, mine, len(edges))
            level = np.cumsum(delta)[:-1]
            level[np.abs(level) <= 1e-12 * mine.max(initial=0.0)] = 0.0  # sums back to 0
            util = np.maximum(util, level / cap)
        return edges, util

    def mean_util(self, link: int) -> float:
        """Time-averaged utilisation of the busier direction over the run."""
        dt = self._arrays()[1]
        best = 0.0
        for arc in (2 * link, 2 * link + 1):
            cap = self.arc_cap[arc]
            if cap > 0 and self.makespan > 0:
                load = self._entry_load(arc)
                best = max(best, float((load * dt).sum() / (cap * self.makespan)))
        return best

    def crossings(self, link: int) -> list[Crossing]:
        """The collectives that crossed link ``link``, most bytes first (ties by job,
        then label), each with its share of the link's bytes."""
        _t, dt, _p, _s, e_job, e_task = self._arrays()[:6]
        load = self._entry_load(2 * link) + self._entry_load(2 * link + 1)
        nbytes = load * dt * 1e9 if len(dt) else np.zeros(0)
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
