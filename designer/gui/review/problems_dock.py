"""`ProblemsDock`: the design's findings (``fabric-designer validate``); clicking one
selects and centres its subject on the canvas."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QTreeWidget, QTreeWidgetItem, QWidget

from designer.gui.review.base import ReviewDock
from designer.gui.review.runner import ReviewRunner
from designer.gui.review.summary import problems_headline
from designer.model.rules import Finding

#: Findings listed at most (a 16k-GPU design with a systematic mistake has thousands;
#: the headline counts them all).
MAX_ROWS = 1000

#: Colour of each severity's word (readable on light and dark themes).
SEVERITY_COLOURS = {"error": "#d62728", "warning": "#b8860b"}


class ProblemsDock(ReviewDock):
    """Validation results, errors first.

    Signals
    -------
    activated(object)
        The user clicked a finding (the `Finding`).
    """

    what = "problems"
    activated = Signal(object)

    def __init__(self, runner: ReviewRunner, parent: QWidget | None = None):
        super().__init__("Problems", runner, parent)
        self.tree = QTreeWidget(self.widget())
        self.tree.setObjectName("problems_tree")
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Severity", "Problem", "Rule"])
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setWordWrap(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.header().setStretchLastSection(False)
        self.tree.setColumnWidth(0, 64)
        self.tree.header().setSectionResizeMode(1, self.tree.header().ResizeMode.Stretch)
        self.tree.itemClicked.connect(self._on_tree_item_clicked)
        self.tree.itemActivated.connect(self._on_tree_item_clicked)
        self.layout_.addWidget(self.tree, 1)
        self.findings: list[Finding] = []
        self.replay()

    def show_answer(self, findings: Sequence[Finding]) -> None:
        self.findings = list(findings)
        text = problems_headline(self.findings)
        worst = (
            "error"
            if any(f.severity == "error" for f in findings)
            else ("warning" if findings else "")
        )
        colour = SEVERITY_COLOURS.get(worst, "#2ca02c")
        self.headline.setText(text)
        self.headline.setStyleSheet(f"color: {colour};")
        self.tree.clear()
        items = []
        for f in self.findings[:MAX_ROWS]:
            item = QTreeWidgetItem([f.severity, f.message, f.code])
            item.setForeground(0, QBrush(QColor(SEVERITY_COLOURS[f.severity])))
            item.setToolTip(1, f.message)
            item.setData(0, Qt.ItemDataRole.UserRole, f)
            items.append(item)
        more = len(self.findings) - MAX_ROWS
        if more > 0:
            items.append(
                QTreeWidgetItem(
                    ["", f"… and {more:,} more (fabric-designer validate lists them all)", ""]
                )
            )
        self.tree.addTopLevelItems(items)

    def show_error(self) -> None:
        self.findings = []
        self.tree.clear()

    def _on_tree_item_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        finding = item.data(0, Qt.ItemDataRole.UserRole)
        if finding is not None:
            self.activated.emit(finding)


def finding_ids(topology, finding: Finding) -> tuple[list[str], list[str]]:
    """``(node ids, link ids)`` a finding is about, of those still in the design."""
    nodes, links = [], []
    for item_id in (finding.subject, *finding.items):
        if not item_id:
            continue
        if topology.has_node(item_id):
            nodes.append(item_id)
        elif topology.has_link(item_id):
            links.append(item_id)
    return nodes, links
