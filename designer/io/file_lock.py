"""Lock files: which running session has a file open, and taking over a crashed one's.

A session that opens a design holds ``.<name>.lock`` beside it (`design_lock_path`); the
autosaver holds one beside its recovery copy.  A second instance, or a script, reads the
lock to learn that the file is open elsewhere and by whom, before it opens or writes it.
Nothing is enforced by the system: a lock is a notice that cooperating writers respect.

The lock file is a few lines of text::

    4242                      the process id
    Fabric Designer           the program
    workstation-7             the host name
    boot=669e1c9f-...         the boot id of that host (Linux), when known
    since=2026-11-28T09:02:11+00:00
    user=ann

(the first three lines are also what Qt's ``QLockFile`` writes, so a lock left by an
older version that used it is read too).  It appears complete or not at all: its content
is written to a temporary file first, which is then hard-linked to the lock's name (an
atomic step that fails when the name exists).

**Stale locks.**  A crash leaves its lock behind; the next session takes it over when the
lock is *stale*, i.e. its owner is certainly gone:

* it was written on this host and no process with its id runs here, or
* it was written on this host before the last reboot (another boot id), or
* it names this process but no lock object of this process holds it, or
* it cannot be read as a lock at all and is older than `JUNK_AFTER_S`.

A lock from another host (a shared folder) is never stale: its process cannot be asked
about, so the user decides (open anyway).  Taking over renames the stale file aside first,
an atomic step only one contender wins, then writes a fresh lock.

Example
-------
>>> import pathlib, tempfile
>>> design = pathlib.Path(tempfile.mkdtemp()) / "d.fabric.json"
>>> lock = FileLock(design_lock_path(design))
>>> lock.acquire()
True
>>> FileLock(design_lock_path(design)).acquire()   # a second holder, here or elsewhere
False
>>> lock.release()
>>> lock_owner(design_lock_path(design)) is None
True
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import os
import secrets
import socket
import time
import weakref
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from designer.io.stale_temps import _process_is_gone

__all__ = ["APP_NAME", "JUNK_AFTER_S", "FileLock", "LockOwner", "design_lock_path", "lock_owner"]

APP_NAME = "Fabric Designer"
#: An unreadable lock file younger than this may be a lock being written by hand or by a
#: file system without hard links; older, it is junk and stale.
JUNK_AFTER_S = 10.0
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")

#: Lock files (resolved paths) held by `FileLock` objects of this process.
_HELD: set[str] = set()


def design_lock_path(design: str | os.PathLike[str]) -> Path:
    """The lock file of the design file ``design``: ``.<name>.lock`` beside it.

    >>> design_lock_path("/x/d.fabric.json").as_posix()
    '/x/.d.fabric.json.lock'
    """
    design = Path(design)
    return design.with_name(f".{design.name}.lock")


def _boot_id() -> str:
    try:
        return _BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return ""


def _host() -> str:
    return socket.gethostname()


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        return ""


@dataclass(frozen=True)
class LockOwner:
    """Who holds a lock, as its file says.

    Attributes
    ----------
    pid : int
        The owner's process id on ``host``.
    app : str
        The program that wrote the lock.
    host : str
        The host name of the owner's machine.
    boot : str
        The boot id of that machine then ("" when unknown).
    since : datetime or None
        When the lock was taken (None for a lock that does not say).
    user : str
        The owner's user name ("" when unknown).
    """

    pid: int
    app: str
    host: str
    boot: str = ""
    since: datetime | None = None
    user: str = ""

    def describe(self) -> str:
        """One phrase for a message: ``Fabric Designer (process 4242 of ann on vm, since
        09:02)``."""
        who = f"process {self.pid}"
        if self.user:
            who += f" of {self.user}"
        if self.host and self.host != _host():
            who += f" on {self.host}"
        if self.since is not None:
            when = self.since.astimezone()
            today = datetime.now().astimezone().date() == when.date()
            who += f", since {when:%H:%M}" if today else f", since {when:%Y-%m-%d %H:%M}"
        return f"{self.app or 'another program'} ({who})"

    def is_stale(self, held_here: bool) -> bool:
        """Whether the owner is certainly gone (see the module's rule); ``held_here``:
        whether a lock object of this process holds this lock file."""
        if self.host != _host():
            return False
        boot = _boot_id()
        if self.boot and boot and self.boot != boot:
            return True  # written before this machine last started
        if self.pid == os.getpid():
            return not held_here
        return _process_is_gone(self.pid) is True or _is_zombie(self.pid)


def _is_zombie(pid: int) -> bool:
    """Whether ``pid`` has exited but was not yet reaped by its parent (Linux): it still
    answers to a signal, but will never release its lock."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    # "pid (command name) state ...": the name may hold spaces and brackets.
    return stat_line.rpartition(")")[2].split()[:1] == ["Z"]


def _parse(text: str) -> LockOwner | None:
    """The owner a lock file's text names, or None when it is no lock."""
    lines = text.splitlines()
    if len(lines) < 3:
        return None
    try:
        pid = int(lines[0])
    except ValueError:
        return None
    if pid <= 0:
        return None
    fields = dict(line.split("=", 1) for line in lines[3:] if "=" in line)
    since = None
    with contextlib.suppress(ValueError):
        since = datetime.fromisoformat(fields.get("since", ""))
    return LockOwner(
        pid=pid,
        app=lines[1],
        host=lines[2],
        boot=fields.get("boot", ""),
        since=since,
        user=fields.get("user", ""),
    )


def _read(path: Path) -> tuple[str, float] | None:
    """The lock file's text and age in seconds; None when there is no lock file."""
    try:
        with open(path, "rb") as f:
            age = time.time() - os.fstat(f.fileno()).st_mtime
            raw = f.read(4096)  # a lock is ~150 bytes: never read a huge junk file whole
    except FileNotFoundError:
        return None
    return raw.decode("utf-8", errors="replace"), age


def _is_stale(path: Path, text: str, age: float) -> bool:
    owner = _parse(text)
    if owner is None:
        return age >= JUNK_AFTER_S
    return owner.is_stale(held_here=_key(path) in _HELD)


def _key(path: Path) -> str:
    return os.path.realpath(path)


def lock_owner(path: str | os.PathLike[str]) -> LockOwner | None:
    """Who holds the lock file ``path`` now: None when it is free or stale.

    A lock held by another lock object of this very process is reported too (a second
    window of one process is a second writer).  An unreadable lock younger than
    `JUNK_AFTER_S` is reported as held by an unknown owner (pid 0).
    """
    path = Path(path)
    try:
        found = _read(path)
    except OSError:
        return None  # cannot read it: nothing to report, the save will say why
    if found is None or _is_stale(path, *found):
        return None
    return _parse(found[0]) or LockOwner(pid=0, app="", host="")


class FileLock:
    """A lock file this process may hold.

    Parameters
    ----------
    path : Path
        The lock file itself (`design_lock_path` for a design).

    Attributes
    ----------
    holder : LockOwner or None
        After `acquire` returned False: who holds the lock.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.holder: LockOwner | None = None
        # Gives the lock up: called by `release`, when the object is collected, or at a
        # clean exit (a crash leaves the lock; the next session takes it over).
        self._give_up: weakref.finalize | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._give_up is not None and self._give_up.alive

    def _text(self) -> bytes:
        since = datetime.now().astimezone().isoformat(timespec="microseconds")
        lines = [
            str(os.getpid()),
            APP_NAME,
            _host(),
            f"boot={_boot_id()}",
            f"since={since}",
            f"user={_user()}",
        ]
        return ("\n".join(lines) + "\n").encode("utf-8", errors="replace")

    def acquire(self) -> bool:
        """Take the lock: True when this object holds it now, False when a live session
        does (then `holder` says who).  A stale lock is taken over.

        Raises
        ------
        OSError
            When the lock file cannot be written (read-only folder, full disk); the
            system's error, so a message can name the real cause.
        """
        if self.held:
            return True
        self.holder = None
        for _attempt in range(5):
            content = self._text()
            if self._create(content):
                key = _key(self.path)
                _HELD.add(key)
                self._give_up = weakref.finalize(self, _give_up, key, self.path, content)
                return True
            found = _read(self.path)
            if found is None:
                continue  # released meanwhile: try again
            text, age = found
            if not _is_stale(self.path, text, age):
                self.holder = _parse(text) or LockOwner(pid=0, app="", host="")
                return False
            self._set_aside(text)
        found = _read(self.path)
        self.holder = (_parse(found[0]) if found else None) or LockOwner(pid=0, app="", host="")
        return False

    def _create(self, content: bytes) -> bool:
        """Create the lock file with ``content`` unless it exists (False then)."""
        temp = self.path.with_name(f"{self.path.name}.{os.getpid()}-{secrets.token_hex(4)}.new")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            try:
                # (No fsync: after a power cut the lock is stale anyway.  A full disk
                # refuses the write itself.)
                if os.write(fd, content) != len(content):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            finally:
                os.close(fd)
            try:
                os.link(temp, self.path)
            except FileExistsError:
                return False
            except OSError:
                # No hard links here (some network or FAT file systems): create the name
                # exclusively and write it, a moment during which a reader sees it empty.
                return self._create_directly(content)
            return True
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp)

    def _create_directly(self, content: bytes) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, content)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            raise
        os.close(fd)
        return True

    def _set_aside(self, stale_text: str) -> None:
        """Remove the stale lock whose text was ``stale_text``, unless another contender
        replaced it meanwhile (then it is put back)."""
        aside = self.path.with_name(f"{self.path.name}.{os.getpid()}-{secrets.token_hex(4)}.stale")
        try:
            os.rename(self.path, aside)  # only one contender moves a given file
        except FileNotFoundError:
            return
        try:
            found = _read(aside)
            if found is not None and found[0] != stale_text:
                # A fresh lock taken by someone else between our read and the rename.
                with contextlib.suppress(OSError):
                    os.link(aside, self.path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(aside)

    def release(self) -> None:
        """Give the lock up (nothing when not held).  The file is removed only while it
        is still the one this object wrote."""
        if self._give_up is not None:
            self._give_up()
            self._give_up = None

    def __repr__(self) -> str:
        return f"FileLock({str(self.path)!r}, held={self.held})"


def _give_up(key: str, path: Path, content: bytes) -> None:
    """Forget the lock file ``path`` and remove it if it still holds ``content``."""
    _HELD.discard(key)
    with contextlib.suppress(OSError):
        with open(path, "rb") as f:
            on_disk = f.read(len(content) + 1)
        if on_disk == content:
            os.unlink(path)
