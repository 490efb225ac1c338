"""The panels tell the user what they show: whether it is out of date while a re-solve
runs, which baseline is which when a failed link is all that differs, and the link the
user picked in the link-load table across re-solves."""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import Qt

from designer.gui.analysis import runner as runner_module
from designer.gui.analysis.panels import LinkLoadPanel
from designer.gui.analysis.panels.linkload import link_loads
from designer.gui.analysis.runner import analyse
from designer.gui.app import application
from designer.gui.idle import IdleWork
from designer.model.commands import SetLinkProps
from designer.model.scenario import Scenario
from designer.model.templates import build_template
from designer.solver.snapshot.build import take_snapshot
from tests.gui.test_live import SOLVE_TIMEOUT_MS, quiet, solved

#: An NVLink bundle of the example that the ring all-reduce loads.
NVLINK = "n01-gpu0:n01-nvs0"


@pytest.fixture
def live(qtbot, window):
    """The window with its first analysis applied; the runner stopped afterwards."""
    quiet(qtbot, window)
    yield window
    window.analysis.runner.shutdown()


def _panels_drawn(window) -> bool:
    idle = IdleWork.instance()
    return not any(p.pending or idle.pending(p) for p in window.analysis.panels if p.isVisible())


# ---------------------------------------------------------------------- out of date
def test_panels_are_marked_out_of_date_while_a_re_solve_runs(qtbot, live, monkeypatch):
    """An edit starts a solve that takes a while: every panel says it is updating until
    the new result is drawn, then says nothing."""
    gate = threading.Event()
    real = runner_module.analyse

    def slow(snap, scenario, ranks, training, cancelled, *args, **kwargs):
        while not gate.is_set():  # a long solve, held until the test lets it finish
            if cancelled():
                raise runner_module._Cancelled
            time.sleep(0.005)
        return real(snap, scenario, ranks, training, cancelled, *args, **kwargs)

    monkeypatch.setattr(runner_module, "analyse", slow)
    runner, panels = live.analysis.runner, live.analysis.panels
    qtbot.waitUntil(lambda: _panels_drawn(live), timeout=SOLVE_TIMEOUT_MS)
    assert not any(p.outdated for p in panels)
    assert not any(p.outdated_badge.isVisibleTo(p) for p in panels)

    with qtbot.waitSignal(runner.started, timeout=SOLVE_TIMEOUT_MS):
        live.document.push(SetLinkProps([NVLINK], failed=True))
    qtbot.wait(100)  # the solve is under way, and stays so
    assert runner.busy
    for panel in panels:
        assert panel.outdated, panel.objectName()
        assert panel.outdated_badge.isVisibleTo(panel)
        assert "updating" in panel.outdated_badge.text().lower()
        assert panel.faded()  # the old figures are greyed out

    with qtbot.waitSignal(runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
        gate.set()
    qtbot.waitUntil(lambda: _panels_drawn(live), timeout=SOLVE_TIMEOUT_MS)
    for panel in panels:
        # Hidden (tabbed) panels draw when shown; shown ones are fresh now.
        if panel.isVisible():
            assert not panel.outdated and not panel.faded(), panel.objectName()
            assert not panel.outdated_badge.isVisibleTo(panel)


# ---------------------------------------------------------------------- A/B labels
def test_baselines_differing_only_by_a_failed_link_read_differently(qtbot, live):
    analysis = live.analysis
    busbw = analysis.busbw
    solved(qtbot, live)
    qtbot.waitUntil(lambda: _panels_drawn(live), timeout=SOLVE_TIMEOUT_MS)
    healthy = busbw.pin_baseline()

    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
        analysis.overlay.set_failed(link_ids=[NVLINK], failed=True)
    qtbot.waitUntil(lambda: _panels_drawn(live), timeout=SOLVE_TIMEOUT_MS)
    current = busbw.curve.name()
    assert NVLINK in current  # the failed link is named
    assert current.split(": ", 1)[1] != healthy.split(": ", 1)[1]
    failed = busbw.pin_baseline()
    assert NVLINK in failed

    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
        live.document.undo_stack.undo()  # the link restored
    qtbot.waitUntil(lambda: _panels_drawn(live), timeout=SOLVE_TIMEOUT_MS)
    restored = busbw.curve.name()
    assert NVLINK not in restored
    assert restored.split(": ", 1)[1] != failed.split(": ", 1)[1]
    legend = [label.text for _, label in busbw.legend.items]
    assert len(legend) == len(set(legend)) == 3


# ---------------------------------------------------------------------- link-load table
@pytest.fixture(scope="module")
def before_and_after():
    """The example solved, then solved again with its busiest link failed: the table's
    rows move."""
    topo = build_template("example")
    before = analyse(take_snapshot(topo), Scenario(), None, None, lambda: False)
    (busiest,) = link_loads(before, top=1)
    SetLinkProps([busiest.link_id], failed=True).do(topo)
    after = analyse(take_snapshot(topo), Scenario(), None, None, lambda: False)
    return before, after


def _table_panel(qtbot):
    application()
    panel = LinkLoadPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 320)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


def _highlighted(panel) -> list[str]:
    table = panel.table
    return [table.item(i.row(), 0).text() for i in table.selectionModel().selectedRows()]


def test_the_link_table_keeps_the_chosen_link_not_the_row_across_re_solves(qtbot, before_and_after):
    before, after = before_and_after
    panel = _table_panel(qtbot)
    panel.set_result(before)
    rows_before = [link for link, _ in panel.top_rows()]
    panel.set_result(after)
    rows_after = [link for link, _ in panel.top_rows()]
    # A link on both tables whose row moved.
    moved = [
        lk
        for lk in rows_before
        if lk in rows_after and rows_before.index(lk) != rows_after.index(lk)
    ]
    assert moved
    chosen = moved[0]
    panel.set_result(before)
    table = panel.table
    rect = table.visualItemRect(table.item(rows_before.index(chosen), 1))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert _highlighted(panel) == [chosen]

    panel.set_result(after)
    assert _highlighted(panel) == [chosen]
    assert table.currentRow() == rows_after.index(chosen)
    panel.set_result(before)
    assert _highlighted(panel) == [chosen]


def test_the_link_table_highlights_nothing_when_no_link_was_chosen(qtbot, before_and_after):
    before, after = before_and_after
    panel = _table_panel(qtbot)
    panel.set_result(before)
    panel.table.setFocus()
    panel.set_result(after)
    panel.set_result(before)
    assert _highlighted(panel) == []


def test_the_chosen_link_is_highlighted_again_when_it_comes_back(qtbot, before_and_after):
    before, after = before_and_after
    panel = _table_panel(qtbot)
    panel.set_result(before)
    rows_before = [link for link, _ in panel.top_rows()]
    panel.set_result(after)
    gone = [lk for lk in rows_before if lk not in {link for link, _ in panel.top_rows()}]
    assert gone  # the failed link at least
    panel.set_result(before)
    panel.table.selectRow(rows_before.index(gone[0]))
    assert _highlighted(panel) == [gone[0]]
    panel.set_result(after)
    assert _highlighted(panel) == []  # not on the table: nothing else stands in for it
    panel.set_result(before)
    assert _highlighted(panel) == [gone[0]]
