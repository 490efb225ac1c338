"""The jobs on the canvas: placed by hand with a rubber band (undoable, as is moving a
job to other racks), their GPUs tinted in their colours (exports too), link colours
showing the workload's mean or peak utilisation, a link's tooltip naming the jobs and
collectives that crossed it, and the job selected in the dock outlining its links.

The example design: 4 HGX servers of 8 GPUs (n01..n04), the 8-GPU tiny presets.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPointF, QRectF, Qt

from designer.gui.export import svg_bytes
from designer.gui.export_dialog import canvas_link_results, headline
from tests.gui.conftest import Mouse, close_window, open_window
from tests.gui.test_workload_live import simulated


@pytest.fixture
def win(qtbot):
    window, error = open_window(qtbot)
    assert error is None
    yield window
    close_window(window)


def _server_gpus(window, server: str) -> list[str]:
    return sorted(n.id for n in window.document.topology.nodes("gpu") if n.id.startswith(server))


def _band(window, ids) -> QRectF:
    band = QRectF()
    for nid in ids:
        band = band.united(window.scene.nodes[nid].sceneBoundingRect())
    return band.adjusted(-6, -6, 6, 6)


def _job(window, name):
    return next(j for j in window.workload.dock.jobs if j.name == name)


def test_place_a_job_by_rubber_band_then_undo_and_redo(qtbot, win):
    wl = win.workload
    wl.dock.add_job("tiny")
    first = simulated(qtbot, win)
    before = set(first.placements[0].gpus)
    target = _server_gpus(win, "n03")
    assert before != set(target)  # packed puts it elsewhere first

    Mouse(win.view).drag(_band(win, target).topLeft(), _band(win, target).bottomRight(), steps=8)
    assert set(win.scene.selected_node_ids()) >= set(target)
    wl.controls.place_button.click()
    job = _job(win, "tiny")
    assert job.placement == "explicit" and set(job.gpus) == set(target)
    result = simulated(qtbot, win)
    assert set(result.placements[0].gpus) == set(target)
    assert set(wl.overlay.tint_item().tinted()) == set(target)
    assert "Place job tiny" in win.document.undo_stack.undoText()

    # Moving it to another server is the same gesture, one more undo step.
    other = _server_gpus(win, "n02")
    win.scene.select_ids(node_ids=other)
    wl.controls.place_button.click()
    assert set(_job(win, "tiny").gpus) == set(other)
    assert "Move job tiny" in win.document.undo_stack.undoText()
    simulated(qtbot, win)
    assert set(wl.overlay.tint_item().tinted()) == set(other)

    win.document.undo_stack.undo()
    assert set(_job(win, "tiny").gpus) == set(target)
    win.document.undo_stack.undo()
    assert _job(win, "tiny").placement == "packed" and not _job(win, "tiny").gpus
    assert set(simulated(qtbot, win).placements[0].gpus) == before
    assert set(wl.overlay.tint_item().tinted()) == before
    win.document.undo_stack.redo()
    assert set(_job(win, "tiny").gpus) == set(target)
    assert set(simulated(qtbot, win).placements[0].gpus) == set(target)


def test_too_few_gpus_selected_is_refused_with_a_message(qtbot, win):
    wl = win.workload
    wl.dock.add_job("tiny")
    simulated(qtbot, win)
    messages = []
    wl.overlay.message.connect(messages.append)
    depth = win.document.undo_stack.count()
    win.scene.select_ids(node_ids=_server_gpus(win, "n03")[:4])
    wl.controls.place_button.click()
    assert win.document.undo_stack.count() == depth
    assert messages and "needs 8 GPUs" in messages[-1]


def test_gpus_are_tinted_in_the_jobs_colours_on_screen_and_in_exports(qtbot, win):
    wl = win.workload
    wl.dock.add_job("tiny")
    wl.dock.add_job("tiny-moe")
    result = simulated(qtbot, win)
    tint = wl.overlay.tint_item()
    shown = tint.tinted()
    for job, placement in zip(result.jobs, result.placements, strict=True):
        assert {g for g, n in shown.items() if n == job.name} == set(placement.gpus)
    colours = {job.colour.lower() for job in result.jobs}
    assert len(colours) == 2 and tint.isVisible()
    svg = svg_bytes(win.scene).decode().lower()
    assert all(c in svg for c in colours)
    wl.controls.outlines.setChecked(True)
    assert tint._frames and {f[0] for f in tint._frames} == {j.name for j in result.jobs}


def _link_colour(win, lid):
    return win.scene.links[lid].color.name()


def test_link_colours_toggle_between_mean_and_peak(qtbot, win):
    wl = win.workload
    wl.dock.add_job("tiny")
    result = simulated(qtbot, win)
    links = result.simulation.links
    # A link whose mean and peak differ by enough to change its colour.
    gap = np.asarray(links.peak_util) - np.asarray(links.mean_util)
    k = int(np.argmax(gap))
    assert gap[k] > 0.05
    lid = links.ids[k]
    assert wl.overlay.link_mode == "mean"
    qtbot.waitUntil(lambda: not win.analysis.overlay.legend.isHidden(), timeout=5_000)
    mean_colour = _link_colour(win, lid)
    wl.controls.set_link_mode("peak")
    peak_colour = _link_colour(win, lid)
    assert peak_colour != mean_colour
    wl.controls.set_link_mode("mean")
    assert _link_colour(win, lid) == mean_colour
    # The single collective's colours come back with "one collective".
    wl.controls.set_link_mode("collective")
    assert not wl.overlay.showing_workload()
    scenario = win.analysis.overlay.utilisation
    assert getattr(scenario, "values", None) is not links.mean_util


def test_exports_take_the_link_figures_the_canvas_shows(qtbot, win):
    """Workload colours on the canvas: exports carry the workload's figures; back to
    the single collective: the scenario's, still current after edits of the jobs alone
    (which its solve does not read); after an edit it reads, none until it is solved."""
    from designer.model.commands import SetLinkProps

    overlay, runner = win.analysis.overlay, win.analysis.runner
    runner.schedule()  # the opening solve may have ended before we looked
    qtbot.waitUntil(lambda: overlay.result is not None and overlay.shown()[1]
                    and not runner.busy and not runner.pending, timeout=20_000)
    scenario_util = dict(overlay.utilisation)
    wl = win.workload
    wl.dock.add_job("tiny")
    result = simulated(qtbot, win)
    links = result.simulation.links
    k = int(np.argmax(links.mean_util))
    lid = links.ids[k]
    assert scenario_util[lid] != pytest.approx(float(links.mean_util[k]))
    exported = canvas_link_results(win, win.document)
    assert exported[lid]["utilisation"] == pytest.approx(float(links.mean_util[k]))
    assert headline(win, win.document) is not None
    wl.controls.set_link_mode("collective")
    exported = canvas_link_results(win, win.document)
    assert exported[lid]["utilisation"] == pytest.approx(scenario_util[lid])
    assert dict(overlay.utilisation) == scenario_util
    # An edit both read: nothing until the scenario is solved again.
    win.document.push(SetLinkProps([lid], count=2))
    assert canvas_link_results(win, win.document) is None
    assert headline(win, win.document) is None
    qtbot.waitUntil(lambda: canvas_link_results(win, win.document) is not None, timeout=20_000)


def test_hover_on_a_link_lists_the_jobs_and_collectives_on_it(qtbot, win):
    wl = win.workload
    wl.dock.add_job("tiny")
    wl.dock.add_job("tiny-moe")
    result = simulated(qtbot, win)
    links = result.simulation.links
    both = np.flatnonzero((links.job_bytes > 0).all(axis=0))
    lid = links.ids[int(both[0])] if len(both) else links.ids[int(np.argmax(links.bytes))]
    text = wl.overlay.link_text(lid)
    shared = [n for j, n in enumerate(links.jobs) if links.job_bytes[j, links.ids.index(lid)] > 0]
    for name in shared:
        assert f"{name}: " in text and name in text.split("jobs: ")[1].splitlines()[0]
    assert "%" in text and "collectives crossing it" in text
    idle = links.ids[int(np.flatnonzero(links.bytes == 0)[0])]
    assert "no job's traffic crossed it" in wl.overlay.link_text(idle)


def test_selecting_a_job_in_the_dock_outlines_its_links(qtbot, win):
    wl = win.workload
    wl.dock.add_job("tiny")
    wl.dock.add_job("tiny-moe")
    result = simulated(qtbot, win)
    links = result.simulation.links
    for row, name in enumerate(["tiny", "tiny-moe"]):
        wl.dock.table.selectRow(row)
        j = links.jobs.index(name)
        expected = {links.ids[k] for k in np.flatnonzero(links.job_bytes[j] > 0).tolist()}
        assert expected and wl.overlay.job_links == expected
        halo = wl.overlay._halo
        assert halo.isVisible() and {i.link_id for i in halo.items} == expected
    assert wl.overlay.job_links != set()
    wl.controls.set_link_mode("collective")
    assert wl.overlay.job_links == set()


def test_choosing_a_policy_for_a_job_placed_by_hand_places_it_by_the_policy(qtbot, win):
    wl = win.workload
    wl.dock.add_job("tiny")
    simulated(qtbot, win)
    win.scene.select_ids(node_ids=_server_gpus(win, "n03"))
    wl.controls.place_button.click()
    assert _job(win, "tiny").placement == "explicit"
    wl.dock.editor.widgets[("", "placement")].setCurrentText("spread")
    job = _job(win, "tiny")
    assert job.placement == "spread" and job.gpus == ()
    assert wl.dock.editor.error == ""
    placed = simulated(qtbot, win).placements[0]
    assert placed.domains == 4  # spread: one TP group of 2 in each server


def test_hovering_a_link_shows_the_jobs_on_it_in_a_tooltip(qtbot, win):
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QApplication, QToolTip

    from designer.gui.canvas.items import help_text

    wl = win.workload
    wl.dock.add_job("tiny")
    result = simulated(qtbot, win)
    links = result.simulation.links
    view = win.view
    def clear_spot(item):
        """A point of ``item``'s line where the scene's own hit test (as its tool tip
        asks it) finds nothing else with a tool tip: no node, no other line."""
        for t in (0.5, 0.4, 0.6, 0.3, 0.7):
            pos = view.mapFromScene(item.line.pointAt(t))
            under = win.scene.items(view.mapToScene(pos), Qt.ItemSelectionMode.IntersectsItemShape,
                                    Qt.SortOrder.DescendingOrder, view.transform())
            if [i for i in under if help_text(i)] == [item]:
                return pos
        return None

    for k in np.argsort(-np.asarray(links.bytes)).tolist():
        item = win.scene.links.get(links.ids[k])
        pos = None if item is None else clear_spot(item)
        if pos is None:
            continue
        # A tool tip Qt raised by itself where the (offscreen) cursor rests may be up.
        QToolTip.hideText()
        qtbot.waitUntil(lambda: not QToolTip.isVisible(), timeout=2_000)
        event = QHelpEvent(QEvent.Type.ToolTip, pos, view.viewport().mapToGlobal(pos))
        QApplication.sendEvent(view.viewport(), event)
        qtbot.waitUntil(QToolTip.isVisible, timeout=2_000)
        assert links.ids[k] in QToolTip.text() and "jobs: tiny 100%" in QToolTip.text()
        QToolTip.hideText()
        return
    pytest.fail("no link of the job could be hovered alone")


def test_tints_follow_a_gpu_moved_by_an_edit_and_while_it_is_dragged(qtbot, win):
    from designer.model.commands import MoveNodes

    wl = win.workload
    wl.dock.add_job("tiny")
    result = simulated(qtbot, win)
    tint = wl.overlay.tint_item()
    gid = result.placements[0].gpus[0]
    item = win.scene.nodes[gid]

    def spot_centre():
        (_colour, rects), = tint._spots
        near = min(rects, key=lambda r: (r.center() - item.pos()).manhattanLength())
        return near.center()

    node = win.document.topology.node(gid)
    win.document.push(MoveNodes({gid: (node.x + 400.0, node.y + 200.0)}))
    qtbot.waitUntil(lambda: spot_centre() == item.pos() + tint_offset(), timeout=3_000)
    # A drag moves the item before the model: the tint follows the item.
    mouse = Mouse(win.view)
    start = item.pos()
    mouse.press(start)
    for dx in (20.0, 40.0, 60.0):
        mouse.move(start + QPointF(dx, 0.0))
    assert win.scene.dragging
    qtbot.waitUntil(lambda: spot_centre() == item.pos() + tint_offset(), timeout=3_000)
    assert item.pos().x() != win.document.topology.node(gid).x
    mouse.release(start + QPointF(60.0, 0.0))
    assert not win.scene.dragging


def tint_offset():
    from designer.gui.canvas.geometry import ICON_RECT

    return ICON_RECT.center()
