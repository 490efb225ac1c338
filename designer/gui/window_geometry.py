"""The main window's size and place: remembered between sessions, and on first start
sized to the screen it opens on.

A fixed first size does not fit every screen: 1400 x 900 is larger than a 1280 x 800
laptop's desktop, whose window manager then clips the window or the plots along its
bottom.  The first start takes at most nine tenths of the screen's free area (what the
task bar and menu bar leave) and centres the window on it; later starts put it back
where the user left it (Qt's `QWidget.saveGeometry`, which also keeps a maximised or
full-screen state and is checked against the screens connected now).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSettings, QSize
from PySide6.QtWidgets import QWidget

__all__ = ["KEY", "PREFERRED", "first_size", "place_window", "remember_window"]

KEY = "window/geometry"
PREFERRED = QSize(1400, 900)
"""The first size where the screen has room for it."""


def first_size(available: QRect, preferred: QSize = PREFERRED) -> QSize:
    """``preferred``, shrunk to nine tenths of the ``available`` desktop area in each
    direction where it does not fit.

    >>> first_size(QRect(0, 0, 1280, 760)).toTuple()
    (1152, 684)
    >>> first_size(QRect(0, 0, 2560, 1400)).toTuple()
    (1400, 900)
    """
    return QSize(min(preferred.width(), int(available.width() * 0.9)),
                 min(preferred.height(), int(available.height() * 0.9)))


def place_window(window: QWidget, settings: QSettings) -> None:
    """Give ``window`` its remembered geometry, or (first start, or a remembered one Qt
    cannot use) `first_size` centred on its screen's free area."""
    saved = settings.value(KEY)
    if saved is not None and window.restoreGeometry(saved):
        return
    screen = window.screen()
    if screen is None:
        window.resize(PREFERRED)
        return
    free = screen.availableGeometry()
    size = first_size(free)
    window.resize(size)
    window.move(free.center().x() - size.width() // 2, free.center().y() - size.height() // 2)


def remember_window(window: QWidget, settings: QSettings) -> None:
    """Keep ``window``'s geometry for the next start."""
    settings.setValue(KEY, window.saveGeometry())
