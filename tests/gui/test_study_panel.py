"""The Resilience panel: a failure study of the open design run from the GUI, in the
background, its results listed worst first, a row selecting its element on the canvas,
"Apply as what-if" failing it as one undoable step, Cancel stopping the study."""

from __future__ import annotations

import math
import threading

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog

from designer.model.commands import SetNodeProps
from designer.model.templates import build_template


@pytest.fixture
def study(window):
    """The window on a small leaf-spine design, and its Resilience panel."""
    window.document.replace(build_template("leaf-spine"))
    return window, window.studies.panel


def _run(qtbot, panel, elements: str):
    with qtbot.waitSignal(panel.runner.result_ready, timeout=30_000) as got:
        assert panel.run(elements)
    return got.args[0]


def _slowdown_keys(panel) -> list[float]:
    return [
        panel.table.item(r, 4).data(Qt.ItemDataRole.UserRole)[0]
        for r in range(panel.table.rowCount())
    ]


def test_menu_runs_a_study_listed_worst_first(study, qtbot, monkeypatch):
    window, panel = study
    monkeypatch.setattr(QInputDialog, "getItem", lambda *a, **k: ("Switches", True))
    with qtbot.waitSignal(panel.runner.result_ready, timeout=30_000) as got:
        window.studies.run_action.trigger()
    report = got.args[0]
    switches = {n.id for n in window.document.topology.nodes() if n.kind in ("leaf", "spine")}
    assert set(panel.element_ids()) == switches == {e.id for e in report.elements}
    keys = _slowdown_keys(panel)
    assert keys == sorted(keys, reverse=True)
    assert panel.isVisible() and "this process" in panel.status.text()
    assert panel.bar.value() == 100
    assert panel.run_button.isEnabled() and not panel.cancel_button.isEnabled()


def test_all_elements_worst_first_and_resortable(study, qtbot):
    _window, panel = study
    report = _run(qtbot, panel, "all")
    rows = panel.table.rowCount()
    assert rows == len(report.elements) > 0
    assert panel.element_ids() == [e.id for e in report.elements]  # the study's worst first
    keys = _slowdown_keys(panel)
    assert keys == sorted(keys, reverse=True)
    # Worst first: the elements whose failure cuts ranks off (a NIC's only link) on top.
    cut = sum(not e.connected for e in report.elements)
    assert cut > 0 and keys[:cut] == [math.inf] * cut and math.inf not in keys[cut:]
    # Sortable: by class size ascending, then back to worst first.
    panel.table.sortByColumn(2, Qt.SortOrder.AscendingOrder)
    sizes = [panel.table.item(r, 2).data(Qt.ItemDataRole.UserRole) for r in range(rows)]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    panel.table.sortByColumn(4, Qt.SortOrder.DescendingOrder)
    assert _slowdown_keys(panel) == keys
    assert panel.element_ids() == [e.id for e in report.elements]


def _click_row(qtbot, panel, row: int) -> None:
    rect = panel.table.visualItemRect(panel.table.item(row, 1))
    qtbot.mouseClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


@pytest.mark.parametrize("elements, kind", [("links", "link"), ("switches", "node")])
def test_click_selects_and_apply_is_one_undoable_step(study, qtbot, elements, kind):
    window, panel = study
    _run(qtbot, panel, elements)
    panel.table.scrollToBottom()
    row = panel.table.rowCount() - 1
    panel.table.scrollToItem(panel.table.item(row, 0))
    _click_row(qtbot, panel, row)
    ident = panel.element_ids()[row]
    assert panel.selected_id() == ident
    nodes, links = window.scene.selected_node_ids(), window.scene.selected_link_ids()
    assert (links if kind == "link" else nodes) == [ident]
    assert (nodes if kind == "link" else links) == []
    topo = window.document.topology
    get = topo.link if kind == "link" else topo.node
    assert not get(ident).failed
    stack = window.document.undo_stack
    before = stack.count()
    assert panel.apply_button.isEnabled()
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    assert get(ident).failed
    assert stack.count() == before + 1
    assert "changed since" in panel.status.text()
    stack.undo()
    assert not get(ident).failed
    assert "changed since" not in panel.status.text()


def test_cancel_stops_the_study(study, qtbot, monkeypatch):
    """Cancel at the first finished task stops the solves there: the study never gets
    to the end of its first stage (each failure is its own task here, so there are many
    steps to stop between, and the tasks after the first wait for the click, so a busy
    machine cannot finish the stage first)."""
    from designer.studies import engine, failures

    monkeypatch.setattr(
        failures, "batches", lambda items, per, workers: engine.batches(items, per, workers, 0.0)
    )
    clicked = threading.Event()
    tasks = []
    run_batch = failures.run_batch

    def paced(base, items):
        tasks.append(len(items))
        if len(tasks) > 1:
            clicked.wait(10)
        return run_batch(base, items)

    monkeypatch.setattr(failures, "run_batch", paced)
    _window, panel = study
    results, cancelled, seen = [], [], []
    panel.runner.result_ready.connect(results.append)
    panel.runner.cancelled.connect(lambda: cancelled.append(True))

    def on_progress(percent, stage):
        if stage.startswith("N-1"):
            seen.append(percent)
            if len(seen) == 1:
                panel.cancel_button.click()
                clicked.set()

    panel.runner.progress.connect(on_progress)
    assert panel.run("all")
    assert panel.cancel_button.isEnabled() and not panel.run_button.isEnabled()
    qtbot.waitUntil(lambda: not panel.runner.busy, timeout=30_000)
    assert cancelled == [True] and results == []
    assert seen and max(seen) < 100
    assert panel.status.text() == "Study cancelled."
    assert panel.run_button.isEnabled() and not panel.cancel_button.isEnabled()


def test_a_study_of_an_edited_design_is_dropped(study, qtbot):
    window, panel = study
    results, failed = [], []
    panel.runner.result_ready.connect(results.append)
    panel.runner.failed.connect(failed.append)
    assert panel.run("switches")
    spine = next(n.id for n in window.document.topology.nodes() if n.kind == "spine")
    window.document.push(SetNodeProps([spine], name="renamed"))
    qtbot.waitUntil(lambda: not panel.runner.busy, timeout=30_000)
    assert results == [] and len(failed) == 1 and "changed" in failed[0]
    assert panel.table.rowCount() == 0


def test_opening_another_design_clears_the_table(study, qtbot):
    window, panel = study
    _run(qtbot, panel, "switches")
    assert panel.table.rowCount() > 0
    window.document.replace(build_template("fat-tree", k=4))
    assert panel.table.rowCount() == 0 and not panel.apply_button.isEnabled()
    assert panel.status.text() == "No study of this design yet."


def test_shutdown_waits_for_a_running_study(study, qtbot):
    _window, panel = study
    assert panel.run("all")
    run = panel.runner._run
    assert run.entered.wait(10)  # the study is under way
    panel.runner.shutdown(timeout=30)
    assert run.done.is_set() and not panel.runner.busy
