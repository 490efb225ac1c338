"""Every writer refuses a target that is not a regular file, before touching it.

``os.replace`` would happily put a new regular file where a named pipe, a socket or a
device node was, and ``backup=True`` would move the node to ``<name>.bak``: as root,
``-o /dev/null`` would replace the system's null device.  The checks use a named pipe
(safe to create anywhere); the same check covers device nodes (``stat.S_ISREG``).
"""

from __future__ import annotations

import os
import stat
import sys

import pytest

from designer.cli import main
from designer.io.atomic import AtomicWriteError, atomic_write_bytes, atomic_write_text
from designer.io.fabric_json import FileFormatError, save
from designer.model.topology import Topology

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")


def listing(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "p.fabric.json"
    os.mkfifo(path)
    return path


def still_a_fifo(path):
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert listing(path.parent) == [path.name]  # no temporary file, no .bak


@pytest.mark.parametrize("backup", [False, True])
def test_atomic_write_refuses_a_named_pipe(fifo, backup):
    with pytest.raises(AtomicWriteError) as info:
        atomic_write_text(fifo, "{}", backup=backup)
    assert str(info.value) == (
        f"cannot save {fifo}: a named pipe has that name (not a regular file); nothing was written"
    )
    still_a_fifo(fifo)


def test_a_symlink_to_a_named_pipe_is_refused(fifo, tmp_path):
    link = tmp_path / "link.fabric.json"
    link.symlink_to(fifo)
    with pytest.raises(AtomicWriteError, match="a named pipe has that name"):
        atomic_write_bytes(link, b"{}", backup=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink()
    assert listing(tmp_path) == sorted([fifo.name, link.name])


def test_a_folder_is_refused_before_writing(tmp_path):
    folder = tmp_path / "d.fabric.json"
    folder.mkdir()
    with pytest.raises(AtomicWriteError) as info:
        atomic_write_text(folder, "{}", backup=True)
    assert str(info.value) == (
        f"cannot save {folder}: a folder has that name (Is a directory); nothing was written"
    )
    assert listing(tmp_path) == [folder.name] and folder.is_dir()


def test_a_backup_that_is_not_a_regular_file_is_refused(tmp_path):
    path = tmp_path / "d.fabric.json"
    save(Topology(name="old"), path)
    old = path.read_bytes()
    bak = tmp_path / "d.fabric.json.bak"
    os.mkfifo(bak)
    with pytest.raises(AtomicWriteError) as info:
        atomic_write_text(path, "{}", backup=True)
    assert "a named pipe has that name" in str(info.value)
    assert str(bak) in str(info.value)
    assert path.read_bytes() == old and stat.S_ISFIFO(os.lstat(bak).st_mode)
    assert listing(tmp_path) == sorted([path.name, bak.name])


def test_save_refuses_a_named_pipe(fifo):
    with pytest.raises(FileFormatError):
        save(Topology(name="x"), fifo)
    still_a_fifo(fifo)


@pytest.mark.parametrize(
    "argv",
    [
        ["new", "hgx", "-o", "{out}"],
        ["export", "{src}", "-o", "{out}"],
    ],
)
def test_cli_refuses_a_named_pipe(capsys, tmp_path, fifo, argv):
    src = tmp_path / "src" / "s.fabric.json"
    src.parent.mkdir()
    save(Topology(name="s"), src)
    code = main([a.format(out=fifo, src=src) for a in argv])
    err = capsys.readouterr().err
    assert code == 1
    assert err == (
        f"fabric-designer: error: cannot save {fifo}: a named pipe has that name "
        "(not a regular file); nothing was written\n"
    )
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert listing(tmp_path) == sorted([fifo.name, "src"])


@pytest.mark.skipif(sys.platform != "linux", reason="/dev/null as a character device")
def test_a_character_device_is_refused_without_touching_it(monkeypatch, tmp_path):
    """Refused before anything is created: no temporary file is ever made beside it
    (``os.open`` with O_CREAT is forbidden here, so even /dev is never written)."""
    real_open = os.open

    def no_create(file, flags, *args, **kwargs):
        if flags & os.O_CREAT:
            raise AssertionError(f"tried to create {file}")
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_create)
    monkeypatch.setattr(os, "replace", lambda *a: pytest.fail("tried to replace"))
    with pytest.raises(AtomicWriteError) as info:
        atomic_write_bytes("/dev/null", b"{}", backup=True)
    assert "a character device has that name" in str(info.value)
