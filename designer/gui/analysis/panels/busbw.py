"""`BusBwPanel`: bus bandwidth against message size, as nccl-tests prints it.

The x axis is log2 of the message size (32 KiB .. 16 GiB, ticks labelled 32K, 1M, 1G),
the y axis busbw in GB/s.  The current design's sweep is the solid curve with a marker
at the scenario's size and a dotted line at the algorithm's bandwidth ceiling.  *Pin as
baseline* freezes the current curve under a label that tells baselines apart: the
design's file, its scale-out technology and speed (``infiniband NDR 400G``, ``RoCE
400G``), routing and algorithm, and the nodes and links failed in it
(`curve_labels`).  Baselines keep drawing dashed, so InfiniBand vs RoCE,
NDR vs XDR, ECMP vs adaptive or an edit's before and after show on one plot; *Rename*
(or a double-click on the legend entry) gives one a name of the user's.  *Measured*
overlays published nccl-tests results from the reference file (read on first use).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QCheckBox, QInputDialog, QMenu, QPushButton, QToolButton, QWidget

from designer.gui.analysis.panels.base import (
    OKABE_ITO,
    PanelDock,
    accent,
    collective_title,
    format_bytes,
    size_tick,
)
from designer.gui.analysis.panels.curve_labels import describe
from designer.gui.analysis.panels.curve_labels import scale_out_name as scale_out_name
from designer.gui.analysis.panels.marks import marked_line
from designer.model.catalog import resources_dir
from designer.solver import CollectiveResult

#: Published nccl-tests results (the calibration data, shipped with the resources).
REFERENCE_PATH = resources_dir() / "reference" / "measured-allreduce.json"

# Baselines cycle through these (Okabe-Ito minus the current curve's blues and the yellow
# that vanishes on white), then reuse them with another dash pattern.
BASELINE_COLORS = (OKABE_ITO["orange"], OKABE_ITO["green"], OKABE_ITO["vermillion"],
                   OKABE_ITO["purple"], OKABE_ITO["grey"])
_DASHES = (Qt.PenStyle.DashLine, Qt.PenStyle.DashDotLine, Qt.PenStyle.DotLine)
_REFERENCE_SYMBOLS = ("t", "s", "d", "star", "p", "h", "t1", "x")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?)B\s*$", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """Bytes in ``"32KiB"``, ``"1 GiB"``, ``"128B"``; None for words like ``"large"``.

    >>> parse_size("32KiB"), parse_size("2 GiB"), parse_size("large")
    (32768, 2147483648, None)
    """
    m = _SIZE.match(text)
    if not m:
        return None
    power = "KMGT".find(m.group(2).upper()) + 1 if m.group(2) else 0
    base = 1024 if (m.group(3) or not m.group(2)) else 1000
    return int(float(m.group(1)) * base**power)


@dataclass(frozen=True)
class ReferenceCurve:
    """Measured busbw points of one published result."""

    case_id: str
    description: str
    bytes: np.ndarray
    busbw_GBps: np.ndarray


def load_reference(path: str | Path) -> list[ReferenceCurve]:
    """The measured rows of ``path`` that have message sizes and busbw.

    A case with ``curve_bytes_busbw`` gives its whole curve; one with ``busbw`` and a
    ``bytes`` size or ``"a-b"`` range gives one point or a flat segment.  Other cases
    (per-NIC rates, latencies, rules of thumb) have no curve and are skipped.

    Raises
    ------
    OSError, ValueError
        The file cannot be read or is not JSON.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    curves = []
    for case in data.get("cases", []):
        if not isinstance(case, dict):
            continue
        desc = str(case.get("hw", ""))
        points: list[tuple[int, float]] = []
        if "curve_bytes_busbw" in case:
            for size, bw in case["curve_bytes_busbw"]:
                n = parse_size(str(size))
                if n:
                    points.append((n, float(bw)))
        elif "busbw" in case and "bytes" in case:
            sizes = [parse_size(s) for s in str(case["bytes"]).split("-")]
            if sizes and all(sizes):
                points = [(n, float(case["busbw"])) for n in sizes]
        if points:
            b, bw = zip(*sorted(points), strict=True)
            curves.append(ReferenceCurve(str(case.get("id", "?")), desc, np.array(b, float),
                                         np.array(bw, float)))
    return curves


@dataclass(frozen=True)
class Baseline:
    """A pinned sweep: drawn dashed in ``color`` under ``label``."""

    label: str
    sweep: CollectiveResult
    color: str
    dash: Qt.PenStyle


class SizeAxis(pg.AxisItem):
    """Bottom axis of a log2-size plot: ticks at powers of two, labelled 32K, 1M, 1G.

    Labels thin out to every 2nd/4th power when the axis is short; the powers between
    keep an unlabelled tick.
    """

    PIXELS_PER_LABEL = 40

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._step = 1

    def tickValues(self, minVal, maxVal, size):
        lo, hi = max(math.ceil(minVal), 0), min(math.floor(maxVal), 62)
        if hi < lo:
            return []
        step = 1
        while (hi - lo + 1) / step * self.PIXELS_PER_LABEL > max(size, 1.0) and step < 16:
            step *= 2
        self._step = step
        major = [float(k) for k in range(lo, hi + 1) if k % step == 0]
        minor = [float(k) for k in range(lo, hi + 1) if k % step]
        return [(float(step), major)] + ([(1.0, minor)] if minor else [])

    def tickStrings(self, values, scale, spacing):
        if spacing < self._step:
            return [""] * len(values)
        return [size_tick(2 ** round(v)) for v in values]


class _Legend(pg.LegendItem):
    """The plot's legend; a double-click on an entry asks to rename it."""

    def __init__(self, on_double_click, **kwargs):
        super().__init__(**kwargs)
        self._on_double_click = on_double_click

    def mouseDoubleClickEvent(self, event) -> None:
        # Qt's event: pyqtgraph's own click events report the first click of a double.
        text = self.label_at(event.pos()) if event.button() == Qt.MouseButton.LeftButton \
            else None
        if text is None:
            super().mouseDoubleClickEvent(event)
            return
        event.accept()
        self._on_double_click(text)

    def label_at(self, pos) -> str | None:
        """Text of the entry (sample or label) at ``pos`` (legend coordinates)."""
        for sample, label in self.items:
            for part in (sample, label):
                if part.mapRectToParent(part.boundingRect()).contains(pos):
                    return label.text
        return None


class BusBwPanel(PanelDock):
    """busbw against message size for the current design, with pinned baselines.

    Signals
    -------
    baselines_changed()
        A baseline was pinned, renamed or cleared.
    """

    export_stem = "busbw"
    baselines_changed = Signal()

    def __init__(self, parent: QWidget | None = None,
                 reference_path: str | Path | None = REFERENCE_PATH):
        self.baselines: list[Baseline] = []
        self.design_name = "design"
        self.reference_path = Path(reference_path) if reference_path else None
        self.reference: list[ReferenceCurve] | None = None  # loaded on first use
        self.curve: pg.PlotDataItem | None = None
        self.marker: pg.ScatterPlotItem | None = None
        self._pins = 0
        super().__init__("Bus bandwidth", "busbw-panel", parent,
                         axis_items={"bottom": SizeAxis("bottom")})
        self.plot.setLabel("bottom", "message size (bytes)")
        self.plot.setLabel("left", "busbw (GB/s)")
        self.plot.setLimits(xMin=13, xMax=36, yMin=0)
        # Below the plot: inside it, the legend would hide the curves it explains.
        self.legend = _Legend(self._on_legend_double_clicked, colCount=2,
                              labelTextSize="8pt", verSpacing=-6)
        self.graphics.addItem(self.legend, row=1, col=0)

        self.pin_button = QPushButton("Pin as baseline", self.body)
        self.pin_button.setToolTip("Keep the current curve on the plot (dashed) to compare "
                                   "with later edits or another design")
        self.pin_button.clicked.connect(self._on_pin_button_clicked)
        self.rename_button = QToolButton(self.body)
        self.rename_button.setText("Rename")
        self.rename_button.setToolTip("Give a baseline your own name (or double-click its "
                                      "legend entry)")
        self.rename_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.rename_menu = QMenu(self.rename_button)
        self.rename_menu.aboutToShow.connect(self._on_rename_menu_about_to_show)
        self.rename_button.setMenu(self.rename_menu)
        self.clear_button = QPushButton("Clear baselines", self.body)
        self.clear_button.clicked.connect(self._on_clear_button_clicked)
        self.reference_box = QCheckBox("Measured", self.body)
        self.reference_box.toggled.connect(self._on_reference_box_toggled)
        if self.reference_path is None or not self.reference_path.is_file():
            self._disable_reference(f"No measured reference file at {self.reference_path}")
        else:
            self.reference_box.setToolTip(f"Overlay published nccl-tests results from "
                                          f"{self.reference_path.name}")
        for w in (self.pin_button, self.rename_button, self.clear_button, self.reference_box):
            self.toolbar.addWidget(w)
        self._finish()

    # ------------------------------------------------------------------ API
    def set_design_name(self, name: str) -> None:
        """Name used in baseline labels (the document's title)."""
        self.design_name = name or "design"

    def follow(self, runner, document) -> None:
        """As `PanelDock.follow`, and the curve's label names the design: its file, or
        its name while it has none."""
        super().follow(runner, document)
        self._document = document
        self.set_design_name(document.title)
        for signal in (document.path_changed, document.name_changed,
                       document.topology_replaced):
            signal.connect(self._on_document_title_changed)

    def _on_document_title_changed(self, *_args) -> None:
        self.set_design_name(self._document.title)

    def pin_baseline(self, label: str | None = None) -> str | None:
        """Freeze the current sweep as a baseline; returns its label (None: no result)."""
        if self.result is None:
            return None
        self._pins += 1
        if label is None:
            label = f"baseline {self._pins}: {describe(self.result, self.design_name)}"
        n = len(self.baselines)
        self.baselines.append(Baseline(label, self.result.sweep,
                                       BASELINE_COLORS[n % len(BASELINE_COLORS)],
                                       _DASHES[(n // len(BASELINE_COLORS)) % len(_DASHES)]))
        self._redraw()
        self._update_buttons()
        self.baselines_changed.emit()
        return label

    def rename_baseline(self, index: int, label: str) -> bool:
        """Call baseline ``index`` ``label`` (stripped); False when the name is empty
        or the index is out of range, and nothing changes."""
        label = label.strip()
        if not label or not 0 <= index < len(self.baselines):
            return False
        old = self.baselines[index]
        self.baselines[index] = Baseline(label, old.sweep, old.color, old.dash)
        self._redraw()
        self.baselines_changed.emit()
        return True

    def ask_rename(self, index: int) -> bool:
        """Ask the user for a new name of baseline ``index``; True when renamed."""
        if not 0 <= index < len(self.baselines):
            return False
        text, ok = QInputDialog.getText(self, "Rename baseline", "Name on the plot:",
                                        text=self.baselines[index].label)
        return bool(ok) and self.rename_baseline(index, text)

    def clear_baselines(self) -> None:
        self.baselines.clear()
        self._pins = 0
        self._redraw()
        self._update_buttons()
        self.baselines_changed.emit()

    def show_reference(self, on: bool) -> None:
        """Overlay (or hide) the measured reference rows."""
        self.reference_box.setChecked(on)

    @property
    def reference_available(self) -> bool:
        return self.reference_box.isEnabled()

    # ------------------------------------------------------------------ slots
    def _on_pin_button_clicked(self) -> None:
        self.pin_baseline()

    def _on_clear_button_clicked(self) -> None:
        self.clear_baselines()

    def _on_rename_menu_about_to_show(self) -> None:
        self.rename_menu.clear()
        for i, b in enumerate(self.baselines):
            action = self.rename_menu.addAction(b.label)
            action.triggered.connect(lambda _=False, k=i: self.ask_rename(k))

    def _on_legend_double_clicked(self, text: str) -> None:
        labels = [b.label for b in self.baselines]
        if text in labels:
            self.ask_rename(labels.index(text))

    def _on_reference_box_toggled(self, on: bool) -> None:
        if on and self.reference is None:
            try:
                self.reference = load_reference(self.reference_path)
            except (OSError, ValueError) as exc:
                self._disable_reference(f"Cannot read {self.reference_path}: {exc}")
                return
        self._redraw()

    def _disable_reference(self, why: str) -> None:
        self.reference_box.blockSignals(True)
        self.reference_box.setChecked(False)
        self.reference_box.blockSignals(False)
        self.reference_box.setEnabled(False)
        self.reference_box.setToolTip(why)

    def _update_buttons(self) -> None:
        self.pin_button.setEnabled(self.result is not None)
        self.clear_button.setEnabled(bool(self.baselines))
        self.rename_button.setEnabled(bool(self.baselines))

    # ------------------------------------------------------------------ drawing
    def _theme_changed(self) -> None:
        self.legend.setLabelTextColor(self.theme.text)

    def _redraw(self) -> None:
        self.legend.clear()
        super()._redraw()

    def _legend_add(self, item: pg.PlotDataItem) -> None:
        self.legend.addItem(item, item.name())

    def _draw(self, result) -> None:
        sweep, focus = result.sweep, result.focus
        color = accent(self.theme)
        self.curve = self.plot.plot(
            np.log2(sweep.sizes.astype(float)), sweep.busbw_GBps,
            pen=pg.mkPen(color, width=2.5), symbol="o", symbolSize=5,
            symbolBrush=color, symbolPen=None,
            name=f"this design: {describe(result, self.design_name)}")
        self._legend_add(self.curve)
        size = float(focus.sizes[0])
        bw = float(focus.busbw_GBps[0])
        x = math.log2(size)
        self.marker = pg.ScatterPlotItem([x], [bw], symbol="star", size=16,
                                         brush=pg.mkBrush(OKABE_ITO["vermillion"]),
                                         pen=pg.mkPen(self.theme.text, width=1))
        self.plot.addItem(self.marker)
        guide = QColor(self.theme.text)
        guide.setAlpha(110)
        # The title states the figure; a label on the line would cover the curves.
        self.plot.addItem(pg.InfiniteLine(x, angle=90,
                                          pen=pg.mkPen(guide, style=Qt.PenStyle.DashLine)))
        ceiling = float(focus.ceiling_busbw_GBps)
        if math.isfinite(ceiling) and ceiling > 0:
            xs = np.log2(sweep.sizes.astype(float))
            at = (float(xs[0] + 0.3 * (xs[-1] - xs[0])), ceiling)  # above the line, left
            marked_line(self.plot, ceiling, 0, pg.mkPen(guide, style=Qt.PenStyle.DotLine),
                        f"ceiling {ceiling:.0f} GB/s", at, (0.5, 1), self.theme.text,
                        self._label_fill())
        self.set_title(f"{collective_title(sweep.collective)} busbw on {sweep.n_ranks} GPUs: "
                       f"<b>{bw:.0f} GB/s</b> at {format_bytes(size)} "
                       f"({focus.algorithm_by_size[0]}), peak "
                       f"{float(np.max(sweep.busbw_GBps)):.0f} GB/s")

    def _label_fill(self) -> QColor:
        fill = QColor(self.theme.background)
        fill.setAlpha(200)
        return fill

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_legend()

    def _fit_legend(self) -> None:
        """Two legend columns when the labels fit side by side, else one."""
        widest = max((sample.boundingRect().width() + label.boundingRect().width()
                      for sample, label in self.legend.items), default=0.0)
        room = self.graphics.width() - 40
        self.legend.setColumnCount(2 if 2 * (widest + 20) <= room else 1)

    def _draw_overlays(self) -> None:
        if self.result is None:
            self.curve = self.marker = None
        for b in self.baselines:
            self._legend_add(self.plot.plot(
                np.log2(b.sweep.sizes.astype(float)), b.sweep.busbw_GBps,
                pen=pg.mkPen(b.color, width=2, style=b.dash), name=b.label))
        if self.reference_box.isChecked() and self.reference:
            pen = QColor(self.theme.text)
            pen.setAlpha(150)
            for i, ref in enumerate(self.reference):
                self._legend_add(self.plot.plot(
                    np.log2(ref.bytes), ref.busbw_GBps,
                    pen=pg.mkPen(pen, width=1, style=Qt.PenStyle.DotLine),
                    symbol=_REFERENCE_SYMBOLS[i % len(_REFERENCE_SYMBOLS)], symbolSize=8,
                    symbolPen=pg.mkPen(self.theme.text), symbolBrush=None,
                    name=f"measured: {ref.case_id}"))
        self.plot.setXRange(15, 34, padding=0.03)
        self.plot.enableAutoRange(axis="y")
        self._fit_legend()
        self._update_buttons()

    # ------------------------------------------------------------------ data
    def data_rows(self):
        header = ["series", "bytes", "time_s", "algbw_GBps", "busbw_GBps", "algorithm",
                  "protocol"]
        rows = []
        series = ([("current", self.result.sweep)] if self.result is not None else []) + \
            [(b.label, b.sweep) for b in self.baselines]
        for name, s in series:
            for i in range(len(s.sizes)):
                rows.append((name, int(s.sizes[i]), repr(float(s.time_s[i])),
                             repr(float(s.algbw_GBps[i])), repr(float(s.busbw_GBps[i])),
                             s.algorithm_by_size[i], str(s.protocol[i])))
        if self.reference_box.isChecked() and self.reference:
            for ref in self.reference:
                for n, bw in zip(ref.bytes, ref.busbw_GBps, strict=True):
                    rows.append((f"measured: {ref.case_id}", int(n), "", "", repr(float(bw)),
                                 "", ""))
        return header, rows
