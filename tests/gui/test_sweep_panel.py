"""The Sweep panel: a design sweep run from the GUI on the serial path, its variants
plotted with the Pareto front, a point picked and opened as a new design, Cancel, and
the CSV export."""

from __future__ import annotations

import csv
import threading

import pytest
from PySide6.QtCore import QPointF, Qt

from designer.gui.studies.sweep_panel import pareto_front


@pytest.mark.parametrize(
    "x, y, front",
    [
        # Hand-checked: (2, 2) is beaten by (2, 1); (3, 3) by everything but (1, 4).
        ([1, 2, 2, 3, 4], [4, 1, 2, 3, 0.5], [0, 1, 4]),
        # A tie on both counts keeps both; equal time, more cost is beaten.
        ([1, 1, 1, 2], [2, 2, 3, 1], [0, 1, 3]),
        # Order does not matter: the same points shuffled give the same front.
        ([4, 3, 2, 1, 2], [0.5, 3, 2, 4, 1], [3, 4, 0]),
        ([], [], []),
    ],
)
def test_pareto_front_by_hand(x, y, front):
    assert pareto_front(x, y) == front


@pytest.fixture
def sweep(window):
    return window, window.studies.sweep


def _run(qtbot, panel, grid: str, template: str = "leaf-spine"):
    panel.template.setCurrentIndex(panel.template.findData(template))
    panel.grid.setText(grid)
    assert panel.engine.currentData() == 0  # the serial path by default
    with qtbot.waitSignal(panel.runner.result_ready, timeout=60_000) as got:
        assert panel.run()
    return got.args[0]


def test_menu_opens_the_panel_and_a_sweep_plots_every_variant(sweep, qtbot):
    window, panel = sweep
    window.studies.sweep_action.trigger()
    assert panel.isVisible()
    seen = []
    panel.runner.progress.connect(lambda p, _s: seen.append(p))
    report = _run(qtbot, panel, "spines=1,2; leaves=2,4")
    assert len(report.variants) == 4
    assert panel.bar.value() == 100 and seen and seen[-1] == 100
    assert panel.bar.text() == "100 %"
    x, y = panel.scatter.getData()
    vs = report.variants
    assert sorted(zip(x, y, strict=True)) == sorted((v.figure_s, v.cost_per_gpu_usd) for v in vs)
    # The drawn front is exactly the variants nothing beats on both plotted axes.
    front = panel.front_indices()
    for i, v in enumerate(vs):
        beaten = any(
            w.figure_s <= v.figure_s
            and w.cost_per_gpu_usd <= v.cost_per_gpu_usd
            and (w.figure_s < v.figure_s or w.cost_per_gpu_usd < v.cost_per_gpu_usd)
            for w in vs
        )
        assert (i in front) == (not beaten)
    fx, fy = panel.front.getData()
    assert list(fy) == [vs[i].cost_per_gpu_usd for i in front]
    assert list(fx) == [vs[i].figure_s for i in front]
    # The same as the study's own Pareto marks for cost per GPU against time.
    assert set(front) == {i for i, v in enumerate(vs) if v.pareto}
    # Power per GPU on the vertical axis: the front follows the plotted figure.
    panel.y_axis.setCurrentIndex(panel.y_axis.findData("power_per_gpu_w"))
    _x, y = panel.scatter.getData()
    assert sorted(y) == sorted(v.power_per_gpu_w for v in vs)
    assert panel.front_indices() == [
        panel._shown[i]
        for i in pareto_front([v.figure_s for v in vs], [v.power_per_gpu_w for v in vs])
    ]


def test_hover_names_the_parameters_and_a_click_opens_the_variant(sweep, qtbot, monkeypatch):
    window, panel = sweep
    report = _run(qtbot, panel, "spines=1,2")
    target = max(range(2), key=lambda i: int(report.variants[i].params["spines"]))
    v = report.variants[target]
    points = [p for p in panel.scatter.points() if p.data() == target]
    assert len(points) == 1
    tip = panel._tip(v.figure_s, v.cost_per_gpu_usd, points[0].data())
    assert "spines=2" in tip and f"{v.gpus:,} GPUs" in tip
    # A real click on the point, through the plot's scene.
    vb = panel.plot.getPlotItem().vb
    panel.plot.resize(600, 400)
    panel.show()
    qtbot.waitExposed(panel)
    vb.autoRange()
    scene_pos = vb.mapViewToScene(QPointF(v.figure_s, v.cost_per_gpu_usd))
    view_pos = panel.plot.mapFromScene(scene_pos)
    qtbot.mouseClick(panel.plot.viewport(), Qt.MouseButton.LeftButton, pos=view_pos)
    qtbot.waitUntil(lambda: panel.selected == target, timeout=5000)
    assert panel.open_button.isEnabled()
    window.document.undo_stack.clear()  # nothing unsaved: no question to answer
    window.document.undo_stack.setClean()
    assert panel.open_selected()
    topo = window.document.topology
    assert sum(n.kind == "spine" for n in topo.nodes()) == 2
    assert sum(n.kind == "gpu" for n in topo.nodes()) == v.gpus


def test_cancel_stops_the_sweep(sweep, qtbot, monkeypatch):
    from designer.studies import sweep as sweep_module

    clicked = threading.Event()
    measured = []
    measure = sweep_module.measure

    def paced(shared, batch):
        measured.append(batch)
        if len(measured) > 1:
            clicked.wait(10)
        return measure(shared, batch)

    monkeypatch.setattr(sweep_module, "measure", paced)
    _window, panel = sweep
    panel.template.setCurrentIndex(panel.template.findData("leaf-spine"))
    panel.grid.setText("spines=1,2,3,4; leaves=2,4")
    results, cancelled, seen = [], [], []
    panel.runner.result_ready.connect(results.append)
    panel.runner.cancelled.connect(lambda: cancelled.append(True))

    def on_progress(percent, stage):
        if stage == "variants":
            seen.append(percent)
            if len(seen) == 1:
                panel.cancel_button.click()
                clicked.set()

    panel.runner.progress.connect(on_progress)
    assert panel.run()
    assert panel.cancel_button.isEnabled() and not panel.run_button.isEnabled()
    qtbot.waitUntil(lambda: not panel.runner.busy, timeout=30_000)
    assert cancelled == [True] and results == []
    # The variant under way when Cancel came finishes; no further one starts.
    assert seen[0] == round(100 / 8) and max(seen) < 100 and len(measured) == 2
    assert panel.status.text() == "Sweep cancelled."
    assert panel.run_button.isEnabled() and not panel.cancel_button.isEnabled()


def test_a_wrong_value_is_refused_before_anything_runs(sweep):
    _window, panel = sweep
    panel.template.setCurrentIndex(panel.template.findData("leaf-spine"))
    panel.grid.setText("nonsense=1,2")
    assert not panel.run()
    assert panel.status.text().startswith("Cannot sweep:") and "nonsense" in panel.status.text()
    assert not panel.runner.busy


def test_csv_export_has_every_variant(sweep, qtbot, tmp_path):
    _window, panel = sweep
    report = _run(qtbot, panel, "spines=1,2; leaves=2,4")
    out = tmp_path / "sweep.csv"
    assert panel.export_csv(out)
    rows = list(csv.DictReader(out.read_text(encoding="utf-8").splitlines()))
    assert len(rows) == len(report.variants)
    got = {(r["param_spines"], r["param_leaves"]): r for r in rows}
    for v in report.variants:
        r = got[(v.params["spines"], v.params["leaves"])]
        assert float(r["cost_per_gpu_usd"]) == pytest.approx(v.cost_per_gpu_usd)
        assert float(r["time_s"]) == pytest.approx(v.time_s)
        assert r["pareto"] == str(v.pareto)


def test_variants_close_in_time_are_drawn_readably(sweep, qtbot):
    """Variants whose times differ by a few per cent fill the plot instead of sitting on
    an axis stretched around zero."""
    _window, panel = sweep
    report = _run(qtbot, panel, "gpu=H100,B200; oversubscription=1,2", template="rail-cluster")
    xs = [v.figure_s for v in report.variants if v.figure_s is not None]
    ys = [v.cost_per_gpu_usd for v in report.variants if v.figure_s is not None]
    (x0, x1), (y0, y1) = panel.plot.getViewBox().viewRange()
    for lo, hi, values in ((x0, x1, xs), (y0, y1, ys)):
        assert lo < min(values) and max(values) < hi
        assert hi - lo <= max(values) - min(values) + 0.2 * max(abs(v) for v in values)
