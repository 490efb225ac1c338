"""Public measurements on the new hardware of issue 36 (resources/reference/
unseen-new-hardware.json): every row carries its source and becomes a case that
`benchmarks/accuracy.py` prints after the Blackwell table."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _import_accuracy():
    """benchmarks/accuracy.py, imported by path (benchmarks/ is not a package)."""
    path = REPO / "benchmarks" / "accuracy.py"
    spec = importlib.util.spec_from_file_location("fabric_accuracy_new_hw", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through it
    spec.loader.exec_module(module)
    return module


acc = _import_accuracy()


@pytest.fixture(scope="module")
def reference():
    return json.loads(acc.UNSEEN_MORE.read_text(encoding="utf-8"))


def test_every_row_sourced_and_built(reference):
    rows = reference["cases"]
    assert {r["id"] for r in rows} >= {"mi300x-8gpu-rccl", "gb200-nvl72-20rack"}
    assert all(r.get("source") for r in rows)
    cases, unmapped = acc.build_cases(reference)
    assert unmapped == []
    assert {c.row for c in cases} == {r["id"] for r in rows}


def test_mi300x_row_through_the_cli(reference):
    """The 8 x MI300X rccl-tests curve: the model's full-mesh plans within the sanity
    bound from 64 MiB up (it has no RCCL figure of its own: never fitted)."""
    one = {"cases": [r for r in reference["cases"] if r["id"] == "mi300x-8gpu-rccl"]}
    report = acc.predict_reference(one, runner=acc.in_process_runner, workers=1)
    assert report.skipped == []
    assert len(report.rows) == 9
    assert all(abs(r.error_pct) <= acc.BOUND_ANY_ROW_PCT for r in report.rows)
