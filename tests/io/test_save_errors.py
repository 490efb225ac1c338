"""A save that cannot happen says why in one line and changes nothing on disk.

Disk full is real where Linux offers ``/dev/full`` (the temporary file is written there)
and simulated through ``os.fsync`` elsewhere; read-only files are refused by their mode
bits, which holds even for root; a read-only folder is tested with ``chmod`` when that
stops this user, and simulated by refusing to create files otherwise.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

import pytest

from designer.cli import main
from designer.io import atomic
from designer.io.atomic import AtomicWriteError, atomic_write_text, save_error_message
from designer.io.fabric_json import FileFormatError, load, save
from designer.model.templates import build_template
from designer.model.topology import Topology

DISK_FULL = "disk full (No space left on device); the previous version is untouched"


def disk_full(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def old_file(tmp_path):
    """A saved design and its bytes, to check it survives a failed save."""
    path = tmp_path / "d.fabric.json"
    save(Topology(name="old"), path)
    return path, path.read_bytes()


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


def only_the_old_file_is_left(path, old_bytes):
    assert path.read_bytes() == old_bytes
    assert listing(path.parent) == [path.name]  # no temporary file, no half backup


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_really_full_disk(monkeypatch, old_file):
    path, old_bytes = old_file
    real_temp = atomic._temp_beside

    def temp_on_a_full_device(target):
        # The temporary file is created where it belongs (so cleanup is tested), but
        # its content goes to /dev/full, which fails every write with ENOSPC.
        temp, fd = real_temp(target)
        os.close(fd)
        return temp, os.open("/dev/full", os.O_WRONLY)

    monkeypatch.setattr(atomic, "_temp_beside", temp_on_a_full_device)
    with pytest.raises(AtomicWriteError) as info:
        atomic_write_text(path, "x" * 100_000, backup=True)
    assert info.value.errno == errno.ENOSPC
    assert str(info.value) == f"cannot save {path}: {DISK_FULL}"
    only_the_old_file_is_left(path, old_bytes)


def test_disk_full_at_fsync_through_save(monkeypatch, old_file):
    path, old_bytes = old_file
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(FileFormatError) as info:
        save(build_template("hgx"), path)
    # The domain error keeps its wording; the plain-words line is one call away.
    assert str(info.value) == f"{path}: cannot save: No space left on device"
    assert save_error_message(info.value) == f"cannot save {path}: {DISK_FULL}"
    assert isinstance(info.value.__cause__, OSError)
    assert info.value.__cause__.strerror == "No space left on device"
    monkeypatch.undo()
    only_the_old_file_is_left(path, old_bytes)


def test_disk_full_while_keeping_the_backup(monkeypatch, old_file):
    path, _ = old_file
    save(Topology(name="older"), path)  # now d.fabric.json.bak holds "old"
    bak = atomic.backup_path(path)
    current, backup = path.read_bytes(), bak.read_bytes()
    monkeypatch.setattr(os, "link", lambda *_a: disk_full())  # no hard links here...
    monkeypatch.setattr(atomic.shutil, "copy2", disk_full)  # ...and no room for a copy
    with pytest.raises(AtomicWriteError, match="disk full"):
        atomic_write_text(path, "new", backup=True)
    assert path.read_bytes() == current and bak.read_bytes() == backup
    assert listing(path.parent) == [path.name, bak.name]


def test_a_new_file_on_a_full_disk_says_nothing_was_written(monkeypatch, tmp_path):
    path = tmp_path / "new.fabric.json"
    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(AtomicWriteError) as info:
        atomic_write_text(path, "{}")
    assert str(info.value) == (
        f"cannot save {path}: disk full (No space left on device); nothing was written")
    assert listing(tmp_path) == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_read_only_file_is_refused_even_for_root(old_file):
    path, old_bytes = old_file
    path.chmod(0o444)
    try:
        with pytest.raises(FileFormatError) as info:
            save(Topology(name="new"), path)
    finally:
        path.chmod(0o644)
    assert str(info.value) == f"{path}: cannot save: Permission denied"
    assert save_error_message(info.value) == (
        f"cannot save {path}: the file is read-only (Permission denied); "
        "the previous version is untouched")
    only_the_old_file_is_left(path, old_bytes)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_read_only_folder_with_chmod(old_file):
    path, old_bytes = old_file
    folder = path.parent
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("chmod does not stop this user from writing (root?)")
        with pytest.raises(AtomicWriteError) as info:
            atomic_write_text(path, "new", backup=True)
    finally:
        folder.chmod(stat.S_IRWXU)
    assert str(info.value) == (
        f"cannot save {path}: no permission to write in that folder (Permission denied); "
        "the previous version is untouched")
    only_the_old_file_is_left(path, old_bytes)


def refuse_new_files(monkeypatch, error=errno.EACCES):
    """What a read-only folder (or file system) does, simulated so it runs as root too."""
    real_open = os.open

    def guarded(file, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise OSError(error, os.strerror(error))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded)


@pytest.mark.parametrize(("error", "reason"), [
    (errno.EACCES, "no permission to write in that folder (Permission denied)"),
    (errno.EROFS, "read-only file system (Read-only file system)"),
])
def test_a_read_only_folder_or_file_system_simulated(monkeypatch, old_file, error, reason):
    path, old_bytes = old_file
    refuse_new_files(monkeypatch, error)
    with pytest.raises(AtomicWriteError) as info:
        atomic_write_text(path, "new", backup=True)
    assert str(info.value) == f"cannot save {path}: {reason}; the previous version is untouched"
    monkeypatch.undo()
    only_the_old_file_is_left(path, old_bytes)


def test_an_unexpected_error_keeps_the_systems_words(monkeypatch, old_file):
    path, old_bytes = old_file

    def stale(*_args):
        raise OSError(errno.ESTALE, "Stale file handle")

    monkeypatch.setattr(os, "fsync", stale)
    with pytest.raises(AtomicWriteError) as info:
        atomic_write_text(path, "new")
    assert str(info.value) == (
        f"cannot save {path}: Stale file handle; the previous version is untouched")
    assert info.value.errno == errno.ESTALE and info.value.reason is None
    monkeypatch.undo()
    only_the_old_file_is_left(path, old_bytes)


def test_save_error_message_of_other_errors_is_their_own_text(tmp_path):
    topo = Topology()
    topo.overrides = {"H900": {"price_usd": 1.0}}
    with pytest.raises(FileFormatError) as info:
        save(topo, tmp_path / "d.fabric.json")
    assert save_error_message(info.value) == str(info.value)
    assert save_error_message(ValueError("plain")) == "plain"


# --------------------------------------------------------------------------- the command line


def cli(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_cli_new_on_a_full_disk(monkeypatch, capsys, old_file):
    path, old_bytes = old_file
    monkeypatch.setattr(os, "fsync", disk_full)
    code, err = cli(capsys, "new", "hgx", "-o", str(path))
    assert code == 1
    assert err == f"fabric-designer: error: cannot save {path}: {DISK_FULL}\n"
    monkeypatch.undo()
    only_the_old_file_is_left(path, old_bytes)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.parametrize("name", ["out.fabric.json", "out.graphml", "out.json"])
def test_cli_export_over_a_read_only_file(capsys, tmp_path, old_file, name):
    source, _ = old_file
    out = tmp_path / name
    out.write_text("keep me")
    out.chmod(0o444)
    try:
        code, err = cli(capsys, "export", str(source), "-o", str(out))
    finally:
        out.chmod(0o644)
    assert code == 1
    assert err == (f"fabric-designer: error: cannot save {out}: the file is read-only "
                   "(Permission denied); the previous version is untouched\n")
    assert out.read_text() == "keep me"
    assert listing(tmp_path) == sorted([source.name, name])


def test_cli_export_into_a_read_only_folder(monkeypatch, capsys, tmp_path, old_file):
    source, _ = old_file
    assert load(source).name == "old"  # read before the folder "turns read-only"
    refuse_new_files(monkeypatch)
    out = tmp_path / "copy.fabric.json"
    code, err = cli(capsys, "export", str(source), "-o", str(out))
    monkeypatch.undo()
    assert code == 1
    assert err == (f"fabric-designer: error: cannot save {out}: no permission to write in "
                   "that folder (Permission denied); nothing was written\n")
    assert listing(tmp_path) == [source.name]
