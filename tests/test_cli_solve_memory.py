"""``fabric-designer solve`` estimates a solve's memory first and refuses one over the
limit (``--max-memory``, ``FABRIC_DESIGNER_MAX_MEMORY``, else the memory available) in
one line naming the estimate and what would fit, exit 1, before routing anything."""

from __future__ import annotations

import re

import pytest

from designer.io.fabric_json import load
from designer.solver import estimate_solve, pipeline
from designer.solver.machine_memory import ENV_MAX_MEMORY, format_bytes
from designer.solver.snapshot.build import take_snapshot
from tests.cli_support import new_design, one_line, run


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """256 GPUs: an all-to-all of 65,280 pairs, estimated at ~32 MiB under ECMP."""
    return new_design(tmp_path_factory.mktemp("memory"), "rail-cluster", "--set", "nodes=32")


@pytest.fixture(autouse=True)
def _no_limit_from_the_environment(monkeypatch, capsys):
    monkeypatch.delenv(ENV_MAX_MEMORY, raising=False)
    capsys.readouterr()


def ecmp_alltoall_16mib(capsys, cluster, *more: str):
    """``solve`` of an ECMP all-to-all on ``cluster`` under a 16 MiB limit."""
    return run(capsys, "solve", cluster, "--collective", "alltoall", "--routing", "ecmp",
               "--max-memory", "16MiB", *more)


def _estimate(path, routing: str, ranks=None) -> int:
    topo = load(path)
    topo.set_setting("routing", routing)
    return estimate_solve(take_snapshot(topo), "alltoall", ranks).bytes


def test_a_solve_over_max_memory_is_refused_with_the_estimate_and_what_fits(
        capsys, cluster, monkeypatch):
    def no_solve(*args, **kwargs):
        raise AssertionError("the solve started: the refusal must come first")

    monkeypatch.setattr(pipeline, "solve_collective", no_solve)
    code, out, err = ecmp_alltoall_16mib(capsys, cluster)
    assert code == 1 and out == "" and one_line(err), err
    estimate = _estimate(cluster, "ecmp")
    assert f"would need about {format_bytes(estimate)} of memory" in err
    assert "more than the --max-memory limit of 16 MiB" in err
    assert "--routing adaptive (about" in err
    most = int(re.search(r"--ranks (\d+) or fewer", err)[1])
    assert 2 <= most < 256


def test_the_suggested_ranks_solve_within_the_limit(capsys, cluster):
    code, _, err = ecmp_alltoall_16mib(capsys, cluster)
    most = int(re.search(r"--ranks (\d+) or fewer", err)[1])
    code, out, err = ecmp_alltoall_16mib(capsys, cluster, "--ranks", str(most))
    assert code == 0, err
    assert f"alltoall on {most} GPUs" in out


def test_a_normal_solve_still_runs(capsys, cluster):
    for extra in ([], ["--max-memory", "1GiB"]):
        code, out, err = run(
            capsys, "solve", cluster, "--collective", "alltoall", "--routing", "ecmp", *extra
        )
        assert code == 0, err
        assert out.startswith("alltoall on 256 GPUs")


def test_the_environment_sets_the_limit(capsys, cluster, monkeypatch):
    monkeypatch.setenv(ENV_MAX_MEMORY, "16MiB")
    # (ECMP: a path per pair; adaptive routing solves classes of pairs, a few MiB.)
    code, _, err = run(capsys, "solve", cluster, "--collective", "alltoall", "--routing", "ecmp")
    assert code == 1 and one_line(err), err
    assert f"the {ENV_MAX_MEMORY} limit of 16 MiB" in err
    # The option wins over the environment.
    code, _, err = run(capsys, "solve", cluster, "--collective", "alltoall", "--max-memory", "1GiB")
    assert code == 0, err
    monkeypatch.setenv(ENV_MAX_MEMORY, "lots")
    code, _, err = run(capsys, "solve", cluster, "--collective", "alltoall", "--routing", "ecmp")
    assert code == 1 and one_line(err) and ENV_MAX_MEMORY in err, err


@pytest.mark.parametrize("value", ["1KiB", "15MiB", "65TiB", "1e400", "lots", "-8GiB", "0"])
def test_max_memory_out_of_range_is_a_usage_error_before_the_design_is_read(
    capsys, tmp_path, value
):
    missing = tmp_path / "nowhere.fabric.json"  # never read: the option is checked first
    missing.write_text("{}")
    code, out, err = run(capsys, "solve", missing, f"--max-memory={value}")
    assert code == 2 and out == "" and one_line(err), err
    assert "--max-memory" in err


def test_the_help_states_the_range(capsys):
    code, out, _ = run(capsys, "solve", "--help")
    assert code == 0
    assert "16MiB..64TiB" in " ".join(out.split())
