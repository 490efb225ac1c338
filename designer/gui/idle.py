"""`IdleWork`: background work on the GUI thread, a little per turn of the event loop.

Some work must run on the GUI thread (painting, touching scene items, plotting) yet can
take longer than a frame on a big design: recolouring 100,000 links after a solve,
redrawing the far-out picture, redrawing four panels.  Each such job is a *task*: a
function that does a unit of work and says whether it is done.  One zero-delay timer
runs the tasks in turn until the turn's budget (`TURN_MS`) is spent, then lets the
event loop serve input and paint before the next turn.  Separate timers per job would
not do: Qt runs every due timer in one pass, so their slices would add up to one long
stall.

A task is a callable ``step(deadline) -> bool``: work until ``time.perf_counter()``
passes ``deadline`` (or less), return True when finished.  Adding a task under a key
already queued replaces it (the newer work supersedes the older).  A task that raises is
dropped and its error reported through `sys.excepthook`; a task whose widget is gone
should return True.  `IdleWork.after_work` queues housekeeping for when no task is left.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Hashable

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, QTimer

Step = Callable[[float], bool]

TURN_MS = 10.0  # of background work per turn of the event loop, all tasks together


class IdleWork(QObject):
    """The queue of tasks (see the module docstring); one per application."""

    _instance: IdleWork | None = None

    def __init__(self, parent: QObject | None = None, turn_ms: float = TURN_MS):
        super().__init__(parent)
        self.turn_ms = turn_ms
        self._tasks: dict[Hashable, Step] = {}
        self._after: dict[Hashable, Callable[[], None]] = {}
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._on_timer_timeout)

    @classmethod
    def instance(cls) -> IdleWork:
        """The application's queue (made on first use)."""
        if cls._instance is None or not shiboken6.isValid(cls._instance):
            cls._instance = cls(QCoreApplication.instance())
        return cls._instance

    def add(self, key: Hashable, step: Step) -> None:
        """Run ``step`` on coming turns until it returns True (replacing the task queued
        under ``key``, if any; a replaced task keeps its place in the round)."""
        self._tasks[key] = step
        if not self._timer.isActive():
            self._timer.start()

    def cancel(self, key: Hashable) -> None:
        """Drop the task queued under ``key``, if any."""
        self._tasks.pop(key, None)

    def pending(self, key: Hashable) -> bool:
        return key in self._tasks

    def after_work(self, key: Hashable, callback: Callable[[], None]) -> None:
        """Call ``callback`` once no task is left (replacing the one queued under
        ``key``): housekeeping that must not delay the work, nor run in its midst."""
        self._after[key] = callback
        if not self._timer.isActive():
            self._timer.start()

    def run_turn(self) -> None:
        """One turn: each task in order, until the budget is spent."""
        deadline = time.perf_counter() + self.turn_ms / 1000.0
        for key in list(self._tasks):
            step = self._tasks.get(key)
            if step is None:
                continue
            try:
                done = step(deadline)
            except Exception:
                # A broken task must not starve the others: drop it, and report it as
                # any error in a slot is (the crash handler logs it and says so).
                self._tasks.pop(key, None)
                sys.excepthook(*sys.exc_info())
                continue
            if done and self._tasks.get(key) is step:
                del self._tasks[key]
            elif key in self._tasks:
                # Unfinished (or replaced meanwhile): to the back of the round, so that
                # every task gets the head of a turn in its turn.
                self._tasks[key] = self._tasks.pop(key)
            if time.perf_counter() >= deadline:
                break

    def flush(self) -> None:
        """Run every task to the end now (tests, exports, shutdown)."""
        while self._tasks:
            self.run_turn()

    def _on_timer_timeout(self) -> None:
        if self._tasks:
            self.run_turn()
        elif self._after:
            # A turn of its own: the housekeeping may take a while.
            key = next(iter(self._after))
            callback = self._after.pop(key)
            try:
                callback()
            except Exception:
                sys.excepthook(*sys.exc_info())
        if self._tasks or self._after:
            self._timer.start()
