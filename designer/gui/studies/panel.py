"""The Resilience panel: run a failure study of the open design and read what each
failure costs.

A dock with the study's choices (which elements to fail, where to run), a progress bar
with Cancel, and a sortable table of every element failed in turn (element, kind, class
size, time, slowdown, connected), worst first: failures that disconnect ranks, then the
largest slowdown.  Clicking a row selects the element on the canvas; "Apply as what-if"
fails it in the design as one undoable step, as the inspector's "failed" box does.
"""

from __future__ import annotations

import math
from collections import Counter

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from designer.gui.document import Document
from designer.gui.studies.background import RunProgressView
from designer.gui.studies.runner import StudyRunner
from designer.model.commands import SetLinkProps, SetNodeProps
from designer.model.errors import DesignError

__all__ = ["COLUMNS", "ResiliencePanel"]

COLUMNS = ("Element", "Kind", "Class size", "Time", "Slowdown", "Connected")
#: Element choices: what the combo shows, what `failure_study` takes.
ELEMENTS = (("Links", "links"), ("Switches", "switches"), ("NICs", "nics"), ("All", "all"))
#: Where the study runs: what the combo shows, `failure_study`'s ``workers``.
ENGINES = (("This process (serial)", 0), ("Local Dask cluster (starts in seconds)", None))
_SLOWDOWN = 4
_ID_ROLE = Qt.ItemDataRole.UserRole + 1


class _Item(QTableWidgetItem):
    """A cell that sorts by a number (``UserRole``) where it has one, else by text."""

    def __lt__(self, other: QTableWidgetItem) -> bool:
        a, b = self.data(Qt.ItemDataRole.UserRole), other.data(Qt.ItemDataRole.UserRole)
        if a is not None and b is not None:
            return a < b
        return self.text() < other.text()


def _cell(text: str, key=None) -> _Item:
    item = _Item(text)
    item.setFlags(Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled)
    if key is not None:
        item.setData(Qt.ItemDataRole.UserRole, key)
    return item


def _seconds(t: float | None) -> str:
    if t is None:
        return "—"
    return f"{t * 1e3:.3f} ms" if t < 1 else f"{t:.3f} s"


class ResiliencePanel(RunProgressView, QDockWidget):
    """Failure study results of the open design (see the module docstring).

    Signals
    -------
    select(tuple, tuple)
        Node ids and link ids to select on the canvas.
    message(str)
        A line for the status bar.
    """

    select = Signal(tuple, tuple)
    message = Signal(str)

    def __init__(self, document: Document, runner: StudyRunner, parent: QWidget | None = None):
        super().__init__("Resilience", parent)
        self.setObjectName("resilience_panel")
        self.document = document
        self.runner = runner
        self._kinds: dict[str, str] = {}
        body = QWidget(self)
        lay = QVBoxLayout(body)
        row = QHBoxLayout()
        self.elements = QComboBox(body)
        for text, value in ELEMENTS:
            self.elements.addItem(text, value)
        self.engine = QComboBox(body)
        for text, value in ENGINES:
            self.engine.addItem(text, value)
        self.run_button = QPushButton("Run", body)
        self.cancel_button = QPushButton("Cancel", body)
        self.cancel_button.setEnabled(False)
        self.apply_button = QPushButton("Apply as what-if", body)
        self.apply_button.setToolTip("Fail the selected element in the design (undoable)")
        self.apply_button.setEnabled(False)
        row.addWidget(QLabel("Fail:", body))
        row.addWidget(self.elements)
        row.addWidget(QLabel("Run on:", body))
        row.addWidget(self.engine)
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        row.addStretch(1)
        self.colour_box = QCheckBox("Slowdown colours", body)
        self.colour_box.setToolTip(
            "Colour each studied element by the slowdown its failure causes; "
            "off: the links' utilisation colours again"
        )
        self.colour_box.setEnabled(False)
        row.addWidget(self.colour_box)
        row.addWidget(self.apply_button)
        lay.addLayout(row)
        row = QHBoxLayout()
        self.bar = QProgressBar(body)
        self.bar.setRange(0, 100)
        self.bar.setValue(0)
        self.status = QLabel("No study run yet: choose the elements and press Run.", body)
        self.status.setWordWrap(True)
        row.addWidget(self.bar, 1)
        row.addWidget(self.status, 3)
        lay.addLayout(row)
        self.table = QTableWidget(0, len(COLUMNS), body)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicator(_SLOWDOWN, Qt.SortOrder.DescendingOrder)
        lay.addWidget(self.table, 1)
        self.setWidget(body)

        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(runner.cancel)
        self.apply_button.clicked.connect(self.apply_selected)
        self.table.itemSelectionChanged.connect(self._on_row_selected)
        runner.started.connect(self._on_started)
        runner.progress.connect(self._on_progress)
        runner.result_ready.connect(self.show_report)
        runner.failed.connect(self._on_failed)
        runner.cancelled.connect(self._on_cancelled)
        document.undo_stack.indexChanged.connect(self._note_stale)
        document.topology_replaced.connect(self._on_topology_replaced)
        self.toggleViewAction().triggered.connect(lambda on: on and self.raise_())
        self._at: tuple | None = None  # (design, undo index) the table was computed on
        self._summary = ""

    # ------------------------------------------------------------ running
    def run(self, elements: str | None = None) -> bool:
        """Run a study of ``elements`` (the combo's choice by default) on the chosen engine."""
        if isinstance(elements, str):
            self.elements.setCurrentIndex(self.elements.findData(elements))
        self.show()
        self.raise_()
        return self.runner.start(self.elements.currentData(), self.engine.currentData())

    def ask_and_run(self) -> bool:
        """The menu command: ask which elements to fail, then run (False if dismissed)."""
        labels = [text for text, _value in ELEMENTS]
        choice, ok = QInputDialog.getItem(
            self.parentWidget() or self,
            "Run failure study",
            "Fail each of these in turn:",
            labels,
            self.elements.currentIndex(),
            False,
        )
        if not ok:
            return False
        return self.run(ELEMENTS[labels.index(choice)][1])

    def _busy(self, busy: bool) -> None:
        self.run_button.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)
        self.elements.setEnabled(not busy)
        self.engine.setEnabled(not busy)

    def _on_failed(self, error: str) -> None:
        self._busy(False)
        self.status.setText(f"Study failed: {error}")
        self.message.emit(f"Failure study: {error}")

    def _on_cancelled(self) -> None:
        self._busy(False)
        self.bar.setValue(0)
        if self._at is None:
            self.status.setText("Study cancelled.")
        else:
            self.status.setText(
                f"Study cancelled; the table is the previous study's: {self._summary}"
            )

    # ------------------------------------------------------------ results
    def show_report(self, report) -> None:
        """Fill the table with ``report`` (a `FailureReport`), worst first."""
        self._busy(False)
        self.bar.setValue(100)
        sizes = Counter(e.cls for e in report.elements)
        topo = self.document.topology
        self._kinds = {}
        table = self.table
        table.setSortingEnabled(False)
        table.clearContents()
        table.setRowCount(len(report.elements))
        for r, e in enumerate(report.elements):
            kind = e.kind if e.kind != "node" else _node_kind(topo, e.id)
            self._kinds[e.id] = e.kind
            size = sizes[e.cls] if e.cls >= 0 else 1
            # Worst first is the slowdown column descending: a failure that
            # disconnects ranks sorts above any slowdown.
            # Ties keep the study's order (its worst first), descending as well.
            worst = (math.inf if not e.connected else (e.slowdown or 0.0), -r)
            ident = _cell(e.id)
            ident.setData(_ID_ROLE, e.id)
            if e.error:
                ident.setToolTip(_error_tip(e))
            table.setItem(r, 0, ident)
            table.setItem(r, 1, _cell(kind))
            table.setItem(r, 2, _cell(str(size), size))
            table.setItem(r, 3, _cell(_seconds(e.time_s), e.time_s if e.time_s else math.inf))
            text = "—" if e.slowdown is None else f"{e.slowdown:.3f}×"
            table.setItem(r, _SLOWDOWN, _cell(text, worst))
            table.setItem(r, 5, _cell("yes" if e.connected else "NO", int(e.connected)))
        table.setSortingEnabled(True)
        table.sortByColumn(_SLOWDOWN, Qt.SortOrder.DescendingOrder)
        table.resizeColumnsToContents()
        where = report.engine.where if report.engine is not None else "serial"
        engine = "this process (serial)" if where == "serial" else where
        metric = "step" if report.training is not None else "collective"
        worst = report.elements[0] if report.elements else None
        total_s = report.timing_ms.get("total", 0.0) / 1e3
        summary = (
            f"{len(report.elements)} element(s) in {report.classes} class(es), "
            f"{report.solves} solve(s) on {engine} in {total_s:.1f} s; "
            f"intact {metric} {_seconds(report.intact.time_s)}"
        )
        if worst is not None:
            summary += f"; worst: {worst.id} " + (
                "disconnects ranks" if not worst.connected else f"{worst.slowdown or 0:.3f}×"
            )
        self._at = (topo, self.document.undo_stack.index())
        self._summary = summary
        self.colour_box.setEnabled(True)
        self.colour_box.blockSignals(True)  # (the canvas turns the colouring on itself)
        self.colour_box.setChecked(True)
        self.colour_box.blockSignals(False)
        self.status.setText(summary)
        self.apply_button.setEnabled(False)

    def _on_topology_replaced(self, _topo) -> None:
        """Another design opened: the table was of the old one."""
        self._at, self._summary, self._kinds = None, "", {}
        self.table.setRowCount(0)
        self.apply_button.setEnabled(False)
        self.colour_box.blockSignals(True)
        self.colour_box.setChecked(False)
        self.colour_box.blockSignals(False)
        self.colour_box.setEnabled(False)
        self.bar.setValue(0)
        if not self.runner.busy:
            self.status.setText("No study of this design yet.")

    def _note_stale(self, _index: int = 0) -> None:
        """Say so when the design no longer is the one the table was computed on (an
        applied what-if, any edit); undoing back to it clears the note."""
        if self._at is None or self.runner.busy:
            return
        design, index = self._at
        same = self.document.topology is design and self.document.undo_stack.index() == index
        note = "" if same else " (the design has changed since: Run again to update)"
        self.status.setText(self._summary + note)

    def element_ids(self) -> list[str]:
        """The table's element ids, top to bottom (as sorted now)."""
        return [self.table.item(r, 0).data(_ID_ROLE) for r in range(self.table.rowCount())]

    def selected_id(self) -> str | None:
        """The element of the selected row, or None."""
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        return self.table.item(rows[0].row(), 0).data(_ID_ROLE)

    def _on_row_selected(self) -> None:
        ident = self.selected_id()
        self.apply_button.setEnabled(ident is not None)
        if ident is None:
            return
        if self._kinds.get(ident) == "link":
            self.select.emit((), (ident,))
        else:
            self.select.emit((ident,), ())

    def apply_selected(self) -> None:
        """Fail the selected row's element in the design: one step on the undo stack."""
        ident = self.selected_id()
        if ident is None:
            return
        link = self._kinds.get(ident) == "link"
        try:
            self.document.push(
                SetLinkProps([ident], failed=True) if link else SetNodeProps([ident], failed=True)
            )
        except (DesignError, KeyError) as exc:
            self.message.emit(f"Cannot fail {ident}: {exc}")
            return
        self.message.emit(f"What-if: {ident} failed (Undo restores it)")


def _error_tip(e) -> str:
    """An element's error tooltip.  A class member the study did not solve itself
    carries its representative's error, which names what failing *that* element cut
    off (its GPU, say): the tooltip says whose it is rather than pass it off as this
    element's own."""
    if not e.representative:
        return e.error
    return (
        f"Not solved itself: {e.representative}, of the same class, stands for it.\n"
        f"With {e.representative} failed: {e.error}\n"
        "This element's failure cuts off its own counterpart in the same way."
    )


def _node_kind(topo, node_id: str) -> str:
    """What a failed node is, in the panel's words: its device kind (leaf, spine, nic…)."""
    try:
        return topo.node(node_id).kind
    except KeyError:
        return "node"
