"""`ScenarioDock`: what to analyse (collective, size, algorithm, routing, ranks, training
workload) and the headline answers (time, busbw, bottleneck, step time, idle-GPU cost).

Every control edits the design's settings through an undoable `SetSetting` command, so
scenarios save with the design; the runner re-solves on the resulting change event.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from designer.gui.analysis.runner import AnalysisResult, SolveRunner
from designer.gui.document import Document
from designer.gui.wheel import guard_wheel
from designer.model.commands import SetSetting
from designer.model.errors import DesignError
from designer.model.scenario import ALGORITHMS, COLLECTIVES, DTYPES
from designer.model.topology import ROUTING_MODES

SIZES = [1 << k for k in range(10, 35)]  # 1 KiB .. 16 GiB


def size_label(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):g} {unit}"
    return f"{n} B"


def _time_label(s: float) -> str:
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


class ScenarioDock(QDockWidget):
    """Scenario controls and headline results."""

    message = Signal(str)

    def __init__(self, document: Document, runner: SolveRunner, parent: QWidget | None = None):
        super().__init__("Scenario", parent)
        self.setObjectName("scenario")
        self.document = document
        self.runner = runner
        self._updating = False
        # The topology whose groups the ranks box lists (None: list them again), and
        # how many entries that makes (more: a one-off "N GPUs" entry was added).
        self._groups_seen = None
        self._n_rank_entries = 0
        body = QWidget(self)
        outer = QVBoxLayout(body)

        box = QGroupBox("Collective", body)
        form = QFormLayout(box)
        self.collective = QComboBox(box)
        self.collective.addItems(COLLECTIVES)
        self.size = QComboBox(box)
        for n in SIZES:
            self.size.addItem(size_label(n), n)
        self.algorithm = QComboBox(box)
        self.algorithm.addItems(ALGORITHMS)
        self.routing = QComboBox(box)
        self.routing.addItems(ROUTING_MODES)
        self.ranks = QComboBox(box)
        form.addRow("Collective", self.collective)
        form.addRow("Message size", self.size)
        form.addRow("Algorithm", self.algorithm)
        form.addRow("Routing", self.routing)
        form.addRow("Ranks", self.ranks)
        outer.addWidget(box)

        box = QGroupBox("Training workload", body)
        form = QFormLayout(box)
        self.params = QDoubleSpinBox(box)
        self.params.setRange(0.001, 100_000)
        self.params.setDecimals(3)
        self.params.setSuffix(" B params")
        self.dtype = QComboBox(box)
        self.dtype.addItems(DTYPES)
        self.dp = QSpinBox(box)
        self.dp.setRange(0, 10_000_000)
        self.dp.setSpecialValueText("all GPUs")
        self.compute = QDoubleSpinBox(box)
        self.compute.setRange(0.0, 100_000.0)
        self.compute.setDecimals(3)
        self.compute.setSuffix(" s")
        self.overlap = QDoubleSpinBox(box)
        self.overlap.setRange(0.0, 1.0)
        self.overlap.setSingleStep(0.05)
        form.addRow("Model size", self.params)
        form.addRow("Gradient dtype", self.dtype)
        form.addRow("Data-parallel size", self.dp)
        form.addRow("Compute per step", self.compute)
        form.addRow("Overlap", self.overlap)
        outer.addWidget(box)

        self.status = QLabel("", body)
        self.status.setWordWrap(True)
        self.results = QLabel("", body)
        self.results.setWordWrap(True)
        self.results.setTextFormat(Qt.TextFormat.RichText)
        outer.addWidget(self.status)
        outer.addWidget(self.results)
        outer.addStretch(1)
        # Scroll rather than impose the form's full height on the whole right column.
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)
        self.setWidget(scroll)
        guard_wheel(body)  # the wheel scrolls the form; it edits only a focused box

        for combo in (self.collective, self.size, self.algorithm, self.ranks):
            combo.activated.connect(self._on_scenario_edited)
        self.routing.activated.connect(self._on_routing_edited)
        self.dtype.activated.connect(self._on_training_edited)
        for spin in (self.params, self.dp, self.compute, self.overlap):
            spin.editingFinished.connect(self._on_training_edited)
        runner.started.connect(self._on_runner_started)
        runner.result_ready.connect(self._on_runner_result_ready)
        runner.failed.connect(self._on_runner_failed)
        # Bound slots: PySide drops them with the dock (lambdas would outlive it).
        document.undo_stack.indexChanged.connect(self._on_document_changed)
        document.topology_replaced.connect(self._on_document_changed)
        self.refresh()

    def _on_document_changed(self, *_args) -> None:
        self.refresh()

    def _watch_groups(self, topo) -> None:
        if self._groups_seen is topo:
            return
        if self._groups_seen is not None:
            for signal in (self._groups_seen.group_added, self._groups_seen.group_removed,
                           self._groups_seen.group_changed):
                signal.disconnect(self._on_groups_changed)
        for signal in (topo.group_added, topo.group_removed, topo.group_changed):
            signal.connect(self._on_groups_changed)
        self._groups_seen = topo

    def _on_groups_changed(self, *_args) -> None:
        self._n_rank_entries = -1  # list them again at the next refresh

    # ------------------------------------------------------------ settings -> form
    def refresh(self) -> None:
        if not shiboken6.isValid(self) or not shiboken6.isValid(self.ranks):
            return  # being torn down
        self._updating = True
        try:
            topo = self.document.topology
            s, t = topo.settings["scenario"], topo.settings["training"]
            self.collective.setCurrentText(s["collective"])
            idx = self.size.findData(s["bytes"])
            if idx < 0:
                self.size.addItem(size_label(s["bytes"]), s["bytes"])
                idx = self.size.count() - 1
            self.size.setCurrentIndex(idx)
            self.algorithm.setCurrentText(s["algorithm"])
            self.routing.setCurrentText(topo.settings["routing"])
            ranks = s["ranks"]
            key = ranks if isinstance(ranks, str) else None
            if self._groups_seen is not topo or self.ranks.count() != self._n_rank_entries:
                # Refilled only when the groups change: a SuperPOD has thousands, and
                # this runs after every edit.
                self.ranks.clear()
                self.ranks.addItem("All GPUs", "all")
                self.ranks.addItem("Selected GPUs", "selection")
                for g in sorted(topo.groups(), key=lambda g: g.id):
                    if g.kind in ("node", "rack", "su", "pod", "tray"):
                        self.ranks.addItem(f"Group: {g.name}", f"group:{g.id}")
                self._n_rank_entries = self.ranks.count()
                self._watch_groups(topo)
            i = self.ranks.findData(key) if key else -1
            if i < 0:
                label = f"{ranks} GPUs" if isinstance(ranks, int) else f"{len(ranks)} GPUs"
                self.ranks.addItem(label, ranks)
                i = self.ranks.count() - 1
            self.ranks.setCurrentIndex(i)
            self.params.setValue(t["params"] / 1e9)
            self.dtype.setCurrentText(t["grad_dtype"])
            self.dp.setValue(int(t["dp_size"]))
            self.compute.setValue(t["compute_s"])
            self.overlap.setValue(t["overlap"])
        finally:
            self._updating = False

    # ------------------------------------------------------------ form -> commands
    def _push(self, key: str, value) -> None:
        if self._updating or self.document.topology.settings[key] == value:
            return
        try:
            self.document.push(SetSetting(key, value))
        except DesignError as exc:
            self.message.emit(str(exc))
            self.refresh()

    def _on_scenario_edited(self, *_args) -> None:
        value = dict(self.document.topology.settings["scenario"])
        ranks = self.ranks.currentData()
        if ranks == "selection":
            # The selection as it is now, by id: saved with the design and reproducible
            # from the command line, not a moving target.
            topo = self.document.topology
            ranks = [n for n in self.runner.selection
                     if topo.has_node(n) and topo.node(n).kind == "gpu"]
            if len(ranks) < 2:
                self.message.emit("Select at least two GPUs on the canvas first, then "
                                  "choose Ranks: Selected GPUs")
                self.refresh()
                return
        value.update(collective=self.collective.currentText(), bytes=self.size.currentData(),
                     algorithm=self.algorithm.currentText(), ranks=ranks)
        self._push("scenario", value)

    def _on_routing_edited(self, *_args) -> None:
        self._push("routing", self.routing.currentText())

    def _on_training_edited(self, *_args) -> None:
        value = dict(self.document.topology.settings["training"])
        value.update(params=self.params.value() * 1e9, grad_dtype=self.dtype.currentText(),
                     dp_size=self.dp.value(), compute_s=self.compute.value(),
                     overlap=self.overlap.value())
        self._push("training", value)

    # ------------------------------------------------------------ results
    def _on_runner_started(self, _generation: int) -> None:
        self.status.setText("Solving…")

    def _on_runner_failed(self, _generation: int, text: str) -> None:
        self.status.setText(f"<b>Analysis failed:</b> {text}")
        self.results.setText("")

    def _on_runner_result_ready(self, result: AnalysisResult) -> None:
        self.status.setText(f"Solved in {result.seconds * 1e3:.0f} ms")
        self.results.setText(result_summary_html(result))


def result_summary_html(result: AnalysisResult) -> str:
    """The headline numbers as a small HTML table."""
    f = result.focus
    snap = result.snapshot
    rows = [
        ("Time", _time_label(float(f.time_s[0]))),
        ("Bus bandwidth", f"{f.busbw_GBps[0]:.1f} GB/s (algbw {f.algbw_GBps[0]:.1f})"),
        ("Algorithm", f"{f.algorithm_by_size[0]} / {f.protocol[0]}"),
        ("Ranks", f"{f.n_ranks} GPUs in {f.n_nodes} NVLink domain(s)"),
    ]
    top = f.bottlenecks(snap, top=1)
    if top:
        rows.append(("Bottleneck", f"{top[0][0]} ({top[0][1] * 100:.0f}%)"))
    tr = result.training
    if tr is not None:
        e, d = tr.estimate, tr.distribution
        rows += [
            ("Step time", f"{_time_label(e.step_s)} (p99 {_time_label(d.p99_s)})"),
            ("Comm share", f"{e.comm_share * 100:.1f}% exposed"),
            ("Idle GPUs", f"{e.idle_gpu_s_per_step:.2f} GPU-s per step"),
            ("Stragglers", f"{d.straggler_gpu_s_per_step:.2f} GPU-s per step"),
        ]
    rows += [("Note", n) for n in result.notes]
    cells = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in rows)
    return f"<table cellspacing='4'>{cells}</table>"
