"""`JitterPanel`: the Monte Carlo distribution of the training step time.

A histogram of ``result.training.distribution.samples_s`` with vertical lines at the
ideal step (no noise, no jitter), the median and the 99th percentile, and a caption with
what the architect pays for: step time, communication share, exposed communication, and
the GPU-seconds per step lost to waiting on the network and on stragglers.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from designer.gui.analysis.panels.base import OKABE_ITO, PanelDock, accent, format_seconds
from designer.gui.analysis.panels.marks import marked_line

MAX_BINS = 60
#: (attribute of StepDistribution, label, colour, dash, label height in the plot)
MARKERS = (
    ("ideal_s", "ideal", OKABE_ITO["green"], Qt.PenStyle.DashLine, 0.94),
    ("p50_s", "p50", OKABE_ITO["orange"], Qt.PenStyle.SolidLine, 0.80),
    ("p99_s", "p99", OKABE_ITO["vermillion"], Qt.PenStyle.SolidLine, 0.66),
)


def histogram(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts and bin edges for ``samples``; a constant sample gets one narrow bin.

    >>> counts, edges = histogram(np.array([1.0, 1.0, 1.0]))
    >>> counts.tolist(), bool(edges[0] < 1.0 < edges[-1])
    ([3], True)
    """
    lo, hi = float(np.min(samples)), float(np.max(samples))
    if hi <= lo:
        pad = max(abs(lo) * 1e-3, 1e-9)
        return np.array([len(samples)]), np.array([lo - pad, hi + pad])
    edges = np.histogram_bin_edges(samples, bins="auto")
    if len(edges) - 1 > MAX_BINS:
        edges = np.linspace(lo, hi, MAX_BINS + 1)
    counts, edges = np.histogram(samples, bins=edges)
    return counts, edges


class JitterPanel(PanelDock):
    """Step-time distribution with p50/p99/ideal and the straggler cost."""

    export_stem = "step-time"
    no_training_text = "No training estimate for this scenario."

    def __init__(self, parent: QWidget | None = None):
        self.lines: dict[str, pg.InfiniteLine] = {}
        self.counts = np.zeros(0, dtype=int)
        self.edges = np.zeros(0)
        super().__init__("Step time and jitter", "jitter-panel", parent)
        self.plot.setLabel("bottom", "step time", units="s")
        self.plot.setLabel("left", "steps")
        self.plot.setMouseEnabled(x=True, y=False)
        self.caption = pg.LabelItem(justify="left", size="9pt")
        self.graphics.addItem(self.caption, row=1, col=0)
        self._finish()

    def _draw(self, result) -> None:
        report = result.training
        if report is None:
            note = next((n for n in result.notes if n.startswith("training")), "")
            self.set_message(f"{self.no_training_text}\n{note}".strip())
            return
        dist, est = report.distribution, report.estimate
        self.counts, self.edges = histogram(np.asarray(dist.samples_s, dtype=float))
        color = accent(self.theme)
        fill = pg.mkColor(color)
        fill.setAlpha(110)
        self.plot.plot(self.edges, self.counts, stepMode="center", fillLevel=0,
                       brush=pg.mkBrush(fill), pen=pg.mkPen(color, width=1.5))
        self.lines = {}
        label_fill = pg.mkColor(self.theme.background)
        label_fill.setAlpha(200)
        top = max(1, int(self.counts.max())) * 1.1   # the y range, fixed (no y zoom)
        for attr, name, hue, dash, height in MARKERS:
            value = float(getattr(dist, attr))
            self.lines[name] = marked_line(
                self.plot, value, 90, pg.mkPen(hue, width=2, style=dash),
                f"{name} {format_seconds(value)}", (value, height * top), (0, 0.5),
                self.theme.text, label_fill)
        lo = min(float(self.edges[0]), dist.ideal_s)
        hi = max(float(self.edges[-1]), dist.p99_s)
        self.plot.setXRange(lo, hi + 0.15 * (hi - lo or abs(hi) * 1e-3), padding=0.04)
        self.plot.setYRange(0, top, padding=0)
        self.set_title(f"training step over {dist.n_gpus} GPUs: <b>p50 "
                       f"{format_seconds(dist.p50_s)}</b>, p99 {format_seconds(dist.p99_s)} "
                       f"({len(dist.samples_s)} simulated steps)")
        self.caption.setText(
            f"step {format_seconds(est.step_s)} = compute {format_seconds(est.compute_s)} + "
            f"exposed comm {format_seconds(est.exposed_comm_s)} "
            f"(all-reduce {format_seconds(est.comm_s)}); comm share "
            f"<b>{100 * est.comm_share:.0f}%</b><br>"
            f"idle GPUs <b>{est.idle_gpu_s_per_step:.3g} GPU-s</b>/step waiting on the network; "
            f"stragglers <b>{dist.straggler_gpu_s_per_step:.3g} GPU-s</b>/step",
            color=self.theme.text.name())

    def _draw_overlays(self) -> None:
        if self.result is None:
            self.lines = {}
            self.counts = np.zeros(0, dtype=int)
            self.edges = np.zeros(0)
            self.caption.setText("")

    def data_rows(self):
        header = ["step", "step_s"]
        if self.result is None or self.result.training is None:
            return header, []
        samples = self.result.training.distribution.samples_s
        return header, [(i, repr(float(s))) for i, s in enumerate(samples)]
