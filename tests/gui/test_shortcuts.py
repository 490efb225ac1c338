"""Every key does one thing, on the offscreen platform and on a real X11 display.

Qt's standard key bindings depend on the platform plugin: on X11 (xcb) "Delete" is
``Del`` *and* ``Ctrl+D`` and "Redo" is only ``Ctrl+Shift+Z``, while the offscreen
platform the other GUI tests run on reports another list.  A key bound to two actions
triggers neither ("Ambiguous shortcut overload"), so the X11 checks run the real window
in a child process on a private Xvfb display (skipped only where Xvfb is not installed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from PySide6.QtGui import QAction, QKeySequence, QShortcut

ROOT = Path(__file__).resolve().parents[2]
PORTABLE = QKeySequence.SequenceFormat.PortableText


def _duplicates(bindings) -> dict[str, list[str]]:
    """Keys bound more than once, with who binds them."""
    count = Counter(k for _who, keys in bindings for k in keys)
    return {
        k: sorted(who for who, keys in bindings if k in keys) for k, n in count.items() if n > 1
    }


@pytest.fixture(scope="module")
def xvfb_display():
    """A private X display (``:N``) for the module's child processes."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed")
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1400x900x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    try:
        if not number:
            pytest.skip("Xvfb did not start")
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture(scope="module")
def on_x11(xvfb_display, tmp_path_factory):
    """What `tests/gui/xcb_probe.py` reports from the real window on X11."""
    home = tmp_path_factory.mktemp("xcb-home")
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "xcb",
        "DISPLAY": xvfb_display,
        "FABRIC_DESIGNER_DATA_DIR": str(home / "data"),
    }
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[var] = str(home / var.lower())
    env.pop("WAYLAND_DISPLAY", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "gui" / "xcb_probe.py")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["platform"] == "xcb"
    return report


def test_no_key_is_bound_twice_on_x11(on_x11):
    assert _duplicates(on_x11["bindings"]) == {}


def test_duplicate_undo_and_both_redo_keys_work_on_x11(on_x11):
    n = on_x11["presses"]
    assert n["ctrl+d"] > n["start"], "Ctrl+D did not duplicate the selected node"
    assert n["ctrl+z"] == n["start"]
    assert n["ctrl+y"] == n["ctrl+d"], "Ctrl+Y did not redo"
    assert n["ctrl+z again"] == n["start"]
    assert n["ctrl+shift+z"] == n["ctrl+d"], "Ctrl+Shift+Z did not redo"


def test_the_guide_table_is_the_x11_one(on_x11):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import shortcuts
    finally:
        sys.path.remove(str(ROOT / "tools"))
    guide = (ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")
    assert shortcuts.table_in(guide) == on_x11["table"]


def test_no_key_is_bound_twice_offscreen(window):
    bindings = [
        (
            a.objectName() or a.text(),
            [k.toString(PORTABLE) for k in a.shortcuts() if not k.isEmpty()],
        )
        for a in window.findChildren(QAction)
    ]
    bindings += [
        (s.objectName(), [k.toString(PORTABLE) for k in s.keys()])  # noqa: SIM118 (Qt method)
        for s in window.findChildren(QShortcut)
    ]
    assert _duplicates(bindings) == {}


def test_redo_answers_ctrl_y_and_ctrl_shift_z(window):
    keys = {k.toString(PORTABLE) for k in window.actions_by_name["redo"].shortcuts()}
    assert {"Ctrl+Y", "Ctrl+Shift+Z"} <= keys
