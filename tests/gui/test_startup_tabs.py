"""A new window shows the answers first: the bottom panels open on Bus bandwidth and
the right-hand docks on the Inspector, whatever docks were tabbed in after them."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTabBar

from designer.gui.document import Document
from designer.gui.main_window import MainWindow


def test_a_new_window_opens_on_bus_bandwidth_and_the_inspector(qtbot, data_folder):
    window = MainWindow(Document())
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    current = {
        bar.tabText(bar.currentIndex())
        for bar in window.findChildren(QTabBar)
        if bar.isVisible() and bar.count() > 1
    }
    assert "Bus bandwidth" in current and "Inspector" in current, current


def test_the_right_hand_tabs_scroll_instead_of_widening_the_column(qtbot, data_folder):
    """Six tabs (Inspector ... Info) set the column's width by their titles (~490 px of
    a 1,152-px window), taking it from the canvas; their titles are kept whole."""
    window = MainWindow(Document())
    qtbot.addWidget(window)
    window.resize(1152, 648)
    window.show()
    qtbot.waitExposed(window)
    bar = next(
        b
        for b in window.findChildren(QTabBar)
        if b.isVisible() and "Inspector" in {b.tabText(i) for i in range(b.count())}
    )
    assert bar.count() >= 6
    assert window.inspector.width() <= 400
    assert bar.elideMode() == Qt.TextElideMode.ElideNone and bar.usesScrollButtons()
