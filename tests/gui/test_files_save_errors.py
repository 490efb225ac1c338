"""Saving through the window when the disk says no: one clear message box, the design stays
unsaved and intact, the file on disk as it was, no temporary file; a failing autosave says
so in the status bar once; a file from a newer version is refused with a clear message.

Message boxes are recorded by the ``dialogs`` fixture (tests/gui/conftest.py).
"""

from __future__ import annotations

import errno
import json
import os
import sys

import pytest
from PySide6.QtWidgets import QApplication

from designer.gui.recovery import DATA_DIR_ENV
from designer.io.fabric_json import load
from designer.io.fabric_read import VERSION
from designer.io.file_lock import design_lock_path
from designer.model.commands import MoveNodes


def disk_full(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture(autouse=True)
def data_folder(monkeypatch, tmp_path):
    folder = tmp_path / "data"  # this test's own recovery folder, set before the window
    monkeypatch.setenv(DATA_DIR_ENV, str(folder))
    return folder


def move_first_node(window, dx=30.0):
    node = next(iter(window.document.topology.nodes()))
    window.document.push(MoveNodes({node.id: (node.x + dx, node.y)}))


def messages_of(window) -> list[str]:
    seen: list[str] = []
    window.files.message.connect(seen.append)
    return seen


@pytest.fixture
def saved(window, tmp_path):
    """The window's design saved once, then edited: a file on disk and unsaved changes."""
    path = tmp_path / "designs" / "cluster.fabric.json"
    path.parent.mkdir()
    assert window.files.save_as(path)
    move_first_node(window)
    return path, path.read_bytes()


def assert_nothing_lost(window, path, old_bytes, state):
    assert window.document.is_modified and window.isWindowModified()
    assert window.document.topology.state() == state  # the edit is still there
    assert path.read_bytes() == old_bytes
    # No temp, no .bak; the lock file is the window's, which has the design open.
    left = sorted(p.name for p in path.parent.iterdir() if p != design_lock_path(path))
    assert left == [path.name]


def test_save_on_a_full_disk_shows_one_message_and_keeps_the_design_unsaved(
        window, dialogs, saved, monkeypatch):
    path, old_bytes = saved
    state = window.document.topology.state()
    monkeypatch.setattr(os, "fsync", disk_full)
    assert not window.files.save()
    monkeypatch.undo()
    expected = (f"cannot save {path}: disk full (No space left on device); "
                "the previous version is untouched")
    assert dialogs == [("warning", expected)]
    assert window.statusBar().currentMessage() == expected
    assert_nothing_lost(window, path, old_bytes, state)
    assert window.files.save()  # room again: the same design saves
    assert load(path).state() == state and not window.document.is_modified


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_save_over_a_read_only_file(window, dialogs, saved):
    path, old_bytes = saved
    state = window.document.topology.state()
    path.chmod(0o444)
    try:
        assert not window.files.save()
    finally:
        path.chmod(0o644)
    assert dialogs == [("warning", f"cannot save {path}: the file is read-only (Permission "
                                   "denied); the previous version is untouched")]
    assert_nothing_lost(window, path, old_bytes, state)


def test_save_as_into_a_read_only_folder_keeps_the_old_name(window, dialogs, saved,
                                                            monkeypatch, tmp_path):
    path, old_bytes = saved
    state = window.document.topology.state()
    real_open = os.open

    def no_new_files(file, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_new_files)
    elsewhere = tmp_path / "designs" / "copy.fabric.json"
    assert not window.files.save_as(elsewhere)
    monkeypatch.undo()
    assert dialogs == [("warning", f"cannot save {elsewhere}: no permission to write in that "
                                   "folder (Permission denied); nothing was written")]
    assert window.document.path == path  # still the file it came from
    assert elsewhere not in window.files.recent.paths()
    assert_nothing_lost(window, path, old_bytes, state)


def test_a_failing_autosave_says_so_once_in_the_status_bar(window, dialogs, qtbot,
                                                           monkeypatch):
    saver = window.files.autosaver
    seen = messages_of(window)
    move_first_node(window)
    monkeypatch.setattr(os, "fsync", disk_full)  # the worker thread fails like this
    for dx in (1.0, 2.0, 3.0):
        move_first_node(window, dx)  # a new change each tick, as while working
        saver._on_timer_timeout()
        saver.wait()
        QApplication.processEvents()  # deliver the worker's queued signal
    failures = [m for m in seen if m.startswith("Autosave failed")]
    assert len(failures) == 1 and "No space left on device" in failures[0]
    assert dialogs == []  # no message box storm
    assert not saver.path.exists()
    monkeypatch.undo()
    with qtbot.waitSignal(saver.saved, timeout=3000):
        saver._on_timer_timeout()
    saver.wait()
    assert seen[-1] == "Autosave works again"
    assert load(saver.path).state() == window.document.topology.state()
    monkeypatch.setattr(os, "fsync", disk_full)  # a new failure after recovery: said again
    move_first_node(window)
    with qtbot.waitSignal(saver.failed, timeout=3000):
        saver._on_timer_timeout()
    saver.wait()
    assert [m for m in seen if m.startswith("Autosave failed")] == failures * 2


def test_a_file_from_a_newer_version_is_refused_with_a_clear_message(window, dialogs,
                                                                     tmp_path):
    good = tmp_path / "mine.fabric.json"
    assert window.files.save_as(good)
    data = json.loads(good.read_text())
    data["version"] = VERSION + 1  # newer than the newest this version reads
    data["from_the_future"] = True
    newer = tmp_path / "newer.fabric.json"
    newer.write_text(json.dumps(data))
    state, title = window.document.topology.state(), window.windowTitle()

    assert not window.files.open_file(newer)
    assert dialogs == [("warning", (
        f"{newer}: version: written by a newer Fabric Designer (format version "
        f"{VERSION + 1}); this version reads up to {VERSION}"))]
    assert window.document.topology.state() == state
    assert window.document.path == good and window.windowTitle() == title
    assert newer not in window.files.recent.paths()
