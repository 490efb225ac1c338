"""superqt's thread workers, without their process-wide swap of the warning settings.

superqt's `WorkerBase.run` wraps the work in `warnings.catch_warnings()`, sets an
"always" filter and points `warnings.showwarning` at the worker's ``warned`` signal.
Those are the interpreter's global settings, and `catch_warnings` restores them in the
order the workers end, not the order they started: when two workers overlap (here the
solve, the design review and the workload simulation often do), the one started first
and ended first restores the settings the second then overwrites with its own.  After
both ended, every warning of the program, on any thread, went to the first worker's
``warned`` signal, and the "always" filter stayed.

`create_worker` is superqt's, with worker classes whose `run` keeps the same protocol
(``started``, ``returned`` or ``errored``, ``finished``) and leaves the settings alone.
A warning raised on a worker's thread still reaches that worker's ``warned`` signal:
`warnings.showwarning` is replaced once, by a function that asks which worker, if any,
runs on the current thread, and otherwise calls the one it replaced.

`Deferral` is how one runner lets another's work go first: background threads share
one interpreter, so two answers computed at once each come later than either alone.
"""

from __future__ import annotations

import inspect
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer
from superqt.utils import FunctionWorker, GeneratorWorker
from superqt.utils import create_worker as _superqt_create_worker

__all__ = ["DEFER_POLL_MS", "MAX_DEFER_MS", "Deferral", "create_worker"]

#: How often a deferred start looks again whether the work it waits for is done.
DEFER_POLL_MS = 50
#: The longest a due start waits for other work.
MAX_DEFER_MS = 5000

_local = threading.local()
_lock = threading.Lock()
_previous_showwarning = None


def _showwarning(message, category, filename, lineno, file=None, line=None) -> None:
    worker = getattr(_local, "worker", None)
    if worker is not None:
        worker.warned.emit((message, category, filename, lineno, file, line))
    else:
        _previous_showwarning(message, category, filename, lineno, file, line)


def _install() -> None:
    """Route warnings by thread, once per process."""
    global _previous_showwarning
    with _lock:
        if warnings.showwarning is not _showwarning:
            _previous_showwarning = warnings.showwarning
            warnings.showwarning = _showwarning


class _Run:
    """`WorkerBase.run`'s protocol, with the warnings routed by thread (see the
    module) instead of through `warnings.catch_warnings`."""

    def run(self) -> None:
        _install()
        self.started.emit()
        self._running = True
        _local.worker = self
        try:
            result = self.work()
            if isinstance(result, RuntimeError):
                # As superqt: the worker was likely deleted; say so, and nothing more.
                warnings.warn(f"RuntimeError in aborted thread: {result}", RuntimeWarning,
                              stacklevel=2)
                return
            if isinstance(result, Exception):
                raise result
            if not self.abort_requested:
                self.returned.emit(result)
        except Exception as exc:
            self.errored.emit(exc)
        finally:
            _local.worker = None
        self._running = False
        self.finished.emit()
        self._finished.emit(self)


class _FunctionWorker(_Run, FunctionWorker):
    pass


class _GeneratorWorker(_Run, GeneratorWorker):
    pass


def create_worker(func, *args: Any, **kwargs: Any):
    """`superqt.utils.create_worker` with this module's worker classes (a generator
    function gets a `GeneratorWorker`, anything else a `FunctionWorker`)."""
    if "_worker_class" not in kwargs:
        kwargs["_worker_class"] = (
            _GeneratorWorker if inspect.isgeneratorfunction(func) else _FunctionWorker
        )
    return _superqt_create_worker(func, *args, **kwargs)


class Deferral:
    """Whether due background work should wait for other work first.

    A runner asks `holding` before starting (and, for long work, at its pause points);
    while the predicate given to `wait_for` is true the answer is yes, for
    ``max_ms`` at most from the first yes, so that a stuck predicate cannot starve it.
    With ``retry``, each yes also arms a single-shot timer (owned by ``parent``) that
    calls it `DEFER_POLL_MS` later: the runner's start, asked again.
    """

    def __init__(self, max_ms: int = MAX_DEFER_MS, retry: Callable[[], None] | None = None,
                 parent: QObject | None = None) -> None:
        self.max_ms = max_ms
        self._busy: Callable[[], bool] | None = None
        self._since: float | None = None
        self._timer: QTimer | None = None
        if retry is not None:
            self._timer = QTimer(parent)
            self._timer.setSingleShot(True)
            self._timer.setInterval(DEFER_POLL_MS)
            self._timer.timeout.connect(retry)

    def wait_for(self, busy: Callable[[], bool] | None) -> None:
        """Wait while ``busy()`` is true (None: never wait)."""
        self._busy = busy

    @property
    def active(self) -> bool:
        """Whether a predicate is set (a runner polls only then)."""
        return self._busy is not None

    def holding(self) -> bool:
        """Whether the work should wait now."""
        if self._busy is None or not self._busy():
            self._since = None
            return False
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if (now - self._since) * 1000 >= self.max_ms:
            self._since = None
            return False
        if self._timer is not None:
            self._timer.start()
        return True
