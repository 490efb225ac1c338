"""The benchmarks' cases under pytest-benchmark, which keeps their history.

Each benchmark script (``solver.py``, ``maxmin.py``, ``limits.py``, ``live.py``) prints
its own table with the goal beside every figure; this harness runs the solver's and the
max-min kernel's cases in process, times them with pytest-benchmark, stores each run
under ``benchmarks/.history/`` (machine, commit, figures) and compares a run with an
earlier one::

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python -m pytest benchmarks/harness.py --benchmark-autosave
    .venv/bin/python -m pytest benchmarks/harness.py --benchmark-compare
    .venv/bin/python -m pytest benchmarks/harness.py -k maxmin   # the kernel alone

What is timed: for the solver, ``solve_collective`` on a fresh snapshot of the case's
design (the snapshot itself is taken in the untimed setup, so every round routes from
scratch); for the max-min kernel, ``max_min_rates`` on the case's problem.  The goal of
each case is in the stored record (``extra_info``) and is checked by the script that
owns it, not here: a shared machine's timing does not fail a run.  The 131,072-GPU
case (solver ``b``) builds its design for minutes and stays in ``solver.py`` alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import maxmin as maxmin_bench
import solver as solver_bench

from designer.memory import tune_process
from designer.solver import max_min_rates, take_snapshot

SOLVER_CASES = ["a", "c-adaptive", "c-ecmp", "d-adaptive", "d-ecmp", "e"]


@pytest.fixture(scope="session", autouse=True)
def _tuned_process():
    """numpy and the allocator as the app sets them (the scripts do the same)."""
    tune_process()


@pytest.fixture(scope="module")
def designs():
    """Each design built once for all the cases that share it."""
    built: dict = {}

    def design(key: str, routing: str | None):
        if (key, routing) not in built:
            topo = solver_bench.DESIGNS[key][1]()
            if routing:
                topo.set_setting("routing", routing)
            built[(key, routing)] = topo
        return built[(key, routing)]

    return design


@pytest.mark.parametrize("case", SOLVER_CASES)
def test_solver(benchmark, designs, case):
    label, goal, design, routing, solve, runs, _ = solver_bench.CASES[case]
    topo = designs(design, routing)
    benchmark.group = "solver"
    benchmark.extra_info.update(case=label, goal_s=goal)
    result = benchmark.pedantic(solve, setup=lambda: ((take_snapshot(topo),), {}),
                                rounds=max(runs, 2), iterations=1)
    assert np.all(np.isfinite(result.time_s)) and np.all(result.time_s > 0)


@pytest.mark.parametrize("case", sorted(maxmin_bench.CASES))
def test_maxmin(benchmark, case):
    title, build, repeats, goal = maxmin_bench.CASES[case]
    problem = build(np.random.default_rng(2024))
    benchmark.group = "max-min kernel"
    benchmark.extra_info.update(case=title, goal_s=goal)
    result = benchmark.pedantic(max_min_rates, kwargs=problem, rounds=min(repeats, 5),
                                iterations=1)
    assert maxmin_bench.certificate_violation(problem, result) < 1e-9
