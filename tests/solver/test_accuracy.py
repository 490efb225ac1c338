"""Accuracy against measured NCCL: every calibration row through the templates and the CLI.

Runs ``benchmarks/accuracy.py`` (``fabric-designer new`` + ``solve --json`` in
subprocesses, ~15 s on 2 cores) and asserts issue 3's goals, per-row regression bounds,
and that the check fails when the model is degraded.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from designer.solver.timing import nccl_model, nccl_params

REPO = Path(__file__).resolve().parents[2]
GiB = 1 << 30


def _import_accuracy():
    """benchmarks/accuracy.py, imported by path (benchmarks/ is not a package)."""
    path = REPO / "benchmarks" / "accuracy.py"
    spec = importlib.util.spec_from_file_location("fabric_accuracy", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through it
    spec.loader.exec_module(module)
    return module


acc = _import_accuracy()


@pytest.fixture(scope="module")
def reference() -> dict:
    # In the repository: a clone must be able to check the README's accuracy table.
    return acc.load_reference()


@pytest.fixture(scope="module")
def report(reference):
    """Every row through `python -m designer` in subprocesses, as a user would run it."""
    return acc.predict_reference(reference, runner=acc.subprocess_runner, workers=2)


def _table(rows) -> str:
    """The rows as the benchmark prints them (summary only when it is the whole set)."""
    rows = list(rows)
    text = acc.format_table(acc.Report(rows=rows))
    return text if len(rows) > 40 else text.split("\n(busbw")[0]


# ------------------------------------------------------------------- coverage


def test_every_measured_row_is_predicted(reference, report):
    assert report.skipped == [], report.skipped
    with_figures = {c["id"] for c in reference["cases"] if any(k in c for k in acc._FIGURE_KEYS)}
    assert with_figures <= {r.row for r in report.rows}
    # every measured point of every case became a row
    cases, _ = acc.build_cases(reference)
    assert len(report.rows) == sum(len(c.measured) for c in cases)
    curve = next(c for c in reference["cases"] if c["id"] == acc.CURVE_CASE)
    assert [r.nbytes for r in report.rows if r.case == acc.CURVE_CASE] == [
        acc.parse_size(s) for s, _ in curve["curve_bytes_busbw"]
    ]


def test_rows_map_to_the_measured_setup(report):
    by_case = {}
    for r in report.rows:
        by_case.setdefault(r.case, []).append(r)
    # forced algorithms are honoured; the A100 curve is auto and switches tree -> ring
    assert {r.algorithm for r in by_case["h100-8gpu-ring"]} == {"ring"}
    assert all(r.algorithm == "nvls" for k, v in by_case.items() if "nvls-ramp" in k for r in v)
    curve = [r.algorithm for r in by_case[acc.CURVE_CASE]]
    assert curve[0] == "tree" and curve[-1] == "ring"
    assert all(r.metric == "time_us" for r in by_case["h100-small-latency"])
    assert all(r.algorithm == "p2p" for k, v in by_case.items() if "per-nic" in k for r in v)
    assert {r.design.split()[0] for k, v in by_case.items() if "multinode" in k for r in v} == {
        "rail-cluster"
    }


# ------------------------------------------------------------------- goals


def test_goal_median_error_on_large_sizes(report):
    s = acc.summarize(report.rows)
    assert s["median_abs_error_ge_1GiB_pct"] <= acc.GOAL_LARGE_MEDIAN_PCT, _table(report.rows)


def test_goal_median_error_over_the_a100_curve(report):
    s = acc.summarize(report.rows)
    assert s["median_abs_error_a100_curve_pct"] <= acc.GOAL_CURVE_MEDIAN_PCT, _table(report.rows)


def test_every_large_row_within_bound(report):
    large = [r for r in report.rows if r.nbytes >= GiB]
    assert len(large) >= 20
    bad = [r for r in large if abs(r.error_pct) > acc.BOUND_LARGE_ROW_PCT]
    assert not bad, _table(bad)


def test_every_row_and_case_within_sanity_bounds(report):
    assert acc.goal_failures(report.rows) == [], _table(report.rows)


def test_multinode_rows_meet_the_goals(report):
    # Issue 31's rows (resources/reference/measured-multinode.json): multi-node, mid
    # sizes, EFA, all-to-all; no row beyond 25 %, each case's median within 15 %.
    ids = {c["id"] for c in json.loads(acc.MULTINODE.read_text(encoding="utf-8"))["cases"]}
    rows = [r for r in report.rows if r.row in ids]
    assert {r.row for r in rows} == ids
    assert acc.goal_misses(rows) == [], _table(rows)
    for case in ids:
        med = acc._median_abs(r for r in rows if r.row == case)
        assert med <= acc.BOUND_CASE_MEDIAN_PCT, (case, med)


def test_two_node_auto_is_not_the_ring(report):
    # On two nodes NCCL runs a tree (its busbw above the NICs'), not a ring
    rows = [r for r in report.rows if r.row == "p4dn-efa-2node"]
    assert [r.algorithm for r in rows] == ["tree"]


def test_per_nic_rates_match_the_effective_figures(reference, report):
    rates = next(c for c in reference["cases"] if c["id"] == "per-nic-effective")
    rows = [r for r in report.rows if r.row == "per-nic-effective"]
    assert len(rows) == len(rates["effective_GBps_per_nic"])
    for r in rows:
        assert r.predicted == pytest.approx(r.measured, rel=0.05), r


# ------------------------------------------------------------------- the check can fail


def test_in_process_cli_gives_the_same_rows(reference, report):
    """The in-process runner (used below to degrade the model) is the same pipeline."""
    inproc = acc.predict_reference(reference, runner=acc.in_process_runner)
    assert [(r.case, r.nbytes) for r in inproc.rows] == [(r.case, r.nbytes) for r in report.rows]
    for a, b in zip(inproc.rows, report.rows, strict=True):
        assert a.predicted == pytest.approx(b.predicted, rel=1e-9), (a, b)


@pytest.mark.parametrize(
    ("change", "expect"),
    [
        ({"simple_efficiency": 0.9}, "median |error| on >= 1 GiB"),
        ({"launch_eager_us": 10.0}, "median |error| over the A100 curve"),
    ],
)
def test_a_degraded_model_misses_the_goals(reference, monkeypatch, change, expect):
    degraded = dataclasses.replace(nccl_params.load_params(), **change)
    monkeypatch.setattr(nccl_model, "_default_params", lambda: degraded)
    rows = acc.predict_reference(reference, runner=acc.in_process_runner).rows
    fails = acc.goal_failures(rows)
    assert any(f.startswith(expect) for f in fails), fails


# ------------------------------------------------------------------- mapping


def test_build_cases_maps_the_nccl_tests_options():
    ref = {
        "cases": [
            {"id": "a100-8gpu-curve", "gpus": 8, "curve_bytes_busbw": [["32KiB", 1.0]]},
            {
                "id": "h100-small-latency",
                "gpus": 2,
                "algo": "nvlstree",
                "bytes": "128B-512B",
                "time_us": 6,
            },
            {"id": "per-nic-effective", "effective_GBps_per_nic": {"HDR 200G": 24, "100G": 12}},
            {"id": "someone-elses-row", "busbw": 1.0},
            {"id": "just-a-note", "note": "no figure"},
        ]
    }
    cases, unmapped = acc.build_cases(ref)
    by = {c.case: c for c in cases}
    assert by["a100-8gpu-curve"].options == ("--gpus-per-thread", "8")
    small = by["h100-small-latency"]
    assert small.metric == "time_us"
    assert [s for s, _ in small.measured] == [128, 256, 512]
    assert "graph" in small.options and "nvls" in small.options
    # a generation name means InfiniBand; a bare rate may fall back to RoCE
    assert [dict(d.params)["fabric"] for d in by["per-nic-effective:HDR-200G"].designs] == [
        "infiniband"
    ]
    assert [dict(d.params)["fabric"] for d in by["per-nic-effective:100G"].designs] == [
        "infiniband",
        "roce",
    ]
    assert unmapped == [("someone-elses-row", "no template/solve mapping for this row yet")]


def test_summary_and_failures_on_made_up_rows():
    def row(case, nbytes, err):
        return acc.Row(case, case, nbytes, "busbw", 100.0, 100.0 + err, err, "ring", "Simple", "")

    rows = [row(acc.CURVE_CASE, GiB, 2.0), row(acc.CURVE_CASE, 1 << 20, -30.0), row("x", GiB, 8.0)]
    s = acc.summarize(rows)
    assert s["median_abs_error_ge_1GiB_pct"] == pytest.approx(5.0)
    assert s["median_abs_error_a100_curve_pct"] == pytest.approx(16.0)
    assert s["max_abs_error_pct"] == pytest.approx(30.0)
    fails = acc.goal_failures(rows)
    assert any("A100 curve" in f for f in fails)
    assert not any("on >= 1 GiB" in f for f in fails)  # 5.0 % is within the goal
    assert [m.split(":")[0] for m in acc.goal_misses(rows)] == [f"{acc.CURVE_CASE} at 1MiB"]


# ------------------------------------------------------------------- unseen hardware


def test_unseen_blackwell_figures():
    """Public Blackwell figures (resources/reference/unseen-blackwell.json) that no
    calibration row covers, every one through the CLI. The 8-GPU rows (a B200 or B300
    board, two GB200 trays) must stay within the large-size row bound: with Hopper's
    NVLS factor their NVLS rows were 10-15 % high. The whole NVL72 rack (72 GPUs) is a
    known miss, 16-24 % high (the model's NVLS ceiling grows with the ranks,
    2(n-1)/(n+1), where the measured plateau stays at the 8-GPU one): held to the sanity
    bound only, and reported in the README."""
    unseen = json.loads(acc.UNSEEN.read_text(encoding="utf-8"))
    report = acc.predict_reference(unseen, runner=acc.subprocess_runner, workers=2)
    assert report.skipped == [], report.skipped
    assert {r.case for r in report.rows} == {c["id"] for c in unseen["cases"]}
    eight = [r for r in report.rows if r.case != "gb200-nvl72-72gpu"]
    assert len(eight) == 4
    bad = [r for r in eight if abs(r.error_pct) > acc.BOUND_LARGE_ROW_PCT]
    assert not bad, acc.format_table(report, goals=False)
    rack = [r for r in report.rows if r.case == "gb200-nvl72-72gpu"]
    assert len(rack) == 5 and all(abs(r.error_pct) <= acc.BOUND_ANY_ROW_PCT for r in rack)
    by_case = {r.case: r for r in report.rows}
    assert by_case["b200-8gpu-nvls"].algorithm == "nvls"
    assert by_case["b300-8gpu-ring"].algorithm == "ring"
    assert by_case["gb200-mnnvl-8gpu"].algorithm == "nvls"   # auto picks NVLS on NVL72
