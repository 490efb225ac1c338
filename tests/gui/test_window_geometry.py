"""The main window fits the screen it opens on, and comes back where it was left."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSettings

from designer.gui.document import Document
from designer.gui.main_window import MainWindow
from designer.gui.window_geometry import KEY, PREFERRED, first_size


def test_the_first_size_fits_a_small_screen():
    small = QRect(0, 0, 1280, 760)              # a 1280 x 800 laptop less its bars
    size = first_size(small)
    assert size.width() <= small.width() and size.height() <= small.height()
    assert first_size(QRect(0, 0, 3840, 2100)) == PREFERRED


def test_a_new_window_fits_its_screen(qtbot, data_folder):
    window = MainWindow(Document())
    qtbot.addWidget(window)
    free = window.screen().availableGeometry()
    assert window.width() <= free.width() and window.height() <= free.height()


def test_the_window_can_shrink_to_a_1280x720_desktop(qtbot, data_folder):
    """Every dock shown, the window's minimum height still fits a 1280 x 720 screen's
    first size (nine tenths of it): the minimum is what Qt enforces, so a larger one
    pushed the status bar and the bottom panels off the screen."""
    window = MainWindow(Document())
    qtbot.addWidget(window)
    window.show()
    first = first_size(QRect(0, 0, 1280, 720))
    hint = window.minimumSizeHint()
    assert hint.height() <= first.height() and hint.width() <= first.width()


def test_the_window_comes_back_where_it_was_left(qtbot, data_folder, monkeypatch):
    first = MainWindow(Document())
    qtbot.addWidget(first)
    first.show()
    first.resize(first.width() + 37, first.height() + 23)
    first.move(40, 30)
    left = first.size()
    first.close()
    settings: QSettings = first.files.settings
    settings.sync()
    assert settings.value(KEY) is not None
    second = MainWindow(Document())
    qtbot.addWidget(second)
    assert second.size() == left
