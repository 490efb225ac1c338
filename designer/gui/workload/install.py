"""Put the workload parts into a main window: the runner, the Workloads dock and the
iteration timeline panel, wired to each other only through signals.

Kept out of ``main_window.py`` so the window stays a thin composition of parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMainWindow

from designer.gui.workload.dock import WorkloadDock
from designer.gui.workload.runner import WorkloadRunner
from designer.gui.workload.timeline import IterationTimelinePanel

__all__ = ["Workload", "install_workload"]


@dataclass
class Workload:
    """The workload parts of one window."""

    runner: WorkloadRunner
    dock: WorkloadDock
    timeline: IterationTimelinePanel


def install_workload(window: QMainWindow) -> Workload:
    """Create and dock the workload parts in ``window`` (a `MainWindow`, after
    `install_analysis`: the dock joins the Scenario dock's tabs, the panel the analysis
    panels' at the bottom)."""
    doc = window.document
    runner = WorkloadRunner(doc, window)
    dock = WorkloadDock(doc, runner, window)
    panel = IterationTimelinePanel(window)
    analysis = getattr(window, "analysis", None)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    if analysis is not None:
        window.tabifyDockWidget(analysis.scenario, dock)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, panel)
        window.tabifyDockWidget(analysis.busbw, panel)
        analysis.busbw.raise_()
    else:
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, panel)
    window.inspector.raise_()
    scene = getattr(window, "scene", None)
    if scene is not None:
        if panel.theme is not scene.theme:
            panel.apply_theme(scene.theme)
        scene.theme_changed.connect(panel.apply_theme)
    panel.follow(runner, doc)
    panel.exported.connect(lambda path: window.show_message(f"Exported {path}"))
    dock.message.connect(window.show_message)
    runner.progress.connect(window.show_message)
    if hasattr(window, "view_menu"):
        window.view_menu.addSeparator()
        window.view_menu.addAction(dock.toggleViewAction())
        window.view_menu.addAction(panel.toggleViewAction())
    app = QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(runner.shutdown)
    window.destroyed.connect(lambda *_: runner.shutdown())
    runner.schedule()
    return Workload(runner, dock, panel)
