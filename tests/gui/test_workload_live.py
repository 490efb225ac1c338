"""The live workload simulation in the main window: adding or editing a job, or editing
the design, simulates every job again in the background; the dock shows each job's
iteration time and slowdown, the iteration timeline its lanes; stale results never
reach the views; the single-collective Scenario dock stays.

Runs the example design (4 HGX servers, 32 GPUs) with the tiny presets (8 GPUs each):
a simulation takes well under a second.
"""

from __future__ import annotations

import csv

from designer.gui.analysis.panels.base import format_seconds
from designer.gui.workload.dock import COL
from designer.gui.workload.runner import DEBOUNCE_MS
from designer.gui.workload.timeline import BARS, workload_bars
from designer.model.commands import MoveNodes, SetLinkProps, SetSetting
from tests.gui.conftest import close_window, open_window

#: Generous for a sub-second simulation on a loaded 2-core machine.
SOLVE_TIMEOUT_MS = 20_000


def _idle(runner) -> bool:
    return not runner.busy and not runner.pending


def simulated(qtbot, window):
    """The workload result of the design as it is now, waiting for it if needed."""
    runner = window.workload.runner
    topo = window.document.topology
    qtbot.waitUntil(
        lambda: (
            _idle(runner)
            and runner.latest is not None
            and runner.latest.generation == topo.generation
        ),
        timeout=SOLVE_TIMEOUT_MS,
    )
    return runner.latest


def with_two_jobs(qtbot, window, panel):
    """Add the two tiny presets, wait for their simulation, bring ``panel`` (a
    workload panel's attribute name) up; returns the result and the panel."""
    wl = window.workload
    wl.dock.add_job("tiny")
    wl.dock.add_job("tiny-moe")
    result = simulated(qtbot, window)
    shown = getattr(wl, panel)
    shown.show()
    shown.raise_()
    return result, shown


def test_a_job_is_simulated_and_shown_in_the_dock_and_the_timeline(qtbot, tmp_path):
    window, error = open_window(qtbot)
    assert error is None
    try:
        wl = window.workload
        assert window.analysis.scenario is not None  # the one-collective mode stays
        seen: list[tuple[int, int]] = []
        wl.runner.result_ready.connect(
            lambda r: (
                seen.append((r.generation, window.document.topology.generation))
                if r is not None
                else None
            )
        )
        with qtbot.waitSignal(wl.runner.started, timeout=SOLVE_TIMEOUT_MS):
            wl.dock.add_job("tiny")
        assert not wl.dock.answer.isEnabled()  # greyed while the simulation runs
        result = simulated(qtbot, window)
        (job,) = result.simulation.jobs
        # The runner's progress line leaves the status bar when its simulation ends.
        wl.runner.progress.emit("Simulating 1 job(s)…")
        assert window.statusBar().currentMessage() == "Simulating 1 job(s)…"
        wl.runner.result_ready.emit(result)
        assert window.statusBar().currentMessage() == ""
        assert wl.dock.answer.isEnabled()
        assert job.name == "tiny" and job.iteration_s > 0 and job.slowdown == 1.0
        assert wl.dock.table.item(0, COL["Iteration"]).text() == format_seconds(job.iteration_s)
        assert wl.dock.table.item(0, COL["Slowdown"]).text() == "1.000×"
        assert "tiny" in wl.dock.answer.text()

        # The timeline's bars were laid out on the worker thread, as the panel would.
        bars, labels = result.prepared[BARS]
        assert labels == workload_bars(result)[1] and list(bars) == list(workload_bars(result)[0])
        panel = wl.timeline
        panel.show()
        panel.raise_()
        qtbot.waitUntil(lambda: not panel.pending and bool(panel.bars), timeout=5_000)
        lanes = {text.split(" · ")[1] for _row, text in panel.row_labels}
        assert {"compute", "TP", "PP", "DP"} <= lanes
        bar = next(b for b in panel.bars if b.lane == "tp")
        mid = (bar.start_s + bar.end_s) / 2
        under = panel.bar_at(mid, bar.row)
        assert under.lane == "tp" and under.start_s <= mid <= under.end_s
        assert panel.bar_at(mid, bar.row + 0.5) is None  # between two lanes
        assert "per group" in bar.describe()

        path = panel.export_csv(tmp_path / "timeline.csv")
        with path.open() as f:
            rows = list(csv.DictReader(f))
        assert {r["lane"] for r in rows} >= {"compute", "tp", "pp", "dp"}
        assert all(r["job"] == "tiny" for r in rows)
        assert panel.export_png(tmp_path / "t.png").stat().st_size > 0

        # A second job and an edit of the design: each re-simulates both jobs.
        wl.dock.add_job("tiny-moe")
        nvlink = window.document.topology.link("n01-gpu0:n01-nvs0")
        window.document.push(SetLinkProps([nvlink.id], count=max(nvlink.count // 2, 1)))
        result = simulated(qtbot, window)
        assert [j.name for j in result.simulation.jobs] == ["tiny", "tiny-moe"]
        # Shared vs alone: each job's band marks where it would end alone.
        qtbot.waitUntil(lambda: not panel.pending, timeout=5_000)
        assert panel.alone_marks == {j.name: j.alone_s for j in result.simulation.jobs}
        # The capacity edit kept the collectives it cannot have changed.
        assert wl.runner.memo.last["kept"] > 0
        assert all(wl.dock.table.item(r, COL["Iteration"]).text() for r in range(2))
        # Every result shown was of the design as it was when it arrived.
        assert seen and all(g == now for g, now in seen)

        # Moving nodes or changing the single-collective scenario simulates nothing.
        runs = wl.runner.runs_started
        node = window.document.topology.node("n01-gpu0")
        window.document.push(MoveNodes({node.id: (node.x + 40.0, node.y)}))
        scenario = dict(window.document.topology.settings["scenario"], bytes=1 << 20)
        window.document.push(SetSetting("scenario", scenario))
        qtbot.wait(2 * DEBOUNCE_MS)
        assert wl.runner.runs_started == runs and not wl.runner.pending

        window.document.undo_stack.undo()
        window.document.undo_stack.undo()
        window.document.undo_stack.undo()
        window.document.undo_stack.undo()
        result = simulated(qtbot, window)
        assert [j.name for j in result.simulation.jobs] == ["tiny"]
        assert wl.dock.table.rowCount() == 1
    finally:
        close_window(window)


def test_a_job_the_design_cannot_hold_says_why_and_cancel_stops_a_run(qtbot):
    window, error = open_window(qtbot)
    assert error is None
    try:
        wl = window.workload
        wl.dock.add_job("tiny")
        simulated(qtbot, window)
        for _ in range(4):  # 5 x 8 GPUs on a 32-GPU design
            wl.dock.duplicate_job()
        with qtbot.waitSignal(wl.runner.failed, timeout=SOLVE_TIMEOUT_MS) as blocker:
            pass
        assert "tiny-5" in blocker.args[1]
        assert wl.dock.status.text().startswith("Simulation failed:")
        assert all(wl.dock.table.item(r, COL["Iteration"]).text() == "" for r in range(5))

        # Cancel the moment the next simulation starts (a click in the started slot:
        # before the worker can have finished, however fast it is).
        clicked = []

        def cancel(_generation):
            if not clicked:
                clicked.append(wl.dock.cancel_button.isVisible())
                wl.dock.cancel_button.click()

        wl.runner.started.connect(cancel)
        with qtbot.waitSignal(wl.runner.cancelled, timeout=SOLVE_TIMEOUT_MS):
            window.document.undo_stack.undo()  # 4 jobs again: fits
        assert clicked == [True]
        qtbot.waitUntil(lambda: _idle(wl.runner), timeout=SOLVE_TIMEOUT_MS)
        assert wl.runner.latest is None
        assert "cancelled" in wl.dock.status.text()
    finally:
        close_window(window)


def test_timeline_lane_names_never_overlap(qtbot):
    """Rows shorter than a line of text: each job's name at the middle of its band;
    tall enough: every lane named."""
    window, error = open_window(qtbot)
    assert error is None
    try:
        wl = window.workload
        _result, panel = with_two_jobs(qtbot, window, "timeline")
        qtbot.waitUntil(lambda: not panel.pending and bool(panel.bars), timeout=5_000)
        panel.setFloating(True)
        panel.resize(700, 900)
        qtbot.waitUntil(lambda: len(panel.lane_labels()) == len(panel.row_labels),
                        timeout=5_000)
        assert panel.plot.getAxis("left")._tickLevels[0] == panel.lane_labels()
        panel.resize(700, 160)
        qtbot.waitUntil(lambda: len(panel.lane_labels()) == 2, timeout=5_000)
        names = [text for _row, text in panel.lane_labels()]
        assert names == [j.name for j in wl.dock.jobs]
        rows = {text.split(" · ")[0]: [] for _r, text in panel.row_labels}
        for r, text in panel.row_labels:
            rows[text.split(" · ")[0]].append(r)
        for row, name in panel.lane_labels():
            assert min(rows[name]) <= row <= max(rows[name])
        assert panel.plot.getAxis("left")._tickLevels[0] == panel.lane_labels()
    finally:
        close_window(window)


def test_the_dock_shows_how_far_the_simulation_is(qtbot, monkeypatch):
    window, error = open_window(qtbot)
    assert error is None
    try:
        wl = window.workload
        seen: list[tuple[int, int]] = []
        wl.runner.percent.connect(lambda gen, pct: seen.append((gen, pct)))
        with qtbot.waitSignal(wl.runner.started, timeout=SOLVE_TIMEOUT_MS) as started:
            wl.dock.add_job("tiny")
        generation = started.args[0]
        simulated(qtbot, window)
        assert seen and seen[-1] == (generation, 100)
        assert [p for _g, p in seen] == sorted(p for _g, p in seen)
        # While a simulation runs, its percentage is in the dock's status line.
        monkeypatch.setattr(type(wl.runner), "busy", property(lambda _self: True))
        wl.runner.percent.emit(generation, 37)
        assert wl.dock.status.text() == "Simulating… 37%"
        wl.runner.percent.emit(generation + 1, 50)  # another simulation's: ignored
        assert wl.dock.status.text() == "Simulating… 37%"
        monkeypatch.undo()
    finally:
        close_window(window)


def test_the_answer_on_the_canvas_starts_first_after_an_edit(qtbot):
    """Both runners answer an edit of the links; the one whose colours the canvas shows
    starts first and the other waits for it (they share one interpreter): the jobs'
    simulation while the links show the jobs, the window's solve in collective mode."""
    window, error = open_window(qtbot)
    assert error is None
    try:
        wl, solve = window.workload, window.analysis.runner
        wl.dock.add_job("tiny")
        simulated(qtbot, window)
        qtbot.waitUntil(lambda: _idle(solve), timeout=SOLVE_TIMEOUT_MS)
        order: list[tuple[str, bool]] = []  # (who started, whether the other was busy)
        wl.runner.started.connect(lambda _g: order.append(("simulation", solve.busy)))
        solve.started.connect(lambda _g: order.append(("solve", wl.runner.busy)))
        topo = window.document.topology
        link = next(lk for lk in topo.links() if "spine" in lk.a + lk.b)
        for mode, first in (("mean", "simulation"), ("collective", "solve")):
            wl.overlay.set_link_mode(mode)
            order.clear()
            window.document.push(SetLinkProps([link.id], failed=not link.failed))
            link = topo.link(link.id)
            qtbot.waitUntil(lambda: len(order) == 2 and _idle(wl.runner) and _idle(solve),
                            timeout=SOLVE_TIMEOUT_MS)
            assert [who for who, _ in order] == [first, ({"simulation", "solve"} - {first}).pop()]
            assert order[1][1] is False, mode  # the second waited for the first to end
    finally:
        close_window(window)
