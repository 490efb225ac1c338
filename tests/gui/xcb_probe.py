"""Run by `tests/gui/test_shortcuts.py` in a child process on a real X11 display
(``QT_QPA_PLATFORM=xcb`` under Xvfb), where Qt's standard key bindings are the Linux
desktop's, not the offscreen platform's: prints, as JSON, every shortcut the main window
binds, what real key presses do to the design, and the user guide's shortcut table as
generated there.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from designer.gui.app import application, create_window

PORTABLE = QKeySequence.SequenceFormat.PortableText
CTRL, SHIFT = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier


def bindings(window) -> list[tuple[str, list[str]]]:
    """(who, keys) for every QAction and QShortcut of ``window`` that has keys."""
    out = []
    for action in window.findChildren(QAction):
        keys = [k.toString(PORTABLE) for k in action.shortcuts() if not k.isEmpty()]
        if keys:
            out.append((action.objectName() or action.text(), keys))
    for shortcut in window.findChildren(QShortcut):
        keys = [k.toString(PORTABLE) for k in shortcut.keys() if not k.isEmpty()]  # noqa: SIM118
        if keys:
            out.append((shortcut.objectName() or "QShortcut", keys))
    return out


def key_presses(window) -> dict[str, int]:
    """Node counts after real key presses on the canvas: select one node, Ctrl+D,
    Ctrl+Z, Ctrl+Y, Ctrl+Z, Ctrl+Shift+Z."""
    topo, view, scene = window.document.topology, window.view, window.scene
    counts = {"start": len(topo)}
    first = min(n.id for n in topo.nodes())
    scene.select_ids(node_ids=[first])
    view.setFocus()
    for _ in range(100):
        if QApplication.focusWidget() is view:
            break
        QTest.qWait(50)
    QTest.qWait(200)  # the first solve's results land meanwhile
    counts["selected"] = len(scene.selected_node_ids())
    counts["focus on canvas"] = int(QApplication.focusWidget() is view)
    for label, key, mods in (
        ("ctrl+d", Qt.Key.Key_D, CTRL),
        ("ctrl+z", Qt.Key.Key_Z, CTRL),
        ("ctrl+y", Qt.Key.Key_Y, CTRL),
        ("ctrl+z again", Qt.Key.Key_Z, CTRL),
        ("ctrl+shift+z", Qt.Key.Key_Z, CTRL | SHIFT),
    ):
        QTest.keyClick(view, key, mods)
        QTest.qWait(50)
        counts[label] = len(topo)
    return counts


def main() -> int:
    app = application()
    window, _ = create_window()
    window.show()
    window.activateWindow()
    QTest.qWaitForWindowActive(window, 5000)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
    import shortcuts  # tools/shortcuts.py

    report = {
        "platform": app.platformName(),
        "bindings": bindings(window),
        "presses": key_presses(window),
        "table": shortcuts.markdown_table(),
    }
    window.document.undo_stack.setClean()
    window.close()
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
