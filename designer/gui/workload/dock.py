"""`WorkloadDock`: the design's training jobs, their fields, and how they ran together.

A list of the jobs (name and colour, preset, GPUs, parallel layout, iteration time and
slowdown once simulated), buttons to add a job from a preset, duplicate or delete the
selected one, and the selected job's fields (`JobEditor`, checked as the user types).
Every change is one undoable `SetSetting` of ``workloads``, so the jobs save with the
design and Undo/Redo walk through them; the dock redraws from the design on every
change, whoever made it.

The headline (jobs, the slowest iteration, the worst slowdown) sits at the top, outside
the scrolling form, so it shows however short the dock is.  The Scenario dock keeps its
single-collective analysis: the two answer different questions and run side by side.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPalette, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QScrollArea,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from designer.gui.analysis.panels.base import OKABE_ITO, format_seconds
from designer.gui.document import Document
from designer.gui.model_events import ModelSlot
from designer.gui.workload.build import WorkloadResult
from designer.gui.workload.editor import JobEditor
from designer.gui.workload.runner import WorkloadRunner
from designer.model.commands import SetSetting
from designer.model.errors import DesignError
from designer.model.events import Edit
from designer.workload.files import job_from_dict, job_to_dict
from designer.workload.job import Job
from designer.workload.presets import presets

__all__ = ["COL", "COLUMNS", "JOB_COLOURS", "WorkloadDock", "parallel_text"]

#: The list's columns, the answers (iteration, slowdown) first: seen in a narrow dock.
COLUMNS = ("Job", "Iteration", "Slowdown", "GPUs", "Parallelism", "Preset")
COL = {name: i for i, name in enumerate(COLUMNS)}
_RIGHT = {COL["Iteration"], COL["Slowdown"], COL["GPUs"]}
#: Colours given to new jobs in turn (Okabe-Ito: colour-blind safe).
JOB_COLOURS = tuple(
    OKABE_ITO[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow")
)


def parallel_text(job: Job) -> str:
    """The layout as architects write it: ``TP8 PP4 DP8`` (sizes of 1 left out, TP
    always shown)."""
    p = job.parallel
    parts = [f"TP{p.tp}"]
    for name in ("cp", "pp", "vp", "dp", "ep"):
        v = getattr(p, name)
        if v > 1:
            parts.append(f"{name.upper()}{v}")
    return " ".join(parts)


def _swatch(colour: str) -> QIcon:
    pix = QPixmap(12, 12)
    pix.fill(QColor(colour))
    return QIcon(pix)


def _unique(name: str, taken: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``... (a copy of ``a-2`` is ``a-3``, not ``a-2-2``)."""
    if name not in taken:
        return name
    name = re.sub(r"-\d+$", "", name) or name
    k = 2
    while f"{name}-{k}" in taken:
        k += 1
    return f"{name}-{k}"


class WorkloadDock(QDockWidget):
    """The design's jobs (see the module).

    Signals
    -------
    message(str)
        A line for the status bar (an edit refused).
    job_selected(str)
        The name of the job selected in the list ("" for none).
    """

    message = Signal(str)
    job_selected = Signal(str)

    def __init__(
        self,
        document: Document,
        runner: WorkloadRunner | None = None,
        parent: QWidget | None = None,
    ):
        super().__init__("Workloads", parent)
        self.setObjectName("workloads")
        self.document = document
        self.runner = runner
        self._simulating = -1  # the generation of the simulation under way
        self.jobs: list[Job] = []
        self.load_error = ""
        self.result: WorkloadResult | None = None
        self._follow = ModelSlot(self, self._on_topology_changed)

        top = QWidget(self)
        column = QVBoxLayout(top)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        self.answer = QLabel("", top)
        self.answer.setObjectName("workload_answer")
        self.answer.setMinimumWidth(1)
        self.answer.setWordWrap(True)
        self.answer.setContentsMargins(8, 6, 8, 0)
        self.answer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        status_row = QHBoxLayout()
        status_row.setContentsMargins(8, 0, 8, 0)
        self.status = QLabel("", top)
        self.status.setWordWrap(True)
        self.status.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.cancel_button = QToolButton(top)
        self.cancel_button.setText("Cancel")
        self.cancel_button.setToolTip("Stop the running simulation; the next edit runs it again")
        self.cancel_button.hide()
        status_row.addWidget(self.status, 1)
        status_row.addWidget(self.cancel_button)
        column.addWidget(self.answer)
        column.addLayout(status_row)

        buttons = QHBoxLayout()
        buttons.setContentsMargins(4, 0, 4, 0)
        self.add_button = QToolButton(top)
        self.add_button.setText("Add job")
        self.add_button.setToolTip("Add a job from a published model's preset")
        self.add_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.add_button)
        for name, p in presets().items():
            action = menu.addAction(f"{name} ({p.parallel.get('gpus', '?')} GPUs)")
            action.setToolTip(p.title)
            action.triggered.connect(lambda _=False, n=name: self.add_job(n))
        self.add_button.setMenu(menu)
        self.duplicate_button = QToolButton(top)
        self.duplicate_button.setText("Duplicate")
        self.duplicate_button.clicked.connect(self.duplicate_job)
        self.delete_button = QToolButton(top)
        self.delete_button.setText("Delete")
        self.delete_button.clicked.connect(self.delete_job)
        for b in (self.add_button, self.duplicate_button, self.delete_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        column.addLayout(buttons)

        # Below the headline and the buttons, everything scrolls: the dock's minimum
        # stays small (it shares the right column at 1280 x 720).
        body = QWidget(top)
        inner = QVBoxLayout(body)
        inner.setContentsMargins(0, 0, 0, 0)
        self.table = QTableWidget(0, len(COLUMNS), body)
        self.table.setObjectName("workload_jobs")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._on_table_selection_changed)
        inner.addWidget(self.table)

        rule = QFrame(body)
        rule.setFrameShape(QFrame.Shape.HLine)
        rule.setFrameShadow(QFrame.Shadow.Sunken)
        inner.addWidget(rule)
        self.editor = JobEditor(body)
        self.editor.job_edited.connect(self._on_editor_job_edited)
        inner.addWidget(self.editor, 1)
        scroll = QScrollArea(top)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(body)
        column.addWidget(scroll, 1)
        self.setWidget(top)

        document.topology_replaced.connect(self._on_document_topology_replaced)
        self._follow.watch(document.topology.events.changed)
        if runner is not None:
            runner.started.connect(self._on_runner_started)
            runner.percent.connect(self._on_runner_percent)
            runner.result_ready.connect(self._on_runner_result_ready)
            runner.failed.connect(self._on_runner_failed)
            runner.cancelled.connect(self._on_runner_cancelled)
            self.cancel_button.clicked.connect(runner.cancel)
        self.refresh()

    # ------------------------------------------------------------ model -> view
    def _on_document_topology_replaced(self, topo) -> None:
        self._follow.watch(topo.events.changed)
        self.result = None
        self.refresh()

    def _on_topology_changed(self, edit: Edit) -> None:
        if any(n == "settings_changed" and a[0] == "workloads" for n, a in edit):
            self.refresh()

    def selected_name(self) -> str:
        rows = self.table.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self.jobs):
            return ""
        return self.jobs[rows[0].row()].name

    def refresh(self, select: str | None = None) -> None:
        """List the design's jobs again, keeping (or moving to ``select``) the selection."""
        keep = select if select is not None else self.selected_name()
        raw = self.document.topology.settings.get("workloads", [])
        jobs, errors = [], []
        for i, data in enumerate(raw):
            try:
                jobs.append(job_from_dict(data, f"job {i + 1}"))
            except ValueError as exc:
                errors.append(str(exc))
        self.jobs = jobs
        self.load_error = errors[0] if errors else ""
        self.table.blockSignals(True)
        try:
            self.table.setRowCount(len(jobs))
            for r, job in enumerate(jobs):
                cells = {
                    "Job": job.name,
                    "Preset": job.preset or "custom",
                    "GPUs": str(job.n_gpus),
                    "Parallelism": parallel_text(job),
                }
                for c, column in enumerate(COLUMNS):
                    item = QTableWidgetItem(cells.get(column, ""))
                    if c in _RIGHT:
                        item.setTextAlignment(
                            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                        )
                    self.table.setItem(r, c, item)
                self.table.item(r, 0).setIcon(_swatch(job.colour))
                self.table.item(r, 0).setToolTip(
                    f"{job.name}: {job.model.params() / 1e9:.3g}B "
                    f"parameters, {job.placement} placement"
                )
            self._fit_table_height()
            names = [j.name for j in jobs]
            row = names.index(keep) if keep in names else (0 if jobs else -1)
            if row >= 0:
                self.table.selectRow(row)
            else:
                self.table.clearSelection()
        finally:
            self.table.blockSignals(False)
        self._show_results()
        self._on_table_selection_changed()

    def _fit_table_height(self) -> None:
        """As tall as its rows (two to six shown; more scroll inside the table)."""
        header = self.table.horizontalHeader().sizeHint().height()
        row = self.table.verticalHeader().defaultSectionSize()
        rows = min(max(self.table.rowCount(), 2), 6)
        self.table.setFixedHeight(header + rows * row + 2 * self.table.frameWidth() + 2)

    def _on_table_selection_changed(self) -> None:
        name = self.selected_name()
        job = next((j for j in self.jobs if j.name == name), None)
        # A job the file holds but that cannot be read would be dropped by any edit of
        # the list: the list is read-only until the file is fixed (the headline says why).
        editable = not self.load_error
        self.editor.set_job(
            job if editable else None, {j.name for j in self.jobs if j.name != name}
        )
        self.add_button.setEnabled(editable)
        self.duplicate_button.setEnabled(editable and job is not None)
        self.delete_button.setEnabled(editable and job is not None)
        self.job_selected.emit(name)

    # ------------------------------------------------------------ gestures -> commands
    def push_jobs(self, jobs: list[Job], text: str) -> bool:
        """Make ``jobs`` the design's jobs in one undoable edit named ``text``; False
        (and a message) when the design refuses it."""
        return self._push(jobs, text)

    def _push(self, jobs: list[Job], text: str) -> bool:
        command = SetSetting("workloads", [job_to_dict(j) for j in jobs])
        command.text = text
        try:
            self.document.push(command)
        except DesignError as exc:
            self.message.emit(str(exc))
            self.refresh()
            return False
        return True

    def add_job(self, preset_name: str) -> Job:
        """Add a job from preset ``preset_name`` (named after it, a colour no job has),
        its data parallelism cut down to the design's free GPUs where the preset wants
        more; returns the job."""
        p = presets()[preset_name]
        taken = {j.name for j in self.jobs}
        used = {j.colour.upper() for j in self.jobs}
        colour = next(
            (c for c in JOB_COLOURS if c.upper() not in used),
            JOB_COLOURS[len(self.jobs) % len(JOB_COLOURS)],
        )
        job = Job.from_preset(_unique(preset_name, taken), p, colour=colour)
        job = _fit_gpus(job, self._free_gpus())
        self._push([*self.jobs, job], f"Add job {job.name}")
        self.refresh(select=job.name)
        return job

    def duplicate_job(self) -> Job | None:
        """Add a copy of the selected job under a new name and colour."""
        name = self.selected_name()
        job = next((j for j in self.jobs if j.name == name), None)
        if job is None:
            return None
        used = {j.colour.upper() for j in self.jobs}
        colour = next((c for c in JOB_COLOURS if c.upper() not in used), job.colour)
        copy = Job(
            **{
                **job.__dict__,
                "name": _unique(job.name, {j.name for j in self.jobs}),
                "colour": colour,
                "gpus": (),
            }
        )
        if copy.placement == "explicit":
            copy = Job(**{**copy.__dict__, "placement": "packed"})
        self._push([*self.jobs, copy], f"Duplicate job {job.name}")
        self.refresh(select=copy.name)
        return copy

    def delete_job(self) -> None:
        """Delete the selected job."""
        name = self.selected_name()
        if not name:
            return
        self._push([j for j in self.jobs if j.name != name], f"Delete job {name}")

    def _on_editor_job_edited(self, job: Job, field: str) -> None:
        old = self.selected_name()
        jobs = [job if j.name == old else j for j in self.jobs]
        if self._push(jobs, f"Change {field} of job {old}"):
            self.refresh(select=job.name)

    def _free_gpus(self) -> int:
        topo = self.document.topology
        total = sum(1 for _ in topo.nodes("gpu"))
        return max(total - sum(j.n_gpus for j in self.jobs), 0)

    # ------------------------------------------------------------ results
    def _on_runner_started(self, generation: int) -> None:
        self._simulating = generation
        self.status.setText("Simulating…")
        self.cancel_button.show()
        self.answer.setEnabled(False)  # greyed: the figures are of the design before

    def _on_runner_percent(self, generation: int, pct: int) -> None:
        if self.runner is not None and self.runner.busy and generation == self._simulating:
            self.status.setText(f"Simulating… {pct}%")

    def _on_runner_result_ready(self, result: WorkloadResult | None) -> None:
        self.cancel_button.hide()
        self.result = result
        self.status.setText("" if result is None else f"Simulated in {result.seconds * 1e3:.0f} ms")
        self._show_results()

    def _on_runner_failed(self, _generation: int, text: str) -> None:
        self.cancel_button.hide()
        self.result = None
        self.status.setText(f"Simulation failed: {text}")
        self.status.setToolTip(text)
        self._show_results()

    def _on_runner_cancelled(self, _generation: int) -> None:
        self.cancel_button.hide()
        self.answer.setEnabled(True)
        self.status.setText("Simulation cancelled; the next edit runs it again")

    def _show_results(self) -> None:
        by_name = {}
        if self.result is not None:
            by_name = {j.name: j for j in self.result.simulation.jobs}
        for r, job in enumerate(self.jobs):
            res = by_name.get(job.name)
            it = "" if res is None else format_seconds(res.iteration_s)
            slow = "" if res is None or res.slowdown is None else f"{res.slowdown:.3f}×"
            tip = ""
            if res is not None and res.memory_gb_per_gpu is not None:
                tip = f"{res.memory_gb_per_gpu:.1f} GB of memory a GPU"
                if res.fits is False:
                    it += " !"  # as `fabric-designer simulate` marks it
                    tip += ": does not fit in the GPUs' memory"
            cell = self.table.item(r, COL["Iteration"])
            cell.setText(it)
            cell.setToolTip(tip)
            self.table.item(r, COL["Slowdown"]).setText(slow)
        self.answer.setText(self._headline())
        self.answer.setToolTip(self.answer.text())
        self.answer.setEnabled(True)

    def _headline(self) -> str:
        if self.load_error:
            return f"A job cannot be read: {self.load_error}"
        if not self.jobs:
            return "No jobs: add one from a preset"
        if self.result is None:
            return f"{len(self.jobs)} job(s)"
        jobs = self.result.simulation.jobs
        slowest = max(jobs, key=lambda j: j.iteration_s)
        worst = max(jobs, key=lambda j: j.slowdown or 1.0)
        text = (
            f"{len(jobs)} job(s); slowest {slowest.name} "
            f"{format_seconds(slowest.iteration_s)}/iteration"
        )
        if len(jobs) > 1:
            text += f"; worst slowdown {worst.slowdown or 1.0:.3f}× ({worst.name})"
        return text


def _fit_gpus(job: Job, free: int) -> Job:
    """``job`` with its data, then pipeline, then context parallelism halved while it
    wants more than ``free`` GPUs and halving keeps the layout valid (a preset's layout
    is for its own cluster; tensor parallelism, an NVLink domain's, is kept).  Expert
    parallelism, carved out of data parallelism, is halved with it when it must be."""
    from dataclasses import replace

    for name in ("dp", "pp", "cp"):
        while job.n_gpus > free and getattr(job.parallel, name) % 2 == 0:
            par = replace(job.parallel, **{name: getattr(job.parallel, name) // 2})
            if name == "dp" and par.dp % par.ep and par.ep % 2 == 0:
                par = replace(par, ep=par.ep // 2)
            if par.vp > 1 and par.pp == 1:
                par = replace(par, vp=1)
            candidate = replace(job, parallel=par)
            try:
                candidate.check()
            except ValueError:
                break
            job = candidate
    return job
