"""`DesignPropertiesDialog`: File > Design Properties…, the design's name.

The name is saved in the design's file, names its recovery copies and is the window's
title while the design has no file.  The field is wide enough for the whole name (a
template's name runs to 40 characters), so nothing of it scrolls out of sight.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from designer.model.topology import Topology

MIN_FIELD_PX = 360


class DesignPropertiesDialog(QDialog):
    """Edit the name of ``topology``; after ``exec()`` returns ``Accepted``, `name()` is
    what the user typed (stripped)."""

    def __init__(self, topology: Topology, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("design_properties")
        self.setWindowTitle("Design Properties")
        self.name_field = QLineEdit(topology.name)
        self.name_field.setObjectName("design_name")
        self.name_field.selectAll()
        metrics = self.name_field.fontMetrics()
        self.name_field.setMinimumWidth(
            max(MIN_FIELD_PX, metrics.horizontalAdvance(topology.name + "MMMM"))
        )
        counts = QLabel(f"{len(topology):,} nodes, {topology.link_count():,} links")
        form = QFormLayout()
        form.addRow("&Name:", self.name_field)
        form.addRow("Contents:", counts)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)

    def name(self) -> str:
        return self.name_field.text().strip()
