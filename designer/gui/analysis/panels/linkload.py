"""`LinkLoadPanel`: how loaded the links are, and which ones are the bottlenecks.

Left, a histogram of link utilisation (0-100 % in 5 % bins) over the links that carry
traffic, a link counting with the busier of its two directions; the saturated bin is
drawn in a warning colour.  Right, the top `TOP_N` links by utilisation with their ends
(busier direction first), load and capacity; clicking one emits ``link_activated`` with
its id so the canvas can select it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QWidget,
)

from designer.gui.analysis.panels.base import OKABE_ITO, PanelDock, accent
from designer.gui.tables import filling

TOP_N = 15
BIN_PCT = 5.0
#: Utilisation (fraction) from which a link counts as saturated.
SATURATED = 0.95
ROLE = Qt.ItemDataRole.UserRole
COLUMNS = ("Link", "Busier direction", "Util %", "GB/s", "Cap GB/s")
COLUMN_TIPS = ("Link id", "The link's ends, busier direction first",
               "Utilisation of the busier direction", "Load of the busier direction (GB/s)",
               "Usable capacity per direction (GB/s)")


@dataclass(frozen=True)
class LinkLoad:
    """One link's load in its busier direction."""

    link_id: str
    src: str
    dst: str
    utilisation: float   # fraction, 0..1
    load_GBps: float
    capacity_GBps: float


def link_loads(result, top: int | None = None) -> list[LinkLoad]:
    """Links that carry traffic, busiest first (ties in the design's link order).

    A link's figures are those of its busier direction (arcs ``2k`` and ``2k + 1`` are
    the two directions of link ``k``).  ``top`` keeps only the first ones: a 16k-GPU
    design has ~10^5 loaded links and the table shows a handful.
    """
    util, k = _busy_order(result)
    if top is not None:
        k = k[:top]
    snap, focus = result.snapshot, result.focus
    arc = 2 * k + (util[2 * k + 1] > util[2 * k])
    return [LinkLoad(snap.link_ids[i], snap.node_ids[snap.arc_src[a]],
                     snap.node_ids[snap.arc_dst[a]], float(util[a]),
                     float(focus.arc_load_GBps[a]), float(snap.arc_cap[a]))
            for i, a in zip(k.tolist(), arc.tolist(), strict=True)]


def link_utilisation(result) -> np.ndarray:
    """Utilisation (fraction) of every loaded link's busier direction, busiest first."""
    util, k = _busy_order(result)
    return np.maximum(util[2 * k], util[2 * k + 1])


def _busy_order(result) -> tuple[np.ndarray, np.ndarray]:
    """Arc utilisation and the indices of the loaded links, busiest first."""
    util = np.asarray(result.focus.arc_util, dtype=float)
    load = np.asarray(result.focus.arc_load_GBps, dtype=float)
    link_util = np.maximum(util[0::2], util[1::2])
    loaded = np.flatnonzero((np.maximum(load[0::2], load[1::2]) > 0) | (link_util > 0))
    order = np.argsort(-link_util[loaded], kind="stable")
    return util, loaded[order]


class LinkLoadPanel(PanelDock):
    """Utilisation histogram and the top bottleneck links.

    Signals
    -------
    link_activated(str)
        The user clicked a link's row (its link id).
    """

    link_activated = Signal(str)
    export_stem = "link-load"

    def __init__(self, parent: QWidget | None = None):
        self.loads: list[LinkLoad] = []       # the table's rows (top TOP_N)
        #: The link the user picked in the table (kept by id across re-solves; None:
        #: none picked, nothing highlighted).
        self.chosen_link: str | None = None
        self._filling = False
        self.utilisation = np.zeros(0)           # every loaded link, busiest first
        self.histogram: pg.BarGraphItem | None = None
        self.counts = np.zeros(int(100 / BIN_PCT), dtype=int)
        super().__init__("Link load", "link-load-panel", parent)
        self.plot.setLabel("bottom", "link utilisation (%)")
        self.plot.setLabel("left", "links")
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setXRange(0, 100, padding=0.02)
        self.table = QTableWidget(0, len(COLUMNS), self.body)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setToolTip("Click a link to select it on the canvas")
        for j, tip in enumerate(COLUMN_TIPS):
            self.table.horizontalHeaderItem(j).setToolTip(tip)
        # Ids are long and alike at both ends ("n01-nic0:leaf-r0-0"): elide the middle,
        # let the two text columns share the width, keep the numbers whole.
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.table.horizontalHeader()
        for j in range(len(COLUMNS)):
            header.setSectionResizeMode(j, QHeaderView.ResizeMode.Stretch if j < 2 else
                                        QHeaderView.ResizeMode.ResizeToContents)
        self.table.cellClicked.connect(self._on_table_cell_clicked)
        self.table.itemSelectionChanged.connect(self._on_table_item_selection_changed)
        splitter = QSplitter(Qt.Orientation.Horizontal, self.body)
        splitter.addWidget(self.graphics)
        splitter.addWidget(self.table)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setChildrenCollapsible(False)
        splitter.setSizes([320, 420])
        self.splitter = splitter
        self._finish(splitter)

    def _faded_widgets(self):
        return (self.table,)

    # ------------------------------------------------------------------ drawing
    def _draw(self, result) -> None:
        self.utilisation = link_utilisation(result)
        self.loads = link_loads(result, TOP_N)
        edges = np.linspace(0.0, 100.0, int(100 / BIN_PCT) + 1)
        self.counts = np.histogram(np.clip(100 * self.utilisation, 0, 100), bins=edges)[0]
        hot = edges[:-1] >= SATURATED * 100
        normal, warn = accent(self.theme), pg.mkColor(OKABE_ITO["vermillion"])
        self.histogram = pg.BarGraphItem(
            x0=edges[:-1], width=BIN_PCT * 0.92, height=self.counts.astype(float),
            brushes=[pg.mkBrush(warn if h else normal) for h in hot],
            pen=pg.mkPen(self.theme.text, width=0.5))
        self.plot.addItem(self.histogram)
        self.plot.setXRange(0, 100, padding=0.02)
        self.plot.setYRange(0, max(1, int(self.counts.max(initial=0))) * 1.08, padding=0)
        saturated = int(np.count_nonzero(self.utilisation >= SATURATED))
        # Short: the title's width is the plot's minimum width, and the table is beside it.
        self.set_title(f"<b>{saturated}</b> of {len(self.utilisation)} links "
                       f"≥ {100 * SATURATED:.0f}%")
        self._fill_table(self.loads)

    def _draw_overlays(self) -> None:
        if self.result is None:
            self.loads = []
            self.utilisation = np.zeros(0)
            self.histogram = None
            self.counts = np.zeros_like(self.counts)
            self._fill_table([])

    def _fill_table(self, rows: list[LinkLoad]) -> None:
        self._filling = True  # the selection follows the chosen link, not the user
        self.table.clearSelection()
        right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
        with filling(self.table):
            self.table.setRowCount(len(rows))
            for i, r in enumerate(rows):
                cells = (r.link_id, f"{r.src} → {r.dst}", f"{100 * r.utilisation:.1f}",
                         f"{r.load_GBps:.1f}", f"{r.capacity_GBps:.1f}")
                for j, text in enumerate(cells):
                    item = QTableWidgetItem(text)
                    item.setData(ROLE, r.link_id)
                    if j >= 2:
                        item.setTextAlignment(right)
                    self.table.setItem(i, j, item)
        self._highlight_chosen(rows)
        self._filling = False

    def _highlight_chosen(self, rows: list[LinkLoad]) -> None:
        """Highlight the row of the chosen link wherever it moved to; none when no link
        was chosen or the chosen one is not on the table (a row index would point at
        whichever link the new result put there)."""
        table = self.table
        at = next((i for i, r in enumerate(rows) if r.link_id == self.chosen_link), None)
        if at is None:
            table.clearSelection()
            table.setCurrentItem(None)
        else:
            table.setCurrentCell(at, 0)
            table.selectRow(at)

    def top_rows(self) -> list[tuple[str, float]]:
        """The table as (link id, utilisation %) pairs, top first, as shown."""
        return [(self.table.item(i, 0).text(), float(self.table.item(i, 2).text()))
                for i in range(self.table.rowCount())]

    # ------------------------------------------------------------------ slots
    def _on_table_item_selection_changed(self) -> None:
        if self._filling:
            return
        rows = self.table.selectionModel().selectedRows()
        item = self.table.item(rows[0].row(), 0) if rows else None
        self.chosen_link = item.data(ROLE) if item is not None else None

    def _on_table_cell_clicked(self, row: int, _column: int) -> None:
        item = self.table.item(row, 0)
        if item is not None:
            self.link_activated.emit(item.data(ROLE))

    # ------------------------------------------------------------------ data
    def data_rows(self):
        header = ["link", "from", "to", "utilization_pct", "load_GBps", "capacity_GBps"]
        loads = link_loads(self.result) if self.result is not None else []
        rows = [(r.link_id, r.src, r.dst, repr(100 * r.utilisation), repr(r.load_GBps),
                 repr(r.capacity_GBps)) for r in loads]
        return header, rows
