"""Two writers, one file, seen from the window: a save over a file another writer changed
since it was opened asks Reload / Save As… / Overwrite / Cancel with a summary of what
differs; opening a design another running session has open asks first; the window holds
the design's lock while it is open.

The other writer is a second process (the command line rewriting the design, or a Python
process holding the lock), or a second window.  The questions go through
`designer.gui.other_writers.show_choice`, patched here to record the box and answer.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from PySide6.QtWidgets import QFileDialog

from designer.gui import other_writers
from designer.gui.recovery import DATA_DIR_ENV
from designer.io.fabric_json import load, save
from designer.io.file_lock import design_lock_path, lock_owner
from designer.model.commands import MoveNodes
from designer.model.templates import build_template
from tests.gui.conftest import close_window, open_window


@pytest.fixture(autouse=True)
def data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))


class Answer:
    """Stands in for `show_choice`: records each box, answers ``choice``."""

    def __init__(self, monkeypatch, choice):
        self.choice = choice
        self.boxes: list[dict] = []
        monkeypatch.setattr(other_writers, "show_choice", self)

    def __call__(self, box):
        self.boxes.append(
            {
                "title": box.windowTitle(),
                "text": box.text(),
                "details": box.informativeText(),
                "buttons": sorted(b.text() for b in box.buttons()),
            }
        )
        return self.choice


def run_cli(*args):
    done = subprocess.run(
        [sys.executable, "-m", "designer", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def move_first_node(window, dx=30.0):
    node = min(window.document.topology.nodes(), key=lambda n: n.id)
    window.document.push(MoveNodes({node.id: (node.x + dx, node.y)}))


@pytest.fixture
def design(tmp_path):
    path = tmp_path / "designs" / "cluster.fabric.json"
    path.parent.mkdir()
    save(build_template("hgx", gpus=4), path)
    return path


@pytest.fixture
def opened(qtbot, design):
    """A window on ``design`` with an unsaved edit, then a script (a second process)
    rewrites the file with a bigger design."""
    win, error = open_window(qtbot, design)
    assert error is None
    move_first_node(win)
    # The script: --force, since the window holds the design's lock.
    run_cli("new", "hgx", "-o", str(design), "--force")
    return win, design, design.read_bytes()


def test_saving_over_a_file_changed_on_disk_asks_first(monkeypatch, opened):
    win, path, theirs = opened
    answer = Answer(monkeypatch, other_writers.CANCEL)
    mine = win.document.topology.state()
    assert not win.files.save()
    assert len(answer.boxes) == 1
    box = answer.boxes[0]
    assert box["title"] == "File changed on disk"
    assert "cluster.fabric.json" in box["text"] and "changed on disk" in box["text"]
    assert box["buttons"] == ["&Overwrite", "&Reload", "Cancel", "Save &As…"]
    # The comparison: the script's design has 4 more GPUs (and their links) than ours.
    assert "nodes: " in box["details"] and " added" in box["details"]
    assert "links: " in box["details"]
    assert path.read_bytes() == theirs  # the other writer's file is untouched
    assert win.document.is_modified and win.document.topology.state() == mine


def test_overwrite_saves_this_window_s_design(monkeypatch, opened):
    win, path, _theirs = opened
    Answer(monkeypatch, other_writers.OVERWRITE)
    assert win.files.save()
    assert load(path).state() == win.document.topology.state()
    assert not win.document.is_modified
    # From now on the file is this window's again: the next save asks nothing.
    answer = Answer(monkeypatch, other_writers.CANCEL)
    move_first_node(win)
    assert win.files.save()
    assert answer.boxes == []


def test_reload_opens_the_file_as_it_is_on_disk(monkeypatch, opened):
    win, path, theirs = opened
    Answer(monkeypatch, other_writers.RELOAD)
    assert not win.files.save()
    assert path.read_bytes() == theirs
    assert win.document.topology.state() == load(path).state()
    assert not win.document.is_modified
    assert win.document.path == path


def test_save_as_keeps_both(monkeypatch, opened, tmp_path):
    win, path, theirs = opened
    Answer(monkeypatch, other_writers.SAVE_AS)
    other = tmp_path / "designs" / "mine.fabric.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(other), ""))
    assert win.files.save()
    assert path.read_bytes() == theirs
    assert load(other).state() == win.document.topology.state()
    assert win.document.path == other
    assert lock_owner(design_lock_path(other)).pid == os.getpid()  # the lock moved too
    assert lock_owner(design_lock_path(path)) is None


def test_no_question_when_nobody_else_wrote(monkeypatch, qtbot, design):
    win, _ = open_window(qtbot, design)
    answer = Answer(monkeypatch, other_writers.CANCEL)
    move_first_node(win)
    os.utime(design)  # touched, same bytes: no conflict
    assert win.files.save()
    move_first_node(win)
    assert win.files.save()  # its own save is no conflict either
    assert answer.boxes == []


def test_the_window_holds_its_design_s_lock_until_closed(qtbot, design):
    win, _ = open_window(qtbot, design)
    owner = lock_owner(design_lock_path(design))
    assert owner is not None and owner.pid == os.getpid()
    close_window(win)
    assert not design_lock_path(design).exists()


HOLDER = """
import sys
from designer.io.file_lock import FileLock, design_lock_path
lock = FileLock(design_lock_path(sys.argv[1]))
print("held" if lock.acquire() else "busy", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def held_elsewhere(design):
    """``design`` open in another process (it holds the lock) until the test ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(design)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()


@pytest.mark.parametrize(
    "choice", [other_writers.CANCEL, other_writers.OPEN, other_writers.OPEN_READ_ONLY]
)
def test_opening_a_design_open_in_another_process_asks(
    monkeypatch, window, design, held_elsewhere, choice
):
    answer = Answer(monkeypatch, choice)
    before = window.document.topology.state()
    assert window.files.open_file(design) == (choice != other_writers.CANCEL)
    assert len(answer.boxes) == 1
    box = answer.boxes[0]
    assert box["buttons"] == ["&Open Anyway", "Cancel", "Open &Read-Only"]
    assert f"process {held_elsewhere.pid}" in box["text"]
    if choice == other_writers.CANCEL:
        assert window.document.topology.state() == before
    else:
        assert window.document.path == design
        assert window.document.read_only == (choice == other_writers.OPEN_READ_ONLY)
        assert ("[read-only]" in window.windowTitle()) == window.document.read_only
    # The other session's lock is left as it is.
    assert lock_owner(design_lock_path(design)).pid == held_elsewhere.pid


def test_a_design_opened_read_only_is_saved_under_another_name(
    monkeypatch, window, design, held_elsewhere, tmp_path
):
    Answer(monkeypatch, other_writers.OPEN_READ_ONLY)
    assert window.files.open_file(design)
    before = design.read_bytes()
    move_first_node(window)
    asked = []
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", lambda *_a, **_k: asked.append(1) or ("", "")
    )
    assert not window.files.save()  # Save asks for a name; cancelled: nothing written
    assert asked == [1] and design.read_bytes() == before
    other = tmp_path / "designs" / "copy.fabric.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(other), ""))
    assert window.files.save()
    assert design.read_bytes() == before
    assert load(other).state() == window.document.topology.state()
    assert window.document.path == other and not window.document.read_only
    assert "[read-only]" not in window.windowTitle()


def test_a_crashed_session_s_lock_is_taken_over_without_asking(
    monkeypatch, window, design, held_elsewhere
):
    held_elsewhere.kill()  # kill -9: its lock file stays behind, stale
    held_elsewhere.wait()
    assert design_lock_path(design).exists()
    answer = Answer(monkeypatch, other_writers.CANCEL)
    assert window.files.open_file(design)
    assert answer.boxes == []
    assert lock_owner(design_lock_path(design)).pid == os.getpid()


def test_two_windows_on_one_design(monkeypatch, qtbot, design):
    first, _ = open_window(qtbot, design)
    second, _ = open_window(qtbot)
    answer = Answer(monkeypatch, other_writers.OPEN)
    assert second.files.open_file(design)  # asked: the first window has it open
    assert [b["title"] for b in answer.boxes] == ["Design open elsewhere"]
    move_first_node(first, 10)
    move_first_node(second, 50)
    assert first.files.save()
    answer.choice = other_writers.CANCEL
    assert not second.files.save()  # would silently overwrite the first window's save
    assert answer.boxes[-1]["title"] == "File changed on disk"
    assert "nodes: 1 changed" in answer.boxes[-1]["details"]
    assert load(design).state() == first.document.topology.state()


def test_a_restored_design_asks_before_saving_over_a_file_changed_since_the_crash(
    monkeypatch, window, design, tmp_path
):
    from designer.gui.recovery import find_recoveries, write_recovery
    from designer.io.disk_state import DiskState

    crashed = load(design)  # the crashed session had the design open, and edited it
    node = min(crashed.nodes(), key=lambda n: n.id)
    MoveNodes({node.id: (node.x + 40, node.y)}).do(crashed)
    folder = window.files.autosaver.folder
    write_recovery(crashed, folder, "cluster-dead0001", design, design.name, DiskState.of(design))
    run_cli("new", "hgx", "-o", str(design))  # then a script rewrote the file
    theirs = design.read_bytes()
    (entry,) = find_recoveries(folder)
    assert window.files.restore(entry)
    answer = Answer(monkeypatch, other_writers.CANCEL)
    assert not window.files.save()
    assert [b["title"] for b in answer.boxes] == ["File changed on disk"]
    assert design.read_bytes() == theirs


def test_autosave_records_the_design_file_as_the_session_last_saw_it(qtbot, design):
    from designer.gui import recovery

    win, _ = open_window(qtbot, design)
    move_first_node(win)
    saver = win.files.autosaver
    assert saver.autosave_now(wait=True)
    entry = recovery._read_entry(saver.path)
    assert entry.original == design
    assert entry.original_state == win.document.disk_state is not None


def test_a_read_only_design_saved_as_its_own_name_asks_first(
    monkeypatch, window, design, held_elsewhere
):
    answer = Answer(monkeypatch, other_writers.OPEN_READ_ONLY)
    assert window.files.open_file(design)
    before = design.read_bytes()
    move_first_node(window)
    proposed = []

    def same_name(_parent, _title, start, *_a, **_k):
        proposed.append(start)
        return str(design), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", same_name)
    answer.choice = other_writers.CANCEL
    assert not window.files.save()
    assert proposed == [str(design.with_name("cluster copy.fabric.json"))]
    assert answer.boxes[-1]["title"] == "Design open elsewhere"
    assert f"process {held_elsewhere.pid}" in answer.boxes[-1]["text"]
    assert design.read_bytes() == before and window.document.read_only
