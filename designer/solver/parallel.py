"""Fork-join on a second core, for solver stages that do not depend on each other.

Most of a big solve is numpy work on arrays of millions of entries, during which numpy
lets go of the GIL; two such stages (a ring's NVLink sprays and its fabric routes, say)
can then run on two cores at once.  `fork` starts a call on one helper thread and
`Forked.join` waits for its result.

The results do not depend on the threads: each forked call computes a value of its
own from data nobody writes while it runs, and the caller puts the values together in
a fixed order after `join`.  One helper thread is enough for a fork-join of two; a call
forked from the helper itself runs at once (it would otherwise wait for its own thread),
and so does every call where there is one core, or where ``FABRIC_DESIGNER_THREADS=1``
asks for a single thread (`threads`).

What overlaps is numpy work that lets go of the GIL (gathers, sorts, arithmetic on big
arrays); ``np.add.at`` and ``np.bincount`` keep it, and so does Python code.  The helper
allocates from a malloc arena of its own, fresh memory in a new process: its first
forks pay page faults that the caller's thread, reusing memory the process freed
earlier, would not.  Where the forked stages are a few milliseconds (a 16,384-GPU ring)
the two costs about cancel; at 131,072 GPUs the overlap wins (see README, Speed).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")

_HELPER_NAME = "solver-helper"
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_helper = threading.local()     # .active: True on the helper thread
_in_flight = 0                  # forked calls queued or running


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def threads() -> int:
    """Threads a solve may use: 2 where there are two cores or more, else 1.

    ``FABRIC_DESIGNER_THREADS=1`` forces one (to time or debug a solve on one thread),
    ``FABRIC_DESIGNER_THREADS=2`` two whatever the cores (to run the forked path where
    the process sees one core: a container, a CPU-pinned job)."""
    asked = os.environ.get("FABRIC_DESIGNER_THREADS", "").strip()
    if asked in ("1", "2"):
        return int(asked)
    return 2 if _cores() >= 2 else 1


def _mark_helper() -> None:
    _helper.active = True


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(1, thread_name_prefix=_HELPER_NAME,
                                       initializer=_mark_helper)
        return _pool


class Forked(Generic[T]):
    """A call under way on the helper thread, or already made (see `fork`)."""

    def __init__(self, future: Future | None = None, value=None, error=None):
        self._future, self._value, self._error = future, value, error

    def join(self) -> T:
        """The call's result; its exception is raised here, in the caller's thread."""
        if self._future is not None:
            return self._future.result()
        if self._error is not None:
            raise self._error
        return self._value


def fork(fn: Callable[..., T], *args, **kwargs) -> Forked[T]:
    """Start ``fn(*args, **kwargs)`` on the helper thread and return at once.

    Runs the call right away, in this thread, where a second thread would not help
    (one core, ``FABRIC_DESIGNER_THREADS=1``) or could deadlock (called from the
    helper).  Either way `Forked.join` gives the result or raises the call's error.
    """
    if threads() < 2 or getattr(_helper, "active", False):
        return _inline(fn, *args, **kwargs)
    global _in_flight
    with _lock:
        _in_flight += 1
    try:
        future = _get_pool().submit(fn, *args, **kwargs)
    except RuntimeError:
        # The interpreter is exiting (concurrent.futures takes no new work then) while a
        # daemon thread still solves: finish the call here rather than fail with a
        # traceback on the way out.
        with _lock:
            _in_flight -= 1
        return _inline(fn, *args, **kwargs)
    future.add_done_callback(_done)
    return Forked(future)


def _inline(fn: Callable[..., T], *args, **kwargs) -> Forked[T]:
    try:
        return Forked(value=fn(*args, **kwargs))
    except Exception as exc:  # raised by join, as the helper's would be
        return Forked(error=exc)


def _done(_future: Future) -> None:
    global _in_flight
    with _lock:
        _in_flight -= 1


def busy() -> int:
    """Forked calls queued or running on the helper thread (the test suite checks that
    none outlives a test)."""
    return _in_flight


def is_helper(thread: threading.Thread) -> bool:
    """Whether ``thread`` is the helper: it lives as long as the process, idle between
    forks, as a thread pool's threads do."""
    return thread.name.startswith(_HELPER_NAME)
