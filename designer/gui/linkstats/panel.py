"""`LinkStatsPanel`: per-link statistics of the simulated workload.

Above, the utilisation of the selected links over one iteration (the busier direction,
load / capacity, as a step function of the simulation's event steps: `LinkTrace.series`),
one curve per link; with no link selected, the busiest link's.  Below, the busiest links
of the iteration: time-averaged and peak utilisation, bytes carried (both directions) and
each job's share of them.  Selecting rows plots those links; double-clicking one selects
it on the canvas.  Data (CSV) exports every link that carried traffic with the table's
columns, the per-link statistics ASTRA-sim and SimAI users compare with; the series of
the plotted links export apart.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHeaderView,
    QMessageBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from designer.gui.analysis.panels.base import OKABE_ITO, PanelDock, format_bytes
from designer.gui.tables import filling
from designer.io.atomic import atomic_write_text
from designer.model.safe_text import csv_writer

__all__ = ["MAX_SERIES", "TABLE_ROWS", "LinkStatsPanel", "link_rows"]

#: Links plotted at once (more selected: the busiest of them).
MAX_SERIES = 8
#: Rows of the busiest-links table.
TABLE_ROWS = 50
_CURVE_COLOURS = (
    *(OKABE_ITO[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow")),
    "#000000",
)
COLUMNS = ("Link", "Ends", "Mean", "Peak", "Bytes", "Jobs")


def link_rows(result, names=None, limit: int | None = None) -> list[dict]:
    """The links of ``result`` (a `WorkloadResult`) that carried traffic, busiest (mean)
    first, ties by id (the first ``limit``): ``id``, ``ends``, ``mean_util``,
    ``peak_util``, ``bytes`` and ``jobs`` (job name -> share of the bytes).
    ``names(link_id)`` gives the ends' names."""
    links = result.simulation.links
    nbytes = np.asarray(links.bytes, dtype=float)
    used = np.flatnonzero(nbytes > 0)
    ids = np.array([links.ids[k] for k in used.tolist()], dtype=str)
    mean = np.asarray(links.mean_util, dtype=float)
    order = used[np.lexsort((ids, -np.round(mean[used], 12)))][:limit]
    shares = (np.asarray(links.job_bytes, dtype=float)[:, order] / nbytes[order]).T
    peak = np.asarray(links.peak_util, dtype=float)
    out = []
    for k, row in zip(order.tolist(), shares.tolist(), strict=True):
        lid = links.ids[k]
        out.append(
            {
                "id": lid,
                "ends": names(lid) if names is not None else "",
                "mean_util": float(mean[k]),
                "peak_util": float(peak[k]),
                "bytes": float(nbytes[k]),
                "jobs": {n: v for n, v in zip(links.jobs, row, strict=True) if v > 0},
            }
        )
    return out


class LinkStatsPanel(PanelDock):
    """Utilisation over the iteration and the busiest links (see the module).

    Signals
    -------
    link_activated(str)
        A table row was double-clicked (the link's id): select it on the canvas.
    """

    link_activated = Signal(str)
    export_stem = "link-statistics"
    empty_text = "No workload simulated yet: add a job in the Workloads dock."

    def __init__(self, document=None, parent: QWidget | None = None):
        self.document = document
        self.selected: list[str] = []  # the canvas's selected links
        self.plotted: list[str] = []
        self.rows: list[dict] = []
        super().__init__("Link statistics", "link-statistics-panel", parent)
        self.plot.setLabel("bottom", "time in the iteration", units="s")
        self.plot.setLabel("left", "utilisation", units="%")
        self.plot.setMouseEnabled(x=True, y=False)
        self.legend = self.plot.addLegend(offset=(-10, 10))
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("busiest_links")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._on_table_selection_changed)
        self.table.cellDoubleClicked.connect(self._on_table_cell_double_clicked)
        series = self.export_button.menu().addAction("Series of the plotted links (CSV)…")
        series.triggered.connect(lambda: self._on_export_triggered("series"))
        self.export_actions["series"] = series
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.graphics)
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setChildrenCollapsible(False)
        self._finish(split)

    # ------------------------------------------------------------------ selection
    def set_selection(self, link_ids: list[str]) -> None:
        """Plot these links (the canvas's selection); none: the table's or the busiest."""
        self.selected = list(link_ids)
        if self.result is not None and not self.pending:
            self._plot_series()

    def _on_table_selection_changed(self) -> None:
        if self.result is not None and not self.pending:
            self._plot_series()

    def _on_table_cell_double_clicked(self, row: int, _col: int) -> None:
        if 0 <= row < len(self.rows):
            self.link_activated.emit(self.rows[row]["id"])

    def _table_links(self) -> list[str]:
        picked = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.rows[r]["id"] for r in picked if r < len(self.rows)]

    def _wanted(self) -> list[str]:
        """The links to plot: the canvas's selection with traffic, else the table's
        selection, else the busiest link; at most `MAX_SERIES`, busiest first."""
        links = self.result.simulation.links
        pos = self.result.snapshot.link_positions()

        def carried(lid: str) -> bool:
            k = pos.get(lid)
            return k is not None and links.bytes[k] > 0

        for source in (self.selected, self._table_links()):
            chosen = [lid for lid in source if carried(lid)]
            if chosen:
                chosen.sort(key=lambda lid: (-round(float(links.mean_util[pos[lid]]), 12), lid))
                return chosen[:MAX_SERIES]
        return [self.rows[0]["id"]] if self.rows else []

    # ------------------------------------------------------------------ drawing
    def _draw(self, result) -> None:
        # The table's rows; the export builds every link's (thousands on a SuperPOD).
        self.rows = link_rows(result, self._ends, TABLE_ROWS)
        self._fill_table()
        self._plot_series(clear=False)

    def _ends(self, link_id: str) -> str:
        topo = self.document.topology if self.document is not None else None
        if topo is None or not topo.has_link(link_id):
            return ""
        lk = topo.link(link_id)
        return f"{topo.node(lk.a).name} — {topo.node(lk.b).name}"

    def _fill_table(self) -> None:
        shown = self.rows
        with filling(self.table):
            self.table.setRowCount(len(shown))
            for r, row in enumerate(shown):
                jobs = ", ".join(
                    f"{n} {s * 100:.0f}%"
                    for n, s in sorted(row["jobs"].items(), key=lambda x: -x[1])
                )
                cells = (
                    row["id"],
                    row["ends"],
                    f"{row['mean_util'] * 100:.1f}%",
                    f"{row['peak_util'] * 100:.1f}%",
                    format_bytes(row["bytes"]),
                    jobs,
                )
                for c, text in enumerate(cells):
                    item = QTableWidgetItem(text)
                    if c in (2, 3, 4):
                        item.setTextAlignment(
                            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                        )
                    self.table.setItem(r, c, item)

    def _plot_series(self, clear: bool = True) -> None:
        if clear:
            self.plot.clear()
        self.legend.clear()
        trace = self.result.simulation.trace if self.result is not None else None
        self.plotted = self._wanted() if trace is not None else []
        snap = self.result.snapshot if self.result is not None else None
        if not self.plotted or snap is None:
            self.set_title("No link carried traffic" if self.result is not None else "")
            return
        positions = snap.link_positions()
        for i, lid in enumerate(self.plotted):
            edges, util = trace.series(positions[lid])
            pen = pg.mkPen(_CURVE_COLOURS[i % len(_CURVE_COLOURS)], width=2)
            self.plot.plot(edges, util * 100.0, stepMode="center", pen=pen, name=lid)
        self.plot.setXRange(0.0, max(trace.makespan, 1e-12), padding=0.02)
        self.plot.setYRange(0.0, 100.0, padding=0.05)
        whose = "selected" if self.selected and set(self.plotted) <= set(self.selected) else None
        what = (
            f"{len(self.plotted)} {whose} link(s)"
            if whose
            else (
                "busiest link"
                if len(self.plotted) == 1 and not self._table_links()
                else f"{len(self.plotted)} link(s)"
            )
        )
        self.set_title(f"Utilisation over one iteration: {what}")

    # ------------------------------------------------------------------ data
    def data_rows(self):
        names = [] if self.result is None else list(self.result.simulation.links.jobs)
        header = ["link", "ends", "mean_util", "peak_util", "bytes", *[f"share_{n}" for n in names]]
        every = link_rows(self.result, self._ends) if self.result is not None else []
        rows = [
            (
                r["id"],
                r["ends"],
                repr(r["mean_util"]),
                repr(r["peak_util"]),
                repr(r["bytes"]),
                *[repr(r["jobs"].get(n, 0.0)) for n in names],
            )
            for r in every
        ]
        return header, rows

    def series_rows(self):
        """The plotted links' series: one row per step edge, ``time_s`` then a column of
        utilisation per link (the value from that time to the next row's)."""
        if self.result is None or not self.plotted:
            return ["time_s"], []
        trace, snap = self.result.simulation.trace, self.result.snapshot
        pos = snap.link_positions()
        series = [trace.series(pos[lid]) for lid in self.plotted]
        edges = series[0][0]  # every link's series has the run's step edges
        rows = []
        for i, t in enumerate(edges.tolist()):
            rows.append((repr(t), *[repr(float(u[i])) if i < len(u) else "" for _, u in series]))
        return ["time_s", *self.plotted], rows

    def export_series_csv(self, path: str | Path) -> Path:
        """Write `series_rows` as CSV; returns the path."""
        header, rows = self.series_rows()
        out = io.StringIO()
        writer = csv_writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return self._written(path, lambda p: atomic_write_text(p, out.getvalue()))

    def _on_export_triggered(self, kind: str) -> None:
        if kind != "series":
            super()._on_export_triggered(kind)
            return
        folder = PanelDock._last_folder or Path.home()
        name, _ = QFileDialog.getSaveFileName(
            self, "Export link series", str(folder / "link-series.csv"), "CSV table (*.csv)"
        )
        if not name:
            return
        path = Path(name) if name.lower().endswith(".csv") else Path(name + ".csv")
        PanelDock._last_folder = path.parent
        try:
            self.export_series_csv(path)
        except OSError as exc:
            QMessageBox.warning(
                self, "Export failed", f"Cannot write {path}: {exc.strerror or exc}"
            )
