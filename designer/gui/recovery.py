"""Autosave to a recovery file, and finding the ones a crashed session left behind.

While the design has unsaved changes, `Autosaver` writes a copy every minute (when it
changed since the last copy) to ``<data dir>/recovery/<name>.fabric.json`` next to a small
sidecar ``<name>.meta.json`` (the file the design came from and that file's fingerprint as
the session last read or wrote it, the time); ``<name>`` is the
title of the design open when its first copy is written, and a random token.  Saving the
design, going back to the saved state, opening another design or quitting cleanly removes
both.  So a recovery file that exists at start-up was left by a session that died.

A running session holds ``<name>.lock`` (a `designer.io.file_lock.FileLock`, the lock the
window also holds on its design: a lock whose owner process is gone is stale), so a
second instance of the program never offers the first one's live file.

The data directory is ``platformdirs.user_data_dir("fabric-designer")``; the environment
variable ``FABRIC_DESIGNER_DATA_DIR`` overrides it (tests, portable installs).

Writing never blocks the window: the design is copied on the GUI thread (frozen node,
link and group values, a few milliseconds even for a 1,024-GPU design) and formatted and
written by a superqt worker on Qt's thread pool, atomically
(`designer.io.fabric_json.save`).  A caller that must have the file on disk now (quitting,
the crash handler, tests) writes it on its own thread instead, and so does `Autosaver.wait`
when the worker has not started yet: waiting never depends on the event loop.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import re
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import platformdirs
from PySide6.QtCore import QObject, QTimer, Signal

from designer.gui.document import Document
from designer.gui.workers import create_worker
from designer.io.atomic import AtomicWriteError, atomic_write_text
from designer.io.disk_state import DiskState
from designer.io.fabric_json import load, save
from designer.io.file_lock import FileLock, lock_owner
from designer.model.topology import Topology

DATA_DIR_ENV = "FABRIC_DESIGNER_DATA_DIR"
APP_DIR_NAME = "fabric-designer"
DESIGN_SUFFIX = ".fabric.json"
META_SUFFIX = ".meta.json"
LOCK_SUFFIX = ".lock"
DEFAULT_INTERVAL_S = 60


def data_dir() -> Path:
    """The per-user data folder: ``$FABRIC_DESIGNER_DATA_DIR`` or the platform's one
    (``~/.local/share/fabric-designer`` on Linux).

    Examples
    --------
    >>> data_dir().is_absolute() or DATA_DIR_ENV in os.environ
    True
    """
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_data_dir(APP_DIR_NAME, appauthor=False))


def recovery_dir() -> Path:
    """Where recovery files live: ``data_dir() / "recovery"`` (not created here)."""
    return data_dir() / "recovery"


def _slug(text: str) -> str:
    """A short file-name-safe form of a design title."""
    stem = text.removesuffix(DESIGN_SUFFIX).removesuffix(".json")
    return re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-")[:40] or "design"


def _lock_failure(design: Path, error: OSError | None = None) -> str:
    """Why the lock of the recovery copy ``design`` could not be taken, in one line:
    another session holds it, or (``error``) the lock file could not be written at all,
    e.g. on a read-only or full disk, named as such."""
    if error is None:
        return f"{design} is locked by another session"
    return str(AtomicWriteError(design, error, existed=False))


def _lock_for(design: Path) -> FileLock:
    # Only a dead owner makes a lock stale; a long editing session is not a crash.
    return FileLock(design.with_name(design.name.removesuffix(DESIGN_SUFFIX) + LOCK_SUFFIX))


@dataclass(frozen=True)
class RecoveryEntry:
    """One recovery file on disk.

    Attributes
    ----------
    design : Path
        The autosaved ``.fabric.json``.
    original : Path or None
        The file the design was opened from or saved to, if any.
    saved_at : datetime
        When the copy was written (local time).
    title : str
        The design's title then (file name or design name).
    original_state : DiskState or None
        ``original`` as the crashed session last read or wrote it: saving the restored
        design over it asks first when another writer changed it since.
    """

    design: Path
    original: Path | None
    saved_at: datetime
    title: str
    original_state: DiskState | None = None

    @property
    def meta(self) -> Path:
        return self.design.with_name(self.design.name.removesuffix(DESIGN_SUFFIX) + META_SUFFIX)

    @property
    def name(self) -> str:
        return self.design.name.removesuffix(DESIGN_SUFFIX)

    def load(self) -> Topology:
        """The autosaved design; raises `FileFormatError` for an unreadable copy."""
        return load(self.design)

    def remove(self) -> None:
        """Delete the copy and its sidecar (missing files are fine)."""
        for path in (self.design, self.meta):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def set_aside(self) -> Path:
        """Rename an unreadable copy to ``*.bad`` so it is not offered again, but kept."""
        target = self.design.with_name(self.design.name + ".bad")
        os.replace(self.design, target)
        with contextlib.suppress(FileNotFoundError):
            self.meta.unlink()
        return target


def _read_entry(design: Path) -> RecoveryEntry:
    meta_path = design.with_name(design.name.removesuffix(DESIGN_SUFFIX) + META_SUFFIX)
    meta: dict[str, Any] = {}
    # The sidecar is a convenience: without it (or when it is junk) the copy is still
    # offered, dated by the file's modification time.
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(meta_path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            meta = loaded
    try:
        saved_at = datetime.fromisoformat(str(meta["saved_at"]))
    except (KeyError, ValueError):
        saved_at = datetime.fromtimestamp(design.stat().st_mtime).astimezone()
    original = meta.get("original")
    title = meta.get("title")
    return RecoveryEntry(
        design=design,
        original=Path(original) if isinstance(original, str) and original else None,
        saved_at=saved_at,
        title=title if isinstance(title, str) and title else design.name,
        original_state=_disk_state(meta.get("original_state")),
    )


def _disk_state(raw: Any) -> DiskState | None:
    """The sidecar's ``original_state`` (None when missing or junk)."""
    if not isinstance(raw, dict):
        return None
    try:
        state = DiskState(int(raw["mtime_ns"]), int(raw["size"]), int(raw["inode"]),
                          str(raw["sha256"]))
    except (KeyError, TypeError, ValueError):
        return None
    return state if state.sha256 else None


def find_recoveries(folder: Path | None = None) -> list[RecoveryEntry]:
    """Recovery files left by sessions that are no longer running, newest first.

    A file whose lock is held by a live process (another open window of the program,
    or this one) is skipped.
    """
    folder = recovery_dir() if folder is None else Path(folder)
    if not folder.is_dir():
        return []
    entries = []
    for design in folder.glob("*" + DESIGN_SUFFIX):
        if lock_owner(_lock_for(design).path) is not None:
            continue  # a live session owns it
        with contextlib.suppress(OSError):
            entries.append(_read_entry(design))
    return sorted(entries, key=lambda e: e.saved_at.timestamp(), reverse=True)


def write_recovery(topology: Any, folder: Path, name: str, original: Path | None,
                   title: str, original_state: DiskState | None = None) -> RecoveryEntry:
    """Write ``topology`` and its sidecar into ``folder`` as recovery ``name``.

    The design goes first and the sidecar second, both atomically: a crash between the two
    leaves a design without a sidecar, which is still offered.
    """
    folder.mkdir(parents=True, exist_ok=True)
    design = folder / f"{name}{DESIGN_SUFFIX}"
    save(topology, design, backup=False)
    saved_at = datetime.now().astimezone()
    meta = {
        "original": str(original) if original is not None else None,
        "original_state": dataclasses.asdict(original_state) if original_state else None,
        "saved_at": saved_at.isoformat(timespec="seconds"),
        "title": title,
        "pid": os.getpid(),
    }
    entry = RecoveryEntry(design, original, saved_at, title, original_state)
    atomic_write_text(entry.meta, json.dumps(meta, indent=2) + "\n")
    return entry


class _FrozenDesign:
    """A detached copy of a `Topology`, enough for `fabric_json.save` to write.

    Nodes, links and groups are frozen values, so copying the references is a real
    snapshot; the worker thread never touches the live, edited topology.
    """

    def __init__(self, topology: Topology):
        self.name = topology.name
        self.catalog = topology.catalog  # not edited while the program runs
        self.settings = topology.settings  # already a fresh copy
        self.overrides = copy.deepcopy(topology.overrides)
        self._groups = tuple(topology.groups())
        self._nodes = tuple(topology.nodes())
        self._links = tuple(topology.links())

    def groups(self) -> Iterator:
        return iter(self._groups)

    def nodes(self) -> Iterator:
        return iter(self._nodes)

    def links(self) -> Iterator:
        return iter(self._links)


@dataclass(eq=False)
class _CopyJob:
    """One recovery copy to write, by a pool worker or by whoever waits for it first.

    `run` writes the copy unless the other side already took the job, so a copy is
    written once even when `Autosaver.wait` runs it before the worker starts.
    """

    args: tuple
    entry: RecoveryEntry | None = None
    error: Exception | None = None
    reported: bool = False  # (GUI thread only) `saved` or `failed` emitted for it
    done: threading.Event = field(default_factory=threading.Event)
    _taken: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> _CopyJob:
        """Write the copy if nobody else is; record how it went (no exception escapes)."""
        if not self._taken.acquire(blocking=False):
            return self  # the waiter writes it
        try:
            self.entry = write_recovery(*self.args)
        except Exception as exc:
            self.error = exc
        finally:
            self.done.set()
        return self

    def finish(self) -> None:
        """Block until the copy is written: write it here if nobody has started."""
        self.run()
        self.done.wait()


class Autosaver(QObject):
    """Periodic recovery copies of one `Document`.

    Parameters
    ----------
    document : Document
        The design to protect.
    interval_s : float
        Seconds between checks; a copy is written only when the design is modified and
        changed since the last copy.
    folder : Path, optional
        Recovery folder; `recovery_dir()` by default.

    Signals
    -------
    saved(object)
        A copy was written (its `Path`); emitted on the GUI thread.
    failed(str)
        Writing failed (one-line reason); the next tick tries again.
    """

    saved = Signal(object)
    failed = Signal(str)

    def __init__(self, document: Document, interval_s: float = DEFAULT_INTERVAL_S,
                 folder: Path | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.document = document
        self.folder = Path(folder) if folder is not None else recovery_dir()
        self._token = secrets.token_hex(4)
        self._adopted = False  # (while `adopt` takes over a restored copy's name)
        self.name = self._fresh_name()
        self._lock: FileLock | None = None
        self._job: _CopyJob | None = None
        # (id(topology), generation, name) of the copy on disk.
        self._written: tuple[int, int, str] | None = None
        self.timer = QTimer(self)
        self.timer.timeout.connect(self._on_timer_timeout)
        self.interval_s = interval_s
        document.undo_stack.cleanChanged.connect(self._on_stack_clean_changed)
        document.topology_replaced.connect(self._on_document_topology_replaced)

    # ------------------------------------------------------------ settings
    @property
    def interval_s(self) -> float:
        return self.timer.interval() / 1000

    @interval_s.setter
    def interval_s(self, seconds: float) -> None:
        self.timer.setInterval(max(1, round(seconds * 1000)))

    @property
    def path(self) -> Path:
        """This session's recovery file (it exists only while there are changes)."""
        return self.folder / f"{self.name}{DESIGN_SUFFIX}"

    def start(self) -> None:
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def _fresh_name(self) -> str:
        """The recovery name for the design open now: its title and this session's token."""
        return f"{_slug(self.document.title)}-{self._token}"

    # ------------------------------------------------------------ writing
    def _stamp(self) -> tuple[int, int, str]:
        # The name too: renaming the design changes what the copy must hold, not the
        # topology's generation.
        topo = self.document.topology
        return id(topo), topo.generation, topo.name

    def autosave_now(self, wait: bool = False) -> bool:
        """Write a copy if the design has unsaved changes not yet copied.

        Returns True when a write was started.  With ``wait`` the copy is written on this
        thread and `saved` or `failed` emitted before the call returns (tests, quitting,
        the crash handler); otherwise a pool worker writes it and the signals follow
        through the event loop.
        """
        if not self.document.is_modified or self._stamp() == self._written:
            return False
        if self._job is not None and not self._job.done.is_set():
            return False  # the previous copy is still being written; next tick
        if not self._take_lock():
            return False
        snapshot = _FrozenDesign(self.document.topology)
        self._written = self._stamp()
        original = self.document.path
        args = (snapshot, self.folder, self.name, original, self.document.title,
                self.document.disk_state)
        self._job = job = _CopyJob(args)
        if wait:
            self.wait()
        else:
            create_worker(job.run, _connect={"returned": self._on_worker_returned})
        return True

    def _take_lock(self) -> bool:
        if self._lock is not None:
            return True  # our copy exists: it keeps its name until it is discarded
        if not self._adopted:
            # A first copy of this design: named after it as it is now (not after the
            # design the session started with).
            self.name = self._fresh_name()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.failed.emit(f"Autosave: cannot create {self.folder}: {exc.strerror or exc}")
            return False
        lock = _lock_for(self.path)
        try:
            taken = lock.acquire()
        except OSError as exc:
            self.failed.emit(f"Autosave: {_lock_failure(self.path, exc)}")
            return False
        if not taken:
            self.failed.emit(f"Autosave: {_lock_failure(self.path)}")
            return False
        self._lock = lock
        return True

    def _report(self, job: _CopyJob) -> None:
        """Emit `saved` or `failed` for a finished ``job``, once."""
        if job.reported:
            return
        job.reported = True
        if job.error is not None:
            self._written = None  # the next tick tries again
            exc = job.error
            reason = str(exc).splitlines()[0] if str(exc) else repr(exc)
            self.failed.emit(f"Autosave failed: {reason}")
        elif job.entry is not None:
            self.saved.emit(job.entry.design)

    def _on_worker_returned(self, job: _CopyJob) -> None:
        if job.done.is_set():  # (else `wait` took the job over and reports it)
            self._report(job)

    def wait(self) -> None:
        """Block until the copy being written is on disk, and report it."""
        job, self._job = self._job, None
        if job is not None:
            job.finish()
            self._report(job)

    def discard(self) -> None:
        """Remove this session's recovery copy (the design is saved, replaced or closed)."""
        self.wait()
        RecoveryEntry(self.path, None, datetime.now(), "").remove()
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        self._written = None

    def adopt(self, entry: RecoveryEntry) -> None:
        """Make a restored crash copy this session's recovery file.

        Call after loading ``entry`` into the document: the copy stays on disk (a second
        crash before the next autosave loses nothing) and is removed like our own.
        """
        self.discard()
        self.name = entry.name
        self._adopted = True
        try:
            if self._take_lock():
                self._written = self._stamp()
        finally:
            self._adopted = False

    def shutdown(self) -> None:
        """A clean end of the session: stop the timer and remove the copy."""
        self.stop()
        self.discard()

    # ------------------------------------------------------------ slots
    def _on_timer_timeout(self) -> None:
        self.autosave_now()

    def _on_stack_clean_changed(self, clean: bool) -> None:
        if clean:
            self.discard()

    def _on_document_topology_replaced(self, _topology) -> None:
        self.discard()
