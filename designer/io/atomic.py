"""Atomic file writes: the file on disk is always either the old one or the new one.

A save that dies half way (disk full, power cut, a read-only folder) must never leave a
truncated design behind.  So the new content goes to a temporary file in the *same*
directory (``os.replace`` is atomic only within one file system), is flushed and fsynced,
and only then renamed over the target.  When anything fails the temporary file is removed
and the original file is untouched.

Example
-------
>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> atomic_write_text(folder / "a.txt", "one\\n")
>>> atomic_write_text(folder / "a.txt", "two\\n", backup=True)
>>> (folder / "a.txt").read_text(), (folder / "a.txt.bak").read_text()
('two\\n', 'one\\n')
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "backup_path"]


def backup_path(path: str | os.PathLike[str]) -> Path:
    """Where the previous version of ``path`` is kept: ``<path>.bak``."""
    path = Path(path)
    return path.with_name(path.name + ".bak")


def _temp_beside(path: Path) -> tuple[Path, int]:
    """Create a new, empty temporary file next to ``path``; return it and an open fd.

    ``os.open`` with mode 0o666 lets the umask decide the permissions, like a normal
    new file (``mkstemp`` would make it 0o600, which a later ``os.replace`` would keep).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temp = path.with_name(f".{path.name}.tmp{secrets.token_hex(4)}")
        try:
            return temp, os.open(temp, flags, 0o666)
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _keep_backup(path: Path) -> None:
    """Make ``<path>.bak`` a copy of the current ``path`` (atomically, via a temp name)."""
    bak = backup_path(path)
    temp, fd = _temp_beside(bak)
    os.close(fd)
    try:
        # A hard link costs nothing and stays the old content once `path` is replaced
        # (the rename gives `path` a new inode); copy where links are unsupported.
        try:
            os.unlink(temp)
            os.link(path, temp)
        except OSError:
            shutil.copy2(path, temp)
        os.replace(temp, bak)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, backup: bool = False) -> None:
    """Replace the file ``path`` with ``data`` atomically.

    Parameters
    ----------
    path : path-like
        Target file.  A symlink is followed: its target is replaced, the link stays.
    data : bytes
        The complete new content.
    backup : bool
        Keep the current file (if any) as ``<path>.bak`` before replacing it.

    Raises
    ------
    OSError
        The folder is not writable, the disk is full, ...  The target is then unchanged
        and no temporary file is left behind.
    """
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    temp, fd = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        # Keep the permissions of the file being replaced (a shared, group-writable file
        # should stay so); best effort, the save itself matters more.
        with contextlib.suppress(OSError):
            os.chmod(temp, os.stat(path).st_mode & 0o7777)
        if backup and path.exists():
            _keep_backup(path)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_dir(path.parent)


def atomic_write_text(
    path: str | os.PathLike[str], text: str, *, backup: bool = False, encoding: str = "utf-8"
) -> None:
    """Replace the file ``path`` with ``text`` atomically (see `atomic_write_bytes`).

    The text is written as is: no newline translation, so a file is byte-identical on
    every platform.
    """
    atomic_write_bytes(path, text.encode(encoding), backup=backup)
