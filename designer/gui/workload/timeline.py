"""`IterationTimelinePanel`: one iteration of every job, as it ran sharing the fabric.

A Gantt chart of the simulation's timeline (`designer.workload.report.timeline`): one
band per job, and in it one lane per kind of work the job did: compute, then the
communication of each parallelism (TP, CP, PP, DP, EP, and storage or background
traffic when there is some), and **idle** (the job's bubbles: spans of its iteration in
which none of its compute runs, pipeline fill and drain and exposed communication).  A
bar's colour says its lane (Okabe-Ito, colour-blind safe); the band, tinted in the job's
colour, is labelled with its name; with several jobs, a dashed line across a band marks
where that job's iteration would end alone on the idle fabric (shared vs alone).  The
time axis zooms and pans with the wheel and a drag (every lane stays in view); hovering
a bar names the job, lane and task, its start, end and duration, its message size, the
number of groups that ran it, and its achieved bandwidth (bytes over duration, per
group).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import QWidget

from designer.gui.analysis.panels.base import (
    OKABE_ITO,
    PanelDock,
    format_bytes,
    format_seconds,
)
from designer.workload.report import TimelineEvent

__all__ = ["LANE_COLOURS", "LANE_ORDER", "IterationTimelinePanel", "WorkloadBar", "workload_bars"]

BAR_HEIGHT = 0.7
#: Lanes in the order drawn inside a job's band.
LANE_ORDER = ("compute", "tp", "cp", "pp", "dp", "ep", "storage", "background", "idle")
LANE_TITLES = {
    "compute": "compute",
    "tp": "TP",
    "cp": "CP",
    "pp": "PP",
    "dp": "DP",
    "ep": "EP",
    "storage": "storage",
    "background": "background",
    "idle": "idle (bubble)",
}
LANE_COLOURS = {
    "compute": OKABE_ITO["grey"],
    "tp": OKABE_ITO["blue"],
    "cp": OKABE_ITO["sky"],
    "pp": OKABE_ITO["orange"],
    "dp": OKABE_ITO["green"],
    "ep": OKABE_ITO["purple"],
    "storage": OKABE_ITO["yellow"],
    "background": "#666666",
    "idle": OKABE_ITO["vermillion"],
}


@dataclass(frozen=True)
class WorkloadBar:
    """One bar of the chart: a task of a job (or an idle span) on its row."""

    row: int
    job: str
    lane: str
    label: str
    start_s: float
    end_s: float
    bytes: float
    groups: int

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def describe(self) -> str:
        lines = [
            f"{self.job} · {LANE_TITLES.get(self.lane, self.lane)}: {self.label}",
            f"{format_seconds(self.start_s)} → {format_seconds(self.end_s)} "
            f"({format_seconds(self.duration_s)})",
        ]
        if self.bytes > 0:
            line = f"{format_bytes(self.bytes)} per group, {self.groups} group(s)"
            if self.duration_s > 0:
                line += f", {self.bytes / self.duration_s / 1e9:.3g} GB/s achieved per group"
            lines.append(line)
        return "\n".join(lines)


def _idle_spans(starts: np.ndarray, ends: np.ndarray, end: float) -> list[tuple[float, float]]:
    """Spans of ``[0, end]`` covered by no ``[starts, ends]`` interval."""
    spans, t = [], 0.0
    for s, e in sorted(zip(starts.tolist(), ends.tolist(), strict=True)):
        if s > t + 1e-12:
            spans.append((t, s))
        t = max(t, e)
    if end > t + 1e-12:
        spans.append((t, end))
    return spans


def workload_bars(result) -> tuple[list[WorkloadBar], list[tuple[int, str]]]:
    """The bars of a `WorkloadResult` and the row labels (row, text), jobs in the
    result's order and lanes in `LANE_ORDER` within each, only lanes the job used."""
    sim = result.simulation
    by_job: dict[str, list] = {j.name: [] for j in sim.jobs}
    for ev in sim.timeline:
        by_job.setdefault(ev.job, []).append(ev)
    bars: list[WorkloadBar] = []
    labels: list[tuple[int, str]] = []
    row = 0
    for j in sim.jobs:
        events = by_job.get(j.name, [])
        lanes: dict[str, list] = {}  # lane -> its events, made into bars once rows are known
        for ev in events:
            lanes.setdefault(ev.lane, []).append(ev)
        compute = lanes.get("compute", [])
        if events:
            idle = _idle_spans(
                np.array([e.start_s for e in compute]),
                np.array([e.end_s for e in compute]),
                j.iteration_s,
            )
            if idle:
                lanes["idle"] = [
                    TimelineEvent(
                        j.name, -1, "idle", "no compute of this job running", s, e, 0.0, 0
                    )
                    for s, e in idle
                ]
        for lane in (*LANE_ORDER, *sorted(set(lanes) - set(LANE_ORDER))):
            if lane not in lanes:
                continue
            labels.append((row, f"{j.name} · {LANE_TITLES.get(lane, lane)}"))
            bars += [
                WorkloadBar(row, j.name, e.lane, e.label, e.start_s, e.end_s, e.bytes, e.groups)
                for e in lanes[lane]
            ]
            row += 1
    return bars, labels


def _lane_brushes(bars: list[WorkloadBar]) -> list:
    """One brush per lane, shared by its bars (a brush per bar costs seconds for the
    80,000 tasks of four big jobs)."""
    made: dict[str, object] = {}
    out = []
    for b in bars:
        brush = made.get(b.lane)
        if brush is None:
            brush = made[b.lane] = pg.mkBrush(LANE_COLOURS.get(b.lane, "#BBBBBB"))
        out.append(brush)
    return out


class IterationTimelinePanel(PanelDock):
    """One iteration of each job, lane by lane (see the module)."""

    export_stem = "iteration-timeline"
    empty_text = "No workload simulated yet: add a job in the Workloads dock."

    def __init__(self, parent: QWidget | None = None):
        self.bars: list[WorkloadBar] = []
        self.row_labels: list[tuple[int, str]] = []
        self.bar_item: pg.BarGraphItem | None = None
        self._extent: np.ndarray | None = None  # start, end, row of each bar (hover)
        #: Per job, where its iteration ends alone (the dashed marks; two jobs or more).
        self.alone_marks: dict[str, float] = {}
        super().__init__("Iteration timeline", "iteration-timeline-panel", parent)
        self.plot.setLabel("bottom", "time", units="s")
        self.plot.setMouseEnabled(x=True, y=False)  # zoom and pan time; every lane stays
        self.plot.invertY(True)
        self.plot.showGrid(x=True, y=False, alpha=0.2)
        # Lane names a little smaller than the axes': a band per job has several lanes.
        font = QFont(self.plot.getAxis("left").font())
        font.setPointSizeF(max(font.pointSizeF() - 1.0, 6.0))
        self.plot.getAxis("left").setStyle(tickFont=font)
        self.hover = pg.TextItem(anchor=(0, 1))
        self.hover.setZValue(100)
        self.plot.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)
        self._finish()

    def _theme_changed(self) -> None:
        text = self.theme.text
        fill = QColor(self.theme.background)
        fill.setAlpha(235)
        self.hover.fill = pg.mkBrush(fill)
        self.hover.border = pg.mkPen(text)
        self.hover.setColor(text)

    def _draw(self, result) -> None:
        self.bars, self.row_labels = workload_bars(result)
        self._extent = None
        self.hover.hide()
        self.plot.addItem(self.hover, ignoreBounds=True)
        if not self.bars:
            self.bar_item = None
            return
        self._draw_bands(result)
        outline = QColor(self.theme.text)
        outline.setAlpha(120)
        self.bar_item = pg.BarGraphItem(
            x0=np.array([b.start_s for b in self.bars]),
            width=np.array([max(b.duration_s, 0.0) for b in self.bars]),
            y=np.array([b.row for b in self.bars], dtype=float),
            height=BAR_HEIGHT,
            brushes=_lane_brushes(self.bars),
            pen=pg.mkPen(outline, width=0),
        )
        self.plot.addItem(self.bar_item)
        self.plot.getAxis("left").setTicks([self.row_labels, []])
        end = max(b.end_s for b in self.bars) or 1e-9
        self.plot.setYRange(-0.5, len(self.row_labels) - 0.5, padding=0.02)
        self.plot.setXRange(0.0, end, padding=0.02)
        self.plot.vb.setLimits(
            xMin=-0.05 * end, xMax=1.1 * end, yMin=-1.0, yMax=len(self.row_labels)
        )
        jobs = result.simulation.jobs
        parts = [
            f"{j.name} <b>{format_seconds(j.iteration_s)}</b>"
            + (f" (slowdown {j.slowdown:.3f}×)" if j.slowdown and len(jobs) > 1 else "")
            for j in jobs
        ]
        self.set_title("One iteration: " + ", ".join(parts))

    def _draw_bands(self, result) -> None:
        """A tinted band in each job's colour behind its lanes, so jobs read apart."""
        colours = {job.name: job.colour for job in result.jobs}
        rows: dict[str, list[int]] = {}
        for b in self.bars:
            rows.setdefault(b.job, []).append(b.row)
        for job, rs in rows.items():
            colour = QColor(colours.get(job, "#999999"))
            colour.setAlpha(40)
            band = pg.LinearRegionItem(
                (min(rs) - 0.5, max(rs) + 0.5),
                orientation="horizontal",
                movable=False,
                brush=pg.mkBrush(colour),
                pen=pg.mkPen(None),
            )
            band.setZValue(-10)
            self.plot.addItem(band, ignoreBounds=True)
        self._draw_alone_marks(result, rows)

    def _draw_alone_marks(self, result, rows: dict[str, list[int]]) -> None:
        """Shared vs alone: across each job's band, a dashed line where its iteration
        would end alone on the idle fabric (when other jobs share it), so the gap to the
        band's last bar is what sharing cost."""
        self.alone_marks = {}
        jobs = result.simulation.jobs
        if len(jobs) < 2:
            return
        pen = pg.mkPen(self.theme.text, width=2, style=Qt.PenStyle.DashLine)
        for j in jobs:
            rs = rows.get(j.name)
            if j.alone_s is None or not rs:
                continue
            lo, hi = min(rs) - 0.5, max(rs) + 0.5
            line = pg.PlotDataItem([j.alone_s, j.alone_s], [lo, hi], pen=pen)
            line.setZValue(50)
            self.plot.addItem(line)
            self.alone_marks[j.name] = j.alone_s

    def _draw_overlays(self) -> None:
        if self.result is None:
            self.bars, self.row_labels = [], []
            self._extent = None
            self.alone_marks = {}
            self.bar_item = None
            self.plot.getAxis("left").setTicks([[], []])

    # ------------------------------------------------------------------ hover
    def bar_at(self, x: float, y: float) -> WorkloadBar | None:
        """The bar under the data point (x seconds, y row), if any (the shortest where
        bars overlap: a short transfer inside a long one stays reachable)."""
        if self._extent is None or len(self._extent) != len(self.bars):
            self._extent = np.array(
                [(b.start_s, b.end_s, b.row) for b in self.bars], dtype=float
            ).reshape(-1, 3)
        start, end, row = self._extent.T
        hit = np.flatnonzero((start <= x) & (x <= end) & (np.abs(y - row) <= BAR_HEIGHT / 2))
        if not hit.size:
            return None
        return self.bars[int(hit[np.argmin(end[hit] - start[hit])])]

    def leaveEvent(self, event) -> None:
        super().leaveEvent(event)
        self.hover.hide()  # the pointer left the panel: no stale tooltip stays

    def _on_scene_mouse_moved(self, pos: QPointF) -> None:
        if not self.bars or not self.plot.vb.sceneBoundingRect().contains(pos):
            self.hover.hide()
            return
        p = self.plot.vb.mapSceneToView(pos)
        bar = self.bar_at(p.x(), p.y())
        if bar is None:
            self.hover.hide()
            return
        (x0, x1), (y0, y1) = self.plot.vb.viewRange()
        right_half = p.x() > (x0 + x1) / 2
        upper_half = bar.row < (y0 + y1) / 2
        self.hover.setAnchor((1 if right_half else 0, 0 if upper_half else 1))
        self.hover.setText(bar.describe())
        self.hover.setPos(p.x(), bar.row + (1 if upper_half else -1) * BAR_HEIGHT / 2)
        self.hover.show()

    # ------------------------------------------------------------------ data
    def data_rows(self):
        header = [
            "job",
            "lane",
            "task",
            "start_s",
            "end_s",
            "duration_s",
            "bytes_per_group",
            "groups",
        ]
        bars = workload_bars(self.result)[0] if self.result is not None else []
        rows = [
            (
                b.job,
                b.lane,
                b.label,
                repr(b.start_s),
                repr(b.end_s),
                repr(b.duration_s),
                repr(b.bytes),
                b.groups,
            )
            for b in bars
        ]
        return header, rows
