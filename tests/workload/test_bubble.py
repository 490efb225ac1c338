"""The pipeline bubble: compute spans name their stage's GPUs, so the report tells each
stage's idle time, and a 1F1B pipeline's comes out as the hand formula says: each of
``p`` stages idles ``(p - 1) (t_f + t_b)`` of ``(m + p - 1) (t_f + t_b)``."""

from __future__ import annotations

import dataclasses

import pytest

from designer.model.templates import build_template
from designer.solver import take_snapshot
from designer.workload.job import Job, Parallelism
from designer.workload.placement import place
from designer.workload.presets import preset
from designer.workload.simulate import simulate
from designer.workload.tasks import Comm, Compute, JobTraffic
from designer.workload.traffic import iteration_traffic


@pytest.fixture(scope="module")
def hgx():
    return take_snapshot(build_template("hgx"))


def _one_f_one_b(stages: list[tuple[str, ...]], m: int, tf: float, tb: float) -> JobTraffic:
    """A 1F1B pipeline built by hand: stage ``s`` runs ``p - s - 1`` forwards, then
    alternates forward and backward, then drains; activations and gradients go to the
    next stage as zero-byte sends (communication takes no time here)."""
    p = len(stages)
    tasks: list = []
    done: dict[tuple[str, int, int], int] = {}  # (pass, mb, stage) -> its send (or op)

    def add(task_cls, *args, deps=(), **kw):
        tasks.append(task_cls(len(tasks), *args, deps=tuple(deps), **kw))
        return len(tasks) - 1

    order = []
    for s in range(p):
        warm = min(p - s - 1, m)
        ops = [("F", k) for k in range(warm)]
        for i in range(m - warm):
            ops += [("F", warm + i), ("B", i)]
        ops += [("B", k) for k in range(m - warm, m)]
        order.append(ops)
    at, prev = [0] * p, [None] * p
    while any(at[s] < len(order[s]) for s in range(p)):
        for s in range(p):
            while at[s] < len(order[s]):
                kind, mb = order[s][at[s]]
                need = ("F", mb, s - 1) if kind == "F" else ("B", mb, s + 1)
                if kind == "B" and s == p - 1:
                    need = ("F", mb, s)
                first = kind == "F" and s == 0
                if not first and need not in done:
                    break
                deps = ([] if prev[s] is None else [prev[s]]) + ([] if first else [done[need]])
                secs = tf if kind == "F" else tb
                op = add(Compute, "compute", secs, deps=deps, label=f"{kind}{mb}", gpus=stages[s])
                prev[s] = op
                nxt = s + 1 if kind == "F" else s - 1
                if 0 <= nxt < p:
                    pairs = tuple(zip(stages[s], stages[nxt], strict=True))
                    done[(kind, mb, s)] = add(Comm, "pp", "sendrecv", pairs, 0.0, deps=[op])
                else:
                    done[(kind, mb, s)] = op
                at[s] += 1
    return JobTraffic("pipe", tuple(tasks))


def _stages(snap, p: int, per: int) -> list[tuple[str, ...]]:
    gpus = [snap.node_ids[g] for g in snap.gpus.tolist()]
    return [tuple(gpus[s * per : (s + 1) * per]) for s in range(p)]


@pytest.mark.parametrize(("p", "m"), [(4, 8), (2, 3), (8, 1)])
def test_1f1b_bubble_matches_the_hand_formula(hgx, p, m):
    tf, tb = 1e-3, 2e-3
    job = _one_f_one_b(_stages(hgx, p, 8 // p), m, tf, tb)
    res = simulate(hgx, [job]).jobs[0]
    iteration = (m + p - 1) * (tf + tb)
    assert res.iteration_s == pytest.approx(iteration, rel=1e-12)
    assert len(res.stages) == p
    for st in res.stages:
        assert st["gpus"] == 8 // p
        assert st["compute"] == pytest.approx(m * (tf + tb), rel=1e-12)
        assert st["bubble"] == pytest.approx((p - 1) * (tf + tb), rel=1e-9, abs=1e-15)
    # The job's breakdown is the mean GPU's: the bubble share is (p - 1) / (m + p - 1).
    assert res.breakdown["bubble"] / res.iteration_s == pytest.approx(
        (p - 1) / (m + p - 1), rel=1e-9
    )
    parts = sum(v for k, v in res.breakdown.items() if k != "exposed_comm")
    assert parts == pytest.approx(res.iteration_s, rel=1e-12)


def test_stages_do_not_depend_on_task_order(hgx):
    job = _one_f_one_b(_stages(hgx, 4, 2), 4, 1e-3, 2e-3)
    ids = {t.id: t for t in job.tasks}
    flipped = JobTraffic("pipe", tuple(ids[k] for k in sorted(ids, reverse=True)))
    a, b = simulate(hgx, [job]).jobs[0], simulate(hgx, [flipped]).jobs[0]
    assert a.stages == b.stages and a.breakdown == pytest.approx(b.breakdown)


def test_generated_pipeline_reports_each_stage_bubble(hgx):
    """The traffic generator's compute spans name their stage; with per-layer times far
    above the tiny model's sends, the bubble is the 1F1B formula's up to the sends."""
    job = Job.from_preset("t", preset("tiny"))
    job = dataclasses.replace(
        job,
        parallel=Parallelism(tp=1, pp=4, dp=2),
        layer_times=(1e-3, 2e-3),
    )
    traffic = iteration_traffic(job, place(job, hgx))
    stage_sets = {t.gpus for t in traffic.tasks if isinstance(t, Compute)}
    assert len(stage_sets) == 4 and all(len(s) == 2 for s in stage_sets)
    res = simulate(hgx, [traffic]).jobs[0]
    p, m = 4, job.config.micro_batches(job.parallel)
    assert len(res.stages) == p
    share = res.breakdown["bubble"] / res.iteration_s
    assert share == pytest.approx((p - 1) / (m + p - 1), rel=0.02)
    first = res.stages[0]
    assert first["compute"] == pytest.approx(m * 3e-3, rel=1e-9)


def test_compute_without_gpus_keeps_the_critical_path(hgx):
    gpus = tuple(hgx.node_ids[g] for g in hgx.gpus[:2].tolist())
    job = JobTraffic(
        "a",
        (
            Compute(0, "compute", 1e-3),
            Comm(1, "tp", "allreduce", (gpus,), 1 << 20, deps=(0,)),
        ),
    )
    res = simulate(hgx, [job]).jobs[0]
    assert res.stages == ()
    assert res.breakdown["compute"] == pytest.approx(1e-3)


def test_a_gpu_named_twice_by_a_compute_span_is_refused():
    job = JobTraffic("a", (Compute(0, "compute", 1e-3, gpus=("g0", "g0")),))
    with pytest.raises(ValueError, match="task 0: a GPU named twice"):
        job.validate()
