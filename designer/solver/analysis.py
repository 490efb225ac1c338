"""One analysis of a design, as the GUI shows it: the scenario's collective at its size
(link colours, timeline), the bus-bandwidth sweep and the training estimate, sharing one
solve cache (`analyse`), with the scenario's ranks resolved on the snapshot
(`resolve_ranks`).  Pure: no Qt and no live model, so it runs on a worker thread; the
GUI's `designer.gui.analysis.runner` schedules it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from designer.model.columns import FrozenColumns
from designer.model.scenario import Scenario, TrainingSpec
from designer.model.topology import Topology
from designer.solver.errors import SolverError
from designer.solver.flows.ring_layout import first_ranks
from designer.solver.pipeline import SWEEP, CollectiveResult, solve_collective
from designer.solver.reuse import RouteMemo
from designer.solver.snapshot.build import Snapshot
from designer.solver.training.step import TrainingWorkload
from designer.solver.training.workload import TrainingReport, training_report

__all__ = ["AnalysisResult", "Cancelled", "GroupRanks", "analyse", "failed_elements",
           "rank_spec", "resolve_ranks"]


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


class Cancelled(Exception):
    """`analyse` was cancelled between two of its solves."""


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
            raise SolverError(f"no group {gid!r} in the design")
        return GroupRanks(gid, tuple(topo.members(gid)))
    return spec


def resolve_ranks(snap: Snapshot, spec, selection: Sequence[str] = ()) -> list[int] | None:
    """Rank indices for a scenario's ``ranks``: ``"all"`` (None: every GPU), N (the
    first N in structural order, `first_ranks`), a list of GPU ids, ``"selection"``
    (the selected GPUs) or a group as `rank_spec` gives it; failed GPUs left out.

    The GUI and the CLI both resolve ranks here, so they agree on which GPUs a spec
    means and refuse the same specs.  ``SolverError`` says what is wrong with the spec;
    callers prefix where it came from.
    """
    if spec == "all":
        return None
    index = {snap.node_ids[g]: r for r, g in enumerate(snap.gpus.tolist())}
    if spec == "selection":
        ranks = [index[n] for n in selection if n in index]
        if len(ranks) < 2:
            raise SolverError("select at least two working GPUs to use the selection as "
                              "ranks")
        return sorted(ranks)
    if isinstance(spec, int):
        if spec < 2:
            raise SolverError("a collective needs at least 2 ranks")
        if spec > snap.n_gpus:
            raise SolverError(f"the design has only {snap.n_gpus} GPUs")
        return first_ranks(snap, spec)
    if isinstance(spec, GroupRanks):
        ranks = sorted(index[n] for n in spec.members if n in index)
        if len(ranks) < 2:
            raise SolverError(f"group {spec.group_id!r} has {len(ranks)} working GPU(s); "
                              "a collective needs at least 2")
        return ranks
    missing = [x for x in spec if x not in index]
    if missing:
        raise SolverError(f"no working GPU {missing[0]!r} in the design")
    twice = [x for i, x in enumerate(spec) if x in spec[:i]]
    if twice:
        raise SolverError(f"GPU {twice[0]!r} is listed twice")
    if len(spec) < 2:
        raise SolverError("a collective needs at least 2 ranks")
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
            raise Cancelled
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
