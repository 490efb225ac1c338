"""README's top: the system-package line Qt needs stands beside the two commands."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block(marker: str) -> tuple[int, str]:
    """Where the fenced block after ``<!-- marker -->`` starts (line number) and its text."""
    lines = README.splitlines()
    start = lines.index(f"<!-- {marker} -->")
    assert lines[start + 1] == "```", marker
    end = lines.index("```", start + 2)
    return start, "\n".join(lines[start + 2:end])


def test_system_packages_stand_beside_the_two_commands():
    pkg_at, packages = _block("system-packages")
    run_at, _ = _block("run-command")
    test_at, _ = _block("test-command")
    assert pkg_at < run_at < test_at
    assert test_at < 40, "the three commands belong at the top of the README"
    assert packages.startswith("sudo apt-get install ")
    assert "\n" not in packages  # one line to copy


def test_the_app_names_the_same_packages_when_a_library_is_missing():
    from designer.gui import app

    _, packages = _block("system-packages")
    listed = set(re.sub(r"^sudo apt-get install ", "", packages).split())
    assert set(app._X11_PACKAGES.split()) == listed - {"python3-venv"}


def test_the_default_test_run_is_parallel_and_ci_runs_the_long_soak():
    """A contributor's run answers in minutes (every core, a short soak); CI still runs
    the whole 3,000-step soak."""
    import tomllib

    from tests.gui import test_soak

    _, command = _block("test-command")
    assert " -n auto" in command
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(d.startswith("pytest-xdist") for d in
               project["project"]["optional-dependencies"]["test"])
    assert test_soak.DEFAULT_OPS < test_soak.SOAK_OPS
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"test_soak.py::test_soak --soak-steps {test_soak.SOAK_OPS}" in ci
