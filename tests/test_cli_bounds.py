"""Every numeric option has a documented range, checked before any work starts, and a
value outside it is one line naming the option (exit 2) - never an internal error, an
allocation without bound, or a billion-GPU design.
"""

from __future__ import annotations

import pytest

from designer.cli import main
from designer.model.templates import MAX_TEMPLATE_GPUS, build_template, template_gpus
from tests.cli_support import new_design, one_line, run


@pytest.fixture(scope="module")
def hgx(tmp_path_factory):
    return new_design(tmp_path_factory.mktemp("bounds"))


@pytest.fixture(autouse=True)
def _quiet(capsys):
    capsys.readouterr()


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["solve", "{f}", "--ranks", "²"], "--ranks"),
        (["solve", "{f}", "--ranks", "9" * 5000], "--ranks"),
        (["solve", "{f}", "--gpus-per-thread", "99999999999999999999"], "--gpus-per-thread"),
        (["train", "{f}", "--params", "1e30"], "--params"),
        (["train", "{f}", "--params", "0"], "--params"),
        (["train", "{f}", "--steps", "100000000"], "--steps"),
        (["train", "{f}", "--seed", "99999999999999999999"], "--seed"),
        (["train", "{f}", "--compute-s", "1e9"], "--compute-s"),
        (["train", "{f}", "--flops", "1e300", "--tflops", "1e-300"], "--flops"),
        (["train", "{f}", "--flops", "1e15", "--tflops", "1e-300"], "--tflops"),
        (["export", "{f}", "-o", "{d}/x.png", "--scale", "1e-300"], "--scale"),
    ],
)
def test_out_of_range_values_are_one_line_naming_the_option(capsys, hgx, argv, option):
    code, out, err = run(capsys, *(a.format(f=hgx, d=hgx.parent) for a in argv))
    assert code == 2 and out == "" and one_line(err), err
    assert option in err


def test_a_template_beyond_the_largest_design_is_refused_with_its_count(capsys, tmp_path):
    out = tmp_path / "t.fabric.json"
    code, _, err = run(
        capsys, "new", "torus3d", "--set", "x=1000", "--set", "y=1000", "--set", "z=1000", "-o", out
    )
    assert code == 2 and one_line(err), err
    assert "1,000,000,000 GPUs" in err and f"{MAX_TEMPLATE_GPUS:,}" in err
    assert not out.exists()


def test_the_help_states_the_ranges(capsys):
    for command, fragments in (
        ("train", ["1..100,000", "0..4,294,967,295", "above 0, at most 1e+15"]),
        ("solve", ["1..1,024"]),
    ):
        assert main([command, "--help"]) == 0
        text = " ".join(capsys.readouterr().out.split())
        for fragment in fragments:
            assert fragment in text, (command, fragment)


@pytest.mark.parametrize(
    ("template", "params"),
    [
        ("hgx", {"gpus": 4}),
        ("nvl72", {"gpus": 36}),
        ("rail-cluster", {"nodes": 6, "gpus_per_node": 4}),
        ("superpod", {"sus": 1}),
        ("superpod", {"sus": 2}),
        ("superpod", {"sus": 9}),
        ("fat-tree", {"k": 6}),
        ("leaf-spine", {"leaves": 3, "hosts_per_leaf": 5}),
        ("torus3d", {"x": 2, "y": 3, "z": 5}),
        ("example", {}),
    ],
)
def test_the_size_check_counts_the_gpus_the_template_builds(template, params):
    built = build_template(template, **params)
    assert template_gpus(template, **params) == sum(1 for _ in built.nodes("gpu"))


def test_a_large_design_states_its_cost_first(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr("designer.model.templates.LARGE_TEMPLATE_GPUS", 10)
    code, _, err = run(capsys, "new", "torus3d", "--set", "x=3", "-o", tmp_path / "t.fabric.json")
    assert code == 0 and "note: building a 48-GPU design takes about" in err
