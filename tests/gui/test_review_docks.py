"""The design review docks: Problems, Bill of materials and Info show what the CLI's
``validate``, ``bom`` and ``info`` say, worked out off the GUI thread and refreshed after
an edit; clicking a problem selects what it is about."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget

from designer.gui.review.summary import bom_headline, info_headline, problems_headline
from designer.model.bom import bom
from designer.model.report import info
from designer.workload.checks import validate_design
from tests.gui.conftest import close_window, open_window


def reviewed(qtbot, win, timeout=20_000):
    runner = win.review.runner
    qtbot.waitUntil(lambda: runner.current and not runner.busy, timeout=timeout)
    return runner.latest


def test_docks_show_the_cli_answers_and_follow_edits(qtbot, monkeypatch):
    import designer.model.report as report

    threads = []

    def spy(topology, progress=None):
        threads.append(threading.current_thread())
        return info(topology, progress)

    monkeypatch.setattr(report, "info", spy)
    win, error = open_window(qtbot)
    assert error is None
    try:
        rv = win.review
        topo = win.document.topology
        reviewed(qtbot, win)
        assert threads and all(t is not threading.main_thread() for t in threads)
        assert rv.problems.headline.text() == problems_headline(validate_design(topo))
        assert rv.bom.headline.text() == bom_headline(bom(topo))
        assert rv.info.headline.text() == info_headline(info(topo))
        assert "GB/s per GPU" in rv.info.headline.text()
        # the BOM says where its figures come from
        rows = [
            rv.bom.tree.topLevelItem(0).child(i)
            for i in range(rv.bom.tree.topLevelItem(0).childCount())
        ]
        assert rows and all(r.text(5) in ("assumption", "override") for r in rows)
        assert "Source:" in rows[0].toolTip(0)

        # An edit: one GPU's NVLink bundle over its ports (19 of 18 lanes).
        nv = next(
            lk
            for lk in topo.links()
            if lk.tech.startswith("nvlink") and topo.node(lk.a).kind == "gpu"
        )
        before = len(rv.runner.latest["problems"])
        topo.update_link(nv.id, count=nv.count + 1)
        qtbot.waitUntil(
            lambda: rv.runner.current and len(rv.runner.latest["problems"]) != before,
            timeout=20_000,
        )
        found = rv.runner.latest["problems"]
        assert [f.code for f in found if f.severity == "error"] == ["port-budget"]
        assert rv.problems.headline.text().startswith("1 error")

        # Clicking the finding selects its subject on the canvas.
        item = rv.problems.tree.topLevelItem(0)
        assert item.text(2) == "port-budget"
        rv.problems.show()
        rv.problems.raise_()
        rect = rv.problems.tree.visualItemRect(item)
        qtbot.mouseClick(rv.problems.tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        assert win.scene.selected_node_ids() == [found[0].subject]
    finally:
        close_window(win)


def test_docks_share_the_inspector_tabs_and_are_in_the_view_menu(qtbot):
    win, error = open_window(qtbot)
    assert error is None
    try:
        rv = win.review
        tabbed = set(win.tabifiedDockWidgets(win.inspector))
        assert {rv.problems, rv.bom, rv.info} <= tabbed
        bottom = [
            d
            for d in win.findChildren(QDockWidget)
            if win.dockWidgetArea(d) == Qt.DockWidgetArea.BottomDockWidgetArea
        ]
        assert not {rv.problems, rv.bom, rv.info} & set(bottom)
        titles = [a.text() for a in win.view_menu.actions()]
        assert {"Problems", "Bill of materials", "Info"} <= set(titles)
        files = win.file_menu.actions()
        export = files.index(win.actions_by_name["export"])
        assert files[export + 1] is win.review.export_action
    finally:
        close_window(win)


def test_a_job_that_does_not_fit_is_a_problem_that_selects_its_gpus(qtbot):
    from designer.workload.files import set_design_jobs
    from designer.workload.job import Job, Parallelism
    from designer.workload.presets import preset

    win, error = open_window(qtbot)
    assert error is None
    try:
        topo = win.document.topology
        gpus = tuple(sorted(n.id for n in topo.nodes("gpu"))[:8])
        job = Job.from_preset(
            "big",
            preset("llama3.1-70b"),
            parallel=Parallelism(tp=8),
            placement="explicit",
            gpus=gpus,
        )
        set_design_jobs(topo, [job])
        rv = win.review
        qtbot.waitUntil(
            lambda: (
                rv.runner.current
                and any(f.code == "job-memory" for f in rv.runner.latest["problems"])
            ),
            timeout=20_000,
        )
        finding = next(f for f in rv.problems.findings if f.code == "job-memory")
        rv.problems.activated.emit(finding)
        assert sorted(win.scene.selected_node_ids()) == sorted(gpus)
    finally:
        close_window(win)


def test_thousands_of_findings_are_counted_and_listed_up_to_the_cap(qtbot):
    from designer.gui.review.problems_dock import MAX_ROWS
    from designer.model.rules import Finding

    win, error = open_window(qtbot)
    assert error is None
    try:
        dock = win.review.problems
        many = [
            Finding("warning", "nvlink-lanes", f"g{i}", f"GPU g{i} is short of lanes")
            for i in range(MAX_ROWS + 5)
        ]
        dock.show_answer(many)
        assert dock.headline.text() == f"{MAX_ROWS + 5:,} warnings"
        assert dock.tree.topLevelItemCount() == MAX_ROWS + 1
        assert "5 more" in dock.tree.topLevelItem(MAX_ROWS).text(1)
        dock.tree.itemClicked.emit(dock.tree.topLevelItem(MAX_ROWS), 1)  # no finding: no-op
    finally:
        close_window(win)


def test_a_review_waits_for_the_solve_then_runs(qtbot, monkeypatch):
    """An edit's review does not share the interpreter with the solve that recolours
    the links: it starts once the window's solve is done (or after `MAX_DEFER_MS`)."""
    import designer.gui.review.runner as review_runner

    win, error = open_window(qtbot)
    assert error is None
    try:
        runner = win.review.runner
        reviewed(qtbot, win)
        solving = [True]
        runner.defer_while(lambda: solving[0])
        started = []
        runner.started.connect(started.append)
        topo = win.document.topology
        link = next(topo.links())
        topo.update_link(link.id, failed=True)  # an edit: the review is due
        qtbot.wait(runner._debounce_ms + 6 * review_runner.DEFER_POLL_MS)
        assert started == [] and runner.pending
        solving[0] = False
        qtbot.waitUntil(lambda: bool(started), timeout=5_000)
        reviewed(qtbot, win)

        # A solve that never ends holds the review back for MAX_DEFER_MS only.
        monkeypatch.setattr(runner._defer, "max_ms", 300)
        solving[0] = True
        started.clear()
        topo.update_link(link.id, failed=False)
        qtbot.waitUntil(lambda: bool(started), timeout=5_000)
    finally:
        close_window(win)


def test_the_window_defers_the_review_to_its_solve(qtbot):
    win, error = open_window(qtbot)
    assert error is None
    try:
        solve = win.analysis.runner
        reviewed(qtbot, win)
        solve.schedule()
        assert solve.pending or solve.busy
        assert win.review.runner._deferring()
    finally:
        close_window(win)


def test_the_window_defers_the_review_to_its_workload_simulation(qtbot):
    win, error = open_window(qtbot)
    assert error is None
    try:
        reviewed(qtbot, win)
        qtbot.waitUntil(lambda: not (win.analysis.runner.busy or win.analysis.runner.pending),
                        timeout=10_000)
        assert not win.review.runner._deferring()
        sim = win.workload.runner
        sim.schedule()
        assert sim.pending or sim.busy
        assert win.review.runner._deferring()
    finally:
        close_window(win)


def test_a_running_review_pauses_while_the_solve_runs(qtbot, monkeypatch):
    """A review already running when the solve starts again waits at its next pause
    point (between rules, every few thousand items rebuilt) until the solve is done."""
    import time

    import designer.workload.checks as checks

    real = checks.validate_design

    def slow(topology, progress=None):
        time.sleep(0.3)  # the solve starts meanwhile
        return real(topology, progress)

    monkeypatch.setattr(checks, "validate_design", slow)
    win, error = open_window(qtbot)
    assert error is None
    try:
        runner = win.review.runner
        reviewed(qtbot, win)
        solving = [False]
        runner.defer_while(lambda: solving[0])
        answers = []
        runner.answer.connect(lambda what, _value: answers.append(what))
        started = []
        runner.started.connect(started.append)
        topo = win.document.topology
        topo.update_link(next(topo.links()).id, failed=True)
        qtbot.waitUntil(lambda: bool(started), timeout=5_000)
        solving[0] = True
        qtbot.wait(800)
        assert answers == [] and runner.busy
        solving[0] = False
        qtbot.waitUntil(lambda: len(answers) == 3, timeout=10_000)
        assert runner.current
    finally:
        close_window(win)
