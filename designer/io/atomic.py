"""Atomic file writes: the file on disk is always either the old one or the new one.

A save that dies half way (disk full, power cut, a read-only folder) must never leave a
truncated design behind.  So the new content goes to a temporary file in the *same*
directory (``os.replace`` is atomic only within one file system), is flushed and fsynced,
and only then renamed over the target.  When anything fails the temporary file is removed
and the original file is untouched.

A failure raises `AtomicWriteError`, an `OSError` that keeps the system's ``errno`` and
``strerror`` and whose ``str()`` is one line a user can act on::

    cannot save /x/y.fabric.json: disk full (No space left on device); the previous version
    is untouched

A read-only existing file is refused rather than silently replaced (a rename would
otherwise succeed in a writable folder), and so is a name that is not a regular file (a
folder, a named pipe, a device node, a socket), before anything is created.
`save_error_message` finds such an error behind a domain error raised ``from`` it
(``FileFormatError``, ``ExportError``).

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
import errno
import os
import secrets
import shutil
import stat
from pathlib import Path

from designer.io.stale_temps import remove_stale_temps, temp_name

__all__ = [
    "AtomicWriteError",
    "atomic_write_bytes",
    "atomic_write_text",
    "backup_path",
    "save_error_message",
]

#: Plain words for the failures people meet (the system's own text follows in brackets).
_REASONS = {
    errno.ENOSPC: "disk full",
    getattr(errno, "EDQUOT", -1): "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.ENOTDIR: "part of the path is not a folder",
    errno.EISDIR: "a folder has that name",
    errno.ENAMETOOLONG: "the name is too long",
    errno.EFBIG: "the file is too large for this disk",
    errno.EIO: "the disk reported an error",
}


class AtomicWriteError(OSError):
    """Writing ``path`` failed and nothing on disk changed.

    ``errno`` and ``strerror`` are the operating system's (so ``err.strerror`` still reads
    "No space left on device"); ``reason`` says it in plain words; ``existed`` tells
    whether a previous version is there, untouched.  ``str()`` is the one-line message.

    Examples
    --------
    >>> err = AtomicWriteError("/x/d.fabric.json", OSError(28, "No space left on device"),
    ...                        existed=True)
    >>> str(err)
    'cannot save /x/d.fabric.json: disk full (No space left on device); the previous version is untouched'
    """  # noqa: E501 - a doctest output line cannot wrap

    def __init__(self, path: str | os.PathLike[str], cause: OSError, *,
                 existed: bool, reason: str | None = None):
        super().__init__(cause.errno, cause.strerror or str(cause) or type(cause).__name__)
        self.path = Path(path)
        self.existed = existed
        self.reason = reason or _REASONS.get(cause.errno)

    def __str__(self) -> str:
        why = f"{self.reason} ({self.strerror})" if self.reason else str(self.strerror)
        kept = "the previous version is untouched" if self.existed else "nothing was written"
        return f"cannot save {self.path}: {why}; {kept}"


def save_error_message(exc: BaseException) -> str:
    """The message to show for a failed save or export: the `AtomicWriteError` behind
    ``exc`` (raised ``from`` it, however deep) if there is one, else ``str(exc)``.

    Examples
    --------
    >>> cause = AtomicWriteError("d.json", PermissionError(13, "Permission denied"),
    ...                          existed=False, reason="the folder is read-only")
    >>> try:
    ...     raise ValueError("d.json: cannot save: Permission denied") from cause
    ... except ValueError as err:
    ...     save_error_message(err)
    'cannot save d.json: the folder is read-only (Permission denied); nothing was written'
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, AtomicWriteError):
            return str(current)
        seen.add(id(current))
        current = current.__cause__
    return str(exc)


def backup_path(path: str | os.PathLike[str]) -> Path:
    """Where the previous version of ``path`` is kept: ``<path>.bak``."""
    path = Path(path)
    return path.with_name(path.name + ".bak")


def _temp_beside(path: Path) -> tuple[Path, int]:
    """Create a new, empty temporary file next to ``path``; return it and an open fd.

    Its name holds this process's id, so a later save can tell a leftover of a crashed
    save from a file another process is still writing (`designer.io.stale_temps`).

    ``os.open`` with mode 0o666 lets the umask decide the permissions, like a normal
    new file (``mkstemp`` would make it 0o600, which a later ``os.replace`` would keep).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temp = path.with_name(temp_name(path, secrets.token_hex(4)))
        try:
            return temp, os.open(temp, flags, 0o666)
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue


#: What a name that is not a regular file is, by its ``stat`` type test.
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _refuse_non_regular(path: Path) -> None:
    """Raise `AtomicWriteError` if ``path`` exists and is not a regular file.

    ``os.replace`` would put a regular file where a pipe, a socket or a device node was
    (as root, ``-o /dev/null`` would replace the system's null device) and a backup would
    move the node aside; so such a name is refused before anything is created.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "something other than a file")
    if stat.S_ISDIR(mode):
        cause = IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    else:
        cause = OSError(errno.EINVAL, "not a regular file")
    raise AtomicWriteError(path, cause, existed=False, reason=f"{kind} has that name")


def _read_only(path: Path) -> tuple[int, str] | None:
    """Why the existing regular file ``path`` cannot be replaced, as ``(errno, reason)``,
    or None when it can: its write bits are off, this user may not write it, or the file
    system is mounted read-only (``os.access`` says no for that too, so the mount is asked
    before the file is blamed).  Root passes `os.access` for any file, hence the mode bits
    as well.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if not stat.S_ISREG(mode):
        return None
    if mode & 0o222 and os.access(path, os.W_OK):
        return None
    if _on_read_only_mount(path):
        return errno.EROFS, _REASONS[errno.EROFS]
    return errno.EACCES, "the file is read-only"


def _on_read_only_mount(path: Path) -> bool:
    """Whether the file system holding ``path`` is mounted read-only (POSIX statvfs)."""
    flag = getattr(os, "ST_RDONLY", None)
    if flag is None or not hasattr(os, "statvfs"):
        return False
    try:
        return bool(os.statvfs(path).f_flag & flag)
    except OSError:
        return False


def _reason(err: OSError, step: str) -> str | None:
    """Plain words for ``err`` raised while doing ``step`` (create, write, replace)."""
    if err.errno in (errno.EACCES, errno.EPERM):
        if step == "create":
            return "no permission to write in that folder"
        return "no permission to replace the file"
    if err.errno == errno.ENOENT and step == "create":
        return "the folder does not exist"
    return _REASONS.get(err.errno)


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
    AtomicWriteError
        An `OSError`: the folder or the file is not writable, the disk is full, the
        target (or its backup) is not a regular file (a folder, a pipe, a device), ...
        The target is then unchanged and no temporary file is left behind.
    """
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    _refuse_non_regular(path)
    if backup and path.exists():  # only an existing file is kept as <path>.bak
        _refuse_non_regular(backup_path(path))
    remove_stale_temps(path)
    if backup:
        remove_stale_temps(backup_path(path))
    existed = path.exists()
    refused = _read_only(path) if existed else None
    if refused is not None:
        code, reason = refused
        raise AtomicWriteError(path, OSError(code, os.strerror(code)), existed=True,
                               reason=reason)
    step = "create"
    try:
        temp, fd = _temp_beside(path)
    except OSError as err:
        raise AtomicWriteError(path, err, existed=existed,
                               reason=_reason(err, step)) from err
    try:
        step = "write"
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        # Keep the permissions of the file being replaced (a shared, group-writable file
        # should stay so); best effort, the save itself matters more.
        with contextlib.suppress(OSError):
            os.chmod(temp, os.stat(path).st_mode & 0o7777)
        if backup and existed:
            step = "backup"
            _keep_backup(path)
        step = "replace"
        os.replace(temp, path)
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(err, OSError) and not isinstance(err, AtomicWriteError):
            raise AtomicWriteError(path, err, existed=existed,
                                   reason=_reason(err, step)) from err
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
