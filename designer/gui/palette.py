"""`PaletteDock`: the components an architect drags onto the canvas.

One entry per (kind, catalog model), grouped by kind; dragging an entry carries the
component MIME type the canvas accepts.  A filter box narrows the list by name.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QDrag, QIcon
from PySide6.QtWidgets import (
    QDockWidget,
    QLineEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from designer.gui.canvas.icons import kind_pixmap
from designer.gui.canvas.interactions import component_mime
from designer.model.catalog import Catalog

ROLE = Qt.ItemDataRole.UserRole
# What architects reach for first comes first.
PALETTE_ORDER = ("gpu", "nvswitch", "nvlink-switch-tray", "nic", "leaf", "spine", "core",
                 "switch", "host", "storage")
KIND_TITLES = {
    "gpu": "GPUs", "nvswitch": "NVSwitches", "nvlink-switch-tray": "NVLink switch trays",
    "leaf": "Leaf switches", "spine": "Spine switches", "core": "Core switches",
    "switch": "Other switches", "nic": "NICs", "host": "Hosts", "storage": "Storage",
}


class _ComponentTree(QTreeWidget):
    """The tree that starts drags (entries carry (kind, model) in their data)."""

    def startDrag(self, supported_actions) -> None:
        item = self.currentItem()
        payload = item.data(0, ROLE) if item is not None else None
        if not payload:
            return
        kind, model = payload
        drag = QDrag(self)
        drag.setMimeData(component_mime(kind, model))
        drag.setPixmap(kind_pixmap(kind, 40))
        drag.exec(Qt.DropAction.CopyAction)


class PaletteDock(QDockWidget):
    """Components by kind; drag one onto the canvas to add it."""

    def __init__(self, catalog: Catalog, parent: QWidget | None = None):
        super().__init__("Components", parent)
        self.setObjectName("palette")
        self.catalog = catalog
        body = QWidget(self)
        layout = QVBoxLayout(body)
        layout.setContentsMargins(4, 4, 4, 4)
        self.filter = QLineEdit(body)
        self.filter.setPlaceholderText("Filter components…")
        self.filter.setClearButtonEnabled(True)
        self.tree = _ComponentTree(body)
        self.tree.setHeaderHidden(True)
        self.tree.setIconSize(QSize(24, 24))
        self.tree.setDragEnabled(True)
        self.tree.setDragDropMode(QTreeWidget.DragDropMode.DragOnly)
        layout.addWidget(self.filter)
        layout.addWidget(self.tree)
        self.setWidget(body)
        self._populate()
        self.filter.textChanged.connect(self._on_filter_text_changed)

    def _populate(self) -> None:
        for kind in PALETTE_ORDER:
            models = self.catalog.models_for_kind(kind)
            if not models:
                continue
            top = QTreeWidgetItem(self.tree, [KIND_TITLES.get(kind, kind)])
            top.setIcon(0, QIcon(kind_pixmap(kind, 24)))
            top.setFlags(Qt.ItemFlag.ItemIsEnabled)
            for dev in sorted(models, key=lambda d: d.key):
                child = QTreeWidgetItem(top, [dev.key])
                child.setToolTip(0, f"{dev.name}\n{dev.source}")
                child.setIcon(0, QIcon(kind_pixmap(kind, 24)))
                child.setData(0, ROLE, (kind, dev.key))
                child.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                               | Qt.ItemFlag.ItemIsDragEnabled)
            top.setExpanded(kind in ("gpu", "leaf", "spine", "nic"))

    def entries(self) -> list[tuple[str, str]]:
        """Every (kind, model) the palette offers."""
        out = []
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            out += [top.child(j).data(0, ROLE) for j in range(top.childCount())]
        return out

    def _on_filter_text_changed(self, text: str) -> None:
        needle = text.lower()
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            visible = 0
            for j in range(top.childCount()):
                child = top.child(j)
                hit = not needle or needle in child.text(0).lower() \
                    or needle in child.toolTip(0).lower()
                child.setHidden(not hit)
                visible += hit
            top.setHidden(visible == 0)
            if needle:
                top.setExpanded(True)
