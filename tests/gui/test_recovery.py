"""Autosave to a recovery file and the offer to restore it after a crash.

The data folder is a temporary one (``FABRIC_DESIGNER_DATA_DIR``); the autosave timer is
driven by calling its slot, and one test lets the real timer fire on a short interval.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from datetime import datetime
from types import SimpleNamespace

import platformdirs
import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from designer.gui import recovery as recovery_module
from designer.gui.document import Document
from designer.gui.main_window import MainWindow
from designer.gui.recovery import (
    DATA_DIR_ENV,
    Autosaver,
    data_dir,
    find_recoveries,
    recovery_dir,
    write_recovery,
)
from designer.io.fabric_json import load
from designer.model.commands import MoveNodes
from designer.model.templates import build_template

Button = QMessageBox.StandardButton


@pytest.fixture(autouse=True)
def _own_data_folder(data_folder):
    """Every test here gets a fresh data folder (tests/gui/conftest.py)."""
    return data_folder


@pytest.fixture
def answers(monkeypatch):
    """Answers for QMessageBox.question, in order; the questions asked are recorded."""
    asked: list[str] = []
    queue: list = []

    def question(_parent, _title, text, *_args, **_kw):
        asked.append(text)
        return queue.pop(0) if queue else Button.Discard

    warnings: list[str] = []
    monkeypatch.setattr(QMessageBox, "question", question)
    monkeypatch.setattr(QMessageBox, "warning", lambda _p, _t, text, *a, **k: warnings.append(text))
    return SimpleNamespace(asked=asked, queue=queue, warnings=warnings)


def make_window(qtbot, topology=None):
    win = MainWindow(Document(topology if topology is not None else build_template("example")))
    qtbot.addWidget(win)
    return win


def move_first_node(document, dx=25.0):
    node = next(iter(document.topology.nodes()))
    document.push(MoveNodes({node.id: (node.x + dx, node.y)}))
    return node


def tick(autosaver):
    """What the timer does, then wait for the worker thread to finish writing."""
    autosaver._on_timer_timeout()
    autosaver.wait()


def test_data_dir_follows_the_environment_variable_else_platformdirs(monkeypatch, tmp_path):
    assert data_dir() == tmp_path / "data"
    assert recovery_dir() == tmp_path / "data" / "recovery"
    monkeypatch.delenv(DATA_DIR_ENV)
    assert str(data_dir()) == platformdirs.user_data_dir("fabric-designer", appauthor=False)


def test_autosave_writes_a_recovery_copy_only_when_modified(qtbot, answers, data_folder):
    win = make_window(qtbot)
    saver = win.files.autosaver
    assert saver.folder == data_folder / "recovery"
    tick(saver)
    assert not saver.path.exists()  # nothing unsaved, nothing written

    move_first_node(win.document)
    tick(saver)
    assert saver.path.is_file()
    assert load(saver.path).state() == win.document.topology.state()
    meta = json.loads(saver.path.with_name(saver.name + ".meta.json").read_text("utf-8"))
    assert meta["original"] is None
    assert meta["title"] == win.document.title
    saved_at = datetime.fromisoformat(meta["saved_at"])
    assert abs((datetime.now().astimezone() - saved_at).total_seconds()) < 60

    # Unchanged since the last copy: no new write.
    assert not saver.autosave_now()
    move_first_node(win.document)
    assert saver.autosave_now(wait=True)
    assert load(saver.path).state() == win.document.topology.state()


def test_the_recovery_copy_goes_away_when_the_design_is_saved(qtbot, answers, tmp_path):
    win = make_window(qtbot)
    saver = win.files.autosaver
    target = tmp_path / "saved.fabric.json"
    assert win.files.save_as(target)
    move_first_node(win.document)
    tick(saver)
    assert saver.path.is_file()
    meta = json.loads(saver.path.with_name(saver.name + ".meta.json").read_text("utf-8"))
    assert meta["original"] == str(target)
    assert win.files.save()
    assert not saver.path.exists()
    assert list(saver.folder.iterdir()) == []  # sidecar and lock gone too

    move_first_node(win.document)
    tick(saver)
    assert saver.path.is_file()
    win.document.undo_stack.undo()  # back to the saved state: nothing to recover
    assert not saver.path.exists()


def test_clean_quit_removes_the_copy(qtbot, answers):
    win = make_window(qtbot)
    move_first_node(win.document)
    tick(win.files.autosaver)
    assert win.files.autosaver.path.is_file()
    win.files.discard_recovery()  # what QApplication.aboutToQuit triggers
    assert not win.files.autosaver.path.exists()
    assert not win.files.autosaver.timer.isActive()


def test_the_timer_autosaves_on_its_own(qtbot, answers):
    win = make_window(qtbot)
    saver = win.files.autosaver
    assert saver.timer.isActive()
    assert saver.interval_s == 60
    saver.interval_s = 0.05
    move_first_node(win.document)
    qtbot.waitUntil(saver.path.is_file, timeout=3000)
    saver.wait()


def test_autosave_interval_comes_from_the_settings(qtbot, data_folder):
    data_folder.mkdir()
    settings = QSettings(str(data_folder / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue("autosave/interval_s", 15)
    settings.sync()
    win = make_window(qtbot)
    assert win.files.autosaver.interval_s == 15
    assert win.files.autosaver.timer.interval() == 15_000


def test_a_live_sessions_copy_is_not_offered(qtbot, answers, data_folder):
    win = make_window(qtbot)
    move_first_node(win.document)
    tick(win.files.autosaver)
    assert win.files.autosaver.path.is_file()
    assert find_recoveries() == []  # locked by this running session
    other = make_window(qtbot)
    assert not other.files.offer_recovery()
    assert answers.asked == []


def crash_copy(data_folder, original=None, dx=100.0):
    """A recovery copy as a crashed session leaves it: files on disk, no live lock."""
    topo = build_template("example")
    node = next(iter(topo.nodes()))
    topo.update_node(node.id, name="edited before the crash")
    write_recovery(topo, data_folder / "recovery", "crashed-1234", original, "crashed design")
    return topo


def test_offer_recovery_restores_the_crashed_design(qtbot, answers, data_folder, tmp_path):
    original = tmp_path / "work.fabric.json"
    lost = crash_copy(data_folder, original)
    win = make_window(qtbot, build_template("hgx"))
    answers.queue.append(Button.Yes)
    assert win.files.offer_recovery()
    assert len(answers.asked) == 1
    assert answers.asked[0].startswith("Restore the unsaved design from ")
    assert "crashed design" in answers.asked[0]
    assert win.document.topology.state() == lost.state()
    assert win.document.path == original
    assert win.document.is_modified and win.isWindowModified()
    assert set(win.scene.nodes) == {n.id for n in lost.nodes()}
    # The copy stays until the design is saved (a second crash loses nothing) ...
    copy = data_folder / "recovery" / "crashed-1234.fabric.json"
    assert copy.is_file()
    assert find_recoveries() == []  # ... and now belongs to this session
    assert win.files.save()
    assert load(original).state() == lost.state()
    assert not copy.exists()


def test_a_big_recovery_copy_is_restored_through_the_progress_dialog(
        qtbot, answers, data_folder, tmp_path, monkeypatch):
    """A big copy (threshold lowered) is read and drawn with the open dialog; the
    restored design is the same as through the small path."""
    import designer.gui.files as files_mod
    import designer.gui.open_progress as op

    monkeypatch.setattr(files_mod, "OPEN_PROGRESS_BYTES", 0)
    stages = []
    real = op.OpenProgress._show
    monkeypatch.setattr(op.OpenProgress, "_show", lambda self, stage, *a, **k: (
        stages.append(stage), real(self, stage, *a, **k))[1])
    original = tmp_path / "work.fabric.json"
    lost = crash_copy(data_folder, original)
    win = make_window(qtbot, build_template("hgx"))
    answers.queue.append(Button.Yes)
    assert win.files.offer_recovery()
    assert {"reading", "drawing"} <= set(stages)
    assert win.document.topology.state() == lost.state()
    assert win.document.path == original and win.document.is_modified
    assert set(win.scene.nodes) == {n.id for n in lost.nodes()}


def test_cancelling_a_big_restore_keeps_the_copy(qtbot, answers, data_folder, tmp_path,
                                                monkeypatch):
    import designer.gui.files as files_mod
    import designer.gui.open_progress as op

    monkeypatch.setattr(files_mod, "OPEN_PROGRESS_BYTES", 0)
    monkeypatch.setattr(op.OpenProgress, "load", lambda self, path: None)  # Cancel pressed
    crash_copy(data_folder, tmp_path / "work.fabric.json")
    win = make_window(qtbot, build_template("hgx"))
    before = win.document.topology
    messages = []
    win.files.message.connect(messages.append)
    answers.queue.append(Button.Yes)
    assert not win.files.offer_recovery()
    assert win.document.topology is before
    assert (data_folder / "recovery" / "crashed-1234.fabric.json").is_file()
    assert "cancelled" in messages[-1] and "kept" in messages[-1]


def test_declining_recovery_deletes_the_copy(qtbot, answers, data_folder):
    crash_copy(data_folder)
    win = make_window(qtbot)
    state = win.document.topology.state()
    answers.queue.append(Button.No)
    assert not win.files.offer_recovery()
    assert win.document.topology.state() == state
    assert list((data_folder / "recovery").iterdir()) == []


def test_newest_copy_is_offered_first(qtbot, answers, data_folder):
    folder = data_folder / "recovery"
    for name, stamp in (("old", "2024-01-02T03:04:00+00:00"), ("new", "2025-06-07T08:09:00+00:00")):
        write_recovery(build_template("hgx"), folder, name, None, name)
        meta = folder / f"{name}.meta.json"
        data = json.loads(meta.read_text("utf-8"))
        data["saved_at"] = stamp
        meta.write_text(json.dumps(data), "utf-8")
    assert [e.name for e in find_recoveries()] == ["new", "old"]
    win = make_window(qtbot)
    answers.queue.extend([Button.No, Button.No])
    assert not win.files.offer_recovery()
    assert "2025-06-07 08:09" in answers.asked[0] and "2024-01-02 03:04" in answers.asked[1]


def test_an_unreadable_copy_is_reported_and_set_aside(qtbot, answers, data_folder):
    folder = data_folder / "recovery"
    folder.mkdir(parents=True)
    (folder / "junk.fabric.json").write_text("{not json", encoding="utf-8")
    win = make_window(qtbot)
    state = win.document.topology.state()
    answers.queue.append(Button.Yes)
    assert not win.files.offer_recovery()
    assert win.document.topology.state() == state
    assert (folder / "junk.fabric.json.bad").is_file()
    assert find_recoveries() == []
    assert "junk.fabric.json" in win.statusBar().currentMessage()


def test_autosaver_alone_on_a_document(qtbot, tmp_path):
    doc = Document(build_template("hgx"))
    saver = Autosaver(doc, interval_s=5, folder=tmp_path / "rec")
    assert saver.interval_s == 5
    move_first_node(doc)
    tick(saver)
    assert load(saver.path).state() == doc.topology.state()
    doc.replace(build_template("hgx", gpus=4))  # another design: the old copy is moot
    assert not saver.path.exists()


def test_a_failed_autosave_is_reported_and_retried(qtbot, tmp_path):
    doc = Document(build_template("hgx"))
    saver = Autosaver(doc, folder=tmp_path / "rec")
    saver.path.mkdir(parents=True)  # a folder sits where the copy should go
    move_first_node(doc)
    with qtbot.waitSignal(saver.failed, timeout=3000) as blocker:
        assert saver.autosave_now()
    saver.wait()
    assert blocker.args[0].startswith("Autosave failed: ")
    assert saver.name in blocker.args[0]
    saver.path.rmdir()
    assert saver.autosave_now(wait=True)  # nothing changed since, but nothing was written
    assert load(saver.path).state() == doc.topology.state()


def _mount_tmpfs(folder, options: str) -> bool:
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.parametrize(("options", "reason"), [
    ("size=64k,ro", "read-only file system"),
    ("size=4k", "disk full"),
])
def test_autosave_on_a_read_only_or_full_disk_says_so(qtbot, tmp_path, options, reason):
    """Not "locked by another session": the lock file could not be created at all."""
    folder = tmp_path / "rec"
    if shutil.which("mount") is None or not _mount_tmpfs(folder, options):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        if "ro" not in options.split(","):  # fill the small disk first
            with contextlib.suppress(OSError), open(folder / "filler", "wb") as f:
                f.write(b"x" * 65536)
        doc = Document(build_template("hgx"))
        saver = Autosaver(doc, folder=folder)
        move_first_node(doc)
        with qtbot.waitSignal(saver.failed, timeout=3000) as blocker:
            assert not saver.autosave_now()
        message = blocker.args[0]
        assert reason in message and "another session" not in message, message
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def test_a_lock_held_by_another_session_is_named_as_such(tmp_path):
    design = tmp_path / "copy.fabric.json"
    held = recovery_module._lock_for(design)  # as a live session holds it
    assert held.acquire()
    try:
        ours = recovery_module._lock_for(design)
        assert not ours.acquire()
        assert recovery_module._lock_failure(design) == (
            f"{design} is locked by another session")
    finally:
        held.release()
