"""Shared test setup: headless Qt, hypothesis profile, and a guard against leaked threads."""

import os
import sys
import threading
import time

# Tests never need a display; set before anything imports Qt.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")

#: How long a thread a test started may take to wind down after the test before it
#: counts as leaked (a worker finishing its last callback, not a running one).
THREAD_GRACE_S = 1.0


def _alive(thread: threading.Thread) -> bool:
    """Whether ``thread`` still runs.

    A thread Python did not start (a Qt worker that ran Python code) is a
    ``_DummyThread`` that claims to be alive forever; on Linux ask the kernel instead.
    """
    if isinstance(thread, threading._DummyThread):
        native = getattr(thread, "native_id", None)
        if native is not None and os.path.isdir("/proc/self/task"):
            return os.path.isdir(f"/proc/self/task/{native}")
    return thread.is_alive()


def _running_threads(before: set[int]) -> list[threading.Thread]:
    return [t for t in threading.enumerate()
            if t.ident not in before and _alive(t) and not _solver_helper(t)]


def _solver_helper(thread: threading.Thread) -> bool:
    """The solver's helper thread (`designer.solver.parallel`) lives as long as the
    process, as a pool's threads do; `_solver_forks` checks that it is idle instead."""
    parallel = sys.modules.get("designer.solver.parallel")
    return parallel is not None and parallel.is_helper(thread)


def _solver_forks() -> int:
    """Calls forked onto the solver's helper thread and not finished."""
    parallel = sys.modules.get("designer.solver.parallel")
    return 0 if parallel is None else parallel.busy()


def _qt_pool_active() -> int:
    """Active QThreadPool workers, or 0 when the test session never loaded Qt.

    Model and solver tests must not import Qt, so only look when PySide6 is loaded.
    """
    if "PySide6.QtCore" not in sys.modules:
        return 0
    from PySide6.QtCore import QThreadPool

    return QThreadPool.globalInstance().activeThreadCount()


def _qt_pool_retire_idle() -> None:
    """Let the QThreadPool's idle threads exit (they wait ~30 s for more work otherwise).

    A pool thread that ran Python code can be a ``_DummyThread`` (the solver's helper
    pool, say, was first used from it); idle, it runs nothing, and retiring it lets the
    check below see only threads that do.
    """
    if "PySide6.QtCore" not in sys.modules:
        return
    from PySide6.QtCore import QThreadPool

    pool = QThreadPool.globalInstance()
    if pool.activeThreadCount() == 0:
        pool.waitForDone(int(THREAD_GRACE_S * 1000))


def pytest_addoption(parser):
    parser.addoption(
        "--soak-steps", type=int, default=None, metavar="N",
        help="steps of the GUI soak (tests/gui/test_soak.py::test_soak); the default run "
             "takes a short one, CI the long one (FABRIC_SOAK_OPS also sets it)")
    parser.addoption(
        "--x11-gestures", type=int, default=None, metavar="N",
        help="gestures of the X11 soak (tests/gui/test_x11_soak.py, marked soak: run it "
             "with -m soak)")


@pytest.fixture(scope="session", autouse=True)
def _isolated_log_dir(tmp_path_factory):
    """Every command run appends to the log file (`designer.logs`): keep it out of the
    real home directory.  Set in the environment, so subprocesses inherit it."""
    mp = pytest.MonkeyPatch()
    mp.setenv("FABRIC_DESIGNER_LOG_DIR", str(tmp_path_factory.mktemp("logs")))
    yield
    mp.undo()


@pytest.fixture(autouse=True)
def no_thread_left_running(request):
    """Fail a test that leaves a Python thread or a Qt pool worker running."""
    before = {t.ident for t in threading.enumerate()}
    pool_before = _qt_pool_active()
    yield
    deadline = time.monotonic() + THREAD_GRACE_S
    for t in _running_threads(before):
        if not isinstance(t, threading._DummyThread):
            t.join(max(0.0, deadline - time.monotonic()))
    while time.monotonic() < deadline and (_qt_pool_active() > pool_before
                                           or _solver_forks()):
        time.sleep(0.02)
    _qt_pool_retire_idle()
    leaked = _running_threads(before)
    settle = time.monotonic() + 0.5  # a retired pool thread's last moments
    while leaked and time.monotonic() < settle:
        time.sleep(0.01)
        leaked = _running_threads(before)
    pool_after = _qt_pool_active()
    problems = []
    if leaked:
        problems.append("threads still running: " + ", ".join(sorted(t.name for t in leaked)))
    if _solver_forks():
        problems.append(f"{_solver_forks()} call(s) forked onto the solver's helper unfinished")
    if pool_after > pool_before:
        problems.append(f"{pool_after - pool_before} QThreadPool worker(s) still active")
    if problems:
        pytest.fail(f"{request.node.nodeid} left {'; '.join(problems)}", pytrace=False)
