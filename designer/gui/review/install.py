"""Put the design review into a main window: the `ReviewRunner`, the Problems, Bill of
materials and Info docks (tabbed with the Inspector, so the window grows no taller), a
click on a problem selecting its subject, and File > Export Design Review.

Kept out of ``main_window.py`` so the window stays a thin composition of parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QMainWindow, QTabBar

from designer.gui.review.bom_dock import BomDock
from designer.gui.review.info_dock import InfoDock
from designer.gui.review.problems_dock import ProblemsDock, finding_ids
from designer.gui.review.report_export import ReviewExporter
from designer.gui.review.runner import ReviewRunner
from designer.model.rules import Finding

__all__ = ["Review", "install_review"]


@dataclass
class Review:
    """The review parts of one window."""

    runner: ReviewRunner
    problems: ProblemsDock
    bom: BomDock
    info: InfoDock
    exporter: ReviewExporter
    export_action: QAction


def install_review(window: QMainWindow) -> Review:
    """Create and dock the review parts in ``window`` (a `MainWindow`, after the
    analysis and workload parts, whose docks share the Inspector's tabs)."""
    doc = window.document
    runner = ReviewRunner(doc, window)
    # The live answers come first: the window's solve (link colours) and the jobs'
    # simulation (workload colours and panels).
    first = [
        r
        for r in (
            getattr(getattr(window, "analysis", None), "runner", None),
            getattr(getattr(window, "workload", None), "runner", None),
        )
        if r is not None
    ]
    if first:
        runner.defer_while(lambda: any(r.busy or r.pending for r in first))
    problems = ProblemsDock(runner, window)
    bom = BomDock(runner, window)
    info = InfoDock(runner, window)
    anchor = getattr(getattr(window, "workload", None), "dock", None)
    if anchor is None:
        anchor = getattr(getattr(window, "analysis", None), "scenario", None)
    if anchor is None:
        anchor = getattr(window, "inspector", None)
    for dock in (problems, bom, info):
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        if anchor is not None:
            window.tabifyDockWidget(anchor, dock)
            anchor = dock
    if getattr(window, "inspector", None) is not None:
        window.inspector.raise_()
        # Six tabs would set the column's width by their titles (~490 px), taking it
        # from the canvas: the Inspector's own width, the tabs whole and scrolled.
        width = max(window.inspector.minimumSizeHint().width(), window.width() // 4)
        window.resizeDocks([window.inspector], [width], Qt.Orientation.Horizontal)
    _hide_stale_tab_bars(window)
    for bar in window.findChildren(QTabBar):
        if bar.parent() is window:
            bar.setElideMode(Qt.TextElideMode.ElideNone)
            bar.setUsesScrollButtons(True)
    problems.activated.connect(lambda f: _show_finding(window, f))
    exporter = ReviewExporter(window, runner)
    action = QAction("Export Design &Review…", window)
    action.setObjectName("export_review")
    action.setStatusTip(
        "Write one HTML or PDF report: the diagram, scenario and workload results, "
        "bill of materials, info and problems"
    )
    action.triggered.connect(lambda: exporter.ask_and_export())
    menu = getattr(window, "file_menu", None)
    export = getattr(window, "actions_by_name", {}).get("export")
    if menu is not None:
        actions = menu.actions()
        after = actions.index(export) + 1 if export in actions else len(actions)
        before = actions[after] if after < len(actions) else None
        menu.insertAction(before, action) if before is not None else menu.addAction(action)
    if hasattr(window, "view_menu"):
        window.view_menu.addSeparator()
        for dock in (problems, bom, info):
            window.view_menu.addAction(dock.toggleViewAction())
    app = QApplication.instance()
    if app is not None:
        app.aboutToQuit.connect(runner.shutdown)
    window.destroyed.connect(lambda *_: runner.shutdown())
    runner.schedule()
    return Review(runner, problems, bom, info, exporter, action)


def _show_finding(window: QMainWindow, finding: Finding) -> None:
    """Select what ``finding`` is about and centre the first node of it."""
    nodes, links = finding_ids(window.document.topology, finding)
    if not (nodes or links):
        window.show_message(f"{finding.code}: the whole design ({finding.message})")
        return
    window.scene.select_ids(node_ids=nodes, link_ids=links)
    if nodes:
        window.view.center_on_node(nodes[0])
    else:
        item = window.scene.links.get(links[0])
        if item is not None:
            window.view.centerOn(item)
    window.show_message(f"{finding.severity}: {finding.message}")


def _hide_stale_tab_bars(window: QMainWindow) -> None:
    """Hide a tab bar whose tabs are all in a larger one (Qt leaves the bar of an
    intermediate tabify step drawn when several docks join a group before the window
    is shown)."""
    bars = [b for b in window.findChildren(QTabBar) if b.parent() is window]
    tabs = {b: {b.tabText(i) for i in range(b.count())} for b in bars}
    for b in bars:
        if any(tabs[b] < tabs[o] for o in bars if o is not b):
            b.hide()
