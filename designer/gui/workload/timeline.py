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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics
from PySide6.QtWidgets import QWidget

from designer.gui.analysis.panels.base import (
    OKABE_ITO,
    PanelDock,
    format_bytes,
    format_seconds,
)

__all__ = [
    "LANE_COLOURS",
    "LANE_ORDER",
    "IterationTimelinePanel",
    "WorkloadBar",
    "WorkloadBars",
    "workload_bars",
]

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


#: The key of `workload_bars`' answer in a `WorkloadResult`'s ``prepared`` (the runner
#: lays the bars out on its worker thread).
BARS = "timeline bars"
IDLE_LABEL = "no compute of this job running"


def _idle_spans(starts: np.ndarray, ends: np.ndarray, end: float) -> tuple[np.ndarray, np.ndarray]:
    """Spans of ``[0, end]`` covered by no ``[starts, ends]`` interval (their starts and
    ends, in time order)."""
    order = np.lexsort((ends, starts))
    s, e = starts[order], ends[order]
    # How far the intervals before each one reach (0 before the first).
    reach = np.maximum.accumulate(np.concatenate(([0.0], np.maximum(e, 0.0))))
    gap = s > reach[:-1] + 1e-12
    lo, hi = list(reach[:-1][gap]), list(s[gap])
    if end > reach[-1] + 1e-12:
        lo.append(float(reach[-1]))
        hi.append(end)
    return np.array(lo, dtype=float), np.array(hi, dtype=float)


class WorkloadBars(Sequence):
    """The chart's bars as columns (a `WorkloadBar` is made only for the one asked for).

    Four jobs of big models run ~80,000 tasks: an object per bar costs the GUI thread
    most of a second, and one bar item per lane draws with a single brush.

    Attributes
    ----------
    row, start, end : ndarray
        Per bar, its row and span (s).
    lane : ndarray of int
        Per bar, its lane as an index into ``lanes``.
    job : ndarray of int
        Per bar, its job as an index into ``jobs``.
    source : ndarray of int
        Per bar, the index of its event in ``events``; -1 for an idle span.
    """

    def __init__(self, events, jobs: tuple[str, ...], lanes: tuple[str, ...], columns: dict):
        self.events, self.jobs, self.lanes = events, jobs, lanes
        self.row = columns["row"]
        self.start = columns["start"]
        self.end = columns["end"]
        self.lane = columns["lane"]
        self.job = columns["job"]
        self.source = columns["source"]

    def __len__(self) -> int:
        return len(self.row)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        src = int(self.source[i])
        ev = self.events[src] if src >= 0 else None
        return WorkloadBar(
            int(self.row[i]),
            self.jobs[self.job[i]],
            self.lanes[self.lane[i]],
            ev.label if ev is not None else IDLE_LABEL,
            float(self.start[i]),
            float(self.end[i]),
            ev.bytes if ev is not None else 0.0,
            ev.groups if ev is not None else 0,
        )


def workload_bars(result) -> tuple[WorkloadBars, list[tuple[int, str]]]:
    """The bars of a `WorkloadResult` and the row labels (row, text), jobs in the
    result's order and lanes in `LANE_ORDER` within each (then any other lane by name),
    only lanes the job used; within a lane, bars in the timeline's order.  A job's idle
    lane holds the spans of its iteration in which none of its compute runs."""
    sim = result.simulation
    events = sim.timeline
    jobs = tuple(j.name for j in sim.jobs)
    n = len(events)
    cols = getattr(sim, "timeline_columns", None)
    if cols is not None and len(cols.job) == n:  # the simulation's columns: no event read
        job, lane_names, start, end = cols.job, cols.lane, cols.start, cols.end
    else:
        job_index = {name: k for k, name in enumerate(jobs)}
        job = np.fromiter((job_index.get(e.job, -1) for e in events), dtype=np.int64, count=n)
        lane_names = [e.lane for e in events]
        start = np.fromiter((e.start_s for e in events), dtype=float, count=n)
        end = np.fromiter((e.end_s for e in events), dtype=float, count=n)
    names, lane_of = np.unique(np.asarray(lane_names, dtype=str), return_inverse=True)
    names = names.tolist()
    lanes = (*LANE_ORDER, *sorted(set(names) - set(LANE_ORDER)))
    lane_index = {name: k for k, name in enumerate(lanes)}
    lane = np.array([lane_index[x] for x in names], dtype=np.int64)[lane_of.reshape(-1)]
    source = np.arange(n, dtype=np.int64)
    idle = lane_index["idle"]
    keep = job >= 0  # events of a job the result does not list are not drawn
    idle_parts = []
    for k, j in enumerate(sim.jobs):
        mine = job == k
        if not mine.any():
            continue
        compute = mine & (lane == lane_index["compute"])
        lo, hi = _idle_spans(start[compute], end[compute], j.iteration_s)
        if len(lo):
            keep &= ~(mine & (lane == idle))  # the computed idle spans stand for them
            none = np.full(len(lo), -1, dtype=np.int64)
            idle_parts.append((np.full(len(lo), k), np.full(len(lo), idle), lo, hi, none))
    pieces = [(job[keep], lane[keep], start[keep], end[keep], source[keep]), *idle_parts]
    job, lane, start, end, source = (np.concatenate(c) for c in zip(*pieces, strict=True))
    # Job, then lane, then the timeline's order (idle spans, after every event, in time).
    seq = np.where(source >= 0, source, n + np.arange(len(source)))
    order = np.lexsort((seq, lane, job))
    job, lane, start, end, source = job[order], lane[order], start[order], end[order], source[order]
    new_row = np.ones(len(job), dtype=bool)
    new_row[1:] = (job[1:] != job[:-1]) | (lane[1:] != lane[:-1])
    row = np.cumsum(new_row) - 1
    labels = [
        (int(r), f"{jobs[job[i]]} · {LANE_TITLES.get(lanes[lane[i]], lanes[lane[i]])}")
        for r, i in enumerate(np.flatnonzero(new_row))
    ]
    columns = {"row": row, "start": start, "end": end, "lane": lane, "job": job, "source": source}
    return WorkloadBars(events, jobs, lanes, columns), labels


def _bars_of(result) -> tuple[WorkloadBars, list[tuple[int, str]]]:
    """`workload_bars` of ``result``: as the runner prepared them, else laid out now."""
    prepared = getattr(result, "prepared", {}).get(BARS)
    return prepared if prepared is not None else workload_bars(result)


class IterationTimelinePanel(PanelDock):
    """One iteration of each job, lane by lane (see the module)."""

    export_stem = "iteration-timeline"
    empty_text = "No workload simulated yet: add a job in the Workloads dock."

    def __init__(self, parent: QWidget | None = None):
        self.bars: WorkloadBars | list = []
        self.row_labels: list[tuple[int, str]] = []
        #: One bar item per lane (a single brush each draws in one call).
        self.bar_items: dict[str, pg.BarGraphItem] = {}
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
        self._lane_font = font
        self.plot.vb.sigResized.connect(self._fit_lane_labels)
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
        self.bars, self.row_labels = _bars_of(result)
        self.bar_items = {}
        self.hover.hide()
        self.plot.addItem(self.hover, ignoreBounds=True)
        bars = self.bars
        if not len(bars):
            return
        self._draw_bands(result)
        outline = QColor(self.theme.text)
        outline.setAlpha(120)
        pen = pg.mkPen(outline, width=0)
        for k in np.unique(bars.lane):
            mine = bars.lane == k
            lane = bars.lanes[k]
            item = pg.BarGraphItem(
                x0=bars.start[mine],
                width=np.maximum(bars.end[mine] - bars.start[mine], 0.0),
                y=bars.row[mine].astype(float),
                height=BAR_HEIGHT,
                brush=pg.mkBrush(LANE_COLOURS.get(lane, "#BBBBBB")),
                pen=pen,
            )
            self.bar_items[lane] = item
            self.plot.addItem(item)
        self._fit_lane_labels()
        end = float(bars.end.max()) or 1e-9
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

    def lane_labels(self) -> list[tuple[int, str]]:
        """The left axis's labels for the panel's height: every lane ("job · lane")
        when a row is a line of text tall, else each job's name at the middle of its
        band (the lanes' colours tell them apart), so that names never overlap."""
        rows = self.row_labels
        if not rows:
            return []
        per_row = self.plot.vb.height() / (len(rows) + 0.04 * len(rows))
        if per_row >= QFontMetrics(self._lane_font).height():
            return list(rows)
        bands: dict[str, list[int]] = {}
        for row, text in rows:
            bands.setdefault(text.split(" · ")[0], []).append(row)
        return [(sum(r) / len(r), job) for job, r in bands.items()]

    def _fit_lane_labels(self) -> None:
        self.plot.getAxis("left").setTicks([self.lane_labels(), []])

    def _draw_bands(self, result) -> None:
        """A tinted band in each job's colour behind its lanes, so jobs read apart."""
        colours = {job.name: job.colour for job in result.jobs}
        bars = self.bars
        rows: dict[str, tuple[int, int]] = {}
        for k in np.unique(bars.job):
            mine = bars.row[bars.job == k]
            rows[bars.jobs[k]] = (int(mine.min()), int(mine.max()))
        for job, (first, last) in rows.items():
            colour = QColor(colours.get(job, "#999999"))
            colour.setAlpha(40)
            band = pg.LinearRegionItem(
                (first - 0.5, last + 0.5),
                orientation="horizontal",
                movable=False,
                brush=pg.mkBrush(colour),
                pen=pg.mkPen(None),
            )
            band.setZValue(-10)
            self.plot.addItem(band, ignoreBounds=True)
        self._draw_alone_marks(result, rows)

    def _draw_alone_marks(self, result, rows: dict[str, tuple[int, int]]) -> None:
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
            if j.alone_s is None or rs is None:
                continue
            lo, hi = rs[0] - 0.5, rs[1] + 0.5
            line = pg.PlotDataItem([j.alone_s, j.alone_s], [lo, hi], pen=pen)
            line.setZValue(50)
            self.plot.addItem(line)
            self.alone_marks[j.name] = j.alone_s

    def _draw_overlays(self) -> None:
        if self.result is None:
            self.bars, self.row_labels = [], []
            self.alone_marks = {}
            self.bar_items = {}
            self.plot.getAxis("left").setTicks([[], []])

    # ------------------------------------------------------------------ hover
    def bar_at(self, x: float, y: float) -> WorkloadBar | None:
        """The bar under the data point (x seconds, y row), if any (the shortest where
        bars overlap: a short transfer inside a long one stays reachable)."""
        if not len(self.bars):
            return None
        start, end, row = self.bars.start, self.bars.end, self.bars.row
        hit = np.flatnonzero((start <= x) & (x <= end) & (np.abs(y - row) <= BAR_HEIGHT / 2))
        if not hit.size:
            return None
        return self.bars[int(hit[np.argmin(end[hit] - start[hit])])]

    def leaveEvent(self, event) -> None:
        super().leaveEvent(event)
        self.hover.hide()  # the pointer left the panel: no stale tooltip stays

    def _on_scene_mouse_moved(self, pos: QPointF) -> None:
        if not len(self.bars) or not self.plot.vb.sceneBoundingRect().contains(pos):
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
        bars = _bars_of(self.result)[0] if self.result is not None else []
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
