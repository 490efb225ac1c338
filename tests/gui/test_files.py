"""File handling through the GUI: round trip, dirty title, history across saves, bad files,
the unsaved-changes prompt, New from Template, recent files and the export hook.

No dialog ever blocks: `QMessageBox.question/warning`, the file dialogs and
`TemplateDialog.exec` are patched; user data goes to a temporary folder through
``FABRIC_DESIGNER_DATA_DIR``.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QMessageBox

from designer.gui.document import Document
from designer.gui.files import MAX_RECENT, RecentFiles
from designer.gui.main_window import MainWindow
from designer.gui.recovery import DATA_DIR_ENV
from designer.gui.template_dialog import TemplateDialog
from designer.io.fabric_json import load
from designer.model.commands import MoveNodes
from designer.model.templates import build_template

Button = QMessageBox.StandardButton


class Boxes:
    """Stand-in for the message boxes: records what was asked, answers ``answer``."""

    def __init__(self):
        self.answer = Button.Discard
        self.questions: list[str] = []
        self.warnings: list[str] = []

    def question(self, _parent, _title, text, *_args, **_kw):
        self.questions.append(text)
        return self.answer

    def warning(self, _parent, _title, text, *_args, **_kw):
        self.warnings.append(text)
        return Button.Ok


@pytest.fixture(autouse=True)
def boxes(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    stub = Boxes()
    monkeypatch.setattr(QMessageBox, "question", stub.question)
    monkeypatch.setattr(QMessageBox, "warning", stub.warning)

    def no_dialog(*_args, **_kw):
        raise AssertionError("a file dialog was opened without being patched")

    monkeypatch.setattr(QFileDialog, "getOpenFileName", no_dialog)
    monkeypatch.setattr(QFileDialog, "getSaveFileName", no_dialog)
    return stub


@pytest.fixture
def window(qtbot):
    win = MainWindow(Document(build_template("example")))
    qtbot.addWidget(win)
    return win


def first_node(win):
    return next(iter(win.document.topology.nodes()))


def move_first_node(win, dx=40.0):
    node = first_node(win)
    win.document.push(MoveNodes({node.id: (node.x + dx, node.y)}))
    return node


def test_save_and_reopen_through_the_gui_round_trips_the_design(window, monkeypatch, tmp_path):
    move_first_node(window)
    expected = window.document.topology.state()
    target = tmp_path / "cluster"  # no suffix: Save As adds .fabric.json
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), ""))
    assert window.files.save()  # no file name yet: Save asks for one
    saved = tmp_path / "cluster.fabric.json"
    assert window.document.path == saved and saved.is_file()
    assert load(saved).state() == expected

    window.files.new_design()
    assert len(window.document.topology) == 0
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(saved), ""))
    assert window.files.open_file()
    assert window.document.topology.state() == expected
    assert window.document.path == saved
    assert len(window.scene.nodes) == len(window.document.topology)
    assert "cluster.fabric.json" in window.windowTitle()


def test_title_marks_unsaved_changes_until_saved(window, tmp_path):
    assert "[*]" in window.windowTitle()
    assert not window.isWindowModified()
    move_first_node(window)
    assert window.isWindowModified()
    assert window.files.save_as(tmp_path / "t.fabric.json")
    assert not window.isWindowModified()
    assert window.windowTitle().startswith("t.fabric.json")


def test_history_survives_saving(window, tmp_path):
    before = first_node(window)
    move_first_node(window, dx=80)
    assert window.files.save_as(tmp_path / "h.fabric.json")
    assert not window.document.is_modified
    window.document.undo_stack.undo()  # undo across the save
    assert window.document.topology.node(before.id).x == before.x
    assert window.document.is_modified and window.isWindowModified()
    window.document.undo_stack.redo()  # back to exactly what is on disk
    assert not window.document.is_modified


def test_bad_file_gives_one_message_and_leaves_the_design_untouched(window, qtbot, boxes, tmp_path):
    window.show()
    qtbot.waitExposed(window)
    move_first_node(window)
    state, path = window.document.topology.state(), window.document.path
    bad = tmp_path / "broken.fabric.json"
    bad.write_text('{"format": "fabric-designer", "version": 1, "nodes": [', encoding="utf-8")
    boxes.answer = Button.Discard  # the unsaved-changes prompt comes first
    assert not window.files.open_file(bad)
    assert len(boxes.warnings) == 1
    assert "broken.fabric.json" in boxes.warnings[0]
    assert "\n" not in boxes.warnings[0]
    assert window.statusBar().currentMessage() == boxes.warnings[0]
    assert window.document.topology.state() == state
    assert window.document.path == path
    assert window.document.is_modified  # the edit is still there, still unsaved
    assert bad not in window.files.recent.paths()


def test_maybe_save_save_discard_and_cancel(window, boxes, tmp_path):
    assert window.files.maybe_save()  # nothing to ask about
    assert boxes.questions == []
    target = tmp_path / "m.fabric.json"
    assert window.files.save_as(target)
    node = move_first_node(window)
    moved_x = window.document.topology.node(node.id).x

    boxes.answer = Button.Cancel
    assert not window.files.maybe_save()
    assert window.document.is_modified
    assert load(target).node(node.id).x == node.x

    boxes.answer = Button.Discard
    assert window.files.maybe_save()
    assert load(target).node(node.id).x == node.x  # nothing written

    boxes.answer = Button.Save
    assert window.files.maybe_save()
    assert load(target).node(node.id).x == moved_x
    assert not window.document.is_modified
    assert len(boxes.questions) == 3
    assert "m.fabric.json" in boxes.questions[0]


def test_closing_with_unsaved_changes_asks_and_cancel_keeps_the_window(window, qtbot, boxes):
    window.show()
    qtbot.waitExposed(window)
    move_first_node(window)
    boxes.answer = Button.Cancel
    assert not window.close()
    assert window.isVisible()
    boxes.answer = Button.Discard
    assert window.close()
    assert len(boxes.questions) == 2


def _create_superpod(monkeypatch, sus: int) -> None:
    """The template dialog, when shown, fills in a SuperPOD of ``sus`` SUs and creates it."""
    def fill_and_create(dialog):
        dialog.set_template("superpod")
        dialog.set_param("sus", sus)
        dialog.accept()
        return dialog.result()

    monkeypatch.setattr(TemplateDialog, "exec", fill_and_create)


def test_new_from_template_builds_a_superpod_on_the_canvas(window, monkeypatch):
    _create_superpod(monkeypatch, 1)
    assert window.files.new_from_template()
    topo = window.document.topology
    expected = build_template("superpod", sus=1)
    assert topo.state() == expected.state()
    gpus = sum(1 for _ in topo.nodes("gpu"))
    assert gpus == sum(1 for _ in expected.nodes("gpu")) > 200
    assert set(window.scene.nodes) == {n.id for n in topo.nodes()}
    assert len(window.scene.links) > 0
    assert window.document.path is None
    assert not window.document.undo_stack.canUndo()


def test_a_big_template_is_drawn_with_the_progress_dialog(window, big_file, monkeypatch):
    """New from Template with many links: the dialog shows the drawing to the end (no
    Cancel then), and is gone after."""
    import designer.gui.files as files_mod

    monkeypatch.setattr(files_mod, "OPEN_PROGRESS_LINKS", 1000)
    _create_superpod(monkeypatch, 2)
    assert window.files.new_from_template()
    assert {s for s, _ in big_file.shown} == {"drawing"}
    assert big_file.shown[-1] == ("drawing", 1000)
    assert _open_dialogs(window) == []
    assert len(window.scene.links) == sum(1 for _ in window.document.topology.links())


def test_new_from_template_asks_about_unsaved_changes_first(window, monkeypatch, boxes):
    def must_not_run(_dialog):
        raise AssertionError("the template dialog opened after Cancel")

    monkeypatch.setattr(TemplateDialog, "exec", must_not_run)
    move_first_node(window)
    state = window.document.topology.state()
    boxes.answer = Button.Cancel
    assert not window.files.new_from_template()
    assert window.document.topology.state() == state


def test_new_from_template_cancelled_keeps_the_design(window, monkeypatch):
    monkeypatch.setattr(TemplateDialog, "exec", lambda d: TemplateDialog.DialogCode.Rejected)
    state = window.document.topology.state()
    assert not window.files.new_from_template()
    assert window.document.topology.state() == state


# ------------------------------------------------------------ recent files


def make_files(folder: Path, names):
    paths = []
    for name in names:
        path = folder / f"{name}.fabric.json"
        path.write_text("{}", encoding="utf-8")
        paths.append(path)
    return paths


def test_recent_files_newest_first_deduplicated_and_capped(tmp_path):
    recent = RecentFiles(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    a, b, c = make_files(tmp_path, "abc")
    for p in (a, b, c, a):
        recent.add(p)
    assert recent.paths() == [a, c, b]
    many = make_files(tmp_path, [f"f{i}" for i in range(MAX_RECENT + 3)])
    for p in many:
        recent.add(p)
    assert recent.paths() == many[::-1][:MAX_RECENT]
    # A fresh settings object reads the same list back from the INI file.
    again = RecentFiles(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    assert again.paths() == recent.paths()


def test_recent_files_drop_missing_files_and_clear(tmp_path):
    recent = RecentFiles(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    a, b = make_files(tmp_path, "ab")
    recent.add(a)
    recent.add(b)
    b.unlink()
    assert recent.prune() == [a]
    assert recent.paths() == [a]
    recent.clear()
    assert recent.paths() == []


def test_recent_menu_lists_opened_and_saved_files_and_reopens_them(window, tmp_path):
    first, second = tmp_path / "first.fabric.json", tmp_path / "second.fabric.json"
    assert window.files.save_as(first)
    move_first_node(window)
    assert window.files.save_as(second)
    assert window.files.open_file(first)
    assert window.files.recent.paths() == [first, second]

    menu = window.files.recent_menu()
    assert menu is window.files.recent_menu()  # one menu, rebuilt on show
    assert menu in [a.menu() for a in window.file_menu.actions() if a.menu()]
    second.unlink()
    menu.aboutToShow.emit()
    entries = [a for a in menu.actions() if a.data()]
    assert [Path(a.data()) for a in entries] == [first]
    assert window.files.recent.paths() == [first]  # the missing file is forgotten
    assert entries[0].text().startswith("&1") and "first.fabric.json" in entries[0].text()

    window.files.new_design()
    entries[0].trigger()
    assert window.document.path == first

    clear = next(a for a in menu.actions() if "Clear" in a.text())
    clear.trigger()
    assert window.files.recent.paths() == []
    menu.aboutToShow.emit()
    texts = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert texts == ["No recent files", "&Clear Recent"]
    assert not any(a.isEnabled() for a in menu.actions() if not a.isSeparator())


def test_recent_files_use_the_isolated_settings(window, tmp_path):
    assert window.files.save_as(tmp_path / "iso.fabric.json")
    ini = tmp_path / "data" / "settings.ini"
    assert window.files.settings.fileName() == str(ini)
    assert "iso.fabric.json" in ini.read_text(encoding="utf-8")


# ------------------------------------------------------------ export hook


def test_export_calls_the_export_dialog(window, monkeypatch, tmp_path):
    calls = []

    def export_dialog(win, scene, document):
        calls.append((win, scene, document))
        return tmp_path / "out.svg"

    fake = types.ModuleType("designer.gui.export_dialog")
    fake.export_dialog = export_dialog
    monkeypatch.setitem(sys.modules, "designer.gui.export_dialog", fake)
    window.files.export()
    assert calls == [(window, window.scene, window.document)]
    assert "out.svg" in window.statusBar().currentMessage()


def test_export_without_the_export_module_says_so(window, monkeypatch):
    monkeypatch.setitem(sys.modules, "designer.gui.export_dialog", None)  # import fails
    window.files.export()
    assert "Export is not available" in window.statusBar().currentMessage()


def test_file_export_writes_an_svg_through_the_real_export_module(window, monkeypatch, tmp_path):
    pytest.importorskip("designer.gui.export")
    target = tmp_path / "diagram.svg"
    monkeypatch.setattr(
        "designer.gui.export_dialog.ask_export_target",
        lambda *a, **k: (str(target), "SVG image (*.svg)"),
    )
    # The diagram options (legend, title block) answered with their defaults.
    monkeypatch.setattr("designer.gui.export_sheet.run_dialog", lambda dialog: 1)
    window.actions_by_name["export"].trigger()
    assert target.is_file()
    assert target.read_bytes().lstrip().startswith((b"<?xml", b"<svg"))
    assert "diagram.svg" in window.statusBar().currentMessage()


@pytest.fixture
def big_file(monkeypatch, tmp_path):
    """A design that counts as big (thresholds lowered: a 2-SU SuperPOD), and the
    stages the open dialog showed, with its bar's value."""
    import designer.gui.files as files_mod
    import designer.gui.open_progress as op
    import designer.io.fabric_json as fj
    from designer.gui.canvas import scene as scene_mod
    from designer.io.fabric_json import save

    monkeypatch.setattr(files_mod, "OPEN_PROGRESS_BYTES", 0)
    monkeypatch.setattr(fj, "PROGRESS_EVERY", 256)
    monkeypatch.setattr(scene_mod, "BUILD_PROGRESS_EVERY", 256)
    monkeypatch.setattr(op, "MIN_INTERVAL_S", 0.0)
    path = tmp_path / "big.fabric.json"
    save(build_template("superpod", sus=2), path)
    shown: list[tuple[str, int]] = []
    real = op.OpenProgress._show

    def spy(self, stage, done, total, force=False):
        changed = real(self, stage, done, total, force)
        shown.append((stage, self._bar.value()))
        return changed

    monkeypatch.setattr(op.OpenProgress, "_show", spy)
    return types.SimpleNamespace(path=path, shown=shown, op=op)


def _open_dialogs(window):
    from designer.gui.open_progress import OpenProgress

    return [d for d in window.findChildren(OpenProgress) if d.isVisible()]


def test_a_big_file_opens_through_a_progress_dialog_that_goes_away(window, big_file):
    """Reading, checking, building the model, drawing: the bar rises to the end, and
    the dialog is gone once the design is open."""
    assert window.files.open_file(big_file.path)
    stages = list(dict.fromkeys(s for s, _ in big_file.shown))
    assert stages == ["reading", "checking", "building", "drawing"]
    values = [v for s, v in big_file.shown if s in ("building", "drawing")]  # (else busy)
    assert values == sorted(values) and values[-1] == 1000
    assert _open_dialogs(window) == []
    assert window.document.path == big_file.path
    assert len(window.scene.links) == sum(1 for _ in window.document.topology.links())


def test_the_event_loop_runs_while_a_big_file_loads(window, big_file, monkeypatch, qtbot):
    """The file is read on a worker thread: timers fire before the open returns."""
    from PySide6.QtCore import QTimer

    real = big_file.op.OpenProgress._on_progress

    def slow(self, *args):    # (on the worker thread) a slow disk, say
        import time

        time.sleep(0.01)
        return real(self, *args)

    monkeypatch.setattr(big_file.op.OpenProgress, "_on_progress", slow)
    ticks = []
    timer = QTimer()
    timer.setInterval(1)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    try:
        assert window.files.open_file(big_file.path)
        during = len(ticks)
    finally:
        timer.stop()
    assert during > 0


def test_cancelling_a_big_open_leaves_the_design_as_it_was(window, big_file, monkeypatch):
    before, path_before = window.document.topology, window.document.path
    messages = []
    window.files.message.connect(messages.append)
    real = big_file.op.OpenProgress._on_progress

    def press_cancel(self, stage, done, total):
        if stage == "building":
            self._stop.set()   # what Cancel sets (its label is for the GUI thread)
        return real(self, stage, done, total)

    monkeypatch.setattr(big_file.op.OpenProgress, "_on_progress", press_cancel)
    assert not window.files.open_file(big_file.path)
    assert window.document.topology is before and window.document.path == path_before
    assert "cancelled" in messages[-1] and "as it was" in messages[-1]
    assert _open_dialogs(window) == []


def test_a_bad_big_file_says_why_and_changes_nothing(window, big_file, boxes):
    before = window.document.topology
    messages = []
    window.files.message.connect(messages.append)
    text = big_file.path.read_text(encoding="utf-8")
    big_file.path.write_text(text.replace('"tech": "ib-ndr"', '"tech": "ib-zzz"', 1),
                             encoding="utf-8")
    assert not window.files.open_file(big_file.path)
    assert window.document.topology is before
    assert "ib-zzz" in messages[-1] and "big.fabric.json" in messages[-1]
    assert _open_dialogs(window) == []


def test_a_small_file_opens_without_the_dialog(window, monkeypatch, tmp_path):
    import designer.gui.open_progress as op
    from designer.io.fabric_json import save

    made = []
    monkeypatch.setattr(op.OpenProgress, "load", lambda self, path: made.append(path))
    path = tmp_path / "small.fabric.json"
    save(build_template("hgx"), path)
    assert window.files.open_file(path)
    assert made == []
