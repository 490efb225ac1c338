"""The analysis panels show the data of the last result, keep baselines, and export."""

from __future__ import annotations

import csv
import json
import math
import re
from xml.dom import minidom

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QImage

from designer.gui.analysis.panels import BusBwPanel, JitterPanel, LinkLoadPanel, TimelinePanel
from designer.gui.analysis.panels.base import format_seconds
from designer.gui.analysis.panels.busbw import load_reference, parse_size
from designer.gui.analysis.panels.jitter import histogram
from designer.gui.analysis.panels.linkload import TOP_N
from designer.gui.analysis.panels.timeline import phase_kind
from designer.gui.analysis.runner import analyse, utilisation_by_link
from designer.gui.app import application
from designer.gui.canvas.style import DARK, LIGHT
from designer.gui.idle import IdleWork
from designer.model.commands import SetSetting
from designer.model.scenario import Scenario, TrainingSpec
from designer.model.templates import build_template
from designer.solver.snapshot.build import take_snapshot

PANELS = (TimelinePanel, BusBwPanel, LinkLoadPanel, JitterPanel)


def _solve(routing: str = "adaptive", algorithm: str = "auto", training=True):
    topo = build_template("example")
    if routing != topo.settings["routing"]:
        SetSetting("routing", routing).do(topo)
    return analyse(
        take_snapshot(topo),
        Scenario(algorithm=algorithm),
        None,
        TrainingSpec() if training else None,
        lambda: False,
    )


@pytest.fixture(scope="module")
def result():
    return _solve()


@pytest.fixture(scope="module")
def ecmp_result():
    return _solve(routing="ecmp", algorithm="hierarchical", training=False)


def _panel(qtbot, cls, **kwargs):
    application()
    panel = cls(**kwargs)
    qtbot.addWidget(panel)
    panel.resize(700, 300)
    panel.show()
    qtbot.waitExposed(panel)
    return panel


# ---------------------------------------------------------------------- timeline
def test_timeline_draws_one_bar_per_timeline_entry(qtbot, result, ecmp_result):
    panel = _panel(qtbot, TimelinePanel)
    assert panel.objectName() == "timeline-panel"
    panel.set_result(result)
    timeline = result.focus.timeline
    opts = panel.bar_item.opts
    assert len(opts["x0"]) == len(timeline) >= 2
    np.testing.assert_allclose(opts["x0"], [b.start_s for b in timeline])
    np.testing.assert_allclose(
        np.asarray(opts["x0"]) + np.asarray(opts["width"]), [b.end_s for b in timeline]
    )
    # Ring all-reduce: a reduce-scatter row then an all-gather row, differently coloured.
    assert [b.kind for b in panel.bars] == ["reduce-scatter", "all-gather"]
    assert [b.row for b in panel.bars] == [0, 1]
    brushes = {b.color().name() for b in opts["brushes"]}
    assert len(brushes) == 2

    # A live update replaces the bars: hierarchical has three phases, intra and inter.
    panel.set_result(ecmp_result)
    assert len(panel.bar_item.opts["x0"]) == len(ecmp_result.focus.timeline) == 3
    assert [b.scope for b in panel.bars] == ["intra", "inter", "intra"]
    ticks = [label for _, label in panel.plot.getAxis("left")._tickLevels[0]]
    assert ticks == [b.phase for b in ecmp_result.focus.timeline]


def test_timeline_hover_names_phase_and_bottleneck(qtbot, result):
    panel = _panel(qtbot, TimelinePanel)
    panel.set_result(result)
    bar = result.focus.timeline[1]
    mid = QPointF((bar.start_s + bar.end_s) / 2, 1.0)
    scene_pos = panel.plot.vb.mapViewToScene(mid)
    view_pos = panel.graphics.mapFromScene(scene_pos)
    qtbot.mouseMove(panel.graphics.viewport(), view_pos)
    qtbot.waitUntil(panel.hover.isVisible, timeout=2000)
    text = panel.hover.toPlainText()
    assert bar.phase in text and bar.bottleneck in text
    assert f"{bar.steps} steps" in text
    # Off the bars the text goes away.
    panel.plot.scene().sigMouseMoved.emit(panel.plot.vb.mapViewToScene(QPointF(mid.x(), 3.0)))
    assert not panel.hover.isVisible()


def test_phase_kinds():
    assert phase_kind("intra-domain reduce-scatter") == "reduce-scatter"
    assert phase_kind("ring allgather") == "all-gather"
    assert phase_kind("double binary tree all-reduce") == "all-reduce"
    assert phase_kind("all-to-all") == "other"


# ---------------------------------------------------------------------- busbw
def test_busbw_curve_is_the_sweep(qtbot, result):
    panel = _panel(qtbot, BusBwPanel)
    panel.set_result(result)
    x, y = panel.curve.getData()
    np.testing.assert_allclose(y, result.sweep.busbw_GBps)
    np.testing.assert_allclose(2.0**x, result.sweep.sizes)
    assert x[0] == 15 and x[-1] == 34  # 32 KiB .. 16 GiB on a log2 axis
    mx, my = panel.marker.getData()
    assert 2.0 ** mx[0] == result.scenario.bytes
    assert my[0] == pytest.approx(result.focus.busbw_GBps[0])
    axis = panel.plot.getAxis("bottom")
    assert axis.tickStrings([15.0, 20.0, 30.0], 1, axis._step) == ["32K", "1M", "1G"]


def test_pinned_baseline_survives_new_results(qtbot, result, ecmp_result):
    panel = _panel(qtbot, BusBwPanel)
    assert not panel.pin_button.isEnabled()  # nothing to pin yet
    panel.set_design_name("example")
    panel.set_result(result)
    qtbot.mouseClick(panel.pin_button, Qt.MouseButton.LeftButton)
    assert len(panel.baselines) == 1
    label = panel.baselines[0].label
    assert "example" in label and "adaptive" in label and "infiniband" in label
    panel.set_result(ecmp_result)
    panel.pin_baseline()
    assert len(panel.baselines) == 2
    assert panel.baselines[0].color != panel.baselines[1].color
    panel.set_result(result)
    drawn = {item.name(): item for item in panel.plot.listDataItems()}
    assert label in drawn and panel.baselines[1].label in drawn
    np.testing.assert_allclose(drawn[label].getData()[1], result.sweep.busbw_GBps)
    np.testing.assert_allclose(
        drawn[panel.baselines[1].label].getData()[1], ecmp_result.sweep.busbw_GBps
    )
    assert drawn[label].opts["pen"].style() == Qt.PenStyle.DashLine
    legend = [sample_label.text for _, sample_label in panel.legend.items]
    assert label in legend

    # None empties the current curve but keeps the baselines; Clear removes them.
    panel.set_result(None)
    assert panel.curve is None and panel.message
    assert [i.name() for i in panel.plot.listDataItems()] == [b.label for b in panel.baselines]
    qtbot.mouseClick(panel.clear_button, Qt.MouseButton.LeftButton)
    assert panel.baselines == [] and panel.plot.listDataItems() == []


def test_measured_reference_overlay(qtbot, result, tmp_path):
    ref = tmp_path / "measured.json"
    ref.write_text(
        json.dumps(
            {
                "cases": [
                    {"id": "curve", "curve_bytes_busbw": [["32KiB", 1.5], ["1GiB", 200.0]]},
                    {"id": "range", "bytes": "2GiB-4GiB", "busbw": 367},
                    {"id": "vague", "bytes": "large", "busbw": 192},
                    {"id": "nic", "effective_GBps_per_nic": {"NDR": 47}},
                ]
            }
        )
    )
    assert [c.case_id for c in load_reference(ref)] == ["curve", "range"]
    assert parse_size("2GiB") == 2 << 30 and parse_size("128B") == 128
    panel = _panel(qtbot, BusBwPanel, reference_path=ref)
    panel.set_result(result)
    assert panel.reference is None  # read lazily
    panel.reference_box.setChecked(True)
    names = [i.name() for i in panel.plot.listDataItems()]
    assert "measured: curve" in names and "measured: range" in names
    _, rows = panel.data_rows()
    assert ("measured: range", 4 << 30) in {(r[0], r[1]) for r in rows}

    absent = _panel(qtbot, BusBwPanel, reference_path=tmp_path / "missing.json")
    assert not absent.reference_available
    assert "missing.json" in absent.reference_box.toolTip()


# ---------------------------------------------------------------------- link load
def test_link_load_table_lists_the_busiest_links(qtbot, result):
    panel = _panel(qtbot, LinkLoadPanel)
    panel.set_result(result)
    util = utilisation_by_link(result)
    carrying = {k: v for k, v in util.items() if v > 0}
    expected = sorted(carrying.values(), reverse=True)[:TOP_N]
    rows = panel.top_rows()
    assert len(rows) == min(TOP_N, len(carrying))
    assert [u for _, u in rows] == pytest.approx([100 * u for u in expected], abs=0.05)
    for link, pct in rows:
        assert 100 * util[link] == pytest.approx(pct, abs=0.05)
    assert panel.counts.sum() == len(carrying)
    # The last bin holds the saturated links.
    assert panel.counts[-1] == sum(v >= 0.95 for v in carrying.values())


def test_clicking_a_link_row_emits_its_id(qtbot, result):
    panel = _panel(qtbot, LinkLoadPanel)
    panel.set_result(result)
    table = panel.table
    rect = table.visualItemRect(table.item(2, 1))
    with qtbot.waitSignal(panel.link_activated, timeout=1000) as blocker:
        qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert blocker.args == [table.item(2, 0).text()]
    assert blocker.args[0] in result.snapshot.link_ids


# ---------------------------------------------------------------------- jitter
def test_jitter_histogram_and_percentile_lines(qtbot, result):
    panel = _panel(qtbot, JitterPanel)
    panel.set_result(result)
    dist = result.training.distribution
    assert panel.counts.sum() == len(dist.samples_s)
    assert panel.lines["p50"].value() == pytest.approx(dist.p50_s)
    assert panel.lines["p99"].value() == pytest.approx(dist.p99_s)
    assert panel.lines["ideal"].value() == pytest.approx(dist.ideal_s)
    caption = panel.caption.text
    assert "GPU-s" in caption and f"{100 * result.training.estimate.comm_share:.0f}%" in caption
    # Every line is inside the visible range.
    (x0, x1), _ = panel.plot.vb.viewRange()
    assert x0 < dist.ideal_s and dist.p99_s < x1


@pytest.mark.parametrize("panel_type", [JitterPanel, BusBwPanel])
def test_labelled_lines_are_freed_with_each_redraw_not_left_to_the_collector(
        qtbot, result, panel_type):
    """A redraw frees the lines it drops by reference count.  pyqtgraph's own line
    labels make a reference cycle with their line; left to the cyclic collector, such
    pairs crashed the interpreter in `settle_heap`'s collection (`panels.marks`)."""
    import gc
    import weakref

    import pyqtgraph as pg

    panel = _panel(qtbot, panel_type)
    panel.set_result(result)
    texts = [i.toPlainText() for i in panel.plot.items if isinstance(i, pg.TextItem)]
    if panel_type is JitterPanel:
        dist = result.training.distribution
        assert [t.split()[0] for t in texts] == ["ideal", "p50", "p99"]
        assert texts[1].endswith(format_seconds(dist.p50_s))
    else:
        assert texts == [f"ceiling {result.focus.ceiling_busbw_GBps:.0f} GB/s"]
    lines = [weakref.ref(i) for i in panel.plot.items if isinstance(i, pg.InfiniteLine)]
    assert lines
    enabled = gc.isenabled()
    gc.disable()
    try:
        panel.set_result(result)   # a redraw: the plot is cleared and drawn again
        assert [r() for r in lines] == [None] * len(lines)
    finally:
        if enabled:
            gc.enable()


def test_jitter_without_training_shows_a_message(qtbot, ecmp_result):
    panel = _panel(qtbot, JitterPanel)
    panel.set_result(ecmp_result)
    assert ecmp_result.training is None
    assert "training" in panel.message.lower()
    assert panel.plot.listDataItems() == [] and panel.data_rows()[1] == []


def test_constant_samples_make_one_bin():
    counts, edges = histogram(np.full(10, 2.0))
    assert counts.tolist() == [10] and edges[0] < 2.0 < edges[-1]


# ---------------------------------------------------------------------- all panels
@pytest.mark.parametrize("cls", PANELS)
def test_none_and_failure_show_a_message(qtbot, cls, result):
    panel = _panel(qtbot, cls)
    panel.set_result(result)
    assert panel.data_rows()[1]
    panel.set_message("solve failed: zero-capacity path")
    assert panel.message == "solve failed: zero-capacity path"
    assert panel._message_item.isVisible()
    assert panel.data_rows()[1] == []
    # The message sits in the middle of the plot.
    box = panel.plot.vb.boundingRect()
    text = panel._message_item.mapRectToParent(panel._message_item.boundingRect())
    assert abs(text.center().x() - box.center().x()) < 2
    panel.set_result(result)
    assert not panel._message_item.isVisible() and panel.message == ""
    panel.set_result(None)
    assert panel._message_item.isVisible() and panel.result is None


@pytest.mark.parametrize("cls", PANELS)
def test_exports_write_png_svg_and_csv(qtbot, cls, result, tmp_path):
    panel = _panel(qtbot, cls)
    panel.set_result(result)
    written = []
    panel.exported.connect(written.append)
    png = panel.export_png(tmp_path / "p.png")
    svg = panel.export_svg(tmp_path / "p.svg")
    data = panel.export_csv(tmp_path / "p.csv")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 2000
    assert b"<svg" in svg.read_bytes()[:1000] and svg.stat().st_size > 1000
    paths = minidom.parse(str(svg)).getElementsByTagName("path")
    # Qt writes the plot's clip rectangle as a closed path; it survives the export intact.
    assert any(p.getAttribute("d").split()[-1:] == ["Z"] for p in paths)
    with data.open(newline="") as fh:
        rows = list(csv.reader(fh))
    header, expected = panel.data_rows()
    assert rows[0] == header and len(rows) == len(expected) + 1 > 1
    assert written == [str(png), str(svg), str(data)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv", "p.png", "p.svg"]


def test_hidden_panel_draws_when_shown_and_exports_full_size(qtbot, result, tmp_path):
    application()
    panel = BusBwPanel()
    qtbot.addWidget(panel)
    panel.set_result(result)
    assert panel.curve is None  # a hidden (tabbed-away) dock does not spend time drawing
    assert len(panel.data_rows()[1]) == len(result.sweep.sizes)
    image = QImage(str(panel.export_png(tmp_path / "hidden.png")))
    assert image.width() >= 960 and image.height() >= 420
    np.testing.assert_allclose(panel.curve.getData()[1], result.sweep.busbw_GBps)

    other = TimelinePanel()
    qtbot.addWidget(other)
    other.set_result(result)
    assert other.bar_item is None
    other.show()
    qtbot.waitExposed(other)
    assert len(other.bar_item.opts["x0"]) == len(result.focus.timeline)


def test_csv_numbers_round_trip(qtbot, result, tmp_path):
    panel = _panel(qtbot, BusBwPanel)
    panel.set_result(result)
    with panel.export_csv(tmp_path / "b.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    current = [r for r in rows if r["series"] == "current"]
    assert [int(r["bytes"]) for r in current] == result.sweep.sizes.tolist()
    assert [float(r["busbw_GBps"]) for r in current] == result.sweep.busbw_GBps.tolist()


@pytest.mark.parametrize("theme", [LIGHT, DARK])
def test_themes_colour_background_and_text(qtbot, result, theme):
    panel = _panel(qtbot, BusBwPanel)
    panel.set_result(result)
    panel.apply_theme(theme)
    assert panel.graphics.backgroundBrush().color() == theme.background
    assert panel.plot.getAxis("left").textPen().color() == theme.text
    # The current curve keeps contrast with the background.
    curve = panel.curve.opts["pen"].color()
    assert abs(curve.lightnessF() - theme.background.lightnessF()) > 0.25
    assert math.isclose(panel.curve.getData()[1][-1], result.sweep.busbw_GBps[-1])


def test_results_drawn_later_are_background_work(qtbot, result, monkeypatch):
    """A live result is taken at once and drawn as `IdleWork` on later turns of the event
    loop, so that a new result never holds the GUI for every panel at once."""
    panels = [_panel(qtbot, cls) for cls in (BusBwPanel, TimelinePanel, LinkLoadPanel)]
    drawn: list[object] = []
    for panel in panels:
        real = panel._redraw
        monkeypatch.setattr(panel, "_redraw", lambda p=panel, r=real: (drawn.append(p), r()))
    idle = IdleWork.instance()
    for panel in panels:
        panel.set_result(result, later=True)
        assert panel.result is result and panel.pending and idle.pending(panel)
    assert drawn == []
    # A turn with no budget left still draws the panel at its head, and only that one.
    monkeypatch.setattr(idle, "turn_ms", 0.0)
    idle.run_turn()
    assert drawn == panels[:1]
    qtbot.waitUntil(lambda: not any(p.pending for p in panels), timeout=5000)
    assert drawn == panels  # in order, each once
    _x, y = panels[0].curve.getData()
    np.testing.assert_allclose(y, result.sweep.busbw_GBps)


def test_timeline_dock_is_named_after_the_collective(qtbot, result):
    panel = _panel(qtbot, TimelinePanel)
    assert panel.windowTitle() == "All-reduce timeline"
    topo = build_template("example")
    gather = analyse(take_snapshot(topo), Scenario(collective="allgather"), None, None,
                     lambda: False)
    panel.set_result(gather)
    assert panel.windowTitle() == "All-gather timeline"
    assert panel.toggleViewAction().text() == "All-gather timeline"  # the View menu
    panel.set_result(result)
    assert panel.windowTitle() == "All-reduce timeline"


def test_timeline_legend_names_phases_of_no_named_kind(qtbot, result):
    """An all-to-all's bars are of no reduce/gather kind: the legend says "all-to-all",
    not a generic "other"; an all-reduce keeps its kinds."""
    panel = _panel(qtbot, TimelinePanel)
    a2a = analyse(take_snapshot(build_template("example")), Scenario(collective="alltoall"),
                  None, None, lambda: False)
    panel.set_result(a2a)
    labels = [label.text for _, label in panel.legend.items]
    assert labels and all(t.startswith("all-to-all, ") for t in labels), labels
    panel.set_result(result)
    labels = [label.text for _, label in panel.legend.items]
    assert any(t.startswith("reduce-scatter, ") for t in labels), labels


def test_a_long_title_breaks_at_its_commas_where_the_panel_is_narrow(qtbot, result):
    from designer.gui.analysis.panels.titles import title_width as _title_width

    panel = _panel(qtbot, TimelinePanel)
    label = panel.plot.titleLabel.item  # the title as laid out on screen

    def lines_shown():
        return len(label.toPlainText().splitlines())

    panel.resize(1400, 300)
    panel.set_result(result)
    qtbot.waitUntil(lambda: panel.plot.vb.width() > 1000)
    assert lines_shown() == 1  # one line where it fits
    panel.resize(200, 300)  # (as narrow as the panel goes)
    qtbot.waitUntil(lambda: lines_shown() > 1)
    # Every line fits over the plot (a resize re-fits it), and nothing is lost.
    lines = panel._shown_title.split("<br>")
    assert len(lines) == lines_shown()
    assert all(_title_width(line) <= panel.plot.vb.width() for line in lines)
    assert " ".join(lines) == panel._title
    panel.resize(1400, 300)
    qtbot.waitUntil(lambda: lines_shown() == 1)


def test_a_title_of_several_lines_gets_their_height_above_the_plot(qtbot, ecmp_result):
    # pyqtgraph gives a title one 30 px row: in a short, narrow dock the lines beyond
    # the first spilled off the panel's top and over the plot.  The title also spans
    # the axis column, so the timeline's long row names do not squeeze it.
    panel = _panel(qtbot, TimelinePanel)
    title = panel.plot.titleLabel
    panel.resize(400, 240)
    panel.set_result(ecmp_result)
    qtbot.waitUntil(lambda: "<br>" in (panel._shown_title or ""))
    qtbot.wait(50)
    text = title.item.mapRectToScene(title.item.boundingRect())
    box = panel.plot.vb.mapRectToScene(panel.plot.vb.boundingRect())
    assert text.top() >= 0                      # not cut off at the top
    assert text.bottom() <= box.top() + 1       # not over the plot
    assert text.left() < panel.plot.getAxis("left").mapRectToScene(
        panel.plot.getAxis("left").boundingRect()).right()  # over the axis column too


def test_a_narrow_timeline_keeps_its_legend_and_bars_inside_the_panel(qtbot, ecmp_result):
    # A hierarchical all-reduce has three kinds of bars: one row of three legend entries
    # was wider than a narrow dock and widened the plot past its edge.
    panel = _panel(qtbot, TimelinePanel)
    panel.resize(1400, 300)
    panel.set_result(ecmp_result)
    assert len(panel.legend.items) == 3
    qtbot.waitUntil(lambda: panel.legend.columnCount == 3)
    panel.resize(420, 300)
    qtbot.waitUntil(lambda: panel.legend.columnCount < 3)
    qtbot.wait(50)
    width = panel.graphics.viewport().width()
    assert panel.legend.width() <= width
    # The plot (and its bars' right end) lies within the view.
    right = panel.plot.mapRectToScene(panel.plot.vb.boundingRect()).right()
    assert right <= width
    panel.resize(1400, 300)
    qtbot.waitUntil(lambda: panel.legend.columnCount == 3)


def test_fit_title_breaks_at_commas_then_colons_then_spaces_never_in_a_tag():
    from designer.gui.analysis.panels.titles import fit_title

    def measure(html):  # characters shown (tags take no room)
        return len(re.sub(r"<[^>]*>", "", html))

    title = "all-reduce of 1 GiB on 16384 GPUs: <b>6.48 ms</b>, collnet, busbw 332 GB/s"
    assert fit_title(title, 200, measure) == title
    lines = fit_title(title, 50, measure).split("<br>")
    assert lines == ["all-reduce of 1 GiB on 16384 GPUs: <b>6.48 ms</b>,",
                     "collnet, busbw 332 GB/s"]
    lines = fit_title(title, 40, measure).split("<br>")
    assert lines[0] == "all-reduce of 1 GiB on 16384 GPUs:"  # a colon before spaces
    for width in (40, 25, 12):
        lines = fit_title(title, width, measure).split("<br>")
        assert " ".join(lines) == title
        assert all(measure(line) <= width for line in lines)
    tagged = 'x <span style="color: red">a: b</span>, y'
    assert all("<span" not in line or 'style="color: red"' in line
               for line in fit_title(tagged, 4, measure).split("<br>"))
