"""Unhandled exceptions in the GUI (`designer.gui.crash`): the design is autosaved first,
the dialog says what happened and where the copy and the log are, the window goes on.

Errors are raised the way the running program meets them: from a timer callback, a
connected slot, a ``paintEvent``, a `QThreadPool` worker and a Python thread, through
PySide6's own hand-off to ``sys.excepthook`` (6.11: print, call the hook, carry on).
The handler is installed inside each test body: pytest and pytest-qt swap both hooks
around each test phase.  The modal dialog is never run: ``show_dialog`` records it and
answers, except in the one test that clicks the real one.
"""

from __future__ import annotations

import sys
import threading
import traceback
from pathlib import Path

import pytest
from PySide6.QtCore import QObject, QRunnable, QThreadPool, QTimer, Signal
from PySide6.QtWidgets import QApplication, QWidget

from designer.gui import crash
from designer.gui.crash import CONTINUE, QUIT, CrashDialog, CrashHandler, CrashReport
from designer.gui.recovery import find_recoveries
from designer.io.fabric_json import load
from designer.logs import LOG_DIR_ENV, LOG_NAME, setup_logging, teardown_logging
from designer.model.commands import MoveNodes


@pytest.fixture(autouse=True)
def log_folder(monkeypatch, tmp_path) -> Path:
    folder = tmp_path / "logs"
    monkeypatch.setenv(LOG_DIR_ENV, str(folder))
    setup_logging()
    yield folder
    teardown_logging()


@pytest.fixture(autouse=True)
def data_folder(monkeypatch, tmp_path) -> Path:
    folder = tmp_path / "data"  # recovery copies of this test only (set before the window)
    monkeypatch.setenv("FABRIC_DESIGNER_DATA_DIR", str(folder))
    return folder


@pytest.fixture
def win(window):
    """The main window without live analysis: its solves would raise or not on their own
    schedule (and any bug in them would land in the handler under test)."""
    window.analysis.runner.shutdown()
    return window


class Answer:
    """Stands in for the modal dialog: records each one and what the design was then."""

    def __init__(self, choice=CONTINUE):
        self.choice = choice
        self.dialogs: list[CrashDialog] = []
        self.reports: list[CrashReport] = []
        self.copy_on_disk: list[bool] = []
        self.on_gui_thread: list[bool] = []
        self.during = None  # called while the "dialog is open"

    def __call__(self, dialog: CrashDialog) -> str:
        self.dialogs.append(dialog)
        self.reports.append(dialog.report)
        recovery = dialog.report.recovery
        self.copy_on_disk.append(recovery is not None and recovery.is_file())
        self.on_gui_thread.append(threading.current_thread() is threading.main_thread())
        if self.during is not None:
            self.during()
        return self.choice


def edit(win, dx=30.0):
    node = next(iter(win.document.topology.nodes()))
    win.document.push(MoveNodes({node.id: (node.x + dx, node.y)}))


def raise_in_a_timer(qtbot, handler, error: Exception, count: int = 1) -> None:
    """Raise ``error`` from a Qt timer callback and wait until the handler saw it and
    dealt with it (on a later turn of the event loop)."""
    before = handler.errors

    def fail():
        raise error

    QTimer.singleShot(0, fail)
    qtbot.waitUntil(lambda: handler.errors >= before + count and not handler.pending,
                    timeout=3000)


def test_pyside_hands_errors_in_slots_to_excepthook_and_carries_on(qtbot, monkeypatch):
    """What the handler relies on, checked on the installed PySide6."""
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda t, v, tb: seen.append((t, str(v))))

    class Source(QObject):
        fired = Signal()

    source = Source()
    source.fired.connect(lambda: 1 / 0)
    source.fired.emit()  # the slot raises: emit returns normally
    assert seen == [(ZeroDivisionError, "division by zero")]

    class Broken(QWidget):
        def paintEvent(self, _event):
            raise KeyError("paint")

    widget = Broken()
    qtbot.addWidget(widget)
    widget.show()
    qtbot.waitExposed(widget)
    widget.update()
    qtbot.waitUntil(lambda: (KeyError, "'paint'") in seen, timeout=3000)
    widget.hide()  # no more failing repaints after the test


def test_an_error_autosaves_first_then_explains_and_the_window_goes_on(win, qtbot,
                                                                      log_folder):
    edit(win)
    state = win.document.topology.state()
    answer = Answer()
    status: list[str] = []
    win.statusBar().messageChanged.connect(status.append)
    with CrashHandler(win, show_dialog=answer) as handler:
        raise_in_a_timer(qtbot, handler, KeyError("missing-port"))
    assert handler.errors == 1 and handler.suppressed == 0
    (report,) = answer.reports
    assert answer.copy_on_disk == [True]  # written before the dialog appeared
    assert report.recovery == win.files.autosaver.path
    assert load(report.recovery).state() == state
    assert report.summary == "KeyError: 'missing-port'"
    assert str(report.recovery) in report.design_note
    assert report.log_file == log_folder / LOG_NAME
    assert "Traceback (most recent call last)" in report.details
    assert "in fail\n    raise error" in report.details
    assert f"Recovery copy: {report.recovery}" in report.details

    logged = (log_folder / LOG_NAME).read_text()
    assert "ERROR designer.gui.crash: unhandled exception in thread MainThread" in logged
    assert "KeyError: 'missing-port'" in logged and "in fail" in logged
    assert "after the error the user chose continue" in logged

    assert any("Continuing after an internal error" in m for m in status)
    # The win still works: edit and undo.
    edit(win, 10.0)
    win.document.undo_stack.undo()
    assert win.document.topology.state() == state


def test_an_unmodified_design_needs_no_copy(win, qtbot):
    answer = Answer()
    with CrashHandler(win, show_dialog=answer) as handler:
        raise_in_a_timer(qtbot, handler, RuntimeError("boom"))
    (report,) = answer.reports
    assert report.recovery is None
    assert report.design_note.startswith("Your design has no unsaved changes")
    assert not win.files.autosaver.path.exists()


def test_a_failed_autosave_tells_the_user_to_save_elsewhere(win, qtbot, monkeypatch):
    def disk_full(*_args):
        raise OSError(28, "No space left on device")

    edit(win)
    monkeypatch.setattr("os.fsync", disk_full)
    answer = Answer()
    with CrashHandler(win, show_dialog=answer) as handler:
        raise_in_a_timer(qtbot, handler, RuntimeError("boom"))
    (report,) = answer.reports
    assert report.recovery is None
    assert "could not be autosaved" in report.design_note
    assert "Save As" in report.design_note


def test_errors_while_the_dialog_is_open_are_counted_not_shown(win, qtbot, log_folder):
    answer = Answer()
    handler = CrashHandler(win, show_dialog=answer)

    def two_more():
        # What PySide does when a paint or a timer fails in the dialog's event loop.
        for text in ("second", "third"):
            try:
                raise ValueError(text)
            except ValueError:
                sys.excepthook(*sys.exc_info())
        QApplication.processEvents()  # the modal dialog's own event loop
        answer.more_text = answer.dialogs[-1].more.text()

    answer.during = two_more
    with handler:
        raise_in_a_timer(qtbot, handler, RuntimeError("first"), count=3)
    assert len(answer.dialogs) == 1
    assert (handler.errors, handler.suppressed) == (3, 2)
    assert answer.more_text.startswith("2 more errors happened while this message was open")
    logged = (log_folder / LOG_NAME).read_text()
    assert all(f"ValueError: {t}" in logged for t in ("second", "third"))


def test_the_same_error_again_goes_to_the_status_bar_not_a_new_dialog(win, qtbot,
                                                                      log_folder):
    answer = Answer()

    def fail():
        raise ZeroDivisionError("again and again")  # one source line: the same error

    with CrashHandler(win, show_dialog=answer) as handler:
        for _ in range(5):
            QTimer.singleShot(0, fail)
        qtbot.waitUntil(lambda: handler.errors == 5 and not handler.pending, timeout=3000)
        raise_in_a_timer(qtbot, handler, KeyError("a different one"))
    assert [r.summary for r in answer.reports] == [
        "ZeroDivisionError: again and again", "KeyError: 'a different one'"]
    assert handler.suppressed == 0  # reset when the second dialog opened
    logged = (log_folder / LOG_NAME).read_text()
    assert logged.count("\nZeroDivisionError: again and again\n") == 1  # one traceback
    assert "unhandled exception again (3 times)" in logged
    assert "unhandled exception again (4 times)" not in logged


def test_the_dialog_opens_after_the_failing_code_has_unwound(win, qtbot):
    """The dialog opens on a later turn of the event loop, not from inside the hook
    that PySide calls while the failing paint, slot or input event is still on the
    stack: a modal dialog's nested loop there would run the failing code again before
    the first call unwound."""
    answer = Answer()
    stacks = []
    answer.during = lambda: stacks.append([f.name for f in traceback.extract_stack()])
    with CrashHandler(win, show_dialog=answer) as handler:
        raise_in_a_timer(qtbot, handler, KeyError("in a timer"))
    (stack,) = stacks
    assert "excepthook" not in stack and "fail" not in stack


def test_a_python_thread_error_is_shown_on_the_gui_thread(win, qtbot):
    edit(win)
    answer = Answer()

    def work():
        raise RuntimeError("worker failed")

    with CrashHandler(win, show_dialog=answer):
        thread = threading.Thread(target=work, name="solver-worker")
        thread.start()
        thread.join()
        qtbot.waitUntil(lambda: bool(answer.reports), timeout=3000)
    (report,) = answer.reports
    assert answer.on_gui_thread == [True]
    assert answer.copy_on_disk == [True]
    assert report.summary == "RuntimeError: worker failed"
    assert "Thread: solver-worker" in report.details


def test_a_qthreadpool_worker_error_is_relayed_too(win, qtbot):
    answer = Answer()

    class Job(QRunnable):
        def run(self):
            raise OSError("pool worker failed")

    with CrashHandler(win, show_dialog=answer):
        QThreadPool.globalInstance().start(Job())
        QThreadPool.globalInstance().waitForDone(3000)
        qtbot.waitUntil(lambda: bool(answer.reports), timeout=3000)
    assert answer.on_gui_thread == [True]
    assert answer.reports[0].summary == "OSError: pool worker failed"


def test_quit_keeps_the_recovery_copy_for_the_next_start(win, qtbot, data_folder):
    edit(win)
    state = win.document.topology.state()
    quits = []
    answer = Answer(QUIT)
    with CrashHandler(win, show_dialog=answer, quit_app=lambda: quits.append(1)) as h:
        raise_in_a_timer(qtbot, h, RuntimeError("boom"))
    assert quits == [1]
    saver = win.files.autosaver
    assert not saver.timer.isActive()
    win.files.discard_recovery()  # what quitting the application runs
    win.document.undo_stack.setClean()  # what the stack does as it is destroyed at exit
    win.document.undo_stack.clear()
    assert saver.path.is_file()
    assert load(saver.path).state() == state
    saver._lock.release()  # the process ends: its lock goes with it
    assert [e.design for e in find_recoveries(saver.folder)] == [saver.path]


def test_uninstall_restores_the_hooks_and_ctrl_c_is_not_a_crash(win):
    calls = []

    def previous(*args):
        calls.append(args[0])

    sys_hook, thread_hook = sys.excepthook, threading.excepthook
    try:
        sys.excepthook = previous
        threading.excepthook = previous
        handler = CrashHandler(win, show_dialog=Answer()).install()
        assert sys.excepthook == handler.excepthook
        assert threading.excepthook == handler.thread_excepthook
        handler.install()  # twice: still restores the original
        handler.excepthook(KeyboardInterrupt, KeyboardInterrupt(), None)
        assert calls == [KeyboardInterrupt] and handler.errors == 0
        handler.uninstall()
        assert sys.excepthook is previous and threading.excepthook is previous
        assert not handler.installed
    finally:
        sys.excepthook, threading.excepthook = sys_hook, thread_hook


def test_a_failing_handler_falls_back_to_the_previous_hook(win, log_folder):
    calls = []

    def broken_dialog(_dialog):
        raise RuntimeError("the dialog itself broke")

    sys_hook = sys.excepthook
    try:
        sys.excepthook = lambda *args: calls.append(args[0])
        handler = CrashHandler(win, show_dialog=broken_dialog).install()
        try:
            raise ValueError("original")
        except ValueError:
            sys.excepthook(*sys.exc_info())  # must not raise
        QApplication.processEvents()  # the handling, on the next turn
        handler.uninstall()
    finally:
        sys.excepthook = sys_hook
    assert calls == [ValueError]
    assert "CRITICAL designer.gui.crash: the error handler failed" in (
        log_folder / LOG_NAME).read_text()


# --------------------------------------------------------------------------- the dialog


@pytest.mark.parametrize(("error", "summary"), [
    (KeyError("port"), "KeyError: 'port'"),
    (RuntimeError(), "RuntimeError"),
    (ValueError("first line\nsecond line"), "ValueError: first line"),
    (ValueError("x" * 500), "ValueError: " + "x" * 199 + "…"),
])
def test_the_summary_is_one_short_line(error, summary):
    assert crash._summary(type(error), error) == summary


def report(log_folder, recovery=None) -> CrashReport:
    return CrashReport(summary="KeyError: 'missing-port'",
                       details="Traceback (most recent call last):\n  ...\nKeyError\n",
                       design_note="Your unsaved changes were saved first.",
                       recovery=recovery, log_file=log_folder / LOG_NAME)


def test_the_dialog_says_where_things_are_and_copies_the_details(qtbot, log_folder, tmp_path):
    dialog = CrashDialog(report(log_folder))
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    texts = " ".join(label.text() for label in dialog.findChildren(type(dialog.more)))
    assert "Something went wrong inside Fabric Designer." in texts
    assert "What failed: KeyError: 'missing-port'" in texts
    assert str(log_folder / LOG_NAME) in texts
    assert not dialog.details.isVisible() and not dialog.more.isVisible()
    dialog.grab().save(str(tmp_path / "crash-dialog.png"))  # looked at while writing this
    assert (tmp_path / "crash-dialog.png").stat().st_size > 1000

    dialog.copy_button.click()
    assert QApplication.clipboard().text() == dialog.report.details
    assert dialog.isVisible()  # copying does not close it
    dialog.toggle_button.click()
    assert dialog.details.isVisible() and dialog.details.toPlainText() == dialog.report.details
    dialog.set_more_errors(1)
    assert dialog.more.isVisible()
    assert dialog.more.text().startswith("1 more error happened")
    dialog.reject()  # Escape or the close button: go on, do not quit
    assert dialog.choice == CONTINUE


def test_the_real_modal_dialog_returns_the_button_pressed(qtbot, log_folder):
    for button, expected in (("quit_button", QUIT), ("continue_button", CONTINUE)):
        dialog = CrashDialog(report(log_folder))
        qtbot.addWidget(dialog)
        QTimer.singleShot(0, getattr(dialog, button).click)
        assert crash.show_crash_dialog(dialog) == expected
        assert not dialog.isVisible()
