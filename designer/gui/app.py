"""Start the desktop application: ``fabric-designer [FILE]``.

`run` sets up the log file (`designer.logs`) and, while the event loop runs, the crash
handler (`designer.gui.crash`): an unhandled exception autosaves the design and explains
itself in a dialog instead of vanishing into a terminal nobody watches.
"""

from __future__ import annotations

import ctypes.util
import logging
import os
import sys
from pathlib import Path

from PySide6.QtCore import QLibraryInfo, QTimer, QtMsgType, qInstallMessageHandler
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from designer import __version__
from designer.gui.crash import install_crash_handler
from designer.gui.document import Document
from designer.gui.main_thread_gc import collect_on_gui_thread
from designer.gui.main_window import MainWindow
from designer.logs import FILE_ONLY, setup_logging
from designer.memory import tune_process
from designer.model.catalog import resources_dir
from designer.model.errors import DesignError
from designer.model.templates import build_template

log = logging.getLogger(__name__)
qt_log = logging.getLogger("designer.qt")

_QT_LEVELS = {
    QtMsgType.QtDebugMsg: logging.DEBUG,
    QtMsgType.QtInfoMsg: logging.INFO,
    QtMsgType.QtWarningMsg: logging.WARNING,
    QtMsgType.QtCriticalMsg: logging.ERROR,
    QtMsgType.QtFatalMsg: logging.CRITICAL,
}


def _on_qt_message(kind: QtMsgType, context, text: str) -> None:
    """Qt's own warnings (a failed QPainter, a missing plugin) go to the log too."""
    qt_log.log(_QT_LEVELS.get(kind, logging.WARNING), "%s", text)


def application(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created once), named for settings and the desktop."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else sys.argv[:1])
    collect_on_gui_thread(app)  # Qt objects in reference cycles die on this thread
    app.setApplicationName("Fabric Designer")
    app.setOrganizationName("Fabric Designer")
    app.setApplicationVersion(__version__)
    # The desktop entry's id (packaging/linux/): Wayland finds the window's .desktop file
    # and icon by it.
    app.setDesktopFileName("io.github.fabricdesigner.FabricDesigner")
    icon = resources_dir() / "icons" / "fabric-designer.svg"
    if icon.is_file():  # the window and taskbar icon; packaging/ has the desktop one
        app.setWindowIcon(QIcon(str(icon)))
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


def open_when_shown(window: MainWindow, file: str | Path) -> None:
    """Open ``file`` in ``window`` once the event loop has shown it (File > Open's path:
    a status line, the progress dialog for a big file or a busy cursor for a small one,
    a message box if it cannot).

    A large design takes seconds to read and draw; opened before the window was shown,
    nothing at all appeared on screen meanwhile (~15 s for 16,384 GPUs).  The window is
    shown when the windowing system has exposed it (polled for up to ~2 s) and painted
    at once, since the load then holds this thread."""

    def attempt(left: int = 100) -> None:
        handle = window.windowHandle()
        if left > 0 and (handle is None or not handle.isExposed()):
            QTimer.singleShot(20, window, lambda: attempt(left - 1))
            return
        window.repaint()
        window.files.open_file(Path(file))

    QTimer.singleShot(0, window, attempt)


#: The Debian/Ubuntu packages Qt's xcb plugin needs on a bare system (README's line at the
#: top, checked by tests/test_docs.py; found on a minimal Debian 12).
_X11_PACKAGES = ("libegl1 libgl1 libfontconfig1 libglib2.0-0 libdbus-1-3 libx11-xcb1 "
                 "libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-image0 "
                 "libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 libxcb-shape0")


def missing_display_library() -> str | None:
    """Why Qt would abort instead of opening a window on Linux, in one line (or None):
    no display at all, or X11 without a system library Qt's xcb plugin needs
    (libxcb-cursor since Qt 6.5, libxcb-icccm, libxcb-keysyms...)."""
    linux = sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
    if linux and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        return ("no display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset); "
                "the subcommands work headless, see fabric-designer --help")
    if linux and os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        missing = _xcb_plugin_missing()
        if missing:
            return (f"Qt cannot open a window on X11: the system library {missing} is "
                    f"missing (Debian/Ubuntu: sudo apt-get install {_X11_PACKAGES}); the "
                    "subcommands work without it")
    return None


def _xcb_plugin_missing() -> str | None:
    """The first shared library Qt's xcb platform plugin cannot load with, or None.

    Why: without it Qt prints several lines and aborts the interpreter.  Loading the
    plugin here (as Qt's plugin loader is about to) makes the dynamic linker name the
    library; a frozen bundle's plugin finds the libraries the bundle ships.
    """
    plugin = (Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath))
              / "platforms" / "libqxcb.so")
    if not plugin.is_file():  # not where Qt keeps it: ask for the best-known culprit
        return None if ctypes.util.find_library("xcb-cursor") else "libxcb-cursor.so.0"
    try:
        ctypes.CDLL(str(plugin))
    except OSError as err:  # "libxcb-icccm.so.4: cannot open shared object file: ..."
        return str(err).split(":", 1)[0].strip() or str(err)
    return None


def run(file: str | None = None, verbose: bool = False) -> int:
    """Show the main window and run the event loop; returns the exit code.

    ``verbose`` logs DEBUG records to stderr as well as to the log file.
    """
    setup_logging(verbose=verbose, gui=True)
    problem = missing_display_library()
    if problem:
        log.error("%s", problem, extra=FILE_ONLY)  # the terminal gets the line below
        print(f"fabric-designer: error: {problem}", file=sys.stderr)
        return 1
    tune_process()  # the allocator and numpy, before the first solve (`designer.memory`)
    app = application()
    previous_qt_handler = qInstallMessageHandler(_on_qt_message)
    window, _ = create_window()
    crash = install_crash_handler(window)
    log.info("window open on %s", file or "the example design")
    window.show()
    # Fit once the docks have their sizes, so the design fills the canvas.
    QTimer.singleShot(0, window.view.fit)
    if file is not None:
        open_when_shown(window, file)
    else:
        window.files.offer_recovery()
    try:
        code = app.exec()
    finally:
        crash.uninstall()
        qInstallMessageHandler(previous_qt_handler)
    log.info("event loop ended with %d after %d unhandled error(s)", code, crash.errors)
    return code
