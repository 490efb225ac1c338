"""A new window shows the answers first: the bottom panels open on Bus bandwidth and
the right-hand docks on the Inspector, whatever docks were tabbed in after them."""

from __future__ import annotations

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
