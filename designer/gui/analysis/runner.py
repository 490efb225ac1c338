"""`SolveRunner`: re-solve the design in the background after every edit.

Edits and scenario changes restart a debounce timer; when it fires the runner captures
the design on the GUI thread (`capture_design`: O(1), the columns are shared copy-on-
write), and a single worker thread builds the `Snapshot` from it, then routes, rates
and times the scenario.  The result comes back to the GUI thread through a queued
signal, tagged with the snapshot's generation; a result whose generation is no longer
the design's is dropped.  A newer edit cancels an older solve cooperatively (the solver
polls a flag between stages).  There is never more than one worker, and a solve is never
started from a completion callback: the debounce timer is the only starter, and it waits
for a cancelled worker to wind down by re-arming itself.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal

from designer.gui.document import Document
from designer.model.columns import FrozenColumns
from designer.model.errors import DesignError
from designer.model.scenario import Scenario, TrainingSpec
from designer.model.topology import Topology
from designer.solver import check_solve_memory
from designer.solver.errors import SolverError
from designer.solver.flows.ring_layout import first_ranks
from designer.solver.pipeline import SWEEP, CollectiveResult, solve_collective
from designer.solver.reuse import RouteMemo
from designer.solver.snapshot.build import Snapshot, build_snapshot, capture_design
from designer.solver.training.step import TrainingWorkload
from designer.solver.training.workload import TrainingReport, training_report

DEBOUNCE_MS = 200
RETRY_MS = 20


@dataclass(frozen=True, eq=False)
class AnalysisResult:
    """Everything one background solve produced, for one design generation."""

    generation: int
    snapshot: Snapshot
    scenario: Scenario
    ranks: tuple[int, ...] | None
    focus: CollectiveResult          # at the scenario's message size: colours, timeline
    sweep: CollectiveResult | None   # busbw against message size (None in a focus result)
    training: TrainingReport | None
    seconds: float
    notes: tuple[str, ...] = field(default=())
    #: Ids of the failed nodes, then of the failed links, of the solved design (a
    #: what-if failure is often all that tells two results apart).
    failed: tuple[str, ...] = field(default=())


START_YIELD_S = 0.003  # the worker's first pause (see `SolveRunner._on_timer_timeout`)


class _Cancelled(Exception):
    pass


@dataclass(frozen=True)
class GroupRanks:
    """A scenario's ``group:<id>`` ranks, with the group's members read on the GUI
    thread."""

    group_id: str
    members: tuple[str, ...]


def rank_spec(topo: Topology, spec):
    """The scenario's ``ranks`` with what resolving it needs from the live design taken
    now (a group's members), so that `resolve_ranks` can run on the worker thread."""
    if isinstance(spec, str) and spec.startswith("group:"):
        gid = spec.split(":", 1)[1]
        if not topo.has_group(gid):
            raise SolverError(f"scenario ranks: no group {gid!r}")
        return GroupRanks(gid, tuple(topo.members(gid)))
    return spec


def resolve_ranks(snap: Snapshot, spec, selection: list[str]) -> list[int] | None:
    """Rank indices for a scenario's ``ranks`` (``all``, N, ids, ``selection``, or a
    group as `rank_spec` gives it)."""
    if spec == "all":
        return None
    index = {snap.node_ids[g]: r for r, g in enumerate(snap.gpus.tolist())}
    if spec == "selection":
        ranks = [index[n] for n in selection if n in index]
        if len(ranks) < 2:
            raise SolverError("select at least two GPUs to use the selection as ranks")
        return sorted(ranks)
    if isinstance(spec, int):
        if spec > snap.n_gpus:
            raise SolverError(f"scenario ranks {spec}: the design has {snap.n_gpus} GPUs")
        return first_ranks(snap, spec)
    if isinstance(spec, GroupRanks):
        ranks = sorted(index[n] for n in spec.members if n in index)
        if len(ranks) < 2:
            raise SolverError(f"group {spec.group_id!r} has fewer than two working GPUs")
        return ranks
    missing = [x for x in spec if x not in index]
    if missing:
        raise SolverError(f"scenario ranks: no working GPU {missing[0]!r}")
    return sorted(index[x] for x in spec)


def failed_elements(columns: FrozenColumns) -> tuple[str, ...]:
    """Ids of the failed nodes, then of the failed links, in a design's columns."""
    nodes = np.flatnonzero(columns.node_failed).tolist()
    links = np.flatnonzero(columns.link_failed).tolist()
    return (*(columns.node_ids[i] for i in nodes), *(columns.keys[i] for i in links))


def analyse(snap: Snapshot, scenario: Scenario, ranks: list[int] | None,
            training: TrainingSpec | None, cancelled, on_focus=None,
            memo: RouteMemo | None = None, failed: tuple[str, ...] = ()) -> AnalysisResult:
    """The worker's job (pure: no Qt, no live model).

    ``on_focus`` receives a first `AnalysisResult` with only the scenario-size solve (no
    sweep, no training), so the canvas can recolour before the curves are done.

    The three solves (scenario size, sweep, training all-reduce) share one solve cache:
    the snapshot is routed and rated once per collective, algorithm and rank set, and
    the sweep and a training all-reduce on the same ranks only re-time the plans.  A
    ``memo`` carried from the previous snapshot of the same design lets the routing
    reuse what the edit did not touch (`designer.solver.reuse`).  ``failed``
    (`failed_elements`) is recorded in the result for the labels that describe it.
    """
    t0 = time.perf_counter()
    cache: dict = {} if memo is None else {"memo": memo}

    def check() -> bool:
        if cancelled():
            raise _Cancelled
        return False

    focus = solve_collective(snap, scenario.collective, sizes=[scenario.bytes],
                             algorithm=scenario.algorithm, ranks=ranks,
                             launch=scenario.launch, cancelled=check, cache=cache)
    if on_focus is not None:
        on_focus(AnalysisResult(snap.generation, snap, scenario,
                                tuple(ranks) if ranks else None, focus, None, None,
                                time.perf_counter() - t0, failed=failed))
    sweep = solve_collective(snap, scenario.collective, sizes=SWEEP,
                             algorithm=scenario.algorithm, ranks=ranks,
                             launch=scenario.launch, cancelled=check, cache=cache)
    report = None
    notes = list(dict.fromkeys((*focus.notes, *sweep.notes)))  # the model's caveats
    if training is not None and snap.n_gpus >= 2:
        dp = training.dp_size or snap.n_gpus
        wl = TrainingWorkload(params=training.params, grad_dtype=training.grad_dtype,
                              dp_size=min(dp, snap.n_gpus), compute_s=training.compute_s,
                              overlap=training.overlap)
        try:
            report = training_report(snap, wl, compute_cv=training.compute_cv, n_steps=500,
                                     cache=cache)
        except SolverError as exc:
            notes.append(f"training estimate: {exc}")
    check()
    return AnalysisResult(snap.generation, snap, scenario, tuple(ranks) if ranks else None,
                          focus, sweep, report, time.perf_counter() - t0, tuple(notes),
                          failed)


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
    cancelled(int)
        The solve of the current generation was cancelled (`cancel`).
    """

    started = Signal(int)
    focus_ready = Signal(object)
    result_ready = Signal(object)
    failed = Signal(int, str)
    progress = Signal(str)
    cancelled = Signal(int)
    _done = Signal(int, object, object)  # generation, result or None, error or None
    _focus = Signal(int, object)

    def __init__(self, document: Document, parent: QObject | None = None,
                 debounce_ms: int = DEBOUNCE_MS):
        super().__init__(parent)
        self.document = document
        self.enabled = True
        self.selection: list[str] = []
        self.latest: AnalysisResult | None = None
        self.solves_started = 0
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._running_generation = -1
        self._last_start = -1e9
        self._last_schedule = -1e9
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._debounce_ms = debounce_ms
        self._timer.timeout.connect(self._on_timer_timeout)
        self._done.connect(self._on_worker_done)
        self._focus.connect(self._on_worker_focus)
        self._topology: Topology | None = None
        # Routes carried from solve to solve of one design (used by one worker at a
        # time; a new design starts a new memo).
        self._memo = RouteMemo()
        document.topology_replaced.connect(self._on_document_topology_replaced)
        self._watch(document.topology)

    # ------------------------------------------------------------ triggers
    def _watch(self, topo: Topology) -> None:
        if not self.enabled:
            return
        if self._topology is not None:
            self._topology.changed.disconnect(self.schedule)
        self._topology = topo
        topo.changed.connect(self.schedule)

    def _on_document_topology_replaced(self, topo: Topology) -> None:
        self._memo = RouteMemo()
        self._watch(topo)
        self.latest = None
        self.schedule()

    def schedule(self) -> None:
        """Ask for a solve.  After a quiet spell the first edit solves at once (leading
        edge); edits that follow within the debounce interval restart the timer, so a
        burst of edits ends in one solve of the newest state (trailing edge)."""
        if not self.enabled:
            return
        self._cancel.set()  # whatever is running is already stale
        now = time.monotonic()
        quiet = now - self._last_schedule >= self._debounce_ms / 1000
        self._last_schedule = now
        if quiet and not self._timer.isActive() and not self.busy:
            self._timer.start(0)
        else:
            self._timer.start(self._debounce_ms)

    def set_selection(self, node_ids: list[str]) -> None:
        """GPU selection, for scenarios whose ranks are ``selection``."""
        self.selection = list(node_ids)
        scenario = self.document.topology.settings["scenario"]
        if scenario.get("ranks") == "selection":
            self.schedule()

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------ solving
    def _on_timer_timeout(self) -> None:
        if self.busy:
            # The old worker was told to stop; wait for it rather than run two at once.
            self._timer.start(RETRY_MS)
            return
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
        selection = list(self.selection)
        memo = self._memo
        self._cancel = threading.Event()
        cancel = self._cancel
        generation = capture.generation
        self._running_generation = generation
        self._last_start = time.monotonic()
        self.solves_started += 1
        self.started.emit(generation)

        def work() -> None:
            # Let the GUI thread have the GIL back first: `Thread.start` waits for the
            # thread to start, and the worker's first big numpy calls hold the GIL
            # for tens of ms, which the GUI thread would otherwise spend waiting here.
            time.sleep(START_YIELD_S)
            try:
                snap = build_snapshot(capture)
                failed = failed_elements(capture.columns)
                ranks = resolve_ranks(snap, spec, selection)
                if snap.n_gpus < 2:
                    raise SolverError("add at least two GPUs to analyse the design")
                # One that would not fit in memory is refused, saying what would fit.
                check_solve_memory(snap, scenario.collective, ranks, scenario.algorithm)
                self.progress.emit(
                    f"Solving {scenario.collective} on {len(ranks or snap.gpus)} GPUs…")
                result = analyse(snap, scenario, ranks, training, cancel.is_set,
                                 on_focus=lambda r: self._focus.emit(generation, r),
                                 memo=memo, failed=failed)
                self._done.emit(generation, result, None)
            except _Cancelled:
                self._done.emit(generation, None, None)
            except (DesignError, SolverError) as exc:
                self._done.emit(generation, None, str(exc))
            except Exception as exc:  # a bug: say so in one line, keep the GUI alive
                traceback.print_exc()
                self._done.emit(generation, None, f"internal error: {type(exc).__name__}: {exc}")

        self._thread = threading.Thread(target=work, name=f"solve-{generation}", daemon=True)
        self._thread.start()

    def _on_worker_focus(self, generation: int, result) -> None:
        if generation == self.document.topology.generation:
            self.focus_ready.emit(result)

    def _on_worker_done(self, generation: int, result, error) -> None:
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if generation != self.document.topology.generation:
            return  # stale: a newer edit is already scheduled
        if error is not None:
            self.failed.emit(generation, error)
        elif result is not None:
            self.latest = result
            self.result_ready.emit(result)
        else:
            self.cancelled.emit(generation)

    def cancel(self) -> None:
        """Stop the running solve (the user's Cancel); the next edit solves again."""
        self._timer.stop()
        self._cancel.set()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop for good (window close): no more solves, cancel the running one and wait
        for its thread."""
        self.enabled = False
        if self._topology is not None:
            self._topology.changed.disconnect(self.schedule)
            self._topology = None
        self._timer.stop()
        self._cancel.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


def utilisation_by_link(result: AnalysisResult) -> dict[str, float]:
    """Per link id, the larger utilisation of its two directions."""
    util = result.focus.arc_util
    both = np.maximum(util[0::2], util[1::2])
    return dict(zip(result.snapshot.link_ids, both.tolist(), strict=True))
