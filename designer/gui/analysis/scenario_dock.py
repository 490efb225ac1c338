"""`ScenarioDock`: what to analyse (collective, size, algorithm, routing, ranks, training
workload) and the answers (time, busbw, bottleneck, step time, idle-GPU cost).

Every control edits the design's settings through an undoable `SetSetting` command, so
scenarios save with the design; the runner re-solves on the resulting change event.

The headline answer (time, bus bandwidth, bottleneck, step time) sits at the top of the
dock, outside the scrolling form, so it shows without scrolling however short the dock
is; the details follow the form.  `answer_changed` carries the same answer as one line
for the status bar, which shows it whichever dock tab is raised.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QLabel,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from designer.gui.analysis.runner import AnalysisResult, SolveRunner
from designer.gui.document import Document
from designer.gui.model_events import ModelSlot
from designer.gui.wheel import guard_wheel
from designer.model.commands import SetSetting
from designer.model.errors import DesignError
from designer.model.events import Edit
from designer.model.scenario import ALGORITHMS, COLLECTIVES, DTYPES, ROUTING_MODES

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
    #: The headline answer as one line of plain text ("" while there is none).
    answer_changed = Signal(str)

    def __init__(self, document: Document, runner: SolveRunner, parent: QWidget | None = None):
        super().__init__("Scenario", parent)
        self.setObjectName("scenario")
        self.document = document
        self.runner = runner
        self._updating = False
        # The topology whose groups the ranks box lists (None: list them again), and
        # how many entries that makes (more: a one-off "N GPUs" entry was added).
        self._groups_seen = None
        self._follow_groups = ModelSlot(self, self._on_topology_changed)
        self._n_rank_entries = 0
        top = QWidget(self)
        column = QVBoxLayout(top)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        self.answer = QLabel("", top)
        self.answer.setObjectName("scenario_answer")
        # One line per figure, unwrapped: its height is then fixed, so the dock's
        # minimum stays small and the answer is never squeezed; a name longer than the
        # dock is cut at the right (the tooltip has it whole).
        self.answer.setMinimumWidth(1)
        self.answer.setTextFormat(Qt.TextFormat.RichText)
        self.answer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.answer.setContentsMargins(8, 6, 8, 2)
        self.status = QLabel("", top)
        self.status.setWordWrap(True)
        self.status.setContentsMargins(8, 0, 8, 4)
        self.status.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        column.addWidget(self.answer)
        column.addWidget(self.status)
        rule = QFrame(top)
        rule.setFrameShape(QFrame.Shape.HLine)
        rule.setFrameShadow(QFrame.Shadow.Sunken)
        column.addWidget(rule)

        body = QWidget(top)
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

        box = QGroupBox("Details", body)
        self.results = QLabel("", box)
        self.results.setWordWrap(True)
        self.results.setTextFormat(Qt.TextFormat.RichText)
        self.results.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        QVBoxLayout(box).addWidget(self.results)
        outer.addWidget(box)
        outer.addStretch(1)
        # The form scrolls rather than impose its full height on the whole right column;
        # the answer above it stays put.
        scroll = QScrollArea(top)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(body)
        scroll.setMinimumHeight(40)  # a row of the form: the dock fits a 720 px screen
        column.addWidget(scroll, 1)
        self.setWidget(top)
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
        self._follow_groups.watch(topo.events.changed)
        self._groups_seen = topo

    def _on_topology_changed(self, edit: Edit) -> None:
        if edit.touches("group_"):
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
        self.answer.setText("<b>No answer:</b> the analysis failed")
        self.answer.setToolTip("")
        self.results.setText("")
        self.answer_changed.emit("")

    def _on_runner_result_ready(self, result: AnalysisResult) -> None:
        self.status.setText(f"Solved in {result.seconds * 1e3:.0f} ms")
        self.answer.setText(_html_table(answer_rows(result)))
        self.answer.setToolTip(answer_line(result))
        self.results.setText(_html_table(detail_rows(result)))
        self.answer_changed.emit(answer_line(result))


def _bottleneck(result: AnalysisResult) -> tuple[str, float] | None:
    """The busiest arc's name (``link (a -> b)``) and utilisation, or None."""
    top = result.focus.bottlenecks(result.snapshot, top=1)
    return top[0] if top else None


def _direction(arc_name: str) -> str:
    """``a -> b`` of an arc name ``link (a -> b)``: short enough for the headline.

    >>> _direction("n01-nic0:leaf-r0-0 (n01-nic0 -> leaf-r0-0)")
    'n01-nic0 -> leaf-r0-0'
    """
    link, sep, rest = arc_name.rpartition(" (")
    return rest[:-1] if sep and link and rest.endswith(")") else arc_name


def answer_rows(result: AnalysisResult) -> list[tuple[str, str]]:
    """The headline: time, bus bandwidth, bottleneck and (with a training workload) the
    step time, as ``(label, value)`` rows."""
    f = result.focus
    rows = [
        ("Time", _time_label(float(f.time_s[0]))),
        ("Bus bandwidth", f"{f.busbw_GBps[0]:.1f} GB/s (algbw {f.algbw_GBps[0]:.1f})"),
    ]
    top = _bottleneck(result)
    rows.append(("Bottleneck", f"{_direction(top[0])} ({top[1] * 100:.0f}%)" if top else "none"))
    if result.training is not None:
        e, d = result.training.estimate, result.training.distribution
        rows.append(("Step time", f"{_time_label(e.step_s)} (p99 {_time_label(d.p99_s)})"))
    return rows


def detail_rows(result: AnalysisResult) -> list[tuple[str, str]]:
    """What qualifies the headline: algorithm, ranks, the training costs and notes."""
    f = result.focus
    rows = [
        ("Algorithm", f"{f.algorithm_by_size[0]} / {f.protocol[0]}"),
        ("Ranks", f"{f.n_ranks} GPUs in {f.n_nodes} NVLink domain(s)"),
    ]
    top = _bottleneck(result)
    if top is not None:
        rows.append(("Bottleneck link", top[0].rpartition(" (")[0] or top[0]))
    tr = result.training
    if tr is not None:
        e, d = tr.estimate, tr.distribution
        rows += [
            ("Comm share", f"{e.comm_share * 100:.1f}% exposed"),
            ("Idle GPUs", f"{e.idle_gpu_s_per_step:.2f} GPU-s per step"),
            ("Stragglers", f"{d.straggler_gpu_s_per_step:.2f} GPU-s per step"),
        ]
    rows += [("Note", n) for n in result.notes]
    return rows


def answer_line(result: AnalysisResult) -> str:
    """The headline in one line, for the status bar.

    For example ``allreduce 1 GiB: 5.83 ms · busbw 357.0 GB/s · bottleneck a -> b 87%``.
    """
    f = result.focus
    text = (f"{f.collective} {size_label(int(result.scenario.bytes))}: "
            f"{_time_label(float(f.time_s[0]))} · busbw {f.busbw_GBps[0]:.1f} GB/s")
    top = _bottleneck(result)
    if top is None:
        return f"{text} · no bottleneck"
    return f"{text} · bottleneck {_direction(top[0])} {top[1] * 100:.0f}%"


def _html_table(rows: list[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in rows)
    return f"<table cellspacing='2'>{cells}</table>"


def result_summary_html(result: AnalysisResult) -> str:
    """The headline and the details as one small HTML table."""
    return _html_table(answer_rows(result) + detail_rows(result))
