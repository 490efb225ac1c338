"""`InfoDock`: the design's summary (``fabric-designer info``): counts, NVLink domains,
oversubscription per switch tier and bisection bandwidth."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QWidget

from designer.gui.review.base import ReviewDock
from designer.gui.review.runner import ReviewRunner
from designer.gui.review.summary import info_headline, oversubscription_rows
from designer.model.catalog import NODE_KINDS


def counts_line(d: dict[str, Any]) -> str:
    """Nodes per kind and links, in one line."""
    counts = d["counts"]
    kinds = ", ".join(f"{counts[k]:,} {k}" for k in NODE_KINDS if counts.get(k))
    return f"{kinds or 'no nodes'}; {counts['links']:,} bundles, {counts['cables']:,} cables"


def bisection_line(d: dict[str, Any]) -> str:
    """The bisection figure and the cut it comes from."""
    if d["bisection_GBps"] is None:
        return "Bisection: - (fewer than two working GPUs)"
    split = d["bisection_split"]
    a, b = split["a"], split["b"]
    return (
        f"Bisection {d['bisection_GBps']:,.1f} GB/s, worst of {len(split['candidates'])} "
        f"balanced cuts: {split['method']} ({a['count']:,} GPUs {a['first']}..{a['last']} "
        f"vs {b['count']:,} GPUs {b['first']}..{b['last']})"
    )


class InfoDock(ReviewDock):
    """Counts, NVLink domains, oversubscription and bisection of the design as it is."""

    what = "info"

    def __init__(self, runner: ReviewRunner, parent: QWidget | None = None):
        super().__init__("Info", runner, parent)
        self.counts = QLabel("", self.widget())
        self.counts.setObjectName("info_counts")
        self.counts.setWordWrap(True)
        self.layout_.addWidget(self.counts)
        self.tiers = QTreeWidget(self.widget())
        self.tiers.setObjectName("info_tiers")
        self.tiers.setHeaderLabels(["Tier", "Switches", "Oversub.", "Worst", "Worst switch"])
        self.tiers.setRootIsDecorated(False)
        self.layout_.addWidget(self.tiers, 1)
        self.bisection = QLabel("", self.widget())
        self.bisection.setObjectName("info_bisection")
        self.bisection.setWordWrap(True)
        self.layout_.addWidget(self.bisection)
        self.info: dict[str, Any] | None = None
        self.replay()

    def show_answer(self, d: dict[str, Any]) -> None:
        self.info = d
        self.headline.setText(info_headline(d))
        self.counts.setText(counts_line(d))
        self.tiers.clear()
        self.tiers.addTopLevelItems(
            [
                QTreeWidgetItem([t, f"{n:,}", ratio, worst, switch])
                for t, n, ratio, worst, switch in oversubscription_rows(d)
            ]
        )
        for col in range(4):
            self.tiers.resizeColumnToContents(col)
        self.bisection.setText(bisection_line(d))

    def show_error(self) -> None:
        self.info = None
        self.counts.setText("")
        self.tiers.clear()
        self.bisection.setText("")
