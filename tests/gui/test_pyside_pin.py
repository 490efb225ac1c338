"""Regression guard for the PySide6 pin (see pyproject.toml).

PySide6 6.12.0 corrupts the refcount of ``None`` on Python 3.11: calling a setter that
returns None (``QPointF.setX``) 10,000 times aborts the interpreter with
``none_dealloc``.  The crash kills the process, so it runs in a child interpreter.
"""

import subprocess
import sys
from importlib.metadata import version

CALLS = 50_000  # well past the ~10,000 at which 6.12.0 aborts


def test_pinned_pyside_is_not_the_broken_release():
    assert version("PySide6-Essentials") != "6.12.0"


def test_none_refcount_survives_many_void_setter_calls():
    code = (
        "import sys\n"
        "from PySide6.QtCore import QPointF\n"
        "p = QPointF()\n"
        "before = sys.getrefcount(None)\n"
        f"for i in range({CALLS}):\n"
        "    p.setX(float(i))\n"
        "after = sys.getrefcount(None)\n"
        "print(before, after, p.x())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"interpreter died ({proc.returncode}): {proc.stderr[-500:]}"
    before, after, x = proc.stdout.split()
    assert float(x) == CALLS - 1
    # None is immortal on 3.12+, so only a large drop means corruption on 3.11.
    assert int(after) > int(before) - CALLS // 2
