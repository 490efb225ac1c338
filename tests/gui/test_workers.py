"""Long GUI work (the live solve, the open of a big file, the autosave) runs on superqt
workers in Qt's thread pool, not on Python threads the window starts and joins itself:
while the work runs the pool has one more active worker and Python has no new thread;
the results still arrive on the GUI thread, and waiting for an autosave never depends
on the event loop starting its worker.
"""

from __future__ import annotations

import threading
import time

import pytest
from PySide6.QtCore import QThreadPool, QTimer

from designer.gui import recovery
from designer.gui.analysis import runner as runner_module
from designer.io.fabric_json import save
from designer.model.commands import SetLinkProps
from designer.model.templates import build_template

TIMEOUT_MS = 10_000
#: An NVLink bundle of the example design.
NVLINK = "n01-gpu0:n01-nvs0"


def _pool_active() -> int:
    return QThreadPool.globalInstance().activeThreadCount()


def _new_python_threads(before: set[int]) -> list[str]:
    """Threads Python started since ``before`` (a pool thread that ran Python code shows
    up as a ``_DummyThread``: not one the program started)."""
    return sorted(
        t.name
        for t in threading.enumerate()
        if t.ident not in before and not isinstance(t, threading._DummyThread)
    )


def _quiet(qtbot, runner) -> None:
    qtbot.waitUntil(lambda: runner.latest is not None and not runner.busy, timeout=TIMEOUT_MS)
    qtbot.wait(runner_module.DEBOUNCE_MS + 50)


def test_a_solve_runs_on_a_pool_worker_and_reports_its_stage(window, qtbot, monkeypatch):
    runner = window.analysis.runner
    _quiet(qtbot, runner)
    gate = threading.Event()
    real = runner_module.analyse
    ran_on: list[threading.Thread] = []

    def held(snap, scenario, ranks, training, cancelled, **options):
        ran_on.append(threading.current_thread())
        while not gate.is_set() and not cancelled():
            time.sleep(0.005)
        return real(snap, scenario, ranks, training, cancelled, **options)

    monkeypatch.setattr(runner_module, "analyse", held)
    before = {t.ident for t in threading.enumerate()}
    try:
        with qtbot.waitSignal(runner.progress, timeout=TIMEOUT_MS) as stage:
            window.document.push(SetLinkProps([NVLINK], failed=True))
        assert stage.args[0].startswith("Solving")
        qtbot.waitUntil(lambda: bool(ran_on), timeout=TIMEOUT_MS)
        # A thread Python did not start (a Qt pool thread that runs Python code shows up
        # as a _DummyThread), busy in the pool while the solve is held.  (The pool's
        # active count alone is no proof: the design review's worker may come and go.)
        assert isinstance(ran_on[0], threading._DummyThread)
        assert ran_on[0] is not threading.main_thread()
        assert _pool_active() >= 1
        assert _new_python_threads(before) == []
    finally:
        gate.set()
    with qtbot.waitSignal(runner.result_ready, timeout=TIMEOUT_MS) as done:
        pass
    assert done.args[0].generation == window.document.topology.generation
    qtbot.waitUntil(lambda: not runner.busy, timeout=TIMEOUT_MS)
    window.analysis.runner.shutdown()


def _edit(window) -> None:
    window.document.push(SetLinkProps([NVLINK], failed=True))


def _no_solves(window, qtbot) -> None:
    """Stop the live analysis and the design review (whose debounced worker would start
    meanwhile) and let their workers end, so that the pool's active workers are the
    test's own."""
    window.analysis.runner.shutdown()
    window.review.runner.shutdown()
    qtbot.waitUntil(lambda: _pool_active() == 0, timeout=TIMEOUT_MS)


def test_an_autosave_is_written_by_a_pool_worker(window, qtbot, monkeypatch):
    saver = window.files.autosaver
    gate = threading.Event()
    real = recovery.write_recovery

    def held(*args):
        gate.wait(TIMEOUT_MS / 1000)
        return real(*args)

    monkeypatch.setattr(recovery, "write_recovery", held)
    _no_solves(window, qtbot)
    _edit(window)
    before, pool_before = {t.ident for t in threading.enumerate()}, _pool_active()
    try:
        assert saver.autosave_now()
        qtbot.waitUntil(lambda: _pool_active() == pool_before + 1, timeout=TIMEOUT_MS)
        assert _new_python_threads(before) == []
        assert not saver.path.exists()  # not written on the GUI thread meanwhile
    finally:
        gate.set()
    with qtbot.waitSignal(saver.saved, timeout=TIMEOUT_MS) as saved:
        pass
    assert saved.args[0] == saver.path and saver.path.exists()


def test_waiting_for_an_autosave_inside_the_event_loop_writes_it_once(window, qtbot):
    """Inside the event loop a worker starts on a later turn; `wait` right after
    `autosave_now` must not wait for that turn (it would never come), and the copy is
    written and reported once."""
    saver = window.files.autosaver
    saved = []
    saver.saved.connect(saved.append)
    _no_solves(window, qtbot)
    _edit(window)
    pool_before = _pool_active()
    outcome = []

    def tick() -> None:
        outcome.append(saver.autosave_now())
        saver.wait()
        outcome.append(saver.path.exists())

    QTimer.singleShot(0, tick)
    qtbot.waitUntil(lambda: len(outcome) == 2, timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: _pool_active() == pool_before, timeout=TIMEOUT_MS)
    qtbot.wait(50)  # the worker's late turn, if any, reports nothing more
    assert outcome == [True, True]
    assert saved == [saver.path]


def test_a_big_open_reads_the_file_on_a_pool_worker(window, qtbot, monkeypatch, tmp_path):
    import designer.gui.open_progress as op

    path = tmp_path / "pod.fabric.json"
    save(build_template("superpod", sus=1), path)
    gate = threading.Event()
    real = op.load
    seen = {}

    def held(*args, **kwargs):
        gate.wait(TIMEOUT_MS / 1000)
        return real(*args, **kwargs)

    def look() -> None:  # on the GUI thread, while the dialog's loop runs
        seen["pool"] = _pool_active() - pool_before
        seen["threads"] = _new_python_threads(before)
        gate.set()

    monkeypatch.setattr(op, "load", held)
    _no_solves(window, qtbot)
    before, pool_before = {t.ident for t in threading.enumerate()}, _pool_active()
    dialog = op.OpenProgress(window, path.name)
    QTimer.singleShot(100, dialog, look)
    try:
        topology = dialog.load(path)
    finally:
        gate.set()
    assert seen == {"pool": 1, "threads": []}
    assert topology is not None and len(list(topology.links())) > 0
    dialog.close()


@pytest.mark.filterwarnings("default::RuntimeWarning")  # as the program runs, not "error"
def test_a_warning_during_a_solve_is_logged_and_the_result_applied(
    window, qtbot, monkeypatch, caplog
):
    """A warning on the solve's thread reaches the worker's ``warned`` signal
    (`designer.gui.workers`); the runner logs it instead of dropping it, and the solve
    goes on."""
    import warnings

    runner = window.analysis.runner
    _quiet(qtbot, runner)
    real = runner_module.analyse

    def warns(*args, **options):
        warnings.warn("an odd figure in the solve", RuntimeWarning, stacklevel=1)
        return real(*args, **options)

    monkeypatch.setattr(runner_module, "analyse", warns)
    with caplog.at_level("WARNING", logger=runner_module.__name__):
        with qtbot.waitSignal(runner.result_ready, timeout=TIMEOUT_MS) as done:
            window.document.push(SetLinkProps([NVLINK], failed=True))
        qtbot.waitUntil(lambda: not runner.busy, timeout=TIMEOUT_MS)
    assert done.args[0].generation == window.document.topology.generation
    assert any("an odd figure in the solve" in r.getMessage() for r in caplog.records)
    runner.shutdown()


def test_edits_made_in_one_turn_of_the_event_loop_start_one_solve(window, qtbot):
    """A command that changes the design several times, or several commands pushed by one
    gesture, solve once, after the gesture: never a half-applied state."""
    runner = window.analysis.runner
    _quiet(qtbot, runner)
    started = []
    runner.started.connect(started.append)
    for gpu in range(3):  # no event processed in between
        window.document.push(SetLinkProps([f"n01-gpu{gpu}:n01-nvs0"], failed=True))
    assert started == []  # nothing solved inside the gesture
    final = window.document.topology.generation
    with qtbot.waitSignal(runner.result_ready, timeout=TIMEOUT_MS) as done:
        pass
    qtbot.waitUntil(lambda: not runner.busy, timeout=TIMEOUT_MS)
    qtbot.wait(2 * runner_module.DEBOUNCE_MS)
    assert started == [final] and done.args[0].generation == final
    runner.shutdown()
