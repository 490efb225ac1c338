"""The live analysis in the main window: edits re-solve in the background once per debounce,
stale results are dropped, the canvas and the panels show the newest result, what-if
failures and scenario changes are undoable, errors leave the design editable, and closing
the window leaves no solver thread behind.

Every test drives the real window (``window`` fixture) and waits on the runner's signals;
the thread-leak guard in ``tests/conftest.py`` checks each test ends with no worker alive.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from designer.gui.analysis.overlay import util_color
from designer.gui.analysis.runner import DEBOUNCE_MS, utilisation_by_link
from designer.gui.idle import IdleWork
from designer.io.fabric_json import load
from designer.model.commands import AddGroup, SetLinkProps, SetNodeProps, SetSetting
from designer.model.templates import build_template
from designer.model.topology import Group
from tests.gui.conftest import close_window, open_window

#: Generous for a ~0.1 s solve of the example on a loaded 2-core machine.
SOLVE_TIMEOUT_MS = 10_000
#: An NVLink bundle of the example (5 x NVLink4) that the ring all-reduce loads at ~89 %.
NVLINK = "n01-gpu0:n01-nvs0"


class Recorder:
    """Every emission of the runner's signals, in order."""

    def __init__(self, runner):
        self.started: list[int] = []
        self.focus: list = []
        self.results: list = []
        self.failed: list[tuple[int, str]] = []
        runner.started.connect(self.started.append)
        runner.focus_ready.connect(self.focus.append)
        runner.result_ready.connect(self.results.append)
        runner.failed.connect(lambda g, text: self.failed.append((g, text)))


def _idle(window) -> bool:
    runner = window.analysis.runner
    return not runner.busy and not runner.pending


def solved(qtbot, window):
    """The result of the design as it is now, waiting for it if needed."""
    runner = window.analysis.runner
    topo = window.document.topology

    def current() -> bool:
        # The result is emitted before the worker's "finished" clears `busy`: a result of
        # this generation with the runner still finishing is waited out, not re-awaited.
        latest = runner.latest
        return latest is not None and latest.generation == topo.generation and _idle(window)

    qtbot.waitUntil(current, timeout=SOLVE_TIMEOUT_MS)
    return runner.latest


def quiet(qtbot, window):
    """The current result, after a debounce interval with no solve (the leading edge is
    armed again, as after an architect's pause)."""
    result = solved(qtbot, window)
    qtbot.wait(DEBOUNCE_MS + 50)
    return result


@pytest.fixture
def live(qtbot, window):
    """The window with its first analysis applied; the runner stopped afterwards."""
    quiet(qtbot, window)
    yield window
    window.analysis.runner.shutdown()


# ---------------------------------------------------------------------- scheduling
def test_one_edit_starts_exactly_one_solve(qtbot, live):
    runner = live.analysis.runner
    rec = Recorder(runner)
    with qtbot.waitSignal(runner.result_ready, timeout=SOLVE_TIMEOUT_MS) as blocker:
        live.document.push(SetLinkProps([NVLINK], failed=True))
    generation = live.document.topology.generation
    qtbot.wait(2 * DEBOUNCE_MS)  # nothing more may start once the debounce has passed
    assert rec.started == [generation]
    assert len(rec.results) == 1 and rec.failed == []
    assert blocker.args[0].generation == generation
    # The canvas recolours from the early focus result of the same generation.
    assert [r.generation for r in rec.focus] == [generation]
    snap = blocker.args[0].snapshot
    assert not snap.live_links()[snap.link_positions()[NVLINK]]  # dead in the snapshot


def test_a_burst_of_edits_applies_one_result_of_the_newest_generation(qtbot, live):
    runner = live.analysis.runner
    rec = Recorder(runner)
    links = [f"n01-gpu{g}:n01-nvs0" for g in range(5)]
    generations = []
    for lid in links:  # five quick edits: the first starts a solve, the others make it stale
        live.document.push(SetLinkProps([lid], failed=True))
        generations.append(live.document.topology.generation)
        QApplication.processEvents()
    generation = live.document.topology.generation
    result = solved(qtbot, live)
    qtbot.wait(2 * DEBOUNCE_MS)
    assert len(rec.results) == 1, [r.generation for r in rec.results]
    assert rec.results[0] is result is runner.latest
    assert result.generation == generation == live.document.topology.generation
    # The leading edge solved the first edit at once; the trailing edge solved the last.
    assert rec.started[0] == generations[0] and rec.started[-1] == generation
    assert rec.started == sorted(set(rec.started))
    snap = result.snapshot  # it solved the final design: those links dead
    assert not any(snap.live_links()[snap.link_positions()[lid]] for lid in links)
    assert all(r.generation == generation for r in rec.focus)


# ---------------------------------------------------------------------- canvas
def test_link_colours_follow_the_solver_utilisation(qtbot, live):
    analysis = live.analysis
    result = solved(qtbot, live)
    links = live.scene.links
    util = result.focus.arc_util
    for k, lid in enumerate(result.snapshot.link_ids):
        expected = util_color(max(float(util[2 * k]), float(util[2 * k + 1])))
        assert links[lid].color == expected, lid
    # The example's rails saturate and some links carry nothing: both extremes appear.
    colours = {links[lid].color.name() for lid in result.snapshot.link_ids}
    assert len(colours) >= 3
    assert analysis.overlay.legend.isVisible()

    assert analysis.colour_action is live.actions_by_name["colour_util"]
    live.view.setFocus()
    qtbot.keyClick(live.view.viewport(), Qt.Key.Key_U)  # technology colours
    assert not analysis.colour_action.isChecked()
    assert all(item.color == item.base_color for item in links.values())
    assert not analysis.overlay.legend.isVisible()
    analysis.colour_action.setChecked(True)
    hot = max(utilisation_by_link(result).items(), key=lambda kv: kv[1])
    assert links[hot[0]].color == util_color(hot[1])


def test_failing_a_link_changes_the_result_and_undo_restores_it(qtbot, live):
    analysis = live.analysis
    before = solved(qtbot, live)
    util_before = utilisation_by_link(before)
    assert util_before[NVLINK] > 0.5  # it carries traffic

    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
        analysis.overlay.set_failed(link_ids=[NVLINK], failed=True)  # the context menu's
    failed = solved(qtbot, live)
    assert live.document.topology.link(NVLINK).failed
    assert not failed.snapshot.live_links()[failed.snapshot.link_positions()[NVLINK]]
    assert live.scene.links[NVLINK].color == util_color(0.0)
    util_after = utilisation_by_link(failed)
    assert failed.focus.busbw_GBps[0] < before.focus.busbw_GBps[0] * 0.95
    # The GPU's other NVLink bundles take its share.
    sibling = "n01-gpu0:n01-nvs1"
    assert util_after[sibling] > util_before[sibling] + 0.05

    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
        live.document.undo_stack.undo()
    restored = solved(qtbot, live)
    assert not live.document.topology.link(NVLINK).failed
    assert NVLINK in restored.snapshot.link_ids
    np.testing.assert_allclose(restored.focus.busbw_GBps, before.focus.busbw_GBps, rtol=1e-9)
    np.testing.assert_allclose(restored.sweep.busbw_GBps, before.sweep.busbw_GBps, rtol=1e-9)
    assert live.scene.links[NVLINK].color == util_color(util_before[NVLINK])


# ---------------------------------------------------------------------- panels
def test_each_panel_shows_the_last_result(qtbot, live):
    analysis = live.analysis
    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS):
        live.document.push(SetLinkProps([NVLINK], failed=True))  # not the startup result
    result = solved(qtbot, live)
    for panel in analysis.panels:
        panel.raise_()  # a tabbed-away dock draws when it is shown
        qtbot.waitUntil(panel.isVisible, timeout=2000)
        assert panel.result is result, panel.objectName()
        # Drawn on a later turn of the event loop, one panel per turn.
        qtbot.waitUntil(lambda p=panel: not p.pending, timeout=2000)

    x, y = analysis.busbw.curve.getData()
    np.testing.assert_array_equal(y, result.sweep.busbw_GBps)
    np.testing.assert_allclose(2**x, result.sweep.sizes)

    assert len(analysis.timeline.bar_item.opts["x0"]) == len(result.focus.timeline) >= 1

    util = utilisation_by_link(result)
    top_id, top_pct = analysis.linkload.top_rows()[0]
    assert util[top_id] == max(util.values())
    assert top_pct == pytest.approx(100 * max(util.values()), abs=0.05)
    shown = [pct for _lid, pct in analysis.linkload.top_rows()]
    assert shown == sorted(shown, reverse=True)

    dist = result.training.distribution
    assert analysis.jitter.lines["p50"].value() == dist.p50_s
    assert analysis.jitter.lines["p99"].value() == dist.p99_s
    _header, rows = analysis.jitter.data_rows()
    assert len(rows) == len(dist.samples_s)


# ---------------------------------------------------------------------- scenario dock
def test_scenario_dock_collective_resolves_is_undoable_and_saved(qtbot, live, tmp_path):
    analysis = live.analysis
    dock, stack = analysis.scenario, live.document.undo_stack
    combo = dock.collective
    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS) as blocker:
        combo.setCurrentText("alltoall")
        combo.activated.emit(combo.currentIndex())  # what a user's pick sends
    result = blocker.args[0]
    assert result.scenario.collective == result.focus.collective == "alltoall"
    assert result.sweep.collective == "alltoall"
    assert live.document.topology.settings["scenario"]["collective"] == "alltoall"
    assert stack.canUndo() and live.document.is_modified
    assert "Solved" in dock.status.text()

    path = live.document.save(tmp_path / "a2a.fabric.json")
    assert load(path).settings["scenario"]["collective"] == "alltoall"

    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS) as blocker:
        stack.undo()
    assert blocker.args[0].focus.collective == "allreduce"
    assert live.document.topology.settings["scenario"]["collective"] == "allreduce"
    assert combo.currentText() == "allreduce"
    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS) as blocker:
        stack.redo()
    assert blocker.args[0].focus.collective == "alltoall"
    assert combo.currentText() == "alltoall"


def test_ranks_from_a_group_are_its_gpus(qtbot, live):
    """A group's members are read on the GUI thread and resolved on the worker."""
    solved(qtbot, live)
    document = live.document
    value = dict(document.topology.settings["scenario"], ranks="group:n02")
    with qtbot.waitSignal(live.analysis.runner.result_ready,
                          timeout=SOLVE_TIMEOUT_MS) as blocker:
        document.push(SetSetting("scenario", value))
    result = blocker.args[0]
    snap = result.snapshot
    assert result.focus.n_ranks == 8
    assert sorted(snap.node_ids[snap.gpus[r]] for r in result.ranks) == [
        f"n02-gpu{i}" for i in range(8)]


# ---------------------------------------------------------------------- errors
def _rank_group_without_gpus(document):
    """Ranks from the storage rack: no GPUs (refused by the worker, one line)."""
    value = dict(document.topology.settings["scenario"], ranks="group:storage")
    document.push(SetSetting("scenario", value))
    return "storage"


def _every_rail_leaf_failed(document):
    """No GPU can leave its server: the worker's solver finds no algorithm."""
    leaves = [n.id for n in document.topology.nodes() if n.id.startswith("leaf-r")]
    assert len(leaves) == 8
    document.push(SetNodeProps(leaves, failed=True))
    return "allreduce"


@pytest.mark.parametrize("break_it", [_rank_group_without_gpus, _every_rail_leaf_failed])
def test_a_failed_solve_is_reported_and_the_design_stays_editable(qtbot, live, break_it):
    analysis, document = live.analysis, live.document
    with qtbot.waitSignal(analysis.runner.failed, timeout=SOLVE_TIMEOUT_MS) as blocker:
        culprit = break_it(document)
    generation, text = blocker.args
    assert generation == document.topology.generation
    assert culprit in text
    qtbot.waitUntil(lambda: _idle(live), timeout=SOLVE_TIMEOUT_MS)
    assert text in live.statusBar().currentMessage()
    assert text in analysis.scenario.status.text()
    for panel in analysis.panels:
        assert panel.result is None and text in panel.message, panel.objectName()
    # No stale colours: the canvas falls back to technology colours.
    assert all(item.color == item.base_color for item in live.scene.links.values())

    # Still editable: a later edit gets a fresh, good result.
    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS) as blocker:
        document.undo_stack.undo()
    result = blocker.args[0]
    assert result.generation == document.topology.generation
    assert result.focus.busbw_GBps[0] > 0
    assert "Analysis updated" in live.statusBar().currentMessage()
    for panel in analysis.panels:
        assert panel.result is result and panel.message == "", panel.objectName()


# ---------------------------------------------------------------------- threads
def test_closing_the_window_mid_solve_leaves_no_thread(qtbot):
    win, error = open_window(qtbot)
    assert error is None
    runner = win.analysis.runner
    solved(qtbot, win)
    with qtbot.waitSignal(runner.started, timeout=SOLVE_TIMEOUT_MS):
        win.document.push(SetLinkProps([NVLINK], failed=True))
    close_window(win)
    assert not win.isVisible()
    assert not runner.busy
    assert not runner.pending
    # The cancelled worker's late completion is dropped and starts nothing.
    QApplication.processEvents()
    qtbot.wait(2 * DEBOUNCE_MS)
    assert not runner.busy and not runner.pending


def test_colour_mode_is_a_view_menu_action_with_a_shortcut(qtbot, live):
    action, overlay = live.analysis.colour_action, live.analysis.overlay
    result = solved(qtbot, live)
    assert action.isChecked() and action.shortcut().toString() == "U"
    assert action in live.view_menu.actions()
    action.trigger()
    assert not overlay.by_utilisation and overlay.legend.isHidden()
    action.trigger()
    assert overlay.by_utilisation and overlay.legend.isVisible()
    assert set(overlay.utilisation) == set(result.snapshot.link_ids)


def test_a_long_solve_shows_a_busy_bar_and_can_be_cancelled(live, qtbot, monkeypatch):
    import time

    from designer.gui.analysis import runner as runner_module
    from designer.solver import Cancelled

    def endless(snap, scenario, ranks, training, cancelled, **_options):
        while not cancelled():  # a solve that only stops when asked to
            time.sleep(0.005)
        raise Cancelled

    monkeypatch.setattr(runner_module, "analyse", endless)
    runner = live.analysis.runner
    bar, button = live.analysis_busy
    before = runner.latest
    with qtbot.waitSignal(runner.started, timeout=SOLVE_TIMEOUT_MS):
        live.document.push(SetLinkProps(["n01-gpu0:n01-nvs0"], failed=True))
    assert bar.isVisible() and button.isVisible()
    with qtbot.waitSignal(runner.cancelled, timeout=SOLVE_TIMEOUT_MS):
        button.click()
    qtbot.waitUntil(lambda: not runner.busy, timeout=SOLVE_TIMEOUT_MS)
    assert not bar.isVisible() and not button.isVisible()
    assert runner.latest is before  # nothing applied
    assert "cancelled" in live.statusBar().currentMessage().lower()
    monkeypatch.undo()  # the real solver again: the next edit solves
    with qtbot.waitSignal(runner.result_ready, timeout=SOLVE_TIMEOUT_MS) as got:
        live.document.undo_stack.undo()
    assert got.args[0].generation == live.document.topology.generation


def test_ranks_from_the_selection_are_the_selected_gpus_by_id(qtbot, live):
    analysis = live.analysis
    dock, scene = analysis.scenario, live.scene
    combo = dock.ranks
    pick = combo.findData("selection")
    messages = []
    dock.message.connect(messages.append)
    # Nothing selected: refused with a hint, the scenario unchanged.
    scene.clearSelection()
    combo.setCurrentIndex(pick)
    combo.activated.emit(pick)
    assert live.document.topology.settings["scenario"]["ranks"] == "all"
    assert messages and "at least two GPUs" in messages[-1]
    # Two GPUs and a switch selected: the two GPUs become the ranks.
    for nid in ("n01-gpu0", "n02-gpu3", "n01-nvs0"):
        scene.nodes[nid].setSelected(True)
    with qtbot.waitSignal(analysis.runner.result_ready, timeout=SOLVE_TIMEOUT_MS) as blocker:
        combo.setCurrentIndex(combo.findData("selection"))
        combo.activated.emit(combo.currentIndex())
    assert live.document.topology.settings["scenario"]["ranks"] == ["n01-gpu0", "n02-gpu3"]
    assert blocker.args[0].focus.n_ranks == 2


def test_the_heap_is_frozen_once_after_each_opened_designs_first_result(qtbot, window,
                                                                        monkeypatch):
    """Big tables the views build after opening leave the collector's passes (see
    `freeze_survivors`): once per opened design, once the background work is over."""
    import designer.gui.analysis.install as install

    calls: list[bool] = []
    monkeypatch.setattr(install, "freeze_survivors",
                        lambda: calls.append(len(IdleWork.instance()._tasks)))
    document = window.document
    document.replace(build_template("hgx"))
    solved(qtbot, window)
    qtbot.waitUntil(lambda: len(calls) == 1, timeout=5000)
    document.push(SetLinkProps([next(iter(document.topology.links())).id], failed=True))
    solved(qtbot, window)
    qtbot.wait(200)
    assert calls == [0]  # not again for an edit; ran with no work left
    document.replace(build_template("example"))
    solved(qtbot, window)
    qtbot.waitUntil(lambda: len(calls) == 2, timeout=5000)
    window.analysis.runner.shutdown()


def test_the_ranks_box_lists_groups_and_follows_group_changes(qtbot, live, monkeypatch):
    """Group ranks are listed again when groups change, not after every edit (a
    SuperPOD has thousands of groups)."""
    dock, document = live.analysis.scenario, live.document
    combo = dock.ranks
    groups = {g.id for g in document.topology.groups()
              if g.kind in ("node", "rack", "su", "pod", "tray")}
    listed = {combo.itemData(i) for i in range(combo.count())}
    assert {f"group:{g}" for g in groups} <= listed and {"all", "selection"} <= listed
    clears = []
    real = combo.clear
    monkeypatch.setattr(combo, "clear", lambda: (clears.append(1), real()))
    document.push(SetLinkProps([NVLINK], failed=True))
    assert clears == []  # an edit that touches no group leaves the list alone
    document.push(AddGroup(Group("rack-new", "rack", "New rack")))
    assert clears == [1]
    assert combo.findData("group:rack-new") >= 0
    document.undo_stack.undo()
    assert combo.findData("group:rack-new") < 0
