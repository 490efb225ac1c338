"""What ``fabric-designer`` says when a command goes wrong (issue 28, item 13).

Every mistake is one line that names what the user typed (an option, never an internal
field), exit code 2 for a usage error and 1 for a bad file or a failed check, and a
"did you mean" when a name is close to a real one.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from designer.cli import main
from tests.cli_support import new_design, one_line, run


@pytest.fixture(scope="module")
def hgx(tmp_path_factory):
    return new_design(tmp_path_factory.mktemp("messages"))


@pytest.fixture(autouse=True)
def _quiet(capsys):
    capsys.readouterr()



# ----------------------------------------------------------------- ranks and algorithms
def test_one_rank_says_a_collective_needs_two(capsys, hgx):
    code, out, err = run(capsys, "solve", hgx, "--ranks", "1")
    assert code == 2 and out == "" and one_line(err)
    assert "--ranks 1" in err and "at least 2 ranks" in err and "8 GPUs" not in err


@pytest.mark.parametrize(
    ("collective", "algorithm", "fragment"),
    [
        ("alltoall", "ring", "point-to-point"),
        ("sendrecv", "tree", "point-to-point"),
        ("allgather", "tree", "tree runs allreduce; allgather runs ring, pat, direct"),
        ("broadcast", "nvls", "nvls runs allreduce; broadcast runs ring"),
    ],
)
def test_an_algorithm_the_collective_cannot_run_is_refused(
    capsys, hgx, collective, algorithm, fragment
):
    code, out, err = run(capsys, "solve", hgx, "--collective", collective, "--algorithm", algorithm)
    assert code == 2 and out == "" and one_line(err)
    assert f"--algorithm {algorithm}" in err and fragment in err


# ----------------------------------------------------------------- options, not fields
@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["solve", "{f}", "--gpus-per-thread", "0"], "--gpus-per-thread"),
        (["train", "{f}", "--steps", "0"], "--steps"),
        (["train", "{f}", "--seed", "-1"], "--seed"),
        (["train", "{f}", "--dp", "1"], "--dp"),
        (["train", "{f}", "--dp", "100"], "--dp 100"),
    ],
)
def test_bad_option_values_are_usage_errors_named_by_their_option(capsys, hgx, argv, option):
    code, out, err = run(capsys, *(a.format(f=hgx) for a in argv))
    assert code == 2 and out == "" and one_line(err), err
    assert option in err and "_" not in err.split("error:", 1)[1]


def test_zero_compute_time_prints_no_numpy_warning(hgx):
    """A step of pure communication: figures, and nothing from numpy on stderr."""
    proc = subprocess.run(
        [sys.executable, "-m", "designer", "train", str(hgx), "--compute-s", "0", "--steps", "50"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0 and proc.stderr == ""
    assert "communication share 100.0%" in proc.stdout


@pytest.mark.parametrize(
    ("text", "gradient_bytes"),
    [("70B", 140e9), ("405e9", 810e9), ("1.2T", 2.4e12), ("7000000000", 14e9)],
)
def test_params_accepts_model_sizes_as_people_write_them(capsys, hgx, text, gradient_bytes):
    code, out, err = run(capsys, "train", hgx, "--params", text, "--steps", "10", "--json")
    assert code == 0, err
    assert json.loads(out)["gradient_bytes"] == pytest.approx(gradient_bytes)


# ----------------------------------------------------------------- mistyped words
def test_a_mistyped_option_shows_the_subcommands_usage_and_a_suggestion(capsys, hgx):
    code, out, err = run(capsys, "solve", hgx, "--colective", "alltoall")
    assert code == 2 and out == ""
    assert err.startswith("usage: fabric-designer solve ")
    assert "--colective" in err and "did you mean --collective?" in err


def test_a_mistyped_choice_gets_a_suggestion(capsys, hgx):
    code, _, err = run(capsys, "solve", hgx, "--collective", "allredcue")
    assert code == 2 and "did you mean 'allreduce'?" in err


def test_an_unknown_word_is_an_unknown_command_not_the_gui(capsys, monkeypatch, tmp_path):
    started = []
    monkeypatch.setattr("designer.gui.app.run", lambda file=None, **kw: started.append(file) or 0)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "templatez")
    assert code == 2 and out == "" and one_line(err) and started == []
    assert "unknown command 'templatez' (did you mean 'templates'?)" in err
    code, _, err = run(capsys, "frobnicate")
    assert code == 2 and "unknown command 'frobnicate'" in err and started == []
    # a file that exists opens in the GUI, whatever its name
    (tmp_path / "templatez").write_text("{}")
    assert main(["templatez"]) == 0 and started == ["templatez"]
    # a file and more words: not an unknown command, one FILE is what the GUI takes
    code, _, err = run(capsys, "templatez", "extra")
    assert code == 2 and one_line(err) and "unknown command" not in err and "extra" in err
    assert started == ["templatez"]


# ----------------------------------------------------------------- new
def test_new_refuses_a_diagram_suffix_and_points_to_export(capsys, tmp_path):
    code, out, err = run(capsys, "new", "hgx", "-o", tmp_path / "x.svg")
    assert code == 2 and out == "" and one_line(err)
    assert ".fabric.json" in err and "export" in err
    code, _, err = run(capsys, "new", "hgx", "-o", tmp_path / "x")
    assert code == 2 and "x.fabric.json" in err
    assert list(tmp_path.iterdir()) == []


def test_a_size_beyond_what_a_scenario_holds_is_a_usage_error(capsys, hgx):
    code, out, err = run(capsys, "solve", hgx, "--bytes", "1e30")
    assert code == 2 and out == "" and one_line(err) and "at most 16TiB" in err


@pytest.mark.parametrize(
    "sets", [["--set", "gpus=4", "gpus=2"], ["--set", "gpus=4", "--set", "gpus=2"]]
)
def test_a_template_parameter_set_twice_is_refused(capsys, tmp_path, sets):
    code, out, err = run(capsys, "new", "hgx", *sets, "-o", tmp_path / "d.fabric.json")
    assert code == 2 and out == "" and one_line(err)
    assert "gpus" in err and "twice" in err
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------- one spelling for keys
def test_machine_readable_keys_spell_utilization_one_way(capsys, hgx):
    """US spelling in every key the CLI writes (JSON keys, CSV columns)."""
    keys: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            keys.update(value)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for argv in (
        ["solve", hgx, "--json"],
        ["train", hgx, "--steps", "10", "--json"],
        ["info", hgx, "--json"],
        ["bom", hgx, "--json"],
    ):
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        walk(json.loads(out))
    code, out, _ = run(capsys, "bom", hgx, "--csv")
    keys.update(out.splitlines()[0].split(","))
    assert "utilization" in keys
    assert not [k for k in keys if "utilis" in k.lower()]
