"""The published figures `benchmarks/workload_accuracy.py` checks the simulation
against: in the clone, every table sourced, every row complete and self-consistent."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "resources" / "reference" / "published-workloads.json"


def _bench():
    spec = importlib.util.spec_from_file_location(
        "workload_accuracy", ROOT / "benchmarks" / "workload_accuracy.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def data():
    assert PATH.is_file(), f"{PATH} is missing: the accuracy benchmark would not run"
    return json.loads(PATH.read_text(encoding="utf-8"))


@pytest.mark.parametrize("table", ["megatron_weak_scaling", "deepep_normal_kernels"])
def test_every_table_names_its_source_and_rows_fill_its_columns(data, table):
    t = data[table]
    assert "http" in t["source"] or "arXiv" in t["source"]
    assert t["setup"] and t["rows"]
    assert all(len(row) == len(t["columns"]) for row in t["rows"])


def test_megatron_rows_are_consistent(data):
    t = data["megatron_weak_scaling"]
    rows = [dict(zip(t["columns"], r, strict=True)) for r in t["rows"]]
    assert rows[0]["model"] == "1.7B" and rows[-1]["model"] == "1T"
    for r in rows:
        assert r["tp"] * r["pp"] == r["model_parallel"], r["model"]
        assert r["tp"] <= 8 and r["gpus"] % r["model_parallel"] == 0, r["model"]
        dp = r["gpus"] // r["model_parallel"]
        assert r["batch"] % dp == 0, r["model"]
        # Per-GPU throughput, its share of the 312 TFLOP/s peak and the aggregate agree
        # as printed (rounded).
        assert r["tflops_per_gpu"] / 312 == pytest.approx(r["peak_pct"] / 100, abs=0.006)
        assert r["tflops_per_gpu"] * r["gpus"] / 1000 == pytest.approx(
            r["aggregate_pflops"], rel=0.01
        )


def test_paper_flop_count_matches_its_parameter_count(data):
    """The FLOP formula the benchmark uses (the paper's equation 3) rests on the
    same architecture as the table's parameter counts, printed to 0.1 billion:
    ``12 l h^2 (1 + 13 / 12h + (V + s) / 12 l h)``."""
    mod = _bench()
    t = data["megatron_weak_scaling"]
    for raw in t["rows"]:
        r = dict(zip(t["columns"], raw, strict=True))
        job = mod.megatron_job(r, mod.EFFICIENCY)
        assert job.model.params() / 1e9 == pytest.approx(r["params_B"], abs=0.06), r["model"]
        assert mod.paper_flops(r) > 0


def test_deepep_rows(data):
    t = data["deepep_normal_kernels"]
    rows = [dict(zip(t["columns"], r, strict=True)) for r in t["rows"]]
    assert {r["link"] for r in rows} == {"nvlink", "rdma"}
    assert all(r["ep"] % 8 == 0 and r["dispatch_GBps"] > 0 for r in rows)
