"""Start the desktop application: ``fabric-designer [FILE]``."""

from __future__ import annotations

import ctypes.util
import os
import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from designer import __version__
from designer.gui.document import Document
from designer.gui.main_window import MainWindow
from designer.model.errors import DesignError
from designer.model.templates import build_template


def application(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created once), named for settings and the desktop."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setApplicationName("Fabric Designer")
    app.setOrganizationName("Fabric Designer")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("fabric-designer")
    return app


def create_window(file: str | Path | None = None) -> tuple[MainWindow, str | None]:
    """A main window on ``file`` (or the example design), and an error to show if the
    file could not be opened (the example is shown instead)."""
    error = None
    document = Document(build_template("example"))
    window = MainWindow(document)
    if file is not None:
        try:
            document.open(Path(file))
        except DesignError as exc:
            error = str(exc)
    return window, error


def missing_display_library() -> str | None:
    """Why Qt would abort instead of opening a window on Linux, in one line (or None):
    no display at all, or X11 without libxcb-cursor (required by Qt >= 6.5)."""
    linux = sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
    if linux and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        return ("no display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset); "
                "the subcommands work headless, see fabric-designer --help")
    if (linux and os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")
            and ctypes.util.find_library("xcb-cursor") is None):
        return ("Qt needs the system library libxcb-cursor0 to open a window on X11 "
                "(Debian/Ubuntu: sudo apt-get install libxcb-cursor0); the subcommands "
                "work without it")
    return None


def run(file: str | None = None) -> int:
    """Show the main window and run the event loop; returns the exit code."""
    problem = missing_display_library()
    if problem:
        print(f"fabric-designer: error: {problem}", file=sys.stderr)
        return 1
    app = application()
    window, error = create_window(file)
    window.show()
    # Fit once the docks have their sizes, so the design fills the canvas.
    QTimer.singleShot(0, window.view.fit)
    if error:
        QMessageBox.warning(window, "Cannot open design", error)
    elif file is None:
        window.files.offer_recovery()
    return app.exec()
