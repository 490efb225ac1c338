"""`IdleWork`: background tasks share a per-turn budget of the GUI thread."""

from __future__ import annotations

import time

import pytest

from designer.gui.idle import IdleWork


def busy(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


def counter_task(units: int, unit_ms: float, log: list, name: str):
    """A task of ``units`` units of ``unit_ms`` each, logging ``name`` per unit."""
    left = [units]

    def step(deadline: float) -> bool:
        while left[0]:
            busy(unit_ms)
            left[0] -= 1
            log.append(name)
            if time.perf_counter() >= deadline:
                break
        return left[0] == 0

    return step


@pytest.fixture
def idle(qapp):
    work = IdleWork(turn_ms=5.0)
    yield work
    work.deleteLater()


def test_tasks_share_each_turn_and_finish(idle):
    log: list[str] = []
    idle.add("a", counter_task(20, 1.0, log, "a"))
    idle.add("b", counter_task(20, 1.0, log, "b"))
    turns = 0
    while idle.pending("a") or idle.pending("b"):
        before = len(log)
        idle.run_turn()
        # Counted, not timed: a unit busy-waits at least 1 ms, so a turn that stops at
        # its 5 ms budget runs at most 5 units, plus one that crossed it for each task.
        assert len(log) - before <= 5 + 2
        turns += 1
    assert log.count("a") == 20 and log.count("b") == 20
    assert turns >= 40 * 1.0 / 5.0  # 40 ms of work in 5 ms turns
    # Round robin: neither task waits for the other to finish.
    first_b = log.index("b")
    assert first_b < log.index("a", first_b) if "a" in log[first_b:] else True
    assert log[: first_b].count("a") < 20


def test_a_newer_task_under_the_same_key_replaces_the_older(idle):
    log: list[str] = []
    idle.add("k", counter_task(50, 1.0, log, "old"))
    idle.run_turn()
    idle.add("k", counter_task(3, 0.1, log, "new"))
    idle.flush()
    assert not idle.pending("k")
    assert log.count("new") == 3 and log.count("old") < 50


def test_cancel_and_the_timer_runs_turns_by_itself(idle, qtbot):
    log: list[str] = []
    idle.add("x", counter_task(5, 0.1, log, "x"))
    idle.cancel("x")
    idle.add("y", counter_task(30, 1.0, log, "y"))
    qtbot.waitUntil(lambda: not idle.pending("y"), timeout=5000)
    assert log == ["y"] * 30


def test_a_task_that_raises_is_dropped_and_reported(idle, monkeypatch):
    reported = []
    monkeypatch.setattr("sys.excepthook", lambda *exc: reported.append(exc[0]))
    log: list[str] = []

    def broken(_deadline: float) -> bool:
        raise RuntimeError("Internal C++ object already deleted.")

    idle.add("broken", broken)
    idle.add("ok", counter_task(3, 0.1, log, "ok"))
    idle.flush()
    assert reported == [RuntimeError]
    assert not idle.pending("broken") and log == ["ok"] * 3


def test_after_work_waits_for_the_tasks_and_runs_once(idle, qtbot):
    log: list[str] = []
    idle.after_work("house", lambda: log.append("house"))
    idle.add("t", counter_task(10, 1.0, log, "t"))
    idle.after_work("house", lambda: log.append("house2"))  # replaces the first
    qtbot.waitUntil(lambda: "house2" in log, timeout=5000)
    qtbot.wait(20)
    assert log == ["t"] * 10 + ["house2"]
