"""``fabric-designer study``: the JSON contracts, the one-line errors and their exit
codes (2: a usage mistake, 1: a bad design or file), and the progress on stderr."""

from __future__ import annotations

import csv
import importlib.util
import json

import pytest
from cli_support import new_design, one_line, run


@pytest.fixture
def design(tmp_path, capsys):
    path = new_design(tmp_path, "leaf-spine")
    capsys.readouterr()
    return path


def test_failures_json_lists_every_element_worst_first(design, capsys):
    code, out, err = run(
        capsys, "study", "failures", design, "--elements", "all", "--workers", "0", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"intact", "classes", "elements", "timing_ms"}
    assert doc["intact"]["connected"] and doc["intact"]["time_s"] > 0
    elements = doc["elements"]
    fields = {"id", "kind", "class", "time_s", "slowdown", "connected"}
    assert all(set(e) == fields for e in elements)
    # every link, switch and NIC of the design
    assert len(elements) == 56 + 6 + 16
    assert len({e["id"] for e in elements}) == len(elements)
    keys = [(e["connected"], -(e["slowdown"] or 0)) for e in elements]
    assert keys == sorted(keys)  # cut-offs first, then the largest slowdown
    assert not elements[0]["connected"] and elements[0]["time_s"] is None
    assert max(e["class"] for e in elements) + 1 == doc["classes"]
    assert "%" in err  # progress on stderr, one line per 10 % when not a terminal


def test_failures_table_and_csv(design, capsys, tmp_path):
    out_csv = tmp_path / "f.csv"
    code, out, err = run(
        capsys,
        "study",
        "failures",
        design,
        "--elements",
        "switches",
        "--workers",
        "0",
        "-q",
        "-o",
        out_csv,
    )
    assert code == 0 and not err, err
    assert "6 element(s) in 2 class(es)" in out
    assert "4 disconnect ranks" in out  # a host's only leaf
    with out_csv.open() as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows][:4] == ["leaf-0", "leaf-1", "leaf-2", "leaf-3"]


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["--elements", "cables"], 2, "invalid choice: 'cables'"),
        (["--k", "3"], 2, "invalid choice: 3"),
        (["--samples", "5"], 2, "--samples applies to --k 2"),
        (["--workers", "-1"], 2, "--workers must be 0..1024"),
        (["--scheduler", "myhost"], 2, "tcp://HOST:8786"),
        (["-o", "x.xlsx"], 2, "write .csv, .parquet or .json"),
        pytest.param(
            ["-o", "x.parquet"],
            2,
            "needs pyarrow",
            marks=pytest.mark.skipif(
                importlib.util.find_spec("pyarrow") is not None, reason="pyarrow is installed"
            ),
        ),
    ],
)
def test_failures_usage_errors(design, capsys, argv, code, words):
    got, _out, err = run(capsys, "study", "failures", design, *argv)
    # (argparse's own refusals print the usage first, as every subcommand does)
    last = err.splitlines()[-1]
    assert got == code and words in last and "Traceback" not in err, err


def test_failures_bad_scenario_file_is_exit_1(design, capsys, tmp_path):
    bad = tmp_path / "s.toml"
    bad.write_text('collective = "allreduce"\nalgorithm = "warp"\n')
    code, _out, err = run(capsys, "study", "failures", design, "--scenario", bad)
    assert code == 1 and one_line(err) and "unknown algorithm 'warp'" in err, err
    code, _out, err = run(capsys, "study", "failures", tmp_path / "missing.fabric.json")
    assert code == 1 and one_line(err), err


def test_failures_scenario_and_workload_files(design, capsys, tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text('[scenario]\ncollective = "allgather"\nbytes = 1048576\nranks = 4\n')
    code, out, err = run(
        capsys,
        "study",
        "failures",
        design,
        "--scenario",
        sc,
        "--elements",
        "switches",
        "--workers",
        "0",
        "--json",
        "-q",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["intact"]["collective"] == "allgather" and doc["intact"]["ranks"] == 4
    wl = tmp_path / "w.toml"
    wl.write_text("[training]\nparams = 1e9\ncompute_s = 0.5\n")
    code, out, err = run(
        capsys,
        "study",
        "failures",
        design,
        "--workload",
        wl,
        "--elements",
        "switches",
        "--workers",
        "0",
        "--json",
        "-q",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["intact"]["metric"] == "step_s" and doc["intact"]["time_s"] >= 0.5


def test_sweep_json_and_pareto(capsys):
    code, out, err = run(
        capsys,
        "study",
        "sweep",
        "leaf-spine",
        "--grid",
        "spines=1,2",
        "--grid",
        "uplinks=1,2",
        "--set",
        "leaves=2",
        "--workers",
        "0",
        "--json",
        "-q",
    )
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["variants"]) == 4
    assert doc["variants"][0]["params"] == {"leaves": "2", "spines": "1", "uplinks": "1"}
    for v in doc["variants"]:
        assert v["cost_per_gpu_usd"] == pytest.approx(v["cost_usd"] / v["gpus"])
        assert v["time_s"] > 0 and v["bisection_GBps"] > 0
    front = [v for v in doc["variants"] if v["pareto"]]
    assert front
    for v in front:  # nothing on the front is beaten on both axes
        assert not any(
            w["cost_per_gpu_usd"] < v["cost_per_gpu_usd"] and w["time_s"] < v["time_s"]
            for w in doc["variants"]
        )


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["leaf-spine", "--grid", "spokes=1,2"], "no parameter 'spokes'"),
        (["leaf-spine", "--grid", "spines=1,two"], "spines must be int, got 'two'"),
        (["leaf-spine", "--grid", "spines"], "--grid takes key=v1,v2"),
        (["leaf-spine", "--grid", "spines=1,2", "--set", "spines=3"], "both swept"),
        (["leaf-spline", "--grid", "spines=1,2"], "unknown template 'leaf-spline'"),
    ],
)
def test_sweep_usage_errors(capsys, argv, words):
    code, _out, err = run(capsys, "study", "sweep", *argv)
    assert code == 2 and one_line(err) and words in err, err
