"""`BomDock`: the bill of materials (``fabric-designer bom``): devices and link
technologies with counts, cost and power, the totals per design and per GPU, and where
each figure comes from (the catalog's sources; prices and power are labelled
assumptions)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QTreeWidget, QTreeWidgetItem, QWidget

from designer.gui.review.base import ReviewDock
from designer.gui.review.runner import ReviewRunner
from designer.gui.review.summary import bom_headline, bom_network_line, usd, watts
from designer.model.bom import ASSUMPTION_NOTE, SYSTEM_NOTE, Bom

COLUMNS = ("Item", "Count", "Unit", "Total", "Power", "Basis")


def basis(catalog, key: str, overridden: bool, tech: bool = False) -> tuple[str, str]:
    """``(short label, tooltip)`` saying where a row's price and power come from."""
    if overridden:
        return "override", "Price or power set in this design (Design > overrides)."
    try:
        entry = catalog.tech(key) if tech else catalog.device(key)
    except Exception:
        return "assumption", ASSUMPTION_NOTE
    note = entry.assumption_note or ASSUMPTION_NOTE
    return "assumption", f"{note}\nSource: {entry.source}"


class BomDock(ReviewDock):
    """Bill of materials of the design as it is."""

    what = "bom"

    def __init__(self, runner: ReviewRunner, parent: QWidget | None = None):
        super().__init__("Bill of materials", runner, parent)
        self.network = QLabel("", self.widget())
        self.network.setObjectName("bom_network")
        self.network.setWordWrap(True)
        self.layout_.addWidget(self.network)
        self.tree = QTreeWidget(self.widget())
        self.tree.setObjectName("bom_tree")
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setUniformRowHeights(True)
        for col in range(1, 5):
            self.tree.headerItem().setTextAlignment(col, Qt.AlignmentFlag.AlignRight)
        # The figures keep their width; the item names take what is left (elided).
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in range(1, len(COLUMNS)):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.layout_.addWidget(self.tree, 1)
        self.note = QLabel(ASSUMPTION_NOTE, self.widget())
        self.note.setObjectName("bom_note")
        self.note.setWordWrap(True)
        font = self.note.font()
        font.setItalic(True)
        self.note.setFont(font)
        self.layout_.addWidget(self.note)
        self.bom: Bom | None = None
        self.replay()

    def show_answer(self, b: Bom) -> None:
        self.bom = b
        self.headline.setText(bom_headline(b))
        self.network.setText(bom_network_line(b))
        catalog = self.runner.document.topology.catalog
        self.tree.clear()
        devices = QTreeWidgetItem(["Devices"])
        for r in b.devices:
            label = f"{r.model} per GPU" if r.category == "system" else r.model
            short, tip = basis(catalog, r.model, r.overridden)
            if r.category == "system":
                short, tip = "assumption", SYSTEM_NOTE
            self._row(
                devices,
                label,
                r.count,
                r.unit_price_usd,
                r.total_price_usd,
                r.total_power_w,
                short,
                f"{r.name}\n{tip}",
            )
        cables = QTreeWidgetItem(["Optics and cables"])
        for r in b.cables:
            short, tip = basis(catalog, r.tech, r.overridden, tech=True)
            self._row(
                cables,
                f"{r.tech} ({r.bundles:,} bundles)",
                r.links,
                r.unit_price_usd,
                r.total_price_usd,
                r.total_power_w,
                short,
                f"{r.name}\n{tip}",
            )
        self.tree.addTopLevelItems([devices, cables])
        devices.setExpanded(True)
        cables.setExpanded(True)

    def _row(
        self,
        parent: QTreeWidgetItem,
        label: str,
        count: int,
        unit: float,
        total: float,
        power: float,
        short: str,
        tip: str,
    ) -> None:
        item = QTreeWidgetItem(
            parent, [label, f"{count:,}", usd(unit), usd(total), watts(power), short]
        )
        for col in range(1, 5):
            item.setTextAlignment(col, Qt.AlignmentFlag.AlignRight)
        for col in range(len(COLUMNS)):
            item.setToolTip(col, tip)

    def show_error(self) -> None:
        self.bom = None
        self.network.setText("")
        self.tree.clear()
