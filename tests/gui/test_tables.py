"""`designer.gui.tables.filling`: columns held while a table fills, then measured."""

from __future__ import annotations

from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

from designer.gui.tables import filling


def test_filling_restores_each_columns_mode_and_sizes_to_the_new_contents(qtbot):
    table = QTableWidget(0, 3)
    qtbot.addWidget(table)
    header = table.horizontalHeader()
    modes = [QHeaderView.ResizeMode.ResizeToContents, QHeaderView.ResizeMode.Interactive,
             QHeaderView.ResizeMode.Stretch]
    for j, mode in enumerate(modes):
        header.setSectionResizeMode(j, mode)
    table.show()
    narrow = header.sectionSize(0)
    seen = []
    table.itemChanged.connect(seen.append)
    with filling(table):
        assert all(header.sectionResizeMode(j) == QHeaderView.ResizeMode.Fixed
                   for j in range(3))
        table.setRowCount(2)
        table.setItem(1, 0, QTableWidgetItem("a much longer cell than the header " * 3))
    assert [header.sectionResizeMode(j) for j in range(3)] == modes
    assert not table.signalsBlocked() and seen == []
    assert header.sectionSize(0) > narrow  # measured once, after the fill
