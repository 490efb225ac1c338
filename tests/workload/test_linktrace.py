"""Per-link time series of a simulation (`simulate(..., trace=True)`): they agree with
the simulation's own per-link figures (mean, peak, bytes, each job's bytes)."""

from __future__ import annotations

import numpy as np

from designer.model.templates import build_template
from designer.solver import take_snapshot
from designer.workload.job import Job
from designer.workload.placement import place
from designer.workload.presets import preset
from designer.workload.simulate import simulate
from designer.workload.tasks import Comm, Compute, JobTraffic
from designer.workload.traffic import iteration_traffic


def _two_jobs():
    snap = take_snapshot(build_template("rail-cluster", nodes=4))
    taken: dict[str, str] = {}
    traffics = []
    for name, policy in (("a", "spread"), ("b", "packed")):
        job = Job.from_preset(name, preset("tiny"), placement=policy)
        p = place(job, snap, taken)
        taken.update(dict.fromkeys(p.gpus, name))
        traffics.append(iteration_traffic(job, p, 400.0))
    return snap, traffics


def test_the_trace_gives_each_links_mean_peak_and_bytes_of_the_run():
    snap, jobs = _two_jobs()
    res = simulate(snap, jobs, trace=True)
    plain = simulate(snap, jobs)
    assert plain.trace is None
    np.testing.assert_allclose(res.links.mean_util, plain.links.mean_util)
    used = np.flatnonzero(res.links.bytes > 0)
    assert len(used) > 4
    for k in used.tolist():
        edges, util = res.trace.series(k)
        assert len(edges) == len(util) + 1 and np.all(np.diff(edges) >= 0)
        # The series is the busier direction at each moment: its mean is at least the
        # busier direction's mean over the run, which the trace gives exactly.
        mean = float((util * np.diff(edges)).sum() / edges[-1])
        assert mean >= res.links.mean_util[k] * (1 - 1e-9)
        got = res.trace.mean_util(k)
        assert abs(got - res.links.mean_util[k]) <= 1e-9 + 1e-6 * res.links.mean_util[k]
        assert abs(util.max() - res.links.peak_util[k]) <= 1e-6 * max(res.links.peak_util[k], 1)
        crossing = res.trace.crossings(k)
        total = sum(c.bytes for c in crossing)
        assert abs(total - res.links.bytes[k]) <= 1e-6 * res.links.bytes[k]
        assert abs(sum(c.share for c in crossing) - 1.0) < 1e-9
        for j, name in enumerate(res.links.jobs):
            mine = sum(c.bytes for c in crossing if c.job == name)
            assert abs(mine - res.links.job_bytes[j, k]) <= 1e-6 * res.links.bytes[k]


def test_an_idle_link_has_a_flat_series_and_no_crossings():
    snap, jobs = _two_jobs()
    res = simulate(snap, jobs, trace=True)
    idle = np.flatnonzero(res.links.bytes == 0)
    assert len(idle)
    edges, util = res.trace.series(int(idle[0]))
    assert not util.any() and edges[-1] == res.trace.makespan
    assert res.trace.crossings(int(idle[0])) == []


def test_the_log_is_columns_the_garbage_collector_does_not_walk():
    # 10^5 steps of a long run logged as containers per step were walked by every
    # collection (on the GUI thread, which runs them); the log holds numbers in a few
    # lists and the phases it names.
    import gc

    snap, jobs = _two_jobs()
    log = simulate(snap, jobs, trace=True).trace.log
    n = len(log)
    assert n > 10
    assert len(log.seconds) == len(log.speed) == len(log.job) == len(log.task) == n
    numbers = [*log.start, *log.seconds, *log.speed, *log.job, *log.task, *log.phase]
    assert not any(gc.is_tracked(x) for x in numbers)
    assert set(log.job) == {0, 1}


def test_a_phase_that_keeps_its_speed_is_one_entry():
    """Alone, every phase runs at speed 1 from start to end: one entry each, however
    many event steps it spans, lasting the phase's own time."""
    snap = take_snapshot(build_template("rail-cluster", nodes=2))
    ranks = snap.gpus[:16].tolist()
    gpus = tuple(snap.node_ids[g] for g in ranks)
    job = JobTraffic("a", (Comm(0, "dp", "allreduce", (gpus,), 1 << 28),
                           Compute(1, "compute", 1e-4)))
    res = simulate(snap, [job], trace=True)
    log = res.trace.log
    phases = [p for p in log.phases if p.seconds > 0]
    assert len(log) == len(phases) >= 1
    assert log.speed == [1.0] * len(log)
    np.testing.assert_allclose(log.seconds, [log.phases[k].seconds for k in log.phase],
                               rtol=1e-12)
