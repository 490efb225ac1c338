"""A solve's memory is estimated before it starts, and one above the limit is refused
with the estimate and what would fit (`designer.solver.memory_estimate`).

The estimate is held against the peak memory real solves take (tracemalloc, which
numpy reports its arrays to), so the model cannot drift from the solver silently: it
must stay an upper bound within a factor of 2.
"""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.solver import (
    MemoryLimit,
    SolveTooLarge,
    check_solve_memory,
    estimate_solve,
    memory_limit,
)
from designer.solver.errors import SolverError
from designer.solver.machine_memory import (
    ENV_MAX_MEMORY,
    available_memory,
    format_bytes,
    parse_memory,
)
from designer.solver.pipeline import solve_collective
from designer.solver.snapshot.build import take_snapshot
from designer.solver.tuning import tuned


def _snapshot(template: str, routing: str | None = None, **params):
    topo = build_template(template, **params)
    if routing:
        topo.set_setting("routing", routing)
    return take_snapshot(topo)


def _peak_bytes(snap, collective: str, **kwargs) -> int:
    """The most memory the solve held at once beyond what was held before it."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = solve_collective(snap, collective, sizes=[1 << 30], **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if not was_tracing:
            tracemalloc.stop()
    assert result.n_ranks >= 2
    return peak - before


# Solves of ~40-250 MB, where the per-pair terms dominate: the rail cluster's fabric
# paths (ECMP and adaptive), a 3D torus's NVLink sprays through GPUs, an NVL72 rack's
# sprays through its switch trays.
CASES = [
    pytest.param(
        "rail-cluster", "ecmp", {"nodes": 128}, marks=pytest.mark.slow, id="rail1024-ecmp"
    ),
    pytest.param("rail-cluster", "adaptive", {"nodes": 128}, id="rail1024-adaptive"),
    pytest.param("fat-tree", "ecmp", {"k": 12}, id="fattree432-ecmp"),
    pytest.param("torus3d", "adaptive", {"x": 6, "y": 6, "z": 6}, id="torus216"),
    pytest.param("nvl72", "adaptive", {}, id="nvl72"),
]


@pytest.mark.parametrize(("template", "routing", "params"), CASES)
def test_the_estimate_bounds_a_real_all_to_all_within_a_factor_of_two(template, routing, params):
    snap = _snapshot(template, routing, **params)
    with tuned(alltoall_classes=False):  # per pair (classes: test_alltoall_classes)
        estimate = estimate_solve(snap, "alltoall").bytes
        measured = _peak_bytes(snap, "alltoall")
    assert measured <= estimate <= 2 * measured, (format_bytes(estimate), format_bytes(measured))


def test_the_estimate_bounds_an_all_reduce_and_its_candidates():
    snap = _snapshot("rail-cluster", "ecmp", nodes=128)
    for algorithm in ("auto", "ring"):
        estimate = estimate_solve(snap, "allreduce", algorithm=algorithm).bytes
        measured = _peak_bytes(snap, "allreduce", algorithm=algorithm)
        assert measured <= estimate, (algorithm, format_bytes(estimate), format_bytes(measured))
    # Five candidate algorithms cost more than one.
    assert (
        estimate_solve(snap, "allreduce").bytes
        > estimate_solve(snap, "allreduce", algorithm="ring").bytes
    )


def test_the_estimate_grows_with_the_pairs_and_the_fabric_depth():
    two_tiers = _snapshot("rail-cluster", "ecmp", nodes=32)
    three_tiers = _snapshot("fat-tree", "ecmp", k=8)
    assert estimate_solve(two_tiers, "alltoall").fabric_arcs == 4
    assert estimate_solve(three_tiers, "alltoall").fabric_arcs == 6
    a2a = estimate_solve(two_tiers, "alltoall")
    half = estimate_solve(two_tiers, "alltoall", ranks=range(two_tiers.n_gpus // 2))
    assert a2a.pairs == 256 * 255 and half.pairs == 128 * 127
    assert half.bytes < a2a.bytes
    # Adaptive routing keeps a DAG per pair of edge switches, not a path per flow.
    assert a2a.with_routing("adaptive").bytes < a2a.bytes
    assert estimate_solve(two_tiers, "allreduce").bytes < a2a.bytes


def test_the_estimate_does_not_depend_on_the_order_of_the_ranks():
    snap = _snapshot("rail-cluster", "ecmp", nodes=8)
    ranks = np.arange(0, snap.n_gpus, 3)
    shuffled = np.random.default_rng(1).permutation(ranks)
    assert estimate_solve(snap, "alltoall", ranks) == estimate_solve(snap, "alltoall", shuffled)


def test_a_solve_over_the_limit_is_refused_with_the_estimate_and_what_fits():
    snap = _snapshot("rail-cluster", "ecmp", nodes=32)
    est = estimate_solve(snap, "alltoall")
    limit = MemoryLimit(est.bytes * 4 // 5, "the test's limit of {}")
    with pytest.raises(SolveTooLarge) as caught:
        check_solve_memory(snap, "alltoall", limit=limit)
    text = str(caught.value)
    assert "\n" not in text
    assert (
        f"all-to-all on 256 GPUs with ECMP routing would need about {format_bytes(est.bytes)}"
        in text
    )
    assert f"the test's limit of {format_bytes(limit.bytes)}" in text
    adaptive = est.with_routing("adaptive")
    assert f"adaptive routing (about {format_bytes(adaptive.bytes)})" in text
    most = est.most_ranks_within(limit.bytes)
    assert f"at most {most:,} ranks" in text
    # The suggestions hold: the most ranks fit and a few more do not; adaptive fits.
    assert estimate_solve(snap, "alltoall", range(most)).bytes <= limit.bytes
    assert estimate_solve(snap, "alltoall", range(most + 3)).bytes > limit.bytes
    assert adaptive.bytes <= limit.bytes
    assert caught.value.estimate == est and caught.value.limit == limit.bytes
    # A solve error like any other: the CLI and the window show it in one line.
    assert isinstance(caught.value, SolverError)


def test_under_the_limit_the_solve_goes_on():
    snap = _snapshot("rail-cluster", "ecmp", nodes=4)
    est = check_solve_memory(snap, "alltoall", limit=MemoryLimit(1 << 30, "{}"))
    assert est == estimate_solve(snap, "alltoall")
    assert check_solve_memory(snap, "alltoall", limit=MemoryLimit(None, "{}")) == est


def test_the_limit_is_the_setting_then_the_environment_then_the_memory_available(monkeypatch):
    monkeypatch.delenv(ENV_MAX_MEMORY, raising=False)
    free, _what = available_memory()
    assert memory_limit().bytes == pytest.approx(free, rel=0.5)  # (it moves)
    monkeypatch.setenv(ENV_MAX_MEMORY, "2GiB")
    assert memory_limit().bytes == 2 << 30
    assert ENV_MAX_MEMORY in memory_limit().text()
    assert memory_limit(3 << 30).bytes == 3 << 30
    assert memory_limit(3 << 30).text() == "the --max-memory limit of 3.0 GiB"
    monkeypatch.setenv(ENV_MAX_MEMORY, "plenty")
    with pytest.raises(SolverError, match=ENV_MAX_MEMORY):
        memory_limit()


def test_the_memory_available_is_read_from_the_system():
    free, what = available_memory()
    assert free is not None and free > 0, what
    if sys.platform == "linux":
        meminfo = Path("/proc/meminfo").read_text()
        total = int(meminfo.split("MemTotal:")[1].split()[0]) * 1024
        assert free <= total


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8GiB", 8 << 30),
        ("512MB", 512 * 10**6),
        ("2g", 2 << 30),
        ("1048576", 1 << 20),
        ("0", None),
        ("-1GiB", None),
        ("1e400", None),
        ("nan", None),
        ("12 parsecs", None),
    ],
)
def test_memory_sizes_parse_or_are_refused(text, value):
    assert parse_memory(text) == value
