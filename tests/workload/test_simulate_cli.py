"""``fabric-designer simulate``: the JSON contract, iterations, and one-line refusals."""

from __future__ import annotations

import json

import pytest

from designer.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("sim")
    design = d / "rail.fabric.json"
    assert main(["new", "rail-cluster", "--set", "nodes=2", "-o", str(design)]) == 0
    for name, sets in (("a", ["tp=2", "pp=2", "dp=2"]), ("b", ["tp=1", "pp=2", "dp=4"])):
        out = d / f"{name}.workload.toml"
        args = ["workload", "new", "tiny", "--set", f"name={name}", *sets, "-o", str(out)]
        assert main(args) == 0
    return design, d / "a.workload.toml", d / "b.workload.toml"


def test_simulate_json_contract(files, capsys):
    design, a, b = files
    capsys.readouterr()
    assert (
        main(["simulate", str(design), "--workload", str(a), "--workload", str(b), "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"jobs", "links", "timeline", "timing_ms"}
    assert [j["name"] for j in out["jobs"]] == ["a", "b"]
    for j in out["jobs"]:
        assert set(j) >= {
            "name",
            "gpus",
            "iteration_s",
            "alone_s",
            "slowdown",
            "breakdown",
            "memory_gb_per_gpu",
            "fits",
        }
        assert j["gpus"] == 8 and j["fits"] is True and j["memory_gb_per_gpu"] > 0
        assert j["iteration_s"] >= j["alone_s"] * (1 - 1e-12) > 0
        assert j["slowdown"] == pytest.approx(j["iteration_s"] / j["alone_s"])
    assert all(
        set(row) >= {"id", "mean_util", "peak_util", "bytes", "jobs"} for row in out["links"]
    )
    assert {e["job"] for e in out["timeline"]} == {"a", "b"}


def test_iterations_report_times_per_iteration(files, capsys):
    design, a, _ = files
    capsys.readouterr()
    assert main(["simulate", str(design), "--workload", str(a), "--json"]) == 0
    one = json.loads(capsys.readouterr().out)["jobs"][0]
    assert main(["simulate", str(design), "--workload", str(a), "--iterations", "3", "--json"]) == 0
    three = json.loads(capsys.readouterr().out)["jobs"][0]
    assert three["iteration_s"] == pytest.approx(one["iteration_s"], rel=1e-9)


def test_text_output_names_jobs_and_busiest_links(files, capsys):
    design, a, b = files
    capsys.readouterr()
    assert main(["simulate", str(design), "--workload", str(a), "--workload", str(b)]) == 0
    text = capsys.readouterr().out
    assert "slowdown" in text and "\na " in text and "\nb " in text
    assert "busiest links" in text


def test_bad_workloads_are_one_line_and_exit_1(files, tmp_path, capsys):
    design, a, _ = files
    capsys.readouterr()
    # The same file twice: the second copy is placed on other GPUs, but its name clashes.
    assert main(["simulate", str(design), "--workload", str(a), "--workload", str(a)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "two jobs are named 'a'" in err[0]
    assert main(["simulate", str(design)]) == 1
    assert "no jobs to simulate" in capsys.readouterr().err
    big = tmp_path / "big.workload.toml"
    assert main(["workload", "new", "tiny", "--set", "dp=8", "-o", str(big)]) == 0
    assert main(["simulate", str(design), "--workload", str(big), "--workload", str(a)]) == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_pipeline_bubble_per_stage_in_text_and_json(files, capsys):
    design, _, b = files  # b: tiny model, pp 2 x dp 4
    capsys.readouterr()
    assert main(["simulate", str(design), "--workload", str(b), "--json"]) == 0
    one = json.loads(capsys.readouterr().out)["jobs"][0]
    assert len(one["stages"]) == 2 and all(st["gpus"] == 4 for st in one["stages"])
    for st in one["stages"]:
        assert st["bubble"] > 0
        parts = sum(v for k, v in st.items() if k not in ("gpus", "first_gpu", "exposed_comm"))
        assert parts == pytest.approx(one["iteration_s"], rel=1e-9)
    assert one["breakdown"]["bubble"] == pytest.approx(
        sum(st["bubble"] for st in one["stages"]) / 2, rel=1e-9
    )
    assert main(["simulate", str(design), "--workload", str(b), "--iterations", "2", "--json"]) == 0
    two = json.loads(capsys.readouterr().out)["jobs"][0]
    # Per iteration: the second iteration's fill waits on the first's drain, so the
    # bubble per iteration is no larger than one iteration's alone.
    assert 0 < two["breakdown"]["bubble"] <= one["breakdown"]["bubble"] * (1 + 1e-9)
    assert main(["simulate", str(design), "--workload", str(b)]) == 0
    text = capsys.readouterr().out
    assert "bubble" in text.splitlines()[1]
    stage_lines = [line for line in text.splitlines() if line.lstrip().startswith("stage ")]
    assert len(stage_lines) == 2 and all("bubble" in line for line in stage_lines)
