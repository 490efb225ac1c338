"""Qt objects in reference cycles are collected on the GUI thread, never in a worker
(`designer.gui.main_thread_gc`): destroyed from a worker, a QObject's timers stay
registered and the next timer event crashes the process."""

from __future__ import annotations

import gc
import threading
import weakref

from PySide6.QtCore import QObject, QTimer

from designer.collector import collector_paused
from designer.gui.app import application
from designer.gui.main_thread_gc import MainThreadCollector


class _Cyclic(QObject):
    """A QObject with a timer, kept alive only by a reference to itself."""

    def __init__(self):
        super().__init__()
        self.me = self
        self.timer = QTimer(self)


def _allocate_in_worker() -> None:
    """What a solver thread does: make many container objects (each generation-0
    threshold crossed triggers an automatic collection in this thread, if enabled)."""

    def churn():
        keep = [[i] for i in range(50_000)]
        del keep

    worker = threading.Thread(target=churn)
    worker.start()
    worker.join()


def test_a_cycle_holding_a_qt_object_dies_on_the_gui_thread(qtbot):
    application()
    assert not gc.isenabled()
    died_on: list[threading.Thread] = []
    obj = _Cyclic()
    weakref.finalize(obj, lambda: died_on.append(threading.current_thread()))
    del obj
    _allocate_in_worker()
    assert died_on == []  # the worker allocated past every threshold: nothing collected
    keep = [[i] for i in range(5_000)]  # the GUI thread allocates too: a collection is due
    qtbot.waitUntil(lambda: bool(died_on), timeout=5000)
    del keep
    assert died_on == [threading.main_thread()]


def test_the_collector_waits_while_a_design_is_built(qtbot):
    application()
    collector = MainThreadCollector(interval_ms=60_000)  # driven by hand below
    try:
        keep = [[i] for i in range(5_000)]  # past generation 0's threshold
        assert gc.get_count()[0] > collector.thresholds[0]
        with collector_paused():
            assert collector.collect_due() is None
        assert collector.collect_due() is not None
        assert gc.get_count()[0] < collector.thresholds[0]
        del keep
    finally:
        collector.timer.stop()
        collector.deleteLater()
