"""Put the workload parts into a main window: the runner, the Workloads dock, the
iteration timeline and link statistics panels, and the jobs on the canvas (tints,
outlines, link colours, hover, placement by hand), wired to each other only through
signals.

Kept out of ``main_window.py`` so the window stays a thin composition of parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMainWindow

from designer.gui.linkstats.panel import LinkStatsPanel
from designer.gui.workload.controls import CanvasControls
from designer.gui.workload.dock import WorkloadDock
from designer.gui.workload.overlay import WorkloadOverlay
from designer.gui.workload.runner import WorkloadRunner
from designer.gui.workload.timeline import IterationTimelinePanel

__all__ = ["Workload", "install_workload"]


@dataclass
class Workload:
    """The workload parts of one window."""

    runner: WorkloadRunner
    dock: WorkloadDock
    timeline: IterationTimelinePanel
    linkstats: LinkStatsPanel | None = None
    overlay: WorkloadOverlay | None = None
    controls: CanvasControls | None = None


def install_workload(window: QMainWindow) -> Workload:
    """Create and dock the workload parts in ``window`` (a `MainWindow`, after
    `install_analysis`: the dock joins the Scenario dock's tabs, the panel the analysis
    panels' at the bottom)."""
    doc = window.document
    runner = WorkloadRunner(doc, window)
    dock = WorkloadDock(doc, runner, window)
    panel = IterationTimelinePanel(window)
    stats = LinkStatsPanel(doc, window)
    analysis = getattr(window, "analysis", None)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    if analysis is not None:
        window.tabifyDockWidget(analysis.scenario, dock)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, panel)
        window.tabifyDockWidget(analysis.busbw, panel)
        window.tabifyDockWidget(analysis.busbw, stats)
        analysis.busbw.raise_()
    else:
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, panel)
        window.tabifyDockWidget(panel, stats)
    window.inspector.raise_()
    scene = getattr(window, "scene", None)
    for p in (panel, stats):
        if scene is not None:
            if p.theme is not scene.theme:
                p.apply_theme(scene.theme)
            scene.theme_changed.connect(p.apply_theme)
        p.follow(runner, doc)
        p.exported.connect(lambda path: window.show_message(f"Exported {path}"))
    overlay = controls = None
    view = getattr(window, "view", None)
    if scene is not None and view is not None:
        overlay = WorkloadOverlay(
            doc, scene, view, runner, dock, getattr(analysis, "overlay", None), window
        )
        overlay.message.connect(window.show_message)
        _answer_on_screen_first(overlay, runner, getattr(analysis, "runner", None))
        # Under the jobs' list, in the part that scrolls: at 1280 x 720 the list keeps
        # its rows above it.
        body = dock.table.parentWidget()
        controls = CanvasControls(overlay, body)
        body.layout().insertWidget(1, controls)
        scene.selectionChanged.connect(lambda: stats.set_selection(scene.selected_link_ids()))
        stats.link_activated.connect(lambda lid: _select_link(scene, view, lid))
    dock.message.connect(window.show_message)
    runner.progress.connect(window.show_message)
    _clear_progress_when_done(window, runner)
    if hasattr(window, "view_menu"):
        window.view_menu.addSeparator()
        window.view_menu.addAction(dock.toggleViewAction())
        window.view_menu.addAction(panel.toggleViewAction())
        window.view_menu.addAction(stats.toggleViewAction())
    app = QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(runner.shutdown)
    window.destroyed.connect(lambda *_: runner.shutdown())
    runner.schedule()
    return Workload(runner, dock, panel, stats, overlay, controls)


def _answer_on_screen_first(overlay, simulation, solve) -> None:
    """The runner whose colours the canvas shows starts first after an edit; the other
    waits for it (both share one interpreter, so running together delays both)."""
    if solve is None:
        return
    showing = overlay.shows_jobs
    solve.defer_while(lambda: showing() and (simulation.busy or simulation.pending))
    simulation.defer_while(lambda: not showing() and (solve.busy or solve.pending))


def _clear_progress_when_done(window, runner) -> None:
    """Take the runner's last progress line ("Simulating 2 job(s)…") off the status bar
    when its simulation ends, rather than leave it claiming work that is done."""
    shown: list[str] = []

    def on_progress(text: str) -> None:
        shown[:] = [text]

    def on_done(*_args) -> None:
        bar = window.statusBar() if hasattr(window, "statusBar") else None
        if bar is not None and shown and bar.currentMessage() == shown[0]:
            bar.clearMessage()
        shown.clear()

    runner.progress.connect(on_progress)
    for signal in (runner.result_ready, runner.failed, runner.cancelled):
        signal.connect(on_done)


def _select_link(scene, view, link_id: str) -> None:
    scene.select_ids(link_ids=[link_id])
    item = scene.links.get(link_id)
    if item is not None:
        view.centerOn(item)
