"""`TemplateDialog`: File > New from Template.

Lists every template of `designer.model.templates.TEMPLATES` with its help text and a
parameter form generated from its `Param`s: an int becomes a spin box, a float a
decimal spin box, a bool a check box, a parameter with choices a combo box and any other
string a line edit, all filled with the defaults.  Each template keeps its own form, so
switching back and forth keeps what was typed.

The design is built when the user presses Create, under a busy cursor; a `DesignError`
(a value out of range, too few switch ports) is shown in the dialog, which stays open so
the value can be fixed.
"""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from designer.model.errors import DesignError
from designer.model.templates import TEMPLATES, Param, Template, build_template
from designer.model.topology import Topology

# Integer limits when the help text gives none: big enough for any real cluster, small
# enough that a slipped key does not ask for a million switches.
INT_MAX = 4096
FLOAT_MAX = 1000.0
_RANGE = re.compile(r"(\d+)\s*-\s*(\d+)\)")
_MULTIPLE = re.compile(r"multiple of (\d+)")
_EVEN = re.compile(r"\beven\b")


def _int_limits(p: Param) -> tuple[int, int, int]:
    """(minimum, maximum, step) for an int parameter.

    The templates document their limits in the help text ("GPUs on the board (1-8)",
    "(multiple of 4, 4-72)", "even"); use them so the spin box cannot leave the valid range.
    """
    low, high = (0, INT_MAX) if p.default <= 0 else (1, max(INT_MAX, p.default))
    if m := _RANGE.search(p.help):
        low, high = int(m.group(1)), int(m.group(2))
    step = int(m.group(1)) if (m := _MULTIPLE.search(p.help)) else 1
    if _EVEN.search(p.help):
        low, step = max(low, 2), 2
    return low, high, step


def make_field(p: Param) -> QWidget:
    """The editor widget for one template parameter, holding its default."""
    if p.choices is not None:
        w: QWidget = QComboBox()
        for choice in p.choices:
            w.addItem(str(choice), choice)
        w.setCurrentIndex(list(p.choices).index(p.default))
    elif isinstance(p.default, bool):  # before int: a bool is an int to Python
        w = QCheckBox()
        w.setChecked(p.default)
    elif isinstance(p.default, int):
        w = QSpinBox()
        low, high, step = _int_limits(p)
        w.setRange(low, high)
        w.setSingleStep(step)
        w.setValue(p.default)
    elif isinstance(p.default, float):
        w = QDoubleSpinBox()
        w.setRange(0.0, FLOAT_MAX)
        w.setDecimals(2)
        w.setSingleStep(0.25)
        w.setValue(p.default)
    else:
        w = QLineEdit(str(p.default))
    w.setObjectName(p.name)
    w.setToolTip(p.help)
    return w


def field_value(w: QWidget) -> Any:
    """The value a `make_field` widget holds, in its parameter's type."""
    if isinstance(w, QComboBox):
        return w.currentData()
    if isinstance(w, QCheckBox):
        return w.isChecked()
    if isinstance(w, QSpinBox | QDoubleSpinBox):
        return w.value()
    if isinstance(w, QLineEdit):
        return w.text()
    raise TypeError(f"not a parameter field: {w!r}")


def set_field_value(w: QWidget, value: Any) -> None:
    """Put ``value`` into a `make_field` widget."""
    if isinstance(w, QComboBox):
        index = w.findData(value)
        if index < 0:
            raise ValueError(f"{w.objectName()}: {value!r} is not a choice")
        w.setCurrentIndex(index)
    elif isinstance(w, QCheckBox):
        w.setChecked(bool(value))
    elif isinstance(w, QSpinBox | QDoubleSpinBox):
        w.setValue(value)
    else:
        w.setText(str(value))


def _quiet(label: QLabel) -> QLabel:
    """Secondary text: the theme's text colour blended towards the background, so it
    reads in both light and dark themes yet steps back from the values."""
    pal = label.palette()
    text, back = pal.color(QPalette.ColorRole.WindowText), pal.color(QPalette.ColorRole.Window)
    mix = QColor.fromRgbF(*(0.62 * t + 0.38 * b for t, b in zip(text.getRgbF()[:3],
                                                                back.getRgbF()[:3],
                                                                strict=True)))
    pal.setColor(QPalette.ColorRole.WindowText, mix)
    label.setPalette(pal)
    return label


class _TemplatePage(QWidget):
    """Help text and parameter form of one template: label | editor | help, one row each."""

    def __init__(self, template: Template, parent: QWidget | None = None):
        super().__init__(parent)
        self.template = template
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        title = QLabel(template.name)
        font = title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.25)
        title.setFont(font)
        about = QLabel(template.help[:1].upper() + template.help[1:] + ".")
        about.setWordWrap(True)
        layout.addWidget(title)
        layout.addWidget(about)
        layout.addSpacing(10)
        grid = QGridLayout()
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(6)
        self.fields: dict[str, QWidget] = {}
        for row, p in enumerate(template.params):
            field = make_field(p)
            field.setMinimumWidth(120)
            label = QLabel(p.name.replace("_", " ") + ":")
            label.setBuddy(field)
            align = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
            grid.addWidget(label, row, 0, align)
            grid.addWidget(field, row, 1, Qt.AlignmentFlag.AlignLeft)
            grid.addWidget(_quiet(QLabel(p.help)), row, 2)
            self.fields[p.name] = field
        if not template.params:
            grid.addWidget(_quiet(QLabel("This template has no parameters.")), 0, 0)
        grid.setColumnStretch(2, 1)
        layout.addLayout(grid)
        layout.addStretch(1)

    def params(self) -> dict[str, Any]:
        return {name: field_value(w) for name, w in self.fields.items()}


class TemplateDialog(QDialog):
    """Choose a template and its parameters; on Create, build the design.

    After ``exec()`` returns ``Accepted``, `topology()` holds the built design.

    Examples
    --------
    >>> dialog = TemplateDialog()                      # doctest: +SKIP
    >>> dialog.set_template("superpod"); dialog.set_param("sus", 1)  # doctest: +SKIP
    >>> dialog.accept(); len(list(dialog.topology().nodes("gpu")))  # doctest: +SKIP
    248
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("New from Template")
        self.setObjectName("template_dialog")
        self._topology: Topology | None = None

        self.list = QListWidget()
        self.list.setObjectName("template_list")
        self.pages = QStackedWidget()
        self._pages: dict[str, _TemplatePage] = {}
        for template in TEMPLATES.values():
            self.list.addItem(template.name)
            self.list.item(self.list.count() - 1).setToolTip(template.help)
            page = _TemplatePage(template)
            self._pages[template.name] = page
            self.pages.addWidget(page)
        self.list.setSpacing(2)
        self.list.setFixedWidth(self.list.sizeHintForColumn(0) + 40)
        self.list.currentRowChanged.connect(self._on_list_current_row_changed)

        self.error = QLabel()
        self.error.setObjectName("template_error")
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.setStyleSheet("color: #D55E00;")  # Okabe-Ito vermillion: an error
        self.error.hide()

        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Create")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        right = QVBoxLayout()
        right.addWidget(self.pages, 1)
        right.addWidget(self.error)
        body = QHBoxLayout()
        body.addWidget(self.list)
        body.addSpacing(8)
        body.addLayout(right, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(body, 1)
        layout.addWidget(self.buttons)
        self.list.setCurrentRow(0)
        self.resize(self.sizeHint().expandedTo(QSize(720, 460)))

    # ------------------------------------------------------------ reading
    def template_name(self) -> str:
        """The selected template's name."""
        return self.list.currentItem().text()

    def params(self) -> dict[str, Any]:
        """The selected template's parameter values, typed like their defaults."""
        return self._pages[self.template_name()].params()

    def field(self, name: str) -> QWidget:
        """The editor of parameter ``name`` of the selected template."""
        return self._pages[self.template_name()].fields[name]

    def topology(self) -> Topology | None:
        """The design built on Create (None before, or after Cancel)."""
        return self._topology

    # ------------------------------------------------------------ writing
    def set_template(self, name: str) -> None:
        """Select template ``name`` (a key of `TEMPLATES`)."""
        rows = [self.list.item(i).text() for i in range(self.list.count())]
        self.list.setCurrentRow(rows.index(name))

    def set_param(self, name: str, value: Any) -> None:
        set_field_value(self.field(name), value)

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    def accept(self) -> None:
        """Build the design; on a `DesignError` show it and stay open."""
        QGuiApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            self._topology = build_template(self.template_name(), **self.params())
        except DesignError as exc:
            self._topology = None
            self.show_error(str(exc).splitlines()[0])
            return
        finally:
            QGuiApplication.restoreOverrideCursor()
        self.show_error("")
        super().accept()

    # ------------------------------------------------------------ slots
    def _on_list_current_row_changed(self, row: int) -> None:
        if row >= 0:
            self.pages.setCurrentIndex(row)
            self.show_error("")
