"""`JobEditor`: every field of one job, checked as the user types.

The form is made from the workload model's own dataclasses (`Job`, `Parallelism`,
`TrainingConfig`, `ModelSpec`), so a field added there shows here.  Each keystroke
re-checks the whole job through `designer.workload.files.job_from_dict` (the checks the
file reader and the CLI use); a bad value shows one line naming the field under the
form and outlines the field, and nothing reaches the design.  A valid change is handed
on (`job_edited`) when the field is committed (Enter, focus leaving it, a choice made),
so one edit is one undo step, not one per keystroke.
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QCheckBox,
    QColorDialog,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from designer.gui.wheel import guard_wheel
from designer.workload.experts import DISPATCHERS
from designer.workload.files import job_from_dict, job_to_dict
from designer.workload.job import (
    DTYPE_BYTES,
    PLACEMENTS,
    RECOMPUTE,
    ZERO,
    Job,
    Parallelism,
    TrainingConfig,
)
from designer.workload.model import ModelSpec

__all__ = ["JobEditor", "check_job_fields"]

ERROR_COLOUR = "#D55E00"  # Okabe-Ito vermillion
_COLOUR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")

#: Fields of a job that take one of a few values (the rest are typed).
_CHOICES = {
    ("", "placement"): tuple(p for p in PLACEMENTS if p != "explicit"),
    ("training", "dtype"): tuple(DTYPE_BYTES),
    ("training", "grad_dtype"): tuple(DTYPE_BYTES),
    ("training", "zero"): ZERO,
    ("training", "recompute"): RECOMPUTE,
    ("training", "ep_dispatcher"): DISPATCHERS,
}
_JOB_FIELDS = (
    ("name", str),
    ("colour", str),
    ("placement", str),
    ("mfu", float),
    ("tflops", float),
)
_SECTIONS = (
    ("parallel", "Parallelism", Parallelism),
    ("training", "Training", TrainingConfig),
    ("model", "Model", ModelSpec),
)
_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def _label(section: str, name: str) -> str:
    return name if not section else f"{section}.{name}"


def _parse(text: str, kind: type, label: str) -> Any:
    text = text.strip()
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{label}: expected a whole number, got {text!r:.40}") from None
    if kind is float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{label}: expected a number, got {text!r:.40}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{label}: expected a finite number")
        return value
    return text


def check_job_fields(data: dict, others: set[str]) -> Job:
    """The `Job` ``data`` (`job_to_dict`'s shape) describes, checked as the file
    reader checks it, plus a colour ``#rrggbb`` and a name no job in ``others`` has.

    Raises
    ------
    ValueError
        One line naming the field (``parallel.tp: ...``, ``colour: ...``).
    """
    name = str(data.get("name", "")).strip()
    if not name:
        raise ValueError("name: a job needs a name")
    if name in others:
        raise ValueError(f"name: another job is named {name!r}")
    if not _COLOUR_RE.match(str(data.get("colour", ""))):
        raise ValueError(f"colour: expected #rrggbb, got {data.get('colour')!r:.40}")
    try:
        return job_from_dict(data, "job")
    except ValueError as exc:
        # "job ('a'): training.micro_batch: ..." -> "training.micro_batch: ..."
        text = str(exc)
        prefix = f"job ({name!r})"
        text = text.removeprefix(prefix).lstrip(".: ")
        raise ValueError(text) from None


class JobEditor(QWidget):
    """The fields of one job (see the module).

    Signals
    -------
    job_edited(object, str)
        A valid change was committed: the new `Job` and the field's label.
    error_changed(str)
        The inline error ("" once the job is valid again).
    """

    job_edited = Signal(object, str)
    error_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.job: Job | None = None
        self.others: set[str] = set()
        self.error = ""
        self._loading = False
        self.widgets: dict[tuple[str, str], QWidget] = {}
        self.kinds: dict[tuple[str, str], type] = {}
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        self.error_label = QLabel("", self)
        self.error_label.setObjectName("workload_error")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(f"color: {ERROR_COLOUR}; font-weight: bold;")
        self.error_label.hide()
        column.addWidget(self.error_label)
        box = QGroupBox("Job", self)
        form = QFormLayout(box)
        for name, kind in _JOB_FIELDS:
            field = self._make("", name, kind)
            form.addRow(name, self._with_picker(field) if name == "colour" else field)
        column.addWidget(box)
        for section, title, cls in _SECTIONS:
            box = QGroupBox(title, self)
            form = QFormLayout(box)
            for f in fields(cls):
                form.addRow(f.name, self._make(section, f.name, _TYPES[f.type]))
            column.addWidget(box)
        column.addStretch(1)
        self.setEnabled(False)

    def _make(self, section: str, name: str, kind: type) -> QWidget:
        key = (section, name)
        self.kinds[key] = kind
        label = _label(section, name)
        if key in _CHOICES:
            w = QComboBox(self)
            w.addItems(_CHOICES[key])
            guard_wheel(w)
            w.currentIndexChanged.connect(lambda _i, lb=label: self._on_committed(lb))
        elif kind is bool:
            w = QCheckBox(self)
            w.toggled.connect(lambda _on, lb=label: self._on_committed(lb))
        else:
            w = QLineEdit(self)
            w.textEdited.connect(lambda _t, k=key: self._on_text_edited(k))
            w.editingFinished.connect(lambda lb=label: self._on_committed(lb))
        w.setObjectName(f"job_{section}_{name}" if section else f"job_{name}")
        w.setToolTip(label)
        self.widgets[key] = w
        return w

    def _with_picker(self, field: QLineEdit) -> QWidget:
        """``field`` (``#rrggbb``) with a button opening the colour dialog."""
        row = QWidget(self)
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(field, 1)
        self.colour_button = QToolButton(row)
        self.colour_button.setText("…")
        self.colour_button.setToolTip("Choose the job's colour")
        self.colour_button.clicked.connect(self._on_colour_button_clicked)
        layout.addWidget(self.colour_button)
        return row

    def _on_colour_button_clicked(self) -> None:
        field = self.widgets[("", "colour")]
        colour = QColorDialog.getColor(QColor(field.text()), self, "Job colour")
        if colour.isValid():
            field.setText(colour.name())
            self._on_committed("colour")

    # ------------------------------------------------------------ model -> form
    def set_job(self, job: Job | None, others: set[str]) -> None:
        """Show ``job`` (None: an empty, disabled form); ``others`` are the other jobs'
        names (a name must be unique)."""
        self.job, self.others = job, set(others)
        self._loading = True
        try:
            for (section, name), w in self.widgets.items():
                value = "" if job is None else getattr(_part(job, section), name)
                if isinstance(w, QComboBox):
                    if value and w.findText(str(value)) < 0:
                        w.addItem(str(value))  # (explicit placement, set elsewhere)
                    w.setCurrentText(str(value))
                elif isinstance(w, QCheckBox):
                    w.setChecked(bool(value))
                else:
                    w.setText("" if value == "" else _shown(value))
        finally:
            self._loading = False
        self.setEnabled(job is not None)
        self._set_error("", None)

    # ------------------------------------------------------------ form -> job
    def candidate(self) -> dict:
        """The job the form describes, as `job_to_dict`'s shape (raises ``ValueError``
        naming a field that does not parse)."""
        data = job_to_dict(self.job)
        for (section, name), w in self.widgets.items():
            label = _label(section, name)
            if isinstance(w, QComboBox):
                value: Any = w.currentText()
            elif isinstance(w, QCheckBox):
                value = w.isChecked()
            else:
                value = _parse(w.text(), self.kinds[(section, name)], label)
            if section:
                data[section][name] = value
            else:
                data[name] = value
        if not data.get("tflops"):
            data.pop("tflops", None)
        if data.get("placement") != "explicit":
            data.pop("gpus", None)  # a policy chosen for a job placed by hand: it places it
        return data

    def check(self, edited: QWidget | None = None) -> Job | None:
        """The form's job if valid; otherwise None, with the inline error shown (and
        ``edited``, the field being typed in, outlined with the field it names)."""
        if self.job is None:
            return None
        try:
            job = check_job_fields(self.candidate(), self.others)
        except ValueError as exc:
            self._set_error(str(exc), edited or self.focusWidget())
            return None
        self._set_error("", None)
        return job

    def _on_text_edited(self, key: tuple[str, str]) -> None:
        if not self._loading:
            self.check(self.widgets[key])

    def _on_committed(self, label: str) -> None:
        if self._loading or self.job is None:
            return
        job = self.check()
        if job is not None and job != self.job:
            self.job = job
            self.job_edited.emit(job, label)

    def _set_error(self, text: str, focus: QWidget | None) -> None:
        named = _named_field(text)
        for key, w in self.widgets.items():
            bad = bool(text) and (w is focus or _label(*key) == named or key[1] == named)
            w.setStyleSheet(f"border: 2px solid {ERROR_COLOUR};" if bad else "")
        self.error_label.setText(text)
        self.error_label.setVisible(bool(text))
        if text != self.error:
            self.error = text
            self.error_changed.emit(text)


def _part(job: Job, section: str):
    """The object holding a section's fields (the job itself for "")."""
    return {"": job, "parallel": job.parallel, "training": job.config, "model": job.model}[section]


def _named_field(text: str) -> str:
    """The field a message starts with (``parallel.tp: ...`` -> ``parallel.tp``)."""
    head = text.split(":", 1)[0].strip()
    return head if re.fullmatch(r"[a-z_]+(\.[a-z_]+)?", head) else ""


def _shown(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    return str(value)
