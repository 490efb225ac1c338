"""Put the live analysis into a main window: runner, canvas overlay, scenario dock and the
four panels, wired to each other only through signals.

Kept out of ``main_window.py`` so the window stays a thin composition of parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QProgressBar,
    QTabBar,
    QToolButton,
    QWidget,
)

from designer.gui.actions import make_actions
from designer.gui.analysis.overlay import AnalysisOverlay
from designer.gui.analysis.panels import BusBwPanel, JitterPanel, LinkLoadPanel, TimelinePanel
from designer.gui.analysis.runner import SolveRunner
from designer.gui.analysis.scenario_dock import ScenarioDock
from designer.gui.document import freeze_survivors
from designer.gui.idle import IdleWork


@dataclass
class Analysis:
    """The analysis parts of one window."""

    runner: SolveRunner
    overlay: AnalysisOverlay
    scenario: ScenarioDock
    timeline: TimelinePanel
    busbw: BusBwPanel
    linkload: LinkLoadPanel
    jitter: JitterPanel
    colour_action: QAction

    @property
    def panels(self):
        return (self.timeline, self.busbw, self.linkload, self.jitter)


def install_analysis(window: QMainWindow) -> Analysis:
    """Create and dock the analysis parts in ``window`` (a `MainWindow`)."""
    doc, scene, view = window.document, window.scene, window.view
    runner = SolveRunner(doc, window)
    overlay = AnalysisOverlay(doc, scene, view, runner, window)
    scenario = ScenarioDock(doc, runner, window)
    panels = (TimelinePanel(window), BusBwPanel(window), LinkLoadPanel(window),
              JitterPanel(window))
    timeline, busbw, linkload, jitter = panels

    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, scenario)
    window.tabifyDockWidget(window.inspector, scenario)
    window.inspector.raise_()
    bottom = Qt.DockWidgetArea.BottomDockWidgetArea
    # The plots get the full width; the palette and inspector columns stop above them.
    window.setCorner(Qt.Corner.BottomLeftCorner, bottom)
    window.setCorner(Qt.Corner.BottomRightCorner, bottom)
    window.addDockWidget(bottom, timeline, Qt.Orientation.Horizontal)
    window.addDockWidget(bottom, busbw, Qt.Orientation.Horizontal)
    window.tabifyDockWidget(busbw, linkload)
    window.tabifyDockWidget(busbw, jitter)
    busbw.raise_()
    _hide_stale_tab_bars(window)
    # Sizes only stick once the window is laid out: give the plots room then.
    QTimer.singleShot(0, window, lambda: _initial_sizes(window, timeline))

    for panel in panels:
        # The plots take the canvas's theme (View > Theme), forced or the system's.
        if panel.theme is not scene.theme:
            panel.apply_theme(scene.theme)
        scene.theme_changed.connect(panel.apply_theme)
        panel.follow(runner, doc)
        panel.exported.connect(lambda path: window.show_message(f"Exported {path}"))
    linkload.link_activated.connect(lambda lid: _select_link(window, lid))
    for source in (overlay, scenario):
        source.message.connect(window.show_message)
    runner.failed.connect(lambda _g, msg: window.show_message(f"Analysis: {msg}"))
    runner.progress.connect(window.show_message)
    runner.result_ready.connect(
        lambda r: window.show_message(f"Analysis updated in {r.seconds * 1e3:.0f} ms"))

    _answer_in_status_bar(window, scenario)
    busy = BusyIndicator(window, runner)
    window.analysis_busy = (busy.bar, busy.button)
    _settle_after_first_result(doc, runner)

    colour = getattr(window, "actions_by_name", {}).get("colour_util")
    if colour is None:  # a window without the action table (tests)
        colour = make_actions(window, ["colour_util"])["colour_util"]
    colour.toggled.connect(overlay.set_mode)
    if hasattr(window, "view_menu"):
        window.view_menu.addSeparator()
        window.view_menu.addAction(colour)
        window.view_menu.addAction(scenario.toggleViewAction())
        for panel in panels:
            window.view_menu.addAction(panel.toggleViewAction())
    app = QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(runner.shutdown)
    window.destroyed.connect(lambda *_: runner.shutdown())
    runner.schedule()
    return Analysis(runner, overlay, scenario, timeline, busbw, linkload, jitter, colour)


def _settle_after_first_result(doc, runner: SolveRunner) -> None:
    """`freeze_survivors` once per opened design, after its first result is applied and
    the background work it caused (recolouring, redrawing) is over."""
    state = {"pending": True}

    def on_result(_result) -> None:
        if state["pending"]:
            state["pending"] = False
            # One key for every window: the heap is the process's.
            IdleWork.instance().after_work("freeze survivors", lambda: freeze_survivors())

    def on_replaced(_topology) -> None:
        state["pending"] = True

    runner.result_ready.connect(on_result)
    doc.topology_replaced.connect(on_replaced)


def _answer_in_status_bar(window: QMainWindow, scenario: ScenarioDock) -> None:
    """The headline answer (time, busbw, bottleneck) in the status bar: on screen at any
    window size, whichever dock tab is raised."""
    label = QLabel(window)
    label.setObjectName("analysis_answer")
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    window.statusBar().addPermanentWidget(label)
    # The label's own slots: Qt drops the connections with it.
    scenario.answer_changed.connect(label.setText)
    scenario.answer_changed.connect(label.setToolTip)


class BusyIndicator(QWidget):
    """A progress bar with the solve's percentage (by stage) and a Cancel button in the
    status bar while a solve runs (shown and hidden as one; its bound slots are dropped
    with it)."""

    def __init__(self, window: QMainWindow, runner: SolveRunner):
        super().__init__(window)
        self.setObjectName("analysis_busy")
        self._window = window
        self.bar = QProgressBar(self)
        self.bar.setRange(0, 100)  # by stage: the runner's `percent`
        self.bar.setMaximumWidth(140)
        self.bar.setFormat("Solving %p%")
        self.button = QToolButton(self)
        self.button.setText("Cancel analysis")
        self.button.setToolTip("Stop the running solve; the next edit solves again")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.button)
        window.statusBar().addPermanentWidget(self)
        self.hide()
        runner.started.connect(self._on_runner_started)
        # The bar's own slots: dropped with the bar, should it go before this widget.
        runner.started.connect(self.bar.reset)
        runner.percent.connect(self.bar.setValue)
        runner.result_ready.connect(self._on_runner_done)
        runner.failed.connect(self._on_runner_done)
        runner.cancelled.connect(self._on_runner_cancelled)
        self.button.clicked.connect(runner.cancel)

    def _on_runner_started(self, _generation: int) -> None:
        self.show()

    def _on_runner_done(self, *_args) -> None:
        self.hide()

    def _on_runner_cancelled(self, _generation: int) -> None:
        self.hide()
        self._window.show_message("Analysis cancelled")


def _initial_sizes(window: QMainWindow, timeline) -> None:
    """Room for the plots below, and for the scenario's results above the overview."""
    window.resizeDocks([timeline], [max(window.height() // 3, 280)], Qt.Orientation.Vertical)
    minimap = getattr(window, "minimap", None)
    if minimap is not None:
        window.resizeDocks([window.inspector, minimap], [3, 1], Qt.Orientation.Vertical)


def _hide_stale_tab_bars(window: QMainWindow) -> None:
    """Qt 6.11 leaves the two-tab bar of an intermediate tabify step visible (drawn over
    the neighbouring dock) when a third dock joins the group before the window is shown;
    hide any tab bar whose tabs are all in a larger bar."""
    bars = [b for b in window.findChildren(QTabBar) if b.parent() is window]
    tabs = {b: {b.tabText(i) for i in range(b.count())} for b in bars}
    for b in bars:
        if any(tabs[b] < tabs[o] for o in bars if o is not b):
            b.hide()


def _select_link(window: QMainWindow, link_id: str) -> None:
    window.scene.select_ids(link_ids=[link_id])
    item = window.scene.links.get(link_id)
    if item is not None:
        window.view.centerOn(item)
