"""GUI test fixtures: an isolated settings/data home, the main window, synthetic input.

Every window is built by `designer.gui.app.create_window` exactly as ``fabric-designer``
builds it, shown on the offscreen platform and fitted.  Input is synthetic: mouse and
drag/drop events are sent straight to ``view.viewport()`` (never a real
``QDrag.exec()``, which would block in a nested event loop).
"""

from __future__ import annotations

import gc

import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QInputDialog, QMessageBox

from designer.gui import other_writers
from designer.gui.app import application, create_window
from designer.gui.window_geometry import PREFERRED

LEFT = Qt.MouseButton.LeftButton
NO_BUTTON = Qt.MouseButton.NoButton
NO_MOD = Qt.KeyboardModifier.NoModifier


@pytest.fixture(scope="session", autouse=True)
def _isolated_user_dirs(tmp_path_factory):
    """Keep settings, recent files and autosaves out of the real home directory.

    Set before the QApplication exists: Qt and platformdirs read these on first use.
    """
    home = tmp_path_factory.mktemp("gui-home")
    mp = pytest.MonkeyPatch()
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        mp.setenv(var, str(home / var.lower()))
    mp.setenv("FABRIC_DESIGNER_DATA_DIR", str(home / "fabric-designer-data"))  # autosaves
    yield home
    mp.undo()


@pytest.fixture(autouse=True)
def _unfrozen_heap():
    """Opening a design freezes the heap (`designer.gui.document.settle_heap`); a test's
    windows must not stay frozen into the next tests (never collected, they would be
    torn down after the QApplication at exit)."""
    yield
    gc.unfreeze()


@pytest.fixture(autouse=True)
def dialogs(monkeypatch) -> list[tuple[str, str]]:
    """Modal dialogs a test opened without patching them, as ``(kind, text)``.

    A real modal box would wait forever for a click (and a timeout cannot interrupt
    Qt's nested event loop), so each one is recorded and answered as a user who
    cancels would: message boxes get Cancel (questions) or OK, input and file dialogs
    are cancelled.  A test module may patch these itself; its patch wins.
    """
    seen: list[tuple[str, str]] = []
    button = QMessageBox.StandardButton

    def box(kind, answer):
        def show(_parent, _title, text, *_args, **_kwargs):
            seen.append((kind, text))
            return answer

        return show

    def cancelled(kind, result):
        def show(_parent, title="", *_args, **_kwargs):
            seen.append((kind, title))
            return result

        return show

    monkeypatch.setattr(QMessageBox, "question", box("question", button.Cancel))
    for kind in ("warning", "critical", "information"):
        monkeypatch.setattr(QMessageBox, kind, box(kind, button.Ok))
    monkeypatch.setattr(QInputDialog, "getText", cancelled("getText", ("", False)))
    for kind in ("getOpenFileName", "getSaveFileName"):
        monkeypatch.setattr(QFileDialog, kind, cancelled(kind, ("", "")))
    # File > Export's own save dialog (designer.gui.export_dialog.ask_export_target).
    monkeypatch.setattr("designer.gui.export_dialog.ask_export_target",
                        cancelled("getSaveFileName", ("", "")))

    def choice(box):  # the other-writer questions (designer.gui.other_writers)
        seen.append(("choice", box.text()))
        return other_writers.CANCEL

    monkeypatch.setattr(other_writers, "show_choice", choice)
    # File > Export's diagram options (designer.gui.export_sheet): cancelled.
    monkeypatch.setattr("designer.gui.export_sheet.run_dialog",
                        lambda dialog: seen.append(("diagram options", "")) or 0)
    return seen


def _before_close(win) -> None:
    """pytest-qt closes registered widgets before fixtures tear down.

    Mark the design saved, or closeEvent would ask about unsaved changes.  Also drop
    the selection and the history: a window deleted later by the garbage collector must
    not run inspector or scene code in the middle of an unrelated test (clearing a
    stack whose window is gone still does: see the xfail test
    ``test_window.py::test_the_document_outliving_its_window_raises_nothing``).
    """
    win.document.undo_stack.setClean()
    win.scene.clearSelection()
    win.document.undo_stack.clear()


def open_window(qtbot, file=None):
    """A shown, fitted main window on ``file`` (the example when None) and its error."""
    application()
    win, error = create_window(file)
    qtbot.addWidget(win, before_close_func=_before_close)
    # One known size, as on a desktop with room for it: the offscreen screen (800 x 600)
    # would shrink the first size (`window_geometry`), and positions the tests drop,
    # drag and click at follow the canvas's size.
    win.resize(PREFERRED)
    win.show()
    qtbot.waitExposed(win)
    win.view.fit()
    return win, error


def close_window(win) -> None:
    """Close without the unsaved-changes prompt (a modal box would hang the test)."""
    _before_close(win)
    win.close()


@pytest.fixture
def window(qtbot):
    """The main window with the built-in example design, as the app opens it."""
    win, error = open_window(qtbot)
    assert error is None
    yield win
    close_window(win)


class Mouse:
    """Synthetic mouse, wheel and drag/drop input on a `FabricView`'s viewport.

    Positions are scene coordinates (mapped to the viewport here) unless a QPoint is
    given, which is taken as viewport coordinates.
    """

    def __init__(self, view):
        self.view = view

    def at(self, pos) -> QPoint:
        if isinstance(pos, QPoint):
            return pos
        if isinstance(pos, tuple):
            pos = QPointF(*pos)
        return self.view.mapFromScene(pos)

    def _send(self, kind, pos, button, buttons, modifiers) -> QMouseEvent:
        vp = self.view.viewport()
        local = QPointF(self.at(pos))
        event = QMouseEvent(kind, local, QPointF(vp.mapToGlobal(local)), button, buttons, modifiers)
        QApplication.sendEvent(vp, event)
        return event

    def press(self, pos, modifiers=NO_MOD, button=LEFT):
        return self._send(QEvent.Type.MouseButtonPress, pos, button, button, modifiers)

    def move(self, pos, modifiers=NO_MOD, buttons=LEFT):
        return self._send(QEvent.Type.MouseMove, pos, NO_BUTTON, buttons, modifiers)

    def release(self, pos, modifiers=NO_MOD, button=LEFT):
        return self._send(QEvent.Type.MouseButtonRelease, pos, button, NO_BUTTON, modifiers)

    def click(self, pos, modifiers=NO_MOD):
        self.press(pos, modifiers)
        self.release(pos, modifiers)

    def drag(self, start, end, modifiers=NO_MOD, steps: int = 5, button=LEFT):
        """Press at ``start``, move in ``steps`` with the button held, release at ``end``."""
        a, b = QPointF(self.at(start)), QPointF(self.at(end))
        self.press(a.toPoint(), modifiers, button)
        for i in range(1, steps + 1):
            p = a + (b - a) * (i / steps)
            self.move(p.toPoint(), modifiers, button)
        self.release(b.toPoint(), modifiers, button)

    def wheel(self, pos, steps: int = 1, modifiers=NO_MOD) -> QWheelEvent:
        vp = self.view.viewport()
        local = QPointF(self.at(pos))
        event = QWheelEvent(
            local,
            QPointF(vp.mapToGlobal(local)),
            QPoint(0, 0),
            QPoint(0, 120 * steps),
            NO_BUTTON,
            modifiers,
            Qt.ScrollPhase.NoScrollPhase,
            False,
        )
        QApplication.sendEvent(vp, event)
        return event

    def drop(self, mime, pos, modifiers=NO_MOD) -> dict[str, bool]:
        """Drag ``mime`` in, over and onto ``pos``; returns which events were accepted."""
        vp = self.view.viewport()
        at = self.at(pos)
        action = Qt.DropAction.CopyAction
        accepted = {}
        for name, cls, where in (
            ("enter", QDragEnterEvent, at),
            ("move", QDragMoveEvent, at),
            ("drop", QDropEvent, QPointF(at)),
        ):
            event = cls(where, action, mime, LEFT, modifiers)
            QApplication.sendEvent(vp, event)
            accepted[name] = event.isAccepted()
        return accepted


@pytest.fixture
def mouse(window) -> Mouse:
    return Mouse(window.view)


@pytest.fixture
def data_folder(monkeypatch, tmp_path):
    """A fresh data folder for this test (recovery copies, settings file)."""
    from designer.gui.recovery import DATA_DIR_ENV

    folder = tmp_path / "data"
    monkeypatch.setenv(DATA_DIR_ENV, str(folder))
    return folder


@pytest.fixture
def create_from_template(monkeypatch):
    """``create_from_template(name, **params)``: the next File > New from Template
    dialog picks ``name`` with ``params`` and presses Create."""
    from designer.gui.template_dialog import TemplateDialog

    def choose(name: str, **params) -> None:
        def fill_and_create(dialog):
            dialog.set_template(name)
            for key, value in params.items():
                dialog.set_param(key, value)
            dialog.accept()
            return dialog.result()

        monkeypatch.setattr(TemplateDialog, "exec", fill_and_create)

    return choose

