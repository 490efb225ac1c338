"""A failure study on the canvas: the studied elements coloured by the slowdown their
failure causes (a class's members all in its colour), a legend, the colouring kept over
a new solve, and turning it off giving the links their utilisation colours back."""

from __future__ import annotations

from collections import defaultdict

from designer.gui.analysis.overlay import util_color
from designer.gui.studies.colours import DISCONNECTS, slowdown_color
from designer.model.commands import SetNodeProps
from designer.model.templates import build_template


def _latest(qtbot, window):
    runner, topo = window.analysis.runner, window.document.topology
    qtbot.waitUntil(
        lambda: (
            runner.latest is not None
            and runner.latest.generation == topo.generation
            and not runner.busy
        ),
        timeout=60_000,
    )
    return runner.latest


def _expected(report):
    values = {e.id: (float("inf") if not e.connected else e.slowdown) for e in report.elements}
    worst = max(v for v in values.values() if v != float("inf"))
    return {i: slowdown_color(v, worst) for i, v in values.items()}


def test_study_colours_the_canvas_and_off_restores_utilisation(window, qtbot):
    # The example design: its failures slow the collective by several amounts.
    _latest(qtbot, window)
    overlay, scene = window.analysis.overlay, window.scene
    panel, colours = window.studies.panel, window.studies.colours
    assert overlay.legend.isVisible() or not window.isVisible()
    with qtbot.waitSignal(panel.runner.result_ready, timeout=60_000) as got:
        assert panel.run("all")
    report = got.args[0]
    want = _expected(report)
    assert colours.on and panel.colour_box.isChecked()
    assert not overlay.legend.isVisibleTo(window.view.viewport())
    assert colours.legend.isVisibleTo(window.view.viewport())
    kinds = {e.id: e.kind for e in report.elements}
    links = {i for i, k in kinds.items() if k == "link"}
    nodes = {i for i, k in kinds.items() if k == "node"}
    assert links and nodes
    for lid in links:
        assert scene.links[lid].color == want[lid], lid
    marks = colours._marks.colours()
    assert set(marks) == nodes
    for nid in nodes:
        assert marks[nid] == want[nid], nid
    # Members of a class share its colour; the scale is used, not one flat colour.
    by_class = defaultdict(set)
    for e in report.elements:
        by_class[e.cls].add(want[e.id].rgba())
    assert all(len(c) == 1 for c in by_class.values())
    used = {c.rgba() for c in want.values()}
    assert len(used) >= 3

    # A what-if (a new solve) keeps the slowdown colours on the canvas.
    switch = next(iter(sorted(nodes)))
    window.document.push(SetNodeProps([switch], failed=True))
    _latest(qtbot, window)
    for lid in links:
        if lid in scene.links:
            assert scene.links[lid].color == want[lid], lid
    window.document.undo_stack.undo()
    result = _latest(qtbot, window)
    assert result is not None

    # Off: the links take their utilisation colours again, the rings go.
    panel.colour_box.setChecked(False)
    assert not colours.on and overlay.colour_override is None
    util = overlay.utilisation
    assert util
    for lid, item in scene.links.items():
        if lid in util:
            assert item.color == util_color(util[lid]), lid
    assert colours._marks.colours() == {}
    assert not colours.legend.isVisibleTo(window.view.viewport())
    # And on again.
    panel.colour_box.setChecked(True)
    assert all(scene.links[lid].color == want[lid] for lid in links)


def test_a_failure_that_disconnects_is_vermillion(window, qtbot):
    window.document.replace(build_template("leaf-spine"))
    panel, scene = window.studies.panel, window.scene
    with qtbot.waitSignal(panel.runner.result_ready, timeout=60_000) as got:
        assert panel.run("links")
    cut = [e.id for e in got.args[0].elements if not e.connected]
    assert cut and all(scene.links[i].color == DISCONNECTS for i in cut)


def test_another_design_clears_the_colouring(window, qtbot):
    window.document.replace(build_template("leaf-spine"))
    panel, colours = window.studies.panel, window.studies.colours
    with qtbot.waitSignal(panel.runner.result_ready, timeout=60_000):
        assert panel.run("switches")
    assert colours.on
    window.document.replace(build_template("fat-tree", k=4))
    assert not colours.on and window.analysis.overlay.colour_override is None
    assert not panel.colour_box.isChecked() and not panel.colour_box.isEnabled()
