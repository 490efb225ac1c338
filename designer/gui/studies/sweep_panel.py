"""The Sweep panel: run a design sweep from the GUI and pick a variant off the plot.

The sweep's choices are the CLI's (``study sweep TEMPLATE --grid key=v1,v2 --set
key=value``): a template, the swept parameters (``key=v1,v2; key=v1,v2``), the fixed
ones (``key=value; ...``) and where to run (this process, or a local Dask cluster).
A progress bar with the percentage of variants done and Cancel; then a scatter of
every variant, time (the step time when known, else the collective's) against the
chosen cost figure, its Pareto front drawn as a line through the variants no other
beats on both axes.  Hovering a point shows the variant's parameters and figures;
clicking it selects the variant, which "Open as new design" builds and opens (as
File > New does, asking to save unsaved changes first).  "Export CSV…" writes the
table with the same columns as ``study sweep -o FILE.csv``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from designer.gui.studies.background import RunProgressView
from designer.gui.studies.sweep_runner import SweepRunner
from designer.model.errors import DesignError

__all__ = ["Y_AXES", "SweepPanel", "pareto_front", "sweep_rows"]

#: Cost figures the plot can put on its vertical axis: label, Variant attribute, unit.
Y_AXES = (
    ("Cost per GPU", "cost_per_gpu_usd", "$"),
    ("Power per GPU", "power_per_gpu_w", "W"),
    ("Cost", "cost_usd", "$"),
    ("Power", "power_w", "W"),
)
ENGINES = (("This process (serial)", 0), ("Local Dask cluster", None))
FRONT_PEN = pg.mkPen("#D55E00", width=2)
POINT_BRUSH = pg.mkBrush(0, 114, 178, 170)
FRONT_BRUSH = pg.mkBrush("#D55E00")
PICK_PEN = pg.mkPen("#CC79A7", width=3)


def pareto_front(x: Sequence[float], y: Sequence[float]) -> list[int]:
    """Indices of the points no other point beats on both ``x`` and ``y`` (lower is
    better on both: at most as large on each and smaller on one), in order of ``x``.

    >>> pareto_front([1, 2, 3, 2], [3, 1, 0.5, 2])
    [0, 1, 2]
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = []
    for i in range(len(xs)):
        beaten = (xs <= xs[i]) & (ys <= ys[i]) & ((xs < xs[i]) | (ys < ys[i]))
        if not beaten.any():
            keep.append(i)
    return sorted(keep, key=lambda i: (xs[i], ys[i]))


def sweep_rows(report) -> list[dict]:
    """The sweep as table rows: ``param_<key>`` columns, then every figure (the
    columns of ``study sweep -o FILE.csv``)."""
    rows = json.loads(json.dumps(report.as_json()["variants"]))
    return [{**{f"param_{k}": v for k, v in row.pop("params").items()}, **row} for row in rows]


def _padded(values: list[float]) -> tuple[float, float]:
    """An axis range around ``values`` with a margin of a tenth of their spread, at least
    5 % of their size: variants that differ little (or not at all) on one axis stay
    readable instead of sitting on an axis stretched around zero."""
    lo, hi = min(values), max(values)
    margin = max(0.1 * (hi - lo), 0.05 * max(abs(lo), abs(hi)), 1e-12)
    return lo - margin, hi + margin


def _items(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ";").split(";") if part.strip()]


def _variant_text(v) -> str:
    params = ", ".join(f"{k}={val}" for k, val in v.params.items())
    lines = [
        params,
        f"{v.gpus:,} GPUs · ${v.cost_per_gpu_usd:,.0f}/GPU · {v.power_per_gpu_w:,.0f} W/GPU",
    ]
    if v.figure_s is not None:
        what = "step" if v.step_s is not None else "collective"
        lines.append(
            f"{what} {v.figure_s * 1e3:.3f} ms"
            + (f" · busbw {v.busbw_GBps:,.1f} GB/s" if v.busbw_GBps else "")
        )
    if v.pareto:
        lines.append("on the Pareto front (cost per GPU vs time)")
    if v.error:
        lines.append(v.error)
    return "\n".join(lines)


class SweepPanel(RunProgressView, QDockWidget):
    """A design sweep and its variants (see the module docstring).

    Signals
    -------
    message(str)
        A line for the status bar.
    open_variant(object)
        The `Topology` of a variant to open as a new design.
    """

    message = Signal(str)
    open_variant = Signal(object)

    def __init__(self, runner: SweepRunner, parent: QWidget | None = None):
        from designer.model.templates import TEMPLATES

        super().__init__("Sweep", parent)
        self.setObjectName("sweep_panel")
        self.runner = runner
        self.report = None
        self.selected: int | None = None
        self._shown: list[int] = []  # variant index of each plotted point
        body = QWidget(self)
        lay = QVBoxLayout(body)
        row = QHBoxLayout()
        self.template = QComboBox(body)
        for name, t in TEMPLATES.items():
            self.template.addItem(name, name)
            self.template.setItemData(self.template.count() - 1, t.help, 3)  # (tooltip role)
        self.grid = QLineEdit(body)
        self.sets = QLineEdit(body)
        self.sets.setPlaceholderText("fixed: key=value; …")
        self.engine = QComboBox(body)
        for text, value in ENGINES:
            self.engine.addItem(text, value)
        self.run_button = QPushButton("Run", body)
        self.cancel_button = QPushButton("Cancel", body)
        self.cancel_button.setEnabled(False)
        for w in (QLabel("Template:", body), self.template, QLabel("Sweep:", body)):
            row.addWidget(w)
        row.addWidget(self.grid, 3)
        row.addWidget(QLabel("Set:", body))
        row.addWidget(self.sets, 2)
        lay.addLayout(row)
        self.bar = QProgressBar(body)
        self.bar.setRange(0, 100)
        self.bar.setValue(0)
        self.bar.setFormat("%p %")
        self.y_axis = QComboBox(body)
        for text, attr, _unit in Y_AXES:
            self.y_axis.addItem(text, attr)
        self.open_button = QPushButton("Open as new design", body)
        self.open_button.setToolTip("Build the selected variant and open it (click a point)")
        self.open_button.setEnabled(False)
        self.export_button = QPushButton("Export CSV…", body)
        self.export_button.setEnabled(False)
        row = QHBoxLayout()
        for w in (QLabel("Run on:", body), self.engine, self.run_button, self.cancel_button):
            row.addWidget(w)
        row.addWidget(self.bar, 1)
        for w in (QLabel("Plot:", body), self.y_axis, self.open_button, self.export_button):
            row.addWidget(w)
        lay.addLayout(row)
        self.status = QLabel("No sweep run yet: name the values to sweep and press Run.", body)
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.plot = pg.PlotWidget(body)
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        self.plot.setLabel("bottom", "time (step, else collective)", units="s")
        self.scatter = pg.ScatterPlotItem(
            size=9, hoverable=True, tip=self._tip, hoverPen=pg.mkPen("#808080", width=2)
        )
        self.front = pg.PlotDataItem(pen=FRONT_PEN)
        self.pick = pg.ScatterPlotItem(size=16, pen=PICK_PEN, brush=None)
        for item in (self.front, self.scatter, self.pick):
            self.plot.addItem(item)
        lay.addWidget(self.plot, 1)
        self.setWidget(body)

        self.template.currentIndexChanged.connect(self._on_template_changed)
        self._on_template_changed()
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(runner.cancel)
        self.y_axis.currentIndexChanged.connect(self._draw)
        self.scatter.sigClicked.connect(self._on_scatter_clicked)
        self.open_button.clicked.connect(self.open_selected)
        self.export_button.clicked.connect(lambda: self.export_csv())
        runner.started.connect(self._on_started)
        runner.progress.connect(self._on_progress)
        runner.result_ready.connect(self.show_report)
        runner.failed.connect(self._on_failed)
        runner.cancelled.connect(self._on_cancelled)
        self.toggleViewAction().triggered.connect(lambda on: on and self.raise_())

    def apply_theme(self, theme) -> None:
        """The plot in the canvas's light or dark theme (``Theme``)."""
        self.plot.setBackground(theme.background)
        for name in ("left", "bottom"):
            axis = self.plot.getAxis(name)
            axis.setPen(theme.text)
            axis.setTextPen(theme.text)

    # ------------------------------------------------------------ running
    def _on_template_changed(self, _index: int = 0) -> None:
        from designer.model.templates import TEMPLATES

        t = TEMPLATES[self.template.currentData()]
        names = ", ".join(p.name for p in t.params)
        self.grid.setPlaceholderText(f"key=v1,v2; … ({names})")
        self.grid.setToolTip(
            "\n".join(f"{p.name} (default {p.default}): {p.help}" for p in t.params)
        )
        self.sets.setToolTip(self.grid.toolTip())

    def run(self) -> bool:
        """Sweep the typed values on the chosen engine (False, and why in the status,
        when the values are wrong or a sweep is running)."""
        from designer.cli_base import UsageError, parse_sets
        from designer.studies.sweep import parse_grid, variants

        template = self.template.currentData()
        try:
            grid = parse_grid(_items(self.grid.text()), "sweep")
            if not grid:
                raise ValueError("name at least one parameter to sweep: key=v1,v2")
            sets = parse_sets(_items(self.sets.text()))
            combos = variants(template, grid, sets)
        except (ValueError, DesignError, UsageError) as exc:
            self.status.setText(f"Cannot sweep: {exc}")
            return False
        if len(combos) > 10_000:
            self.status.setText(f"Cannot sweep: {len(combos):,} variants; at most 10,000")
            return False
        self.show()
        self.raise_()
        return self.runner.start(template, grid, sets, self.engine.currentData())

    def _busy(self, busy: bool) -> None:
        for w in (self.run_button, self.template, self.grid, self.sets, self.engine):
            w.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)

    def _on_failed(self, error: str) -> None:
        self._busy(False)
        self.status.setText(f"Sweep failed: {error}")
        self.message.emit(f"Sweep: {error}")

    def _on_cancelled(self) -> None:
        self._busy(False)
        self.bar.setValue(0)
        self.status.setText(
            "Sweep cancelled."
            if self.report is None
            else "Sweep cancelled; the plot is the previous sweep's."
        )

    # ------------------------------------------------------------ results
    def show_report(self, report) -> None:
        """Plot ``report`` (a `SweepReport`)."""
        self._busy(False)
        self.bar.setValue(100)
        self.report = report
        self.selected = None
        self.open_button.setEnabled(False)
        self.export_button.setEnabled(True)
        n, ok = len(report.variants), sum(v.figure_s is not None for v in report.variants)
        where = report.engine.where if report.engine is not None else "serial"
        self.status.setText(
            f"{n} variant(s) ({ok} solved) in {report.timing_ms.get('total', 0) / 1e3:.1f} s"
            f" on {'this process' if where == 'serial' else where}; the line is the Pareto "
            "front; click a point to pick a variant"
        )
        self._draw()

    def front_indices(self) -> list[int]:
        """Variant indices on the plotted Pareto front, in order of time."""
        xs, ys = self._xy()
        return [self._shown[i] for i in pareto_front(xs, ys)]

    def _xy(self) -> tuple[list[float], list[float]]:
        attr = self.y_axis.currentData()
        vs = self.report.variants if self.report is not None else []
        self._shown = [i for i, v in enumerate(vs) if v.figure_s is not None]
        return [vs[i].figure_s for i in self._shown], [getattr(vs[i], attr) for i in self._shown]

    def _draw(self, _index: int = 0) -> None:
        xs, ys = self._xy()
        text, _attr, unit = Y_AXES[self.y_axis.currentIndex()]
        self.plot.setLabel("left", text, units=unit)
        front = set(pareto_front(xs, ys))
        self.scatter.setData(
            x=xs,
            y=ys,
            data=list(self._shown),
            brush=[FRONT_BRUSH if i in front else POINT_BRUSH for i in range(len(xs))],
        )
        order = pareto_front(xs, ys)
        self.front.setData([xs[i] for i in order], [ys[i] for i in order])
        if xs:
            view = self.plot.getViewBox()
            view.setXRange(*_padded(xs), padding=0)
            view.setYRange(*_padded(ys), padding=0)
        self._show_pick()

    def _tip(self, x: float, y: float, data) -> str:
        return _variant_text(self.report.variants[int(data)]) if self.report else ""

    def _on_scatter_clicked(self, _item, points, _event=None) -> None:
        if len(points):
            self.select(int(points[0].data()))

    def select(self, index: int | None) -> None:
        """Pick variant ``index`` (ringed on the plot; "Open as new design" builds it)."""
        self.selected = index
        self.open_button.setEnabled(index is not None)
        self._show_pick()
        if index is not None:
            v = self.report.variants[index]
            self.message.emit(
                "Sweep variant: " + ", ".join(f"{k}={x}" for k, x in v.params.items())
            )

    def _show_pick(self) -> None:
        v = (
            self.report.variants[self.selected]
            if self.report is not None and self.selected is not None
            else None
        )
        if v is None or v.figure_s is None:
            self.pick.setData([], [])
        else:
            self.pick.setData([v.figure_s], [getattr(v, self.y_axis.currentData())])

    def open_selected(self) -> bool:
        """Build the selected variant and hand it to `open_variant`."""
        from designer.model.templates import build_template

        if self.report is None or self.selected is None:
            return False
        v = self.report.variants[self.selected]
        try:
            topo = build_template(self.report.template, **v.params)
        except DesignError as exc:
            self.message.emit(f"Cannot build the variant: {exc}")
            return False
        self.open_variant.emit(topo)
        return True

    def export_csv(self, path: str | Path | None = None) -> bool:
        """Write every variant to ``path`` (asked for when not given) as CSV."""
        if self.report is None:
            return False
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Export sweep", "sweep.csv", "CSV (*.csv)")
            if not path:
                return False
        rows = sweep_rows(self.report)
        buf = io.StringIO()
        writer = csv.DictWriter(
            buf, fieldnames=list(rows[0]) if rows else ["template"], lineterminator="\n"
        )
        writer.writeheader()
        writer.writerows(rows)
        try:
            Path(path).write_text(buf.getvalue(), encoding="utf-8")
        except OSError as exc:
            self.message.emit(f"Cannot write {path}: {exc.strerror or exc}")
            return False
        self.message.emit(f"Sweep exported: {len(rows)} variant(s) to {path}")
        return True
