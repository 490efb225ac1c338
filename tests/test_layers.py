"""The pure layers (model, solver, io) never import Qt, pyqtgraph or the GUI."""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE = ("model", "solver", "io")
FORBIDDEN = ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "superqt", "qtpy", "designer.gui")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("layer", PURE)
def test_pure_layer_sources_import_no_qt(layer):
    files = sorted((ROOT / "designer" / layer).rglob("*.py"))
    assert files, f"designer/{layer} has no modules"
    bad = [f"{f.relative_to(ROOT)}: {name}" for f in files for name in _imports(f)
           if any(name == m or name.startswith(m + ".") for m in FORBIDDEN)]
    assert not bad, "Qt imported in a pure layer:\n" + "\n".join(bad)


def test_importing_pure_layers_loads_no_qt():
    # Transitive check at run time: nothing the pure layers import pulls Qt in.
    code = (
        "import sys, pkgutil, importlib, designer.model, designer.solver, designer.io\n"
        "for pkg in (designer.model, designer.solver, designer.io):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('PySide6', 'pyqtgraph', 'superqt', 'qtpy') or m.startswith('designer.gui')]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter on ``root``'s pyproject, through this interpreter.

    Called through ``sys.executable`` (not a ``lint-imports`` found on PATH) so the check
    runs under the README's test command, where the venv is used but not activated.
    """
    code = (
        "import sys\n"
        "from importlinter.cli import lint_imports\n"
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=root, env=env, timeout=180)


def test_import_linter_contract_holds():
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_import_linter_contract_fails_on_a_wrong_way_import(tmp_path):
    """A pure layer that imports Qt makes the contract fail (so a pass means something)."""
    shutil.copytree(ROOT / "designer", tmp_path / "designer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    errors = tmp_path / "designer" / "model" / "errors.py"
    errors.write_text(errors.read_text(encoding="utf-8") + "\nimport PySide6  # noqa\n",
                      encoding="utf-8")
    proc = _lint_imports(tmp_path)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "designer.model.errors -> PySide6" in proc.stdout, proc.stdout
