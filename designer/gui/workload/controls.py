"""`CanvasControls`: the row of the Workloads dock that works on the canvas: place the
selected job on the GPUs selected there, what link colours show (the jobs' mean or
peak utilisation, or the single collective's), and whether jobs are outlined."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QToolButton, QWidget

from designer.gui.wheel import guard_wheel
from designer.gui.workload.overlay import LINK_MODES, WorkloadOverlay

__all__ = ["CanvasControls"]

_SHORT = {"mean": "mean", "peak": "peak", "collective": "one collective"}


class CanvasControls(QWidget):
    """Buttons for `WorkloadOverlay` (see the module)."""

    def __init__(self, overlay: WorkloadOverlay, parent: QWidget | None = None):
        super().__init__(parent)
        self.overlay = overlay
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 0, 4, 0)
        self.place_button = QToolButton(self)
        self.place_button.setText("Place on selection")
        self.place_button.setToolTip(
            "Run the selected job on the GPUs selected on the canvas (devices, racks or "
            "SUs: click, rubber band or Find); again elsewhere to move it. Undoable."
        )
        self.place_button.clicked.connect(overlay.assign_selection)
        self.links = QComboBox(self)
        self.links.setObjectName("workload_link_mode")
        for key, title in LINK_MODES.items():
            self.links.addItem(_SHORT[key], key)
            self.links.setItemData(self.links.count() - 1, title, 3)  # ToolTipRole
        self.links.setToolTip("What link colours show")
        guard_wheel(self.links)
        self.links.currentIndexChanged.connect(
            lambda i: overlay.set_link_mode(self.links.itemData(i))
        )
        self.outlines = QCheckBox("Outlines", self)
        self.outlines.setToolTip("Frame each job's GPUs, rack by rack, on the canvas")
        self.outlines.toggled.connect(overlay.set_outlines)
        row.addWidget(self.place_button)
        row.addWidget(QLabel("Links:", self))
        row.addWidget(self.links)
        row.addWidget(self.outlines)
        row.addStretch(1)

    def set_link_mode(self, mode: str) -> None:
        """Choose what link colours show (as the user would in the box)."""
        self.links.setCurrentIndex(self.links.findData(mode))
