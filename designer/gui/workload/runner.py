"""`WorkloadRunner`: simulate the design's jobs again in the background after every edit.

It works as `designer.gui.analysis.runner.SolveRunner` does for the single collective:
an edit of the design or of its jobs (``settings.workloads``) asks for a simulation
once the event that made it is handled; superqt's `qdebounced` (leading and trailing
edge) turns a burst of edits into one; the design is captured on the GUI thread (O(1))
and a single superqt worker builds the snapshot, places the jobs, builds their traffic
and simulates (`designer.gui.workload.build.simulate_jobs`).  The result comes back
tagged with the design's generation and is dropped when a newer edit has been made.
A newer edit cancels the running simulation cooperatively; there is never more than
one worker, and a simulation is never started from a completion callback (while a
cancelled worker winds down, the start is retried after `RETRY_MS`).

A `SimulationMemo` and a `TrafficCache` are carried from simulation to simulation of
one design, so an edit re-solves only the collectives it can have changed.
"""

from __future__ import annotations

import logging
import threading
import traceback
import warnings
from collections.abc import Callable, Generator
from dataclasses import dataclass, field

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from superqt.utils import GeneratorWorker, qdebounced

from designer.gui.document import Document
from designer.gui.model_events import ModelSlot
from designer.gui.workers import Deferral, create_worker
from designer.gui.workload.build import TrafficCache, WorkloadResult, simulate_jobs
from designer.gui.workload.timeline import BARS, workload_bars
from designer.model.errors import DesignError
from designer.model.events import Edit
from designer.model.topology import Topology
from designer.solver import Cancelled, SolverError, capture_design
from designer.workload.files import design_jobs
from designer.workload.memo import SimulationMemo

log = logging.getLogger(__name__)

DEBOUNCE_MS = 200
RETRY_MS = 20
#: Settings a simulation of the jobs does not read (the single-collective scenario).
_IGNORED_SETTINGS = frozenset({"scenario", "training"})


@dataclass(frozen=True)
class _Run:
    """What one simulation needs, taken from the live design on the GUI thread."""

    generation: int
    capture: object
    jobs: tuple
    memo: SimulationMemo
    traffic: TrafficCache
    cancel: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    #: Given the fraction simulated, on the worker thread (`WorkloadRunner.percent`).
    report: Callable[[float], None] | None = None
    #: The last result's timeline bars, carried from run to run (`_bars`).
    bars: dict = field(default_factory=dict)


@dataclass(frozen=True)
class _Outcome:
    generation: int
    result: WorkloadResult | None = None
    error: str | None = None


def _simulate(run: _Run) -> Generator[str, None, _Outcome]:
    """The worker's generator: yields a stage message, returns the `_Outcome` (every
    exception becomes one, so the worker always ends with ``returned``)."""
    run.entered.set()
    try:
        if run.cancel.is_set():
            return _Outcome(run.generation)
        yield f"Simulating {len(run.jobs)} job(s)…"
        result = simulate_jobs(
            run.capture,
            run.jobs,
            memo=run.memo,
            traffic=run.traffic,
            cancelled=run.cancel.is_set,
            progress=run.report,
        )
        # The timeline's ~80,000 bars of four big jobs take a fifth of a second to lay
        # out: here, not on the GUI thread, and only when the timeline changed.
        result.prepared[BARS] = _bars(run.bars, result)
        return _Outcome(run.generation, result=result)
    except Cancelled:
        return _Outcome(run.generation)
    except (DesignError, SolverError, ValueError) as exc:
        return _Outcome(run.generation, error=str(exc))
    except Exception as exc:  # a bug: one line, keep the GUI alive
        traceback.print_exc()
        return _Outcome(run.generation, error=f"internal error: {type(exc).__name__}: {exc}")
    finally:
        run.done.set()


def _bars(last: dict, result: WorkloadResult):
    """`workload_bars` of ``result``, or the last result's when they are drawn from the
    same timeline (the very tuple: the memo hands it on while no job's run changed) and
    the same jobs' names and iteration times; ``last`` keeps them for the next run."""
    sim = result.simulation
    key = tuple((j.name, j.iteration_s) for j in sim.jobs)
    if last.get("timeline") is sim.timeline and last.get("key") == key:
        return last["bars"]
    bars = workload_bars(result)
    last.update(timeline=sim.timeline, key=key, bars=bars)
    return bars


def _matters(edit: Edit) -> bool:
    """Whether ``edit`` can change a simulation of the jobs: anything but moving nodes
    on the canvas and the single-collective scenario's settings (a drag of a rack
    re-simulates nothing)."""
    for name, args in edit:
        if name == "node_moved":
            continue
        if name != "settings_changed" or args[0] not in _IGNORED_SETTINGS:
            return True
    return False


class WorkloadRunner(QObject):
    """Background simulation of one `Document`'s jobs.

    Signals
    -------
    started(int)
        A simulation of that generation began.
    result_ready(object)
        A fresh `WorkloadResult`, or None when the design has no jobs.
    failed(int, str)
        The simulation of that generation failed (one line).
    progress(str)
        Stage messages.
    percent(int, int)
        How far the simulation of that generation is (0-100), now and then.
    cancelled(int)
        The simulation of the current generation was cancelled.
    """

    started = Signal(int)
    result_ready = Signal(object)
    failed = Signal(int, str)
    progress = Signal(str)
    percent = Signal(int, int)
    cancelled = Signal(int)
    _asked = Signal()

    def __init__(
        self, document: Document, parent: QObject | None = None, debounce_ms: int = DEBOUNCE_MS
    ):
        super().__init__(parent)
        self.document = document
        self.enabled = True
        self.latest: WorkloadResult | None = None
        self.runs_started = 0
        self._worker: GeneratorWorker | None = None
        self._run: _Run | None = None
        self._wanted = False
        self._retrying = False
        self._debounced_start = qdebounced(self._start, timeout=debounce_ms, leading=True)
        # Other live work the window puts first (`defer_while`).
        self._defer = Deferral(retry=self._start, parent=self)
        self._asked_posted = False
        self._asked.connect(self._on_asked, Qt.ConnectionType.QueuedConnection)
        self._follow = ModelSlot(self, self._on_topology_changed)
        self._memo = SimulationMemo()
        self._traffic = TrafficCache()
        self._bars: dict = {}
        document.topology_replaced.connect(self._on_document_topology_replaced)
        # The generation of the last edit a simulation reads (see `describes`).
        self._needed = document.topology.generation
        self._watch(document.topology)

    # ------------------------------------------------------------ triggers
    def describes(self, generation: int) -> bool:
        """Whether a result of the design's ``generation`` still describes the design
        as it is: no edit a simulation reads came after it (moving nodes, say, does
        not)."""
        return generation >= self._needed
    def _watch(self, topo: Topology) -> None:
        if self.enabled:
            self._follow.watch(topo.events.changed)

    def _on_document_topology_replaced(self, topo: Topology) -> None:
        self._needed = topo.generation
        self._memo = SimulationMemo()
        self._traffic = TrafficCache()
        self._bars = {}
        self.latest = None
        self._watch(topo)
        self.schedule()

    def _on_topology_changed(self, edit: Edit) -> None:
        if _matters(edit):
            self._needed = self.document.topology.generation
            self.schedule()

    def schedule(self) -> None:
        """Ask for a simulation of the design as it is once the current event is
        handled (debounced: a burst of edits ends in one simulation of the newest state)."""
        if not self.enabled:
            return
        if self._run is not None:
            self._run.cancel.set()  # already stale
        self._wanted = True
        if not self._asked_posted:
            self._asked_posted = True
            self._asked.emit()

    def _on_asked(self) -> None:
        self._asked_posted = False
        if self.enabled and self._wanted:
            self._debounced_start()

    @property
    def memo(self) -> SimulationMemo:
        """What the simulations of the open design carry from one to the next."""
        return self._memo

    @property
    def busy(self) -> bool:
        """A worker is running (or winding down after a cancel)."""
        return self._worker is not None

    @property
    def pending(self) -> bool:
        """A simulation is asked for and not started yet."""
        return self._wanted

    # ------------------------------------------------------------ running
    def defer_while(self, busy: Callable[[], bool] | None) -> None:
        """Hold a due simulation while ``busy()`` is true (for `MAX_DEFER_MS` at most):
        the window passes its solve while the canvas shows the solve's colours."""
        self._defer.wait_for(busy)

    def _start(self) -> None:
        if not (self.enabled and self._wanted):
            return
        if self.busy:
            if not self._retrying:
                self._retrying = True
                QTimer.singleShot(RETRY_MS, self, self._on_retry_timeout)
            return
        if self._defer.holding():  # asked again shortly (its retry)
            return
        self._wanted = False
        topo = self.document.topology
        try:
            jobs = tuple(design_jobs(topo))
            capture = capture_design(topo) if jobs else None
        except (ValueError, DesignError, SolverError) as exc:
            self.latest = None
            self.failed.emit(topo.generation, str(exc))
            return
        if not jobs:
            self.latest = None
            self.result_ready.emit(None)
            return
        run = _Run(
            capture.generation,
            capture,
            jobs,
            self._memo,
            self._traffic,
            report=self._reporter(capture.generation),
            bars=self._bars,
        )
        self._run = run
        self.runs_started += 1
        self.started.emit(run.generation)
        worker = create_worker(
            _simulate,
            run,
            _start_thread=False,
            _connect={
                "yielded": self._on_worker_yielded,
                "returned": self._on_worker_returned,
                "errored": self._on_worker_errored,
                "warned": self._on_worker_warned,
                "finished": self._on_worker_finished,
            },
        )
        self._worker = worker
        worker.start()

    def _reporter(self, generation: int) -> Callable[[float], None]:
        """What the worker calls with the fraction simulated: `percent`, once per whole
        percent (emitted from the worker thread, delivered on the GUI thread)."""
        last = [-1]

        def report(fraction: float) -> None:
            pct = int(100 * fraction)
            if pct != last[0]:
                last[0] = pct
                self.percent.emit(generation, pct)

        return report

    def _on_retry_timeout(self) -> None:
        self._retrying = False
        self._start()

    def _current(self, run: _Run | None) -> bool:
        return run is not None and run.generation == self.document.topology.generation

    def _on_worker_yielded(self, message: str) -> None:
        if self._current(self._run):
            self.progress.emit(message)

    def _on_worker_warned(self, args: tuple) -> None:
        message, category, filename, lineno = args[:4]
        log.warning("%s", warnings.formatwarning(message, category, filename, lineno).strip())

    def _on_worker_returned(self, outcome: _Outcome) -> None:
        if outcome.generation != self.document.topology.generation:
            return  # stale: a newer edit is scheduled
        run = self._run
        if run is not None and run.generation == outcome.generation and run.cancel.is_set():
            self.cancelled.emit(outcome.generation)  # the user's Cancel came first
            return
        if outcome.error is not None:
            self.latest = None
            self.failed.emit(outcome.generation, outcome.error)
        elif outcome.result is not None:
            self.latest = outcome.result
            self.result_ready.emit(outcome.result)
        else:
            self.cancelled.emit(outcome.generation)

    def _on_worker_errored(self, exc: Exception) -> None:
        run = self._run
        if self._current(run):
            self.failed.emit(run.generation, f"internal error: {type(exc).__name__}: {exc}")

    def _on_worker_finished(self) -> None:
        run = self._run
        if not (run is None or run.done.is_set()) and self._current(run) and self.enabled:
            self.cancelled.emit(run.generation)
        self._worker = None
        self._run = None

    def cancel(self) -> None:
        """Stop the running simulation (the user's Cancel); the next edit runs again."""
        self._wanted = False
        self._debounced_start.cancel()
        if self._run is not None:
            self._run.cancel.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop for good (window close): cancel the running simulation and wait for it."""
        self.enabled = False
        self._follow.watch(None)
        self.cancel()
        run, worker = self._run, self._worker
        if worker is not None:
            worker.quit()
        if run is not None and run.entered.is_set():
            run.done.wait(timeout)
        self._worker = None
        self._run = None
