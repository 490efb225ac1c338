"""Cyclic garbage collection on the GUI thread only.

Python's collector runs in whichever thread happens to allocate when a generation's
threshold is crossed; in this application that is often a worker (the solver, a
simulation, a study).  A Qt object caught in a reference cycle (a scene whose slots are
bound methods, a window held by a closure) would then be destroyed from that worker:
Qt cannot unregister the timers of an object destroyed in another thread, and the next
timer event is delivered to freed memory, a segmentation fault in the event loop.

The application therefore switches automatic collection off and collects from a timer
on the GUI thread, by generation with the interpreter's own thresholds, the approach
pyqtgraph documents for the same crash (`pyqtgraph.util.garbage_collector`); collection
waits while a design is being built (`designer.collector.collector_paused`).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

from designer.collector import in_pause

__all__ = ["MainThreadCollector", "collect_on_gui_thread"]

#: How often the GUI thread checks whether a collection is due.
INTERVAL_MS = 500


class MainThreadCollector(QObject):
    """Disables automatic collection and runs due collections from a GUI-thread timer.

    Parameters
    ----------
    interval_ms
        How often to check the generation counts.
    parent
        The owner, normally the QApplication (so the timer lives in its thread).
    """

    def __init__(self, interval_ms: int = INTERVAL_MS, parent: QObject | None = None):
        super().__init__(parent)
        self.thresholds = gc.get_threshold()
        gc.disable()
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.collect_due)
        self.timer.start()

    def collect_due(self) -> int | None:
        """Collect the oldest generation whose count passed its threshold (and the
        younger ones with it), as the interpreter would have; the generation collected,
        or None."""
        if in_pause():
            return None
        counts = gc.get_count()
        due = None
        for generation, (count, threshold) in enumerate(zip(counts, self.thresholds, strict=True)):
            if count <= threshold:
                break
            due = generation
        if due is not None:
            gc.collect(due)
        return due


_collector: MainThreadCollector | None = None


def collect_on_gui_thread(app: QObject) -> MainThreadCollector:
    """Install the GUI-thread collector for ``app`` once per process; the installed one."""
    global _collector
    if _collector is None:
        _collector = MainThreadCollector(parent=app)
    return _collector
