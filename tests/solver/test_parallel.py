"""The solver's fork-join on a helper thread (`designer.solver.parallel`): results,
errors, nesting, the single-thread switch, and solves that do not depend on it."""

import threading

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.solver import parallel
from designer.solver.errors import SolverError
from designer.solver.pipeline import solve_collective
from designer.solver.snapshot.build import take_snapshot


@pytest.fixture(params=["1", "2"])
def threads(request, monkeypatch):
    monkeypatch.setenv("FABRIC_DESIGNER_THREADS", request.param)
    return int(request.param)


def test_fork_gives_the_result_and_runs_on_the_helper_when_there_are_two(threads):
    caller = threading.current_thread()
    ran_on = parallel.fork(threading.current_thread).join()
    if parallel.threads() == 2:
        assert ran_on is not caller and parallel.is_helper(ran_on)
    else:
        assert ran_on is caller
    assert parallel.fork(sum, [1, 2, 3]).join() == 6
    assert parallel.busy() == 0


def test_an_error_is_raised_at_join_in_the_callers_thread(threads):
    def fail():
        raise SolverError("no path from gpu-1 to gpu-2")

    forked = parallel.fork(fail)
    with pytest.raises(SolverError, match="gpu-1"):
        forked.join()


def test_a_fork_from_the_helper_runs_at_once_rather_than_wait_for_itself(threads):
    def outer():
        inner = parallel.fork(threading.current_thread)
        return threading.current_thread(), inner.join()

    outer_thread, inner_thread = parallel.fork(outer).join()
    assert outer_thread is inner_thread   # would deadlock if queued behind itself


def test_a_pool_that_takes_no_more_work_runs_the_call_here(monkeypatch):
    # At interpreter exit concurrent.futures refuses new work; a daemon solve thread
    # still running then must finish its call, not die with a traceback.
    monkeypatch.setenv("FABRIC_DESIGNER_THREADS", "2")   # the helper, even on one core

    class Closed:
        def submit(self, *a, **k):
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(parallel, "_get_pool", lambda: Closed())
    assert parallel.fork(threading.current_thread).join() is threading.current_thread()
    with pytest.raises(SolverError, match="gone"):
        parallel.fork(lambda: (_ for _ in ()).throw(SolverError("gone"))).join()
    assert parallel.busy() == 0


def test_one_thread_when_asked(monkeypatch):
    monkeypatch.setenv("FABRIC_DESIGNER_THREADS", "1")
    assert parallel.threads() == 1
    assert parallel.fork(threading.current_thread).join() is threading.current_thread()


def test_two_threads_when_asked(monkeypatch):
    monkeypatch.setenv("FABRIC_DESIGNER_THREADS", "2")
    assert parallel.threads() == 2
    ran_on = parallel.fork(threading.current_thread).join()
    assert ran_on is not threading.current_thread() and parallel.is_helper(ran_on)


@pytest.mark.parametrize("template, kw", [
    ("superpod", dict(gpu="B200", sus=2)),
    ("rail-cluster", dict(nodes=64, gpu="H100", fabric="roce", leaf_radix=16)),
])
def test_a_solve_is_the_same_on_one_thread_or_two(monkeypatch, template, kw):
    # The forked stages (the NVLink groundwork, the access legs, the NVLink sprays)
    # come together in a fixed order: every array is identical.
    out = {}
    for n in ("1", "2"):
        monkeypatch.setenv("FABRIC_DESIGNER_THREADS", n)
        snap = take_snapshot(build_template(template, **kw))
        cache: dict = {}
        res = solve_collective(snap, "allreduce", sizes=[1 << 30], algorithm="ring",
                               cache=cache)
        (solved,) = [v for k, v in cache.items() if isinstance(k, tuple)]
        out[n] = (snap, res, solved)
    (s1, r1, p1), (s2, r2, p2) = out["1"], out["2"]
    for f in ("gpus", "gpu_domain", "gpu_local", "gpu_nic", "arc_cap"):
        np.testing.assert_array_equal(getattr(s1, f), getattr(s2, f))
    np.testing.assert_array_equal(r1.time_s, r2.time_s)
    for (plan1, _, _), (plan2, _, _) in zip(p1, p2, strict=True):
        for ph1, ph2 in zip(plan1.phases, plan2.phases, strict=True):
            for f in ("pair_flow", "pair_arc", "pair_weight"):
                np.testing.assert_array_equal(getattr(ph1, f), getattr(ph2, f))
