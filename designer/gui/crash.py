"""Unhandled exceptions while the window runs: log, autosave, explain, keep going.

PySide6 (checked on 6.11) does not end the program when a slot, a timer callback or an
overridden virtual such as ``paintEvent`` raises: it prints "Error calling Python
override of ..." and hands the exception to ``sys.excepthook``, on the thread that
raised it (a `QThreadPool` worker included), then carries on.  Python threads go to
``threading.excepthook``.  `CrashHandler` takes both hooks while the GUI runs:

1. the full traceback goes to the log file (`designer.logs`);
2. the design is autosaved to its recovery copy (`designer.gui.recovery.Autosaver`),
   before anything else can go wrong;
3. a `CrashDialog` says in plain words what happened, where the copy and the log are,
   and offers Copy details, Quit and Continue.

A second error while the dialog is open is logged and counted on the open dialog, not
shown in a second one; an error that keeps coming back (a paint handler failing on every
repaint) is shown once and then counted in the status bar.  Every error is logged where
it is caught; steps 2 and 3 run on a later turn of the GUI thread's event loop, which
alone touches the design and widgets, and where the failing code has unwound.
"""

from __future__ import annotations

import contextlib
import logging
import platform
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import PySide6
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from designer import __version__
from designer.logs import log_file

log = logging.getLogger(__name__)

CONTINUE = "continue"
QUIT = "quit"
#: Exit code of the application after Quit in the error dialog.
EXIT_AFTER_ERROR = 1
#: A repeating error is logged in full once, then one line at these counts and every
#: thousandth: a paint loop must not rotate the first traceback out of the log.
_LOG_REPEATS_AT = (2, 3, 10, 100)


@dataclass(frozen=True)
class CrashReport:
    """What the dialog tells the user, and what Copy details copies."""

    summary: str  # "ZeroDivisionError: division by zero"
    details: str  # versions, thread, traceback: a bug report
    design_note: str  # plain words: is the design safe, and where
    recovery: Path | None  # the recovery copy, when one was written
    log_file: Path | None


class CrashDialog(QDialog):
    """The "something went wrong" dialog; `choice` is `CONTINUE` or `QUIT` once closed."""

    def __init__(self, report: CrashReport, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("crash_dialog")
        self.setWindowTitle("Fabric Designer: internal error")
        self.report = report
        # Escape and the title bar's close button leave this as is: only Quit quits.
        self.choice = CONTINUE

        icon = QLabel(self)
        size = self.style().pixelMetric(QStyle.PixelMetric.PM_MessageBoxIconSize)
        std = self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxCritical)
        icon.setPixmap(std.pixmap(size, size))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)

        heading = QLabel("Something went wrong inside Fabric Designer.", self)
        font = heading.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        heading.setFont(font)
        what = self._paragraph(f"This is a bug in the program, not something you did.\n"
                               f"What failed: {report.summary}")
        design = self._paragraph(report.design_note)
        design.setObjectName("design_note")
        where_log = (f"The details are in the log file:\n{report.log_file}"
                     if report.log_file else
                     "No log file could be written; Copy details puts them on the clipboard.")
        log_label = self._paragraph(where_log)
        log_label.setObjectName("log_note")
        advice = self._paragraph(
            "You can go on working. If something looks wrong, save the design under a new "
            "name and restart Fabric Designer.")
        self.more = self._paragraph("")
        self.more.setObjectName("more_errors")
        self.more.hide()

        self.details = QPlainTextEdit(report.details, self)
        self.details.setObjectName("details")
        self.details.setReadOnly(True)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.details.setMinimumHeight(160)
        self.details.hide()

        self.toggle_button = QPushButton("Show details", self)
        self.toggle_button.setCheckable(True)
        self.toggle_button.toggled.connect(self._on_toggle_button_toggled)
        self.copy_button = QPushButton("Copy details", self)
        self.copy_button.setObjectName("copy_details")
        self.copy_button.clicked.connect(self.copy_details)
        self.quit_button = QPushButton("Quit", self)
        self.continue_button = QPushButton("Continue", self)
        self.continue_button.setDefault(True)
        # Laid out by hand, not by QDialogButtonBox: the details buttons on the left, the
        # two that close the dialog on the right, Continue last, the same on every platform.
        self.quit_button.clicked.connect(self._on_quit_button_clicked)
        self.continue_button.clicked.connect(self.accept)
        buttons = QHBoxLayout()
        buttons.addWidget(self.toggle_button)
        buttons.addWidget(self.copy_button)
        buttons.addStretch(1)
        buttons.addWidget(self.quit_button)
        buttons.addWidget(self.continue_button)

        text = QVBoxLayout()
        text.setSpacing(10)
        for widget in (heading, what, design, log_label, advice, self.more):
            text.addWidget(widget)
        top = QHBoxLayout()
        top.setSpacing(16)
        top.addWidget(icon)
        top.addLayout(text, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.details, 1)
        layout.addLayout(buttons)
        self.setMinimumWidth(560)
        self.continue_button.setFocus()

    def _paragraph(self, text: str) -> QLabel:
        label = QLabel(text, self)
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    def copy_details(self) -> None:
        """Put the full report (versions, traceback, paths) on the clipboard."""
        QGuiApplication.clipboard().setText(self.report.details)
        self.copy_button.setText("Copied")

    def set_more_errors(self, count: int) -> None:
        """Show how many further errors happened while this dialog was open."""
        noun = "error" if count == 1 else "errors"
        self.more.setText(f"{count} more {noun} happened while this message was open "
                          "(they are in the log).")
        self.more.setVisible(count > 0)
        if self.isVisible():
            # Grow to hold the new line: kept at its size, the dialog would squeeze the
            # word-wrapped paragraphs above it and cut their last lines off.
            self.adjustSize()

    def _on_toggle_button_toggled(self, on: bool) -> None:
        self.details.setVisible(on)
        self.toggle_button.setText("Hide details" if on else "Show details")
        self.adjustSize()

    def _on_quit_button_clicked(self) -> None:
        self.choice = QUIT
        self.done(QDialog.DialogCode.Rejected)


def show_crash_dialog(dialog: CrashDialog) -> str:
    """Run the dialog modally; returns `CONTINUE` or `QUIT`.  Tests patch this."""
    dialog.exec()
    return dialog.choice


def _summary(exc_type: type[BaseException], exc: BaseException) -> str:
    """``KeyError: 'port'``: the first line of the message, cut to fit a dialog."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if len(text) > 200:
        text = text[:199] + "…"
    return f"{exc_type.__name__}: {text}" if text else exc_type.__name__


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def _error_key(exc_type: type[BaseException], tb: TracebackType | None) -> tuple:
    """Identifies "the same error again": the type and the innermost source line."""
    frames = traceback.extract_tb(tb)
    last = frames[-1] if frames else None
    return exc_type.__qualname__, last.filename if last else "", last.lineno if last else 0


def _details(exc_type, exc, tb, thread: str, recovery: Path | None,
             log_path: Path | None) -> str:
    lines = [
        f"Fabric Designer {__version__}, Python {platform.python_version()}, "
        f"PySide6 {PySide6.__version__}, {platform.platform(terse=True)}",
        f"Thread: {thread}",
        f"Recovery copy: {recovery or '(none written)'}",
        f"Log: {log_path or '(none)'}",
        "",
        *traceback.format_exception(exc_type, exc, tb),
    ]
    return "\n".join(line.rstrip("\n") for line in lines) + "\n"


class CrashHandler(QObject):
    """Handles unhandled exceptions for one main window (see the module docstring).

    Parameters
    ----------
    window : MainWindow
        Its ``files`` (`FileController`) autosaves the design and keeps the copy on Quit;
        its status bar counts repeats.
    show_dialog : callable, optional
        ``show_dialog(dialog) -> CONTINUE | QUIT``; `show_crash_dialog` (modal) by default.
    quit_app : callable, optional
        What Quit does; ``QApplication.exit(EXIT_AFTER_ERROR)`` by default.

    Use `install` / `uninstall`, or ``with CrashHandler(window) as handler:``.

    Attributes
    ----------
    errors : int
        Unhandled exceptions seen since `install`.
    suppressed : int
        Of those, how many got no dialog of their own (one was open, or a repeat).
    pending : int
        Of those, how many are logged but wait for the GUI thread's next turn.
    dialog : CrashDialog or None
        The dialog on screen, if any.
    """

    _relay = Signal(object)  # a caught error, for the GUI thread's next turn (queued)

    def __init__(self, window, *, show_dialog: Callable[[CrashDialog], str] | None = None,
                 quit_app: Callable[[], None] | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.window = window
        self._show_dialog = show_dialog
        self._quit_app = quit_app
        self.errors = 0
        self.suppressed = 0
        self.dialog: CrashDialog | None = None
        self._busy = False  # handling one on the GUI thread (autosave or dialog)
        self.pending = 0    # caught and logged, to be handled on a later turn
        self._repeats: dict[tuple, int] = {}
        self._previous_hook = None
        self._previous_thread_hook = None
        self._relay.connect(self._on_relay, Qt.ConnectionType.QueuedConnection)

    # ------------------------------------------------------------ install
    def install(self) -> CrashHandler:
        """Take over ``sys.excepthook`` and ``threading.excepthook`` (once)."""
        if self._previous_hook is None:
            self._previous_hook = sys.excepthook
            self._previous_thread_hook = threading.excepthook
            sys.excepthook = self.excepthook
            threading.excepthook = self.thread_excepthook
        return self

    def uninstall(self) -> None:
        """Give the hooks back to whoever had them before `install`."""
        if self._previous_hook is None:
            return
        if sys.excepthook == self.excepthook:
            sys.excepthook = self._previous_hook
        if threading.excepthook == self.thread_excepthook:
            threading.excepthook = self._previous_thread_hook
        self._previous_hook = self._previous_thread_hook = None

    @property
    def installed(self) -> bool:
        return self._previous_hook is not None

    def __enter__(self) -> CrashHandler:
        return self.install()

    def __exit__(self, *_exc) -> None:
        self.uninstall()

    # ------------------------------------------------------------ hooks
    def excepthook(self, exc_type, exc, tb) -> None:
        """``sys.excepthook``: PySide6 calls it for errors in slots and overrides."""
        if not issubclass(exc_type, Exception):  # Ctrl+C, SystemExit: not ours to judge
            (self._previous_hook or sys.__excepthook__)(exc_type, exc, tb)
            return
        self._caught(exc_type, exc, tb, threading.current_thread().name)

    def thread_excepthook(self, args: threading.ExceptHookArgs) -> None:
        """``threading.excepthook``: an uncaught error ended a Python thread."""
        if args.exc_type is SystemExit or not issubclass(args.exc_type, Exception):
            (self._previous_thread_hook or threading.__excepthook__)(args)
            return
        name = args.thread.name if args.thread is not None else "unknown thread"
        self._caught(args.exc_type, args.exc_value, args.exc_traceback, name)

    def _caught(self, exc_type, exc, tb, thread: str) -> None:
        # Log here and now, and handle on a later turn of the GUI thread's event loop:
        # the design and the widgets belong to the GUI thread, and on the GUI thread the
        # error came from inside a slot, a paint or an input event, where a modal
        # dialog's nested event loop would run more of the same code (a paint that
        # raises paints again) before the first call has unwound.
        try:
            self.errors += 1
            repeat = self._log(exc_type, exc, tb, thread)
            self.pending += 1
            self._relay.emit((exc_type, exc, tb, thread, repeat))
        except Exception:  # never let the handler itself fail silently or loop
            log.critical("the error handler failed", exc_info=True)
            if self._previous_hook is not None:
                self._previous_hook(exc_type, exc, tb)

    def _on_relay(self, caught) -> None:
        exc_type, exc, tb, thread, repeat = caught
        self.pending -= 1
        try:
            self.handle(exc_type, exc, tb, thread, repeat=repeat)
        except Exception:  # as in `_caught`: say so, and let the previous hook have it
            log.critical("the error handler failed", exc_info=True)
            if self._previous_hook is not None:
                self._previous_hook(exc_type, exc, tb)

    # ------------------------------------------------------------ handling
    def _log(self, exc_type, exc, tb, thread: str) -> bool:
        """Log the error; returns True when it is a repeat of one already seen."""
        key = _error_key(exc_type, tb)
        seen = self._repeats.get(key, 0) + 1
        self._repeats[key] = seen
        if seen == 1:
            log.error("unhandled exception in thread %s", thread,
                      exc_info=(exc_type, exc, tb))
        elif seen in _LOG_REPEATS_AT or seen % 1000 == 0:
            log.error("unhandled exception again (%d times): %s: %s", seen,
                      exc_type.__name__, exc)
        return seen > 1

    def handle(self, exc_type, exc, tb, thread: str = "MainThread", *,
               repeat: bool | None = None) -> str | None:
        """Deal with one unhandled exception on the GUI thread.

        ``repeat`` says whether it was already logged (True: a repeat of an earlier
        error, False: the first of its kind); None logs and counts it here.  Returns the
        user's choice, or None when no dialog was shown (one is open, or the same error
        was shown before).
        """
        if repeat is None:
            self.errors += 1
            repeat = self._log(exc_type, exc, tb, thread)
        if self._busy or repeat:
            self.suppressed += 1
            if self.dialog is not None:
                self.dialog.set_more_errors(self.suppressed)
            elif repeat:
                self._status(f"An internal error happened again ({self.suppressed} time(s) "
                             "since the last message); see the log")
            return None
        self._busy = True
        try:
            recovery, note = self._autosave()
            log_path = log_file()
            report = CrashReport(
                summary=_summary(exc_type, exc),
                details=_details(exc_type, exc, tb, thread, recovery, log_path),
                design_note=note, recovery=recovery, log_file=log_path)
            return self._ask(report)
        finally:
            self._busy = False

    def _ask(self, report: CrashReport) -> str:
        self.suppressed = 0
        dialog = CrashDialog(report, self.window if self.window.isVisible() else None)
        self.dialog = dialog
        try:
            show = self._show_dialog or show_crash_dialog
            choice = show(dialog)
        finally:
            self.dialog = None
            dialog.deleteLater()
        log.info("after the error the user chose %s", choice)
        if choice == QUIT:
            self.window.files.keep_recovery()
            if self._quit_app is not None:
                self._quit_app()
            else:
                QApplication.exit(EXIT_AFTER_ERROR)
        else:
            self._status("Continuing after an internal error; the details are in the log")
        return choice

    def _status(self, text: str) -> None:
        with contextlib.suppress(RuntimeError):  # the window is being torn down
            self.window.statusBar().showMessage(text, 10_000)

    def _autosave(self) -> tuple[Path | None, str]:
        """Write the recovery copy now; returns it (or None) and a sentence for the user."""
        files = self.window.files
        document = files.document
        saver = files.autosaver
        try:
            saver.wait()  # a copy being written finishes first
            if not document.is_modified:
                where = f" It is saved in {document.path}." if document.path else ""
                return None, f"Your design has no unsaved changes, so nothing is lost.{where}"
            before = _identity(saver.path)
            started = saver.autosave_now(wait=True)
            after = _identity(saver.path)
            # Not started but present: the copy is already up to date.  Started: a new
            # file replaced the old one (atomic rename: a new inode) or nothing changed.
            fresh = after is not None and (not started or after != before)
        except Exception as exc:  # the design itself may be what is broken
            log.error("autosave after the error failed", exc_info=True)
            return None, (f"Your unsaved changes could not be autosaved ({exc}). Save the "
                          "design with File > Save As before you go on.")
        if not fresh:
            return None, ("Your unsaved changes could not be autosaved (see the status bar "
                          "and the log). Save the design with File > Save As before you go on.")
        log.info("autosaved %s after the error", saver.path)
        return saver.path, ("Your unsaved changes were saved first, to a recovery copy:\n"
                            f"{saver.path}\nIf Fabric Designer closes, it offers this copy "
                            "the next time it starts.")


def install_crash_handler(window, **kwargs) -> CrashHandler:
    """A `CrashHandler` for ``window``, installed; ``uninstall()`` it when the loop ends."""
    return CrashHandler(window, parent=window, **kwargs).install()
