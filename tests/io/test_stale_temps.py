"""A save that died half way leaves a hidden temporary file beside the design; the next
save (or opening the file) removes it, and never a temporary file a live writer may
still be filling.

The rule (`designer.io.stale_temps`): a file is a leftover of ``d.fabric.json`` when its
name is that file's temporary name (``.d.fabric.json.tmp<pid>-<8 hex>``, or the older
``.d.fabric.json.tmp<8 hex>``), it is a regular file untouched for a minute, and the
process that made it is gone (a name without a process id: untouched for an hour).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time

import pytest

from designer.io import atomic, stale_temps
from designer.io.atomic import AtomicWriteError, atomic_write_text
from designer.io.fabric_json import load, save
from designer.model.topology import Topology


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def dead_pid():
    """The id of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def leftover(folder, name, age_s, *, tag=None):
    path = folder / f".{name}.tmp{'' if tag is None else f'{tag}-'}0badcafe"
    path.write_bytes(b"x" * 1000)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


@pytest.fixture
def design(tmp_path):
    path = tmp_path / "d.fabric.json"
    save(Topology(name="d"), path)
    return path


def test_a_crashed_saves_temp_is_removed_by_the_next_save(tmp_path, design):
    stale = leftover(tmp_path, design.name, 120, tag=dead_pid())
    stale_bak = leftover(tmp_path, design.name + ".bak", 120, tag=dead_pid())
    legacy = leftover(tmp_path, design.name, 2 * 3600)
    save(Topology(name="d2"), design)
    assert not stale.exists() and not stale_bak.exists() and not legacy.exists()
    assert listing(tmp_path) == [design.name, design.name + ".bak"]


def test_opening_the_file_removes_its_leftovers(tmp_path, design):
    stale = leftover(tmp_path, design.name, 120, tag=dead_pid())
    assert load(design).name == "d"
    assert not stale.exists()


def test_what_may_still_be_written_is_kept(tmp_path, design):
    keep = [
        leftover(tmp_path, design.name, 5, tag=dead_pid()),  # too recent
        leftover(tmp_path, design.name, 3600, tag=os.getpid()),  # its writer runs
        leftover(tmp_path, design.name, 600),  # no process id, not an hour old
        leftover(tmp_path, "other.fabric.json", 3600, tag=dead_pid()),  # another file's
        leftover(tmp_path, design.name + ".tmp5", 3600, tag=dead_pid()),  # ... and here
    ]
    folder = tmp_path / f".{design.name}.tmp{dead_pid()}-00000000"
    folder.mkdir()  # not a regular file
    save(Topology(name="d2"), design)
    assert all(p.exists() for p in keep) and folder.is_dir()


def test_a_new_temp_names_its_process(tmp_path):
    temp, fd = atomic._temp_beside(tmp_path / "d.fabric.json")
    os.close(fd)
    assert temp.name.startswith(f".d.fabric.json.tmp{os.getpid()}-")
    assert stale_temps.is_temp_of(tmp_path / "d.fabric.json", temp)


def test_cleaning_never_fails_a_save(monkeypatch, tmp_path, design):
    stale = leftover(tmp_path, design.name, 120, tag=dead_pid())

    def refuse(*_args, **_kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "unlink", refuse)
    atomic_write_text(design, "{}")
    monkeypatch.undo()
    assert stale.exists() and design.read_text() == "{}"


# ------------------------------------------------------------- a read-only file system


def test_a_read_only_file_system_is_not_called_a_read_only_file(monkeypatch, design):
    """On a read-only mount ``os.access(W_OK)`` is False for a writable-mode file; the
    message names the file system, not the file."""
    old = design.read_bytes()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, m, **k: False if m == os.W_OK else real_access(p, m, **k)
    )
    real_statvfs = os.statvfs

    class ReadOnly:
        def __init__(self, real):
            self._real = real

        def __getattr__(self, name):
            return getattr(self._real, name)

        f_flag = os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", lambda p: ReadOnly(real_statvfs(p)))
    with pytest.raises(AtomicWriteError) as info:
        atomic_write_text(design, "new", backup=True)
    assert str(info.value) == (
        f"cannot save {design}: read-only file system "
        "(Read-only file system); the previous version is untouched"
    )
    assert info.value.errno == errno.EROFS
    monkeypatch.undo()
    assert design.read_bytes() == old
