"""The application under the X11 soak: the real window on a real X display, plus a probe.

Run as ``python -m tests.gui.x11_app DESIGN PROBE_DIR`` with ``DISPLAY`` set and
``QT_QPA_PLATFORM=xcb``.  It starts the window as ``fabric-designer DESIGN`` does
(`designer.gui.app`: tuned process, log file, crash handler, the file opened once
shown), with two differences a test needs:

- the crash handler's dialog is not shown (an unhandled error is logged and counted, as
  always, and the soak fails on the count and the log instead of blocking on a modal
  dialog nobody answers);
- with no window manager under Xvfb, nothing activates the window again when a dialog
  closes: the probe does, when asked and no window is active;
- a probe (`Probe`) answers the test: when ``PROBE_DIR/request`` holds a number, it
  writes ``PROBE_DIR/state.json`` with that number and what the test cannot read from
  outside the process: the model's digest, how the canvas agrees with the model
  (`tests.gui.soak_checks.scene_problems`), whether the live analysis is idle, any
  dialog or menu open, the memory in use (glibc's heap and Python's objects: the
  resident size, read from outside, does not fall when memory is freed), and where
  nodes, links, groups and scenario fields are on screen.  A request ``N collect``
  collects Python's garbage first, so the memory figure counts what the application
  keeps, not garbage the GUI-thread collector (`designer.gui.main_thread_gc`) has not
  reached yet.
- an input log (`_InputLog`): the last mouse and key events the application received,
  and the first moment after one of them when selected node items stood away from the
  model with no drag in progress (``first_stray``): what a canvas/model mismatch came
  after, reported by the test with the failure.

The probe lives in the test tree, not in the application: nothing in ``designer``
changes for the soak.  The file, the log and ``/proc/PID`` are read by the test itself.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QPoint, QThreadPool, QTimer
from PySide6.QtWidgets import QApplication, QTabBar, QWidget

#: How often the probe looks for a request (ms).
POLL_MS = 50
#: Screen positions reported per kind (a sample of what is visible).
MAX_POSITIONS = 300


def python_objects_in_use() -> int:
    """Bytes in Python's small-object arenas held by live objects (``sys._debugmallocstats``
    prints it to file descriptor 2, read back here): Python maps those arenas itself, so
    `designer.memory.heap_in_use` does not count them."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read().decode("ascii", "replace")
    found = re.search(r"# bytes in allocated blocks\s*=\s*([\d,]+)", text)
    return int(found.group(1).replace(",", "")) if found else 0


def _center(widget) -> list[int]:
    c = widget.mapToGlobal(widget.rect().center())
    return [c.x(), c.y()]


def _solver_forks() -> int:
    parallel = sys.modules.get("designer.solver.parallel")
    return 0 if parallel is None else parallel.busy()


def state_digest(state: dict) -> str:
    """A digest of a `Topology.state()` snapshot: equal designs, equal digests."""
    return hashlib.sha256(repr(state).encode("utf-8")).hexdigest()[:16]


class _LastMove(QObject):
    """Where the main window last saw the mouse move (global coordinates): the test moves
    the mouse to a mark after a batch's events, and once the window reports the mark, it
    has handled every event sent before it."""

    def __init__(self, parent):
        super().__init__(parent)
        self.at: list[int] | None = None

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.MouseMove:
            p = event.globalPosition().toPoint()
            self.at = [p.x(), p.y()]
        return False


_INPUT_EVENTS = {
    QEvent.Type.MouseButtonPress: "press", QEvent.Type.MouseButtonRelease: "release",
    QEvent.Type.MouseButtonDblClick: "double", QEvent.Type.KeyPress: "key",
    QEvent.Type.ContextMenu: "context",
}


class _InputLog(QObject):
    """The last input events, each as the first widget to receive it saw it, and the
    first stray node items found right after one (see the module)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.events: deque = deque(maxlen=60)
        self.first_stray: dict | None = None
        self._last = None
        self._check_posted = False

    def eventFilter(self, obj, event) -> bool:
        kind = _INPUT_EVENTS.get(event.type())
        if kind is not None and isinstance(obj, QWidget) and event is not self._last:
            self._last = event  # (an event travels up the widget chain: once)
            if kind == "key":
                what = f"{event.key():#x} mods {int(event.modifiers().value):#x}"
            elif kind == "context":
                what = f"reason {int(event.reason().value)}"
            else:
                p = event.globalPosition().toPoint()
                what = (f"button {int(event.button().value)} buttons "
                        f"{int(event.buttons().value)} mods {int(event.modifiers().value):#x}"
                        f" at {p.x()},{p.y()}")
            scene = self.window.scene
            self.events.append(f"{time.monotonic():.3f} {kind} {what} -> "
                               f"{type(obj).__name__}; drag {scene.dragging}, "
                               f"undo {self.window.document.undo_stack.index()}")
            if self.first_stray is None and not self._check_posted:
                self._check_posted = True
                QTimer.singleShot(0, self._check)
        return False

    def _check(self) -> None:
        self._check_posted = False
        scene = self.window.scene
        if self.first_stray is not None or scene.dragging:
            return
        topo = self.window.document.topology
        stray = []
        for item in scene.selectedItems():
            nid = getattr(item, "node_id", None)
            if nid is not None and topo.has_node(nid):
                n, p = topo.node(nid), item.pos()
                if abs(p.x() - n.x) > 1e-6 or abs(p.y() - n.y) > 1e-6:
                    stray.append(f"{nid} at {p.x():.1f},{p.y():.1f}, model {n.x},{n.y}")
        if stray:
            stack = self.window.document.undo_stack
            self.first_stray = {
                "nodes": stray[:8], "events": list(self.events),
                "undo": [stack.text(i) for i in range(max(0, stack.count() - 8),
                                                      stack.count())],
                "undo_index": stack.index()}


class Probe:
    """Answers the soak test's requests from inside the application (see the module)."""

    def __init__(self, window, crash, folder: Path):
        self.window, self.crash, self.folder = window, crash, folder
        self.request = folder / "request"
        self.answered = None
        self.last_move = _LastMove(window)
        self.inputs = _InputLog(window)
        QApplication.instance().installEventFilter(self.inputs)
        self._watched = None
        self.timer = QTimer(window)
        self.timer.timeout.connect(self._on_timer_timeout)
        self.timer.start(POLL_MS)

    def _on_timer_timeout(self) -> None:
        try:
            seq, _, what = self.request.read_text().strip().partition(" ")
        except OSError:
            return
        if not seq or seq == self.answered:
            return
        if what == "collect":
            gc.collect()
        handle = self.window.windowHandle()
        if handle is not None and handle is not self._watched:  # (the main window's only)
            handle.installEventFilter(self.last_move)
            self._watched = handle
        app = QApplication.instance()
        if app.activeModalWidget() is None and app.activePopupWidget() is None \
                and app.activeWindow() is None:
            # What a desktop's window manager does when a dialog closes: activate the
            # window below.  Xvfb has none, and X then gives the keyboard to no one.
            self.window.activateWindow()
        data = self.state()
        data["seq"] = seq
        tmp = self.folder / "state.json.tmp"
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.folder / "state.json")
        self.answered = seq

    def _global(self, view, scene_pos) -> tuple[int, int] | None:
        p = view.mapFromScene(scene_pos)
        if not view.viewport().rect().adjusted(8, 8, -8, -8).contains(p):
            return None
        g = view.viewport().mapToGlobal(p)
        return g.x(), g.y()

    def state(self) -> dict:
        from designer.memory import heap_in_use
        from tests.gui.soak_checks import dock_problems, scene_problems

        window = self.window
        topo, scene, view = window.document.topology, window.scene, window.view
        runner = window.analysis.runner
        app = QApplication.instance()
        modal = app.activeModalWidget()
        popup = app.activePopupWidget()
        # Idle: no solve running or due, and the scene's deferred refresh (frames,
        # bundles) done, as the user sees it a frame later.
        idle = not runner.busy and not runner.pending and not scene.refresh_pending
        problems = scene_problems(window) if idle and modal is None and popup is None else []
        nodes, links, groups = [], [], []
        for nid, item in scene.nodes.items():
            if item.isVisible() and len(nodes) < MAX_POSITIONS * 4:
                g = self._global(view, item.sceneBoundingRect().center())
                if g is not None:
                    nodes.append([nid, *g])
        for lid, item in scene.links.items():
            if item.isVisible() and len(links) < MAX_POSITIONS * 4:
                g = self._global(view, item.path().pointAtPercent(0.5)
                                 if hasattr(item, "path") else item.sceneBoundingRect().center())
                if g is not None:
                    links.append([lid, *g])
        for gid, item in scene.groups.items():
            if item.isVisible():
                r = item.sceneBoundingRect()
                g = self._global(view, r.topLeft() + (r.center() - r.topLeft()) * 0.1)
                if g is not None:
                    groups.append([gid, *g])
        vp = view.viewport()
        top_left = vp.mapToGlobal(QPoint(0, 0))
        dock = window.analysis.scenario
        fields = {}
        screen = window.screen().geometry()
        for name in ("collective", "size", "algorithm", "routing", "dtype", "params", "dp",
                     "compute", "overlap"):
            w = getattr(dock, name)
            if w.isVisible() and w.isEnabled() and not w.visibleRegion().isEmpty():
                c = w.mapToGlobal(w.rect().center())
                if screen.contains(c):
                    fields[name] = [type(w).__name__, c.x(), c.y()]
        tabs = {}
        for bar in window.findChildren(QTabBar):
            for i in range(bar.count()):
                if bar.isVisible() and bar.tabText(i) == "Scenario":
                    c = bar.mapToGlobal(bar.tabRect(i).center())
                    tabs["Scenario"] = [c.x(), c.y()]
        stack = window.document.undo_stack
        return {
            "pid": os.getpid(),
            "path": str(window.document.path) if window.document.path else None,
            "modified": window.isWindowModified(),
            "undo_index": stack.index(), "undo_count": stack.count(),
            # The commands on the stack (the last 12): what a mismatch came after.
            "undo_texts": [stack.text(i) for i in range(max(0, stack.count() - 12),
                                                         stack.count())],
            "model_digest": state_digest(topo.state()),
            "model": {"nodes": len(topo), "links": topo.graph.number_of_edges(),
                      "groups": sum(1 for _ in topo.groups()),
                      "failed": sum(1 for n in topo.nodes() if n.failed)
                      + sum(1 for lk in topo.links() if lk.failed)},
            "scene": {"nodes": len(scene.nodes), "links": len(scene.links),
                      "groups": len(scene.groups), "bundles": len(scene.bundles),
                      "collapsed": len(scene.collapsed)},
            "scene_problems": problems[:5] + dock_problems(window)[:1] if problems or idle
            else [],
            "idle": idle,
            "modal": type(modal).__name__ + ":" + modal.windowTitle() if modal else None,
            "modal_wid": int(modal.winId()) if modal else None,
            "popup": type(popup).__name__ if popup else None,
            "crash_errors": self.crash.errors,
            "python_threads": sorted(t.name for t in threading.enumerate()),
            # Work on Qt's thread pool (the file being opened, the autosave copy, a
            # solve) and calls forked onto the solver's helper thread, running now.
            "pool_active": QThreadPool.globalInstance().activeThreadCount(),
            "solver_forks": _solver_forks(),
            "first_stray": self.inputs.first_stray,
            "heap_in_use": heap_in_use(), "python_objects_in_use": python_objects_in_use(),
            "viewport": [top_left.x(), top_left.y(), vp.width(), vp.height()],
            # The mark: a point on the status bar, where a mouse move does nothing.
            "mark": _center(window.statusBar()),
            "last_move": self.last_move.at,
            "nodes_on_screen": nodes, "links_on_screen": links, "groups_on_screen": groups,
            "scenario_fields": fields, "tabs": tabs, "wid": int(window.winId()),
            "selected": len(scene.selectedItems()),
            # For a failure's message: a node drag the canvas still carries (its release
            # went elsewhere), the item holding the mouse, the buttons Qt thinks are down.
            "drag_in_progress": scene.dragging,
            "mouse_grabber": type(scene.mouseGrabberItem()).__name__
            if scene.mouseGrabberItem() is not None else None,
            "mouse_buttons": int(app.mouseButtons().value),
            "focus": type(app.focusWidget()).__name__ if app.focusWidget() else None,
            "active_window": type(app.activeWindow()).__name__ if app.activeWindow() else None,
        }


def main(argv: list[str]) -> int:
    design, folder = argv[0], Path(argv[1])
    from designer.gui import app as gui_app
    from designer.gui.crash import CONTINUE, install_crash_handler
    from designer.logs import setup_logging
    from designer.memory import tune_process

    tune_process()
    setup_logging(gui=True)
    qapp = gui_app.application()
    window, _ = gui_app.create_window()
    crash = install_crash_handler(window, show_dialog=lambda dialog: CONTINUE)
    window.show()
    QTimer.singleShot(0, window.view.fit)
    gui_app.open_when_shown(window, design)
    probe = Probe(window, crash, folder)
    try:
        code = qapp.exec()
    finally:
        probe.timer.stop()
        crash.uninstall()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
