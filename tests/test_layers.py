"""The layers hold: the pure layers (model, solver, io) never import Qt, pyqtgraph or
the GUI; the solver's sub-packages import only downwards; no import circle anywhere."""

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


@pytest.mark.parametrize(("module", "wrong", "reported"), [
    ("model/errors.py", "import PySide6", "designer.model.errors -> PySide6"),
    # routing must not reach up into the flows, nor across into the rates
    ("solver/routing/router.py", "from designer.solver.rates import maxmin",
     "designer.solver.routing.router -> designer.solver.rates"),
    ("solver/arrays/ragged.py", "from designer.solver.snapshot import build",
     "designer.solver.arrays.ragged -> designer.solver.snapshot"),
    # outside the solver, its internals are reached through its front doors only
    ("gui/document.py", "from designer.solver.routing import router",
     "designer.gui.document -> designer.solver.routing"),
])
def test_import_linter_contracts_fail_on_a_wrong_way_import(tmp_path, module, wrong,
                                                             reported):
    """A wrong-way import makes a contract fail (so a pass means something)."""
    shutil.copytree(ROOT / "designer", tmp_path / "designer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "designer" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{wrong}  # noqa\n",
                    encoding="utf-8")
    proc = _lint_imports(tmp_path)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert reported in proc.stdout, proc.stdout


def _module_imports() -> dict[str, set[str]]:
    """Each module of ``designer`` -> the modules of ``designer`` it imports (at any
    level: in functions and under ``TYPE_CHECKING`` too)."""
    files = {f: ".".join(f.relative_to(ROOT).with_suffix("").parts)
             for f in (ROOT / "designer").rglob("*.py")}
    names = {m.removesuffix(".__init__") for m in files.values()}
    out: dict[str, set[str]] = {}
    for f, mod in files.items():
        mod = mod.removesuffix(".__init__")
        deps = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                deps |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in names
                         else node.module for a in node.names}
        out[mod] = {d for d in deps if d in names and d != mod}
    return out


def test_no_import_circle_in_designer():
    import networkx as nx

    graph = nx.DiGraph([(a, b) for a, deps in _module_imports().items() for b in deps])
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not circles, "modules that import each other in a circle:\n" + "\n".join(
        " <-> ".join(c) for c in circles)


def test_the_circle_check_sees_a_circle():
    """The graph the check above walks holds the imports it should: module-level ones,
    a sub-module named in ``from package import module``, and ``TYPE_CHECKING`` ones."""
    imports = _module_imports()
    assert "designer.solver.routing.change" in imports["designer.solver.reuse"]
    assert "designer.solver.routing.paths" in imports["designer.solver.routing.router"]
    assert "designer.solver.routing.change" in imports["designer.solver.routing.router"]
