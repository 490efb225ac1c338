"""The iteration timeline's bars (`designer.gui.workload.timeline.workload_bars`): rows,
order and idle spans of a small hand-written timeline, checked against values worked out
by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from designer.gui.workload.timeline import WorkloadBar, workload_bars
from designer.workload.report import TimelineEvent


def _result(events, jobs):
    return SimpleNamespace(simulation=SimpleNamespace(
        jobs=tuple(SimpleNamespace(name=n, iteration_s=t) for n, t in jobs),
        timeline=tuple(events)))


def _ev(job, task, lane, start, end, nbytes=0.0, groups=0):
    return TimelineEvent(job, task, lane, f"{lane} {task}", start, end, nbytes, groups)


EVENTS = [  # in timeline order: by start time
    _ev("a", 0, "compute", 0.0, 2.0),
    _ev("b", 0, "dp", 0.0, 1.0, 1e6, 4),
    _ev("a", 1, "tp", 0.5, 1.0, 2e6, 2),
    _ev("a", 2, "compute", 1.0, 1.5),  # inside the first: no gap
    _ev("b", 1, "compute", 1.0, 3.0),
    _ev("a", 3, "zz-custom", 2.0, 2.5),
    _ev("a", 4, "compute", 3.0, 4.0),
    _ev("ghost", 0, "compute", 0.0, 9.0),  # a job the result does not list
    _ev("a", 5, "tp", 4.0, 4.5, 2e6, 2),
]


def test_bars_by_job_then_lane_with_idle_spans_between_compute():
    bars, labels = workload_bars(_result(EVENTS, [("b", 3.0), ("a", 5.0)]))
    assert labels == [(0, "b · compute"), (1, "b · DP"), (2, "b · idle (bubble)"),
                      (3, "a · compute"), (4, "a · TP"), (5, "a · idle (bubble)"),
                      (6, "a · zz-custom")]
    got = [(b.row, b.job, b.lane, b.label, b.start_s, b.end_s) for b in bars]
    idle = "no compute of this job running"
    assert got == [
        (0, "b", "compute", "compute 1", 1.0, 3.0),
        (1, "b", "dp", "dp 0", 0.0, 1.0),
        (2, "b", "idle", idle, 0.0, 1.0),  # b computes from 1 s to its end at 3 s
        (3, "a", "compute", "compute 0", 0.0, 2.0),
        (3, "a", "compute", "compute 2", 1.0, 1.5),
        (3, "a", "compute", "compute 4", 3.0, 4.0),
        (4, "a", "tp", "tp 1", 0.5, 1.0),
        (4, "a", "tp", "tp 5", 4.0, 4.5),
        (5, "a", "idle", idle, 2.0, 3.0),
        (5, "a", "idle", idle, 4.0, 5.0),  # after its last compute, to the iteration's end
        (6, "a", "zz-custom", "zz-custom 3", 2.0, 2.5),
    ]
    assert bars[6] == WorkloadBar(4, "a", "tp", "tp 1", 0.5, 1.0, 2e6, 2)
    assert bars[-1].label == "zz-custom 3" and len(bars[2:4]) == 2
    assert "2 group(s)" in bars[6].describe()


def test_bars_do_not_depend_on_the_order_jobs_are_listed_in_beyond_their_rows():
    ab, _ = workload_bars(_result(EVENTS, [("a", 5.0), ("b", 3.0)]))
    ba, _ = workload_bars(_result(EVENTS, [("b", 3.0), ("a", 5.0)]))
    strip = lambda bars: sorted((b.job, b.lane, b.label, b.start_s, b.end_s) for b in bars)  # noqa: E731
    assert strip(ab) == strip(ba)


@pytest.mark.parametrize("compute, end, idle", [
    ([], 2.0, [(0.0, 2.0)]),  # no compute at all: the whole iteration is idle
    ([(0.0, 2.0)], 2.0, []),  # compute throughout: no idle lane
    ([(1.0, 2.0), (0.0, 1.0)], 2.0, []),  # back to back, listed out of order
    ([(0.5, 1.0), (0.2, 0.6)], 1.0, [(0.0, 0.2)]),  # overlapping, ending at the end
    ([(0.2, 0.3), (0.5, 0.6)], 1.0, [(0.0, 0.2), (0.3, 0.5), (0.6, 1.0)]),
])
def test_idle_spans(compute, end, idle):
    events = [_ev("j", k, "compute", s, e) for k, (s, e) in enumerate(compute)]
    events.append(_ev("j", 99, "pp", 0.0, end))
    bars, _ = workload_bars(_result(events, [("j", end)]))
    assert [(b.start_s, b.end_s) for b in bars if b.lane == "idle"] == idle


def test_the_runner_lays_out_bars_again_only_for_a_new_timeline_or_new_times():
    from designer.gui.workload.runner import _bars

    last: dict = {}
    first = _result(EVENTS, [("b", 3.0), ("a", 5.0)])
    bars = _bars(last, first)
    assert bars[1] == workload_bars(first)[1]
    # The same timeline tuple and the same jobs' times: the very bars.
    assert _bars(last, _result(first.simulation.timeline, [("b", 3.0), ("a", 5.0)])) is bars
    # A job's iteration time moved (its idle span ends there): laid out again.
    longer = _result(first.simulation.timeline, [("b", 4.0), ("a", 5.0)])
    again = _bars(last, longer)
    assert again is not bars and again[1] == workload_bars(longer)[1]
    # An equal but new timeline: laid out again (the memo hands on the same tuple).
    assert _bars(last, _result(tuple(EVENTS), [("b", 4.0), ("a", 5.0)])) is not again


def test_bars_from_the_simulations_columns_are_the_bars_from_its_events():
    """A result carries its timeline as columns too; the bars laid out from them are
    those laid out event by event."""
    import dataclasses

    import numpy as np

    from designer.model.templates import build_template
    from designer.solver import take_snapshot
    from designer.workload.job import Job
    from designer.workload.placement import place
    from designer.workload.presets import preset
    from designer.workload.simulate import simulate
    from designer.workload.traffic import iteration_traffic

    snap = take_snapshot(build_template("rail-cluster", nodes=2))
    taken: dict = {}
    traffics = []
    for name in ("tiny", "tiny-moe"):
        job = Job.from_preset(name, preset(name), tflops=100.0)
        placement = place(job, snap, taken)
        taken.update(dict.fromkeys(placement.gpus, name))
        traffics.append(iteration_traffic(job, placement))
    sim = simulate(snap, traffics)
    assert sim.timeline_columns is not None and len(sim.timeline_columns.job) == len(sim.timeline)
    with_cols = workload_bars(SimpleNamespace(simulation=sim))
    without = workload_bars(SimpleNamespace(
        simulation=dataclasses.replace(sim, timeline_columns=None)))
    assert with_cols[1] == without[1]
    a, b = with_cols[0], without[0]
    assert a.lanes == b.lanes and a.jobs == b.jobs
    for name in ("row", "start", "end", "lane", "job", "source"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
