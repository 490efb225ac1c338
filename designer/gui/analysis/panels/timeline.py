"""`TimelinePanel`: the phases and steps of the chosen collective over time.

A Gantt chart of ``result.focus.timeline``: one row per (rank group, phase), one bar per
timeline entry from its start to its end, thin ticks inside a bar marking its steps when
they are few enough to see.  The colour says what the phase does (reduce-scatter,
all-gather, all-reduce, other) and where: the light tone inside an NVLink domain, the dark
tone across the network.  Hovering a bar names the phase, its duration, its steps and its
bottleneck link.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from designer.gui.analysis.panels.base import (
    OKABE_ITO,
    PanelDock,
    collective_title,
    format_bytes,
    format_seconds,
)
from designer.model.catalog import FAMILIES
from designer.solver import Snapshot

BAR_HEIGHT = 0.6
_LEGEND_COLUMNS = 4  # legend entries a row, where the panel is wide enough
_LEGEND_MARGIN = 8   # px the legend keeps clear of the panel's sides
#: Bars with more steps than this show no step ticks (they would fill the bar).
MAX_STEP_TICKS = 64

KINDS = ("reduce-scatter", "all-gather", "all-reduce", "other")
SCOPES = ("intra", "inter")
SCOPE_TITLES = {"intra": "inside NVLink domain", "inter": "across the network"}
# (intra-domain, inter-domain): a light and a dark tone of one Okabe-Ito hue family.
KIND_COLORS = {
    "reduce-scatter": (OKABE_ITO["sky"], OKABE_ITO["blue"]),
    "all-gather": (OKABE_ITO["orange"], OKABE_ITO["vermillion"]),
    "all-reduce": (OKABE_ITO["green"], OKABE_ITO["purple"]),
    "other": ("#BBBBBB", "#777777"),
}


@dataclass(frozen=True)
class BarInfo:
    """One drawn bar: a timeline entry plus where it sits and how it is classified."""

    row: int
    phase: str
    group: str
    start_s: float
    end_s: float
    steps: int
    bottleneck: str
    bottleneck_util: float | None
    kind: str
    scope: str

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def describe(self) -> str:
        """Hover text: phase, duration, steps and bottleneck."""
        lines = [f"{self.phase} ({self.group})",
                 f"{format_seconds(self.duration_s)}, {self.steps} step"
                 f"{'s' if self.steps != 1 else ''}, {SCOPE_TITLES[self.scope]}"]
        if self.bottleneck:
            util = "" if self.bottleneck_util is None else \
                f" at {100 * self.bottleneck_util:.0f}%"
            lines.append(f"bottleneck: {self.bottleneck}{util}")
        return "\n".join(lines)


def phase_kind(phase: str) -> str:
    """``reduce-scatter``, ``all-gather``, ``all-reduce`` or ``other`` from a phase name.

    >>> phase_kind("intra-domain reduce-scatter"), phase_kind("ring allgather")
    ('reduce-scatter', 'all-gather')
    >>> phase_kind("SHARP in-network all-reduce"), phase_kind("all-to-all")
    ('all-reduce', 'other')
    """
    key = phase.lower().replace("-", "").replace(" ", "")
    if "reducescatter" in key:
        return "reduce-scatter"
    if "allgather" in key:
        return "all-gather"
    if "allreduce" in key or "tree" in key:
        return "all-reduce"
    return "other"


def phase_scope(phase: str, bottleneck: str, snap: Snapshot) -> str:
    """``intra`` (inside an NVLink domain) or ``inter`` (across the network).

    The phase name says so for hierarchical algorithms (SHARP's stages run in the
    fabric's switches); a flat one is judged by its bottleneck link: an NVLink or PCIe
    bottleneck keeps it inside the domain.
    """
    name = phase.lower()
    if "intra" in name:
        return "intra"
    if "inter" in name or "rail" in name or "in-network" in name or "sharp" in name:
        return "inter"
    k = _link_index(snap).get(bottleneck.split(" (", 1)[0])
    if k is None:
        return "inter" if snap.n_domains > 1 else "intra"
    return "intra" if FAMILIES[int(snap.arc_family[2 * k])] in ("nvlink", "pcie") else "inter"


def _link_index(snap: Snapshot):
    return snap.link_positions()


def timeline_bars(result) -> list[BarInfo]:
    """The bars of ``result.focus.timeline``, in timeline order, with their rows.

    Rows are the distinct (group, phase) pairs in order of first appearance.
    """
    snap = result.snapshot
    focus = result.focus
    links = _link_index(snap)
    rows: dict[tuple[str, str], int] = {}
    bars = []
    for bar in focus.timeline:
        row = rows.setdefault((bar.group, bar.phase), len(rows))
        k = links.get(bar.bottleneck.split(" (", 1)[0]) if bar.bottleneck else None
        util = None if k is None else float(max(focus.arc_util[2 * k], focus.arc_util[2 * k + 1]))
        bars.append(BarInfo(row, bar.phase, bar.group, float(bar.start_s), float(bar.end_s),
                            int(bar.steps), bar.bottleneck, util, phase_kind(bar.phase),
                            phase_scope(bar.phase, bar.bottleneck, snap)))
    return bars


class TimelinePanel(PanelDock):
    """Gantt chart of the collective's phases at the scenario's message size."""

    export_stem = "timeline"

    def __init__(self, parent: QWidget | None = None):
        self.bars: list[BarInfo] = []
        self.bar_item: pg.BarGraphItem | None = None
        self._legend_samples: list[pg.BarGraphItem] = []
        super().__init__("All-reduce timeline", "timeline-panel", parent)
        self.plot.setLabel("bottom", "time", units="s")
        self.plot.setMouseEnabled(x=True, y=False)
        self.plot.invertY(True)
        self.plot.showGrid(x=True, y=False, alpha=0.2)
        self.legend = pg.LegendItem(colCount=_LEGEND_COLUMNS, labelTextSize="8pt")
        self.graphics.addItem(self.legend, row=1, col=0)
        self.hover = pg.TextItem(anchor=(0, 1))
        self.hover.setZValue(100)
        self.plot.scene().sigMouseMoved.connect(self._on_scene_mouse_moved)
        self._finish()

    # ------------------------------------------------------------------ drawing
    def _theme_changed(self) -> None:
        text = self.theme.text
        self.legend.setLabelTextColor(text)
        fill = QColor(self.theme.background)
        fill.setAlpha(235)
        self.hover.fill = pg.mkBrush(fill)
        self.hover.border = pg.mkPen(text)
        self.hover.setColor(text)

    def _draw(self, result) -> None:
        self.bars = timeline_bars(result)
        self.legend.clear()
        self._legend_samples = []
        self.hover.hide()
        self.plot.addItem(self.hover, ignoreBounds=True)
        focus = result.focus
        if not self.bars:
            self.bar_item = None
            return
        outline = QColor(self.theme.text)
        outline.setAlpha(160)
        brushes = [pg.mkBrush(self._color(b)) for b in self.bars]
        self.bar_item = pg.BarGraphItem(
            x0=np.array([b.start_s for b in self.bars]),
            width=np.array([max(b.duration_s, 0.0) for b in self.bars]),
            y=np.array([b.row for b in self.bars], dtype=float), height=BAR_HEIGHT,
            brushes=brushes, pen=pg.mkPen(outline, width=1))
        self.plot.addItem(self.bar_item)
        self._draw_step_ticks()

        rows: dict[int, BarInfo] = {}
        for b in self.bars:
            rows.setdefault(b.row, b)
        groups = {b.group for b in self.bars}
        labels = [(r, b.phase if len(groups) == 1 else f"{b.group}: {b.phase}")
                  for r, b in rows.items()]
        self.plot.getAxis("left").setTicks([labels, []])
        end = max(b.end_s for b in self.bars) or 1e-9
        self.plot.setYRange(-0.5, len(rows) - 0.5, padding=0.05)
        self.plot.setXRange(0.0, end, padding=0.02)

        seen: dict[tuple[str, str], str] = {}
        for b in self.bars:
            # Phases of no named kind (all-to-all, broadcast...) go by their own name.
            seen.setdefault((b.kind, b.scope), b.phase if b.kind == "other" else b.kind)
        for (kind, scope), title in seen.items():
            sample = pg.BarGraphItem(x=[0], height=[1], width=1,
                                     brush=self._scheme_color(kind, scope), pen=outline)
            self._legend_samples.append(sample)
            self.legend.addItem(sample, f"{title}, {SCOPE_TITLES[scope]}")
        self._fit_legend()

        ranks = focus.n_ranks
        # The dock (and its View-menu entry) is named after the collective shown.
        name = collective_title(focus.collective)
        self.setWindowTitle(f"{name[:1].upper()}{name[1:]} timeline")
        self.set_title(
            f"{collective_title(focus.collective)} of {format_bytes(int(focus.sizes[0]))} on "
            f"{ranks} GPUs: <b>{format_seconds(float(focus.time_s[0]))}</b>, "
            f"{focus.algorithm}, busbw {float(focus.busbw_GBps[0]):.0f} GB/s")

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_legend()

    def _fit_legend(self) -> None:
        """As many legend entries a row as the panel's width holds (at most
        `_LEGEND_COLUMNS`): a row wider than the panel widened the whole plot past the
        dock's edge, cutting off the bars' ends and the last entries."""
        n = len(self.legend.items)
        if not n:
            return
        room = self.graphics.width() - 2 * _LEGEND_MARGIN
        before = self.legend.columnCount
        for columns in range(min(_LEGEND_COLUMNS, n), 0, -1):
            self.legend.setColumnCount(columns)
            if self.legend.layout.preferredWidth() <= room:
                break
        if self.legend.columnCount == before:
            return  # (a resize that keeps the rows: nothing to lay out again)
        # The entries' own layout changed: let the plot's layout size the legend anew.
        self.legend.setGeometry(0, 0, self.legend.layout.preferredWidth(),
                                self.legend.layout.preferredHeight())
        self.legend.updateGeometry()
        self.refit_plot()

    def _draw_step_ticks(self) -> None:
        xs, ys = [], []
        for b in self.bars:
            if not 2 <= b.steps <= MAX_STEP_TICKS or b.duration_s <= 0:
                continue
            x = b.start_s + b.duration_s * np.arange(1, b.steps) / b.steps
            lo, hi = b.row - BAR_HEIGHT / 2, b.row + BAR_HEIGHT / 2
            xs.append(np.repeat(x, 2))
            ys.append(np.tile([lo, hi], len(x)))
        if not xs:
            return
        tick = QColor(self.theme.background)
        tick.setAlpha(150)
        self.plot.addItem(pg.PlotDataItem(np.concatenate(xs), np.concatenate(ys),
                                          connect="pairs", pen=pg.mkPen(tick, width=1)))

    @staticmethod
    def _scheme_color(kind: str, scope: str) -> QColor:
        return QColor(KIND_COLORS[kind][SCOPES.index(scope)])

    def _color(self, bar: BarInfo) -> QColor:
        return self._scheme_color(bar.kind, bar.scope)

    def _draw_overlays(self) -> None:
        if self.result is None:
            self.bars = []
            self.bar_item = None
            self.legend.clear()
            self._legend_samples = []
            self.plot.getAxis("left").setTicks([[], []])

    # ------------------------------------------------------------------ hover
    def bar_at(self, x: float, y: float) -> BarInfo | None:
        """The bar under the data point (x seconds, y row), if any."""
        for b in self.bars:
            if b.start_s <= x <= b.end_s and abs(y - b.row) <= BAR_HEIGHT / 2:
                return b
        return None

    def _on_scene_mouse_moved(self, pos: QPointF) -> None:
        if not self.bars or not self.plot.vb.sceneBoundingRect().contains(pos):
            self.hover.hide()
            return
        p = self.plot.vb.mapSceneToView(pos)
        bar = self.bar_at(p.x(), p.y())
        if bar is None:
            self.hover.hide()
            return
        # Keep the text inside the view (it clips): beside the pointer towards the middle,
        # below a bar in the upper half (the y axis runs downwards), above one lower down.
        (x0, x1), (y0, y1) = self.plot.vb.viewRange()
        right_half = p.x() > (x0 + x1) / 2
        upper_half = bar.row < (y0 + y1) / 2
        self.hover.setAnchor((1 if right_half else 0, 0 if upper_half else 1))
        self.hover.setText(bar.describe())
        self.hover.setPos(p.x(), bar.row + (1 if upper_half else -1) * BAR_HEIGHT / 2)
        self.hover.show()

    # ------------------------------------------------------------------ data
    def data_rows(self):
        header = ["group", "phase", "kind", "scope", "start_s", "end_s", "duration_s", "steps",
                  "bottleneck"]
        rows = [(b.group, b.phase, b.kind, b.scope, repr(b.start_s), repr(b.end_s),
                 repr(b.duration_s), b.steps, b.bottleneck)
                for b in (timeline_bars(self.result) if self.result is not None else [])]
        return header, rows
