"""Training workload on a design: the all-reduce from the flow solver feeds the estimate."""

import json

import pytest

from designer.cli import main
from designer.model.templates import build_template
from designer.solver.errors import SolverError
from designer.solver.snapshot.build import take_snapshot
from designer.solver.training.step import TrainingWorkload, gradient_bytes
from designer.solver.training.workload import training_report


@pytest.fixture(scope="module")
def snap():
    return take_snapshot(build_template("example"))


def test_report_uses_the_solved_allreduce(snap):
    wl = TrainingWorkload(params=7e9, grad_dtype="bf16", dp_size=16, compute_s=0.3)
    rep = training_report(snap, wl, n_steps=200)
    assert rep.allreduce.sizes[0] == int(gradient_bytes(7e9, "bf16"))
    assert rep.estimate.comm_s == pytest.approx(float(rep.allreduce.time_s[0]))
    # No overlap: the step is compute plus the whole all-reduce.
    assert rep.estimate.step_s == pytest.approx(0.3 + rep.estimate.comm_s)
    assert rep.distribution.p99_s >= rep.distribution.p50_s >= rep.distribution.ideal_s * 0.99
    assert rep.hop_jitter_s > 0 and rep.comm_steps > 0


def test_more_overlap_less_exposed_comm(snap):
    base = TrainingWorkload(params=7e9, dp_size=16, compute_s=0.3)
    hidden = TrainingWorkload(params=7e9, dp_size=16, compute_s=0.3, overlap=0.8)
    a = training_report(snap, base, n_steps=100).estimate
    b = training_report(snap, hidden, n_steps=100).estimate
    assert b.exposed_comm_s < a.exposed_comm_s and b.comm_share < a.comm_share


def test_dp_group_larger_than_design_is_refused(snap):
    with pytest.raises(SolverError, match="exceeds"):
        training_report(snap, TrainingWorkload(params=1e9, dp_size=1000, compute_s=1.0))


def test_train_cli_json(tmp_path, capsys):
    f = tmp_path / "h.fabric.json"
    assert main(["new", "hgx", "-o", str(f)]) == 0
    capsys.readouterr()
    assert main(["train", str(f), "--params", "70e9", "--dtype", "fp16", "--compute-s", "1",
                 "--steps", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["gradient_bytes"] == 140e9
    assert out["dp_size"] == 8
    assert out["step_s"] == pytest.approx(out["compute_s"] + out["exposed_comm_s"])
    assert out["notes"] == []


def test_train_cli_with_half_a_compute_time_is_a_usage_error(tmp_path, capsys):
    """The file's workload gives a compute time; --flops without --tflops does not."""
    f = tmp_path / "h.fabric.json"
    assert main(["new", "hgx", "-o", str(f)]) == 0
    capsys.readouterr()
    assert main(["train", str(f), "--params", "70e9", "--flops", "1e15"]) == 2
    err = capsys.readouterr().err
    assert "--tflops" in err and "--compute-s" in err and "TrainingWorkload" not in err
    assert len(err.strip().splitlines()) == 1


def test_train_cli_carries_the_models_caveat(tmp_path, capsys):
    f = tmp_path / "rack.fabric.json"
    assert main(["new", "nvl72", "-o", str(f)]) == 0
    capsys.readouterr()
    assert main(["train", str(f), "--params", "7e9", "--compute-s", "0.5", "--steps", "50",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["allreduce"]["algorithm"] == "nvls" and "upper bound" in out["notes"][0]


@pytest.mark.parametrize(("argv", "option"), [
    (["--params", "-5", "--compute-s", "1"], "--params must be above 0"),
    (["--params", "7e9", "--compute-s", "1", "--overlap", "2"], "--overlap must be in the range"),
    (["--params", "7e9", "--flops", "1e15", "--tflops", "900", "--mfu", "1.5"], "--mfu"),
    (["--params", "7e9", "--compute-s", "-1"], "--compute-s must be in the range 0..86,400"),
    (["--params", "7e9", "--compute-s", "1", "--dp", "0"], "--dp must be"),
])
def test_train_cli_bad_values_are_named_by_their_options(tmp_path, capsys, argv, option):
    f = tmp_path / "h.fabric.json"
    assert main(["new", "hgx", "-o", str(f)]) == 0
    capsys.readouterr()
    assert main(["train", str(f), *argv]) == 2
    err = capsys.readouterr().err
    assert option in err and "TrainingWorkload" not in err and len(err.strip().splitlines()) == 1
