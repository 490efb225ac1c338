"""Put the Resilience panel into a main window: the study runner, the panel docked at
the bottom with the analysis panels, and Tools > Run failure study….

Kept out of ``main_window.py`` so the window stays a thin composition of parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QMainWindow

from designer.gui.studies.colours import SlowdownColours
from designer.gui.studies.panel import ResiliencePanel
from designer.gui.studies.runner import StudyRunner
from designer.gui.studies.sweep_panel import SweepPanel
from designer.gui.studies.sweep_runner import SweepRunner

__all__ = ["Studies", "install_studies"]


@dataclass
class Studies:
    """The study parts of one window."""

    runner: StudyRunner
    panel: ResiliencePanel
    run_action: QAction
    sweep_runner: SweepRunner
    sweep: SweepPanel
    sweep_action: QAction
    colours: SlowdownColours | None


def install_studies(window: QMainWindow) -> Studies:
    """Create the study parts in ``window`` (a `MainWindow`, after `install_analysis`,
    before `install_help` so Tools comes before Help on the menu bar)."""
    doc = window.document
    runner = StudyRunner(doc, window)
    scene = getattr(window, "scene", None)
    analysis = getattr(window, "analysis", None)
    colours = None
    if scene is not None:
        # Before the panel: another design opened takes the colouring (and its legend)
        # off the canvas before anything else reacts.
        overlay = analysis.overlay if analysis is not None else None
        colours = SlowdownColours(scene, window.view, overlay, window)
        doc.topology_replaced.connect(colours.on_topology_replaced)  # bound: no cycle
    panel = ResiliencePanel(doc, runner, window)
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, panel)
    if analysis is not None:
        window.tabifyDockWidget(analysis.busbw, panel)
        analysis.busbw.raise_()
    panel.hide()  # shown by the menu command or View > Resilience
    if scene is not None:
        panel.select.connect(lambda nodes, links: scene.select_ids(nodes, links))
        runner.result_ready.connect(colours.show_report)
        panel.colour_box.toggled.connect(colours.set_on)
    if hasattr(window, "show_message"):
        panel.message.connect(window.show_message)
    menu = window.menuBar().addMenu("&Tools")
    run = menu.addAction("Run &failure study…")
    run.setStatusTip("Fail each link, switch or NIC in turn and list what it costs")
    run.triggered.connect(panel.ask_and_run)
    sweeper = SweepRunner(window)
    sweep = SweepPanel(sweeper, window)
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, sweep)
    window.tabifyDockWidget(panel, sweep)
    sweep.hide()
    if analysis is not None:  # hiding the new tab made its neighbour the current one
        analysis.busbw.raise_()
    if scene is not None:
        sweep.apply_theme(scene.theme)
        scene.theme_changed.connect(sweep.apply_theme)
    if hasattr(window, "show_message"):
        sweep.message.connect(window.show_message)
    files = getattr(window, "files", None)
    if files is not None:
        sweep.open_variant.connect(files.new_design)
    else:
        sweep.open_variant.connect(doc.replace)
    sweep_action = menu.addAction("Design &sweep…")
    sweep_action.setStatusTip("Build, cost and solve every combination of a template's values")
    sweep_action.triggered.connect(lambda: (sweep.show(), sweep.raise_(), sweep.grid.setFocus()))
    if hasattr(window, "view_menu"):
        window.view_menu.addAction(panel.toggleViewAction())
        window.view_menu.addAction(sweep.toggleViewAction())
    app = QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(runner.shutdown)
        app.aboutToQuit.connect(sweeper.shutdown)
    window.destroyed.connect(lambda *_: (runner.shutdown(), sweeper.shutdown()))
    return Studies(runner, panel, run, sweeper, sweep, sweep_action, colours)
