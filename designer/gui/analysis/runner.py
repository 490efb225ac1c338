"""`SolveRunner`: re-solve the design in the background after every edit.

Edits and scenario changes go through a debouncer (superqt's `qdebounced`, leading and
trailing edge) once the event that made them is handled (a gesture's several changes
are one edit); when it fires the runner captures the design on the GUI thread
(`capture_design`: O(1), the columns are shared copy-on-write), and a single superqt
`GeneratorWorker` on Qt's thread pool builds the `Snapshot` from it, then routes, rates
and times the scenario.  The worker yields its stage messages and returns the result; both
come back to the GUI thread through the worker's queued signals, tagged with the
snapshot's generation, and a result whose generation is no longer the design's is
dropped.  A newer edit cancels an older solve cooperatively (the solver polls a flag
between stages).  There is never more than one worker, and a solve is never started from a
completion callback: the debouncer is the only starter, and while a cancelled worker winds
down it retries after `RETRY_MS`.
"""

from __future__ import annotations

import logging
import threading
import traceback
import warnings
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from superqt.utils import GeneratorWorker, qdebounced

from designer.gui.document import Document
from designer.gui.model_events import ModelSlot
from designer.gui.workers import Deferral, create_worker
from designer.model.errors import DesignError
from designer.model.events import Edit
from designer.model.scenario import Scenario, TrainingSpec
from designer.model.topology import Topology
from designer.solver import (
    AnalysisResult,
    Cancelled,
    RouteMemo,
    SolverError,
    analyse,
    build_snapshot,
    capture_design,
    check_solve_memory,
    failed_elements,
    rank_spec,
    resolve_ranks,
)

log = logging.getLogger(__name__)

DEBOUNCE_MS = 200
#: Design settings the scenario's solve does not read: edits of these alone solve nothing.
NOT_SOLVED_SETTINGS = frozenset({"workloads"})
RETRY_MS = 20
# Where the solve's stages end on a progress bar (percent): the snapshot, then the
# scenario-size solve that colours the canvas (the routing and rating most of the work
# is in); the sweep and the training estimate re-time its plans for the rest.
SNAPSHOT_PERCENT = 15
FOCUS_PERCENT = 60


@dataclass(frozen=True)
class _SolveJob:
    """What one solve needs, taken from the live design on the GUI thread."""

    generation: int
    capture: object             # `capture_design`'s frozen view of the design
    spec: object                # `rank_spec`
    selection: tuple[str, ...]
    scenario: Scenario
    training: TrainingSpec
    memo: RouteMemo
    on_focus: Callable[[AnalysisResult], None]
    cancel: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class _Outcome:
    """How a solve ended: a result, a one-line error, or neither (cancelled)."""

    generation: int
    result: AnalysisResult | None = None
    error: str | None = None


def _solve(job: _SolveJob) -> Generator[str | int, None, _Outcome]:
    """The worker's generator: yields stage messages and percentages (ints), returns
    the `_Outcome`.

    Every exception becomes an outcome here, so that the worker always ends with its
    ``returned`` and ``finished`` signals (superqt's worker would swallow a bare
    `RuntimeError` without ``finished``).
    """
    job.entered.set()
    try:
        if job.cancel.is_set():
            return _Outcome(job.generation)
        snap = build_snapshot(job.capture)
        failed = failed_elements(job.capture.columns)
        ranks = resolve_ranks(snap, job.spec, list(job.selection))
        if snap.n_gpus < 2:
            raise SolverError("add at least two GPUs to analyse the design")
        # One that would not fit in memory is refused, saying what would fit.
        check_solve_memory(snap, job.scenario.collective, ranks, job.scenario.algorithm)
        yield SNAPSHOT_PERCENT
        yield f"Solving {job.scenario.collective} on {len(ranks or snap.gpus)} GPUs…"
        result = analyse(snap, job.scenario, ranks, job.training, job.cancel.is_set,
                         on_focus=job.on_focus, memo=job.memo, failed=failed)
        return _Outcome(job.generation, result=result)
    except Cancelled:
        return _Outcome(job.generation)
    except (DesignError, SolverError) as exc:
        return _Outcome(job.generation, error=str(exc))
    except Exception as exc:  # a bug: say so in one line, keep the GUI alive
        traceback.print_exc()
        return _Outcome(job.generation,
                        error=f"internal error: {type(exc).__name__}: {exc}")
    finally:
        job.done.set()


class SolveRunner(QObject):
    """Background solver for one `Document`.

    Signals
    -------
    started(int)
        A solve of that generation began.
    focus_ready(AnalysisResult)
        The scenario-size solve is done (colours, bottleneck); sweep and training follow.
    result_ready(AnalysisResult)
        A complete fresh result (stale ones are dropped before this is emitted).
    failed(int, str)
        The solve of that generation failed; the message is one line.
    progress(str)
        Stage messages while a solve runs.
    percent(int)
        How far the running solve is, 0-100, by stage: the snapshot built
        (`SNAPSHOT_PERCENT`), the focus result (`FOCUS_PERCENT`), then sweep and
        training until the result.
    cancelled(int)
        The solve of the current generation was cancelled (`cancel`).
    """

    started = Signal(int)
    focus_ready = Signal(object)
    result_ready = Signal(object)
    failed = Signal(int, str)
    progress = Signal(str)
    percent = Signal(int)
    cancelled = Signal(int)
    _focus = Signal(int, object)  # from the worker thread: queued to this one
    _asked = Signal()  # queued to this thread: the edits of one event loop turn settle

    def __init__(self, document: Document, parent: QObject | None = None,
                 debounce_ms: int = DEBOUNCE_MS):
        super().__init__(parent)
        self.document = document
        self.enabled = True
        self.selection: list[str] = []
        self.latest: AnalysisResult | None = None
        self.solves_started = 0
        self._worker: GeneratorWorker | None = None
        self._job: _SolveJob | None = None
        self._wanted = False     # a solve is asked for and not started yet
        self._retrying = False   # a retry is armed while a cancelled worker winds down
        # Leading edge: after a quiet spell the first edit solves at once; trailing
        # edge: a burst of edits ends in one solve of the newest state.
        self._debounced_start = qdebounced(self._start_solve, timeout=debounce_ms,
                                           leading=True)
        self._focus.connect(self._on_worker_focus)
        self._asked_posted = False
        self._asked.connect(self._on_asked, Qt.ConnectionType.QueuedConnection)
        self._topology: Topology | None = None
        # Other live work the window puts first (`defer_while`), looked at again every
        # DEFER_POLL_MS while a due solve waits for it.
        self._defer = Deferral(retry=self._start_solve, parent=self)
        # Every edit of the design, one ``changed`` per command (`designer.model.events`).
        self._follow = ModelSlot(self, self._on_design_changed)
        # Routes carried from solve to solve of one design (used by one worker at a
        # time; a new design starts a new memo).
        self._memo = RouteMemo()
        document.topology_replaced.connect(self._on_document_topology_replaced)
        # The generation of the last edit the solve reads (see `describes`).
        self._needed = document.topology.generation
        self._watch(document.topology)

    # ------------------------------------------------------------ triggers
    def describes(self, generation: int) -> bool:
        """Whether a result of the design's ``generation`` still describes the design
        as it is: no edit this solve reads came after it (an edit of the jobs alone,
        say, leaves the scenario's answer as it was)."""
        return generation >= self._needed
    def _watch(self, topo: Topology) -> None:
        if not self.enabled:
            return
        self._topology = topo
        self._follow.watch(topo.events.changed)

    def _on_design_changed(self, edit: Edit) -> None:
        """Solve again unless the edit only touched settings this analysis does not read
        (`NOT_SOLVED_SETTINGS`: the design's training jobs have their own runner)."""
        if edit.events and all(
            name == "settings_changed" and args[0] in NOT_SOLVED_SETTINGS
            for name, args in edit.events
        ):
            return
        self._needed = self.document.topology.generation
        self.schedule()

    def _on_document_topology_replaced(self, topo: Topology) -> None:
        self._needed = topo.generation
        self._memo = RouteMemo()
        self._watch(topo)
        self.latest = None
        self.schedule()

    def schedule(self) -> None:
        """Ask for a solve.  After a quiet spell the first edit solves at once (leading
        edge); edits that follow within the debounce interval restart the wait, so a
        burst of edits ends in one solve of the newest state (trailing edge)."""
        if not self.enabled:
            return
        if self._job is not None:
            self._job.cancel.set()  # whatever is running is already stale
        self._wanted = True
        # The debouncer hears of it once the current event is handled: a gesture that
        # changes the design several times is one edit, never solved half-applied.
        if not self._asked_posted:
            self._asked_posted = True
            self._asked.emit()

    def _on_asked(self) -> None:
        self._asked_posted = False
        if self.enabled and self._wanted:
            self._debounced_start()

    def defer_while(self, busy: Callable[[], bool] | None) -> None:
        """Hold a due solve while ``busy()`` is true (for `MAX_DEFER_MS` at most): the
        window passes the jobs' simulation while the canvas shows its colours, so that
        an edit's answer on screen does not share the interpreter with this one."""
        self._defer.wait_for(busy)

    def set_selection(self, node_ids: list[str]) -> None:
        """GPU selection, for scenarios whose ranks are ``selection``."""
        self.selection = list(node_ids)
        scenario = self.document.topology.settings["scenario"]
        if scenario.get("ranks") == "selection":
            self.schedule()

    @property
    def busy(self) -> bool:
        """A worker is running (or winding down after a cancel)."""
        return self._worker is not None

    @property
    def pending(self) -> bool:
        """A solve is asked for and waits for the debounce or for the running worker."""
        return self._wanted

    # ------------------------------------------------------------ solving
    def _start_solve(self) -> None:
        """The debouncer's (and a retry's) target: start the solve asked for."""
        if not (self.enabled and self._wanted):
            return
        if self.busy:
            # The old worker was told to stop; wait for it rather than run two at once.
            if not self._retrying:
                self._retrying = True
                QTimer.singleShot(RETRY_MS, self, self._on_retry_timeout)
            return
        if self._defer.holding():  # asked again shortly (its retry)
            return
        self._wanted = False
        topo = self.document.topology
        settings = topo.settings
        scenario = Scenario.from_dict(settings["scenario"])
        training = TrainingSpec.from_dict(settings["training"])
        try:
            # Only a capture here (O(1)); the worker turns it into arrays.
            capture = capture_design(topo)
            spec = rank_spec(topo, scenario.ranks)
        except (DesignError, SolverError) as exc:
            self.failed.emit(topo.generation, str(exc))
            return
        generation = capture.generation
        # The focus result is tagged with the solve's number: a superseded solve's (the
        # same generation, cancelled or replaced) neither moves the bar back nor recolours.
        job = _SolveJob(generation, capture, spec, tuple(self.selection), scenario,
                        training, self._memo,
                        partial(self._focus.emit, self.solves_started + 1))
        self._job = job
        self.solves_started += 1
        self.started.emit(generation)
        worker = create_worker(_solve, job, _start_thread=False,
                               _connect={"yielded": self._on_worker_yielded,
                                         "returned": self._on_worker_returned,
                                         "errored": self._on_worker_errored,
                                         "warned": self._on_worker_warned,
                                         "finished": self._on_worker_finished})
        self._worker = worker
        worker.start()

    def _on_retry_timeout(self) -> None:
        self._retrying = False
        self._start_solve()

    def _on_worker_yielded(self, message: str | int) -> None:
        if self._current(self._job):
            if isinstance(message, int):
                self.percent.emit(message)
            else:
                self.progress.emit(message)

    def _on_worker_warned(self, args: tuple) -> None:
        """A warning raised during the solve (superqt catches them on the worker): into
        the log, where the program's other warnings go."""
        message, category, filename, lineno = args[:4]
        log.warning("%s", warnings.formatwarning(message, category, filename, lineno).strip())

    def _on_worker_focus(self, solve: int, result) -> None:
        job = self._job
        if (solve == self.solves_started and job is not None and not job.cancel.is_set()
                and result.generation == self.document.topology.generation):
            self.percent.emit(FOCUS_PERCENT)
            self.focus_ready.emit(result)

    def _on_worker_returned(self, outcome: _Outcome) -> None:
        if outcome.generation != self.document.topology.generation:
            return  # stale: a newer edit is already scheduled
        if outcome.error is not None:
            self.failed.emit(outcome.generation, outcome.error)
        elif outcome.result is not None:
            self.latest = outcome.result
            self.result_ready.emit(outcome.result)
        else:
            self.cancelled.emit(outcome.generation)

    def _on_worker_errored(self, exc: Exception) -> None:
        """Only superqt's own machinery can fail here (`_solve` catches the rest)."""
        job = self._job
        if self._current(job):
            self.failed.emit(job.generation,
                             f"internal error: {type(exc).__name__}: {exc}")

    def _on_worker_finished(self) -> None:
        job = self._job
        # Stopped before its end (superqt's abort, at shutdown): no outcome came.
        if not (job is None or job.done.is_set()) and self._current(job) and self.enabled:
            self.cancelled.emit(job.generation)
        self._worker = None
        self._job = None

    def _current(self, job: _SolveJob | None) -> bool:
        return job is not None and job.generation == self.document.topology.generation

    def cancel(self) -> None:
        """Stop the running solve (the user's Cancel); the next edit solves again."""
        self._wanted = False
        self._debounced_start.cancel()
        if self._job is not None:
            self._job.cancel.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop for good (window close): no more solves, cancel the running one and wait
        for its worker."""
        self.enabled = False
        self._follow.watch(None)
        self._topology = None
        self.cancel()
        job, worker = self._job, self._worker
        if worker is not None:
            worker.quit()  # a worker not started yet never runs the solve
        if job is not None and job.entered.is_set():
            job.done.wait(timeout)
        self._worker = None
        self._job = None


def utilisation_by_link(result: AnalysisResult) -> dict[str, float]:
    """Per link id, the larger utilisation of its two directions."""
    util = result.focus.arc_util
    both = np.maximum(util[0::2], util[1::2])
    return dict(zip(result.snapshot.link_ids, both.tolist(), strict=True))
