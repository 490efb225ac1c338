"""Failure studies: the collective (or training step) time with each element failed.

``N-1``: every live link, switch or NIC of a design failed on its own.  Elements are
first grouped into classes under the fabric's symmetry (`designer.studies.symmetry`);
each class is verified on a sample (``verify + 1`` members solved, their figures must
agree to `TOLERANCE`), then one solve stands for all its members; a class whose sample
disagrees (an asymmetry the structure does not show, such as a ring's order of ranks)
has every member solved.  ``N-2``: ``samples`` random pairs, each solved.

Each failure is solved as the GUI solves a what-if (`designer.studies.work`), on this
process or on Dask (`designer.studies.engine`): the figures are the same either way.

Example
-------
>>> from designer.model.templates import build_template
>>> report = failure_study(build_template("leaf-spine"), elements="switches", workers=0)
>>> report.classes, report.elements[0].kind
(2, 'node')
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from designer.model.scenario import Scenario, TrainingSpec
from designer.model.topology import Topology
from designer.studies.engine import Cluster, EngineStats, batches, run_tasks
from designer.studies.symmetry import ELEMENT_KINDS, element_classes
from designer.studies.work import Outcome, StudyBase, evaluate, intact_link_loads, run_batch

__all__ = ["TOLERANCE", "ElementResult", "FailureReport", "failure_study"]

#: Relative difference below which two members of a class count as giving the same figure.
TOLERANCE = 1e-9


@dataclass(frozen=True)
class ElementResult:
    """One failed element (or pair, ``id`` ``"a+b"``): its figure with it failed."""

    id: str
    kind: str  # link, node (switch or NIC), or both joined by "+" for a pair
    cls: int  # the class it belongs to (-1: a sampled pair)
    time_s: float | None
    slowdown: float | None
    connected: bool
    solved: bool  # solved itself, not stood for by its class's representative
    error: str = ""
    #: The element whose solve stands for this one (not solved itself), else "".  Its
    #: ``error`` is that element's: it names what *that* failure cut off.
    representative: str = ""


@dataclass
class FailureReport:
    """A failure study's outcome: every element, worst first."""

    intact: Outcome
    scenario: Scenario
    training: TrainingSpec | None
    classes: int
    elements: list[ElementResult]
    timing_ms: dict[str, float] = field(default_factory=dict)
    solves: int = 0
    enumerated_classes: int = 0
    engine: EngineStats | None = None

    def as_json(self) -> dict:
        """The ``study failures --json`` document."""
        metric = "step_s" if self.training is not None else "collective_s"
        return {
            "intact": {
                "time_s": self.intact.time_s,
                "connected": self.intact.connected,
                "metric": metric,
                **self.scenario.to_dict(),
            },
            "classes": self.classes,
            "elements": [
                {
                    "id": e.id,
                    "kind": e.kind,
                    "class": e.cls,
                    "time_s": e.time_s,
                    "slowdown": e.slowdown,
                    "connected": e.connected,
                }
                for e in self.elements
            ],
            "timing_ms": {k: round(v, 1) for k, v in self.timing_ms.items()},
        }


def _sort_key(e: ElementResult) -> tuple:
    """Worst first: disconnecting elements, then the largest slowdown; ties by class
    and id so the listing is stable."""
    return (e.connected, -(e.slowdown or 0.0), e.cls, e.kind, e.id)


def _agree(a: Outcome, b: Outcome) -> bool:
    if a.connected != b.connected:
        return False
    if a.time_s is None or b.time_s is None:
        return a.time_s is b.time_s
    return abs(a.time_s - b.time_s) <= TOLERANCE * max(abs(a.time_s), abs(b.time_s))


def failure_study(
    topo: Topology,
    *,
    elements: str = "links",
    k: int = 1,
    samples: int = 1000,
    seed: int = 0,
    scenario: Scenario | None = None,
    training: TrainingSpec | None = None,
    reduce: bool = True,
    verify: int = 2,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    client=None,
    classify: Callable[..., dict] | None = None,
) -> FailureReport:
    """Fail each element of ``topo`` (or ``samples`` pairs with ``k=2``) and solve.

    Parameters
    ----------
    topo : Topology
        The base design (not changed: the study works on copies).
    elements : {"links", "switches", "nics", "all"}
    k : {1, 2}
        Elements failed at once.
    samples : int
        Pairs drawn for ``k=2`` (fewer when the design has fewer).
    seed : int
        Seed of the samples (the verification samples and the pairs).
    scenario : Scenario, optional
        The collective timed; the design's saved scenario by default.
    training : TrainingSpec, optional
        Time the training step instead (`designer.studies.work.StudyBase`).
    reduce : bool
        Group elements into symmetry classes (False: solve every element).
    verify : int
        Members solved besides the representative to verify a class.
    workers, scheduler, client
        Where the solves run (`designer.studies.engine.run_tasks`); ``workers=0`` here.
    progress : callable, optional
        ``progress(done, total, stage)`` after each finished task.
    classify : callable, optional
        ``classify(topo, elements, ranks, link_labels) -> {key: [(kind, id), ...]}``,
        the grouping to verify; `designer.studies.symmetry.element_classes` by default.
        Whatever it claims, a class whose sampled members disagree is enumerated.

    Raises
    ------
    ValueError
        ``elements`` or ``k`` outside their choices.
    designer.solver.SolverError
        The intact design cannot run the scenario.
    """
    from designer.io.fabric_json import dumps
    from designer.solver import SolverError, resolve_ranks, take_snapshot

    if elements not in ELEMENT_KINDS:
        raise ValueError(f"unknown elements {elements!r}; choose one of {', '.join(ELEMENT_KINDS)}")
    if k not in (1, 2):
        raise ValueError(f"k must be 1 or 2, got {k}")
    t_start = time.perf_counter()
    timing: dict[str, float] = {}
    scenario = scenario or Scenario.from_dict(topo.settings["scenario"])
    base = StudyBase(dumps(topo), scenario, training)
    rng = random.Random(seed)
    outcomes: dict[int, Outcome] = {}
    failures: list[tuple] = []
    stats: list[EngineStats] = []

    def solve(items: list[tuple[int, tuple]], stage: str) -> None:
        """Solve ``items`` [(index, failure)] on the engine, filling ``outcomes``."""
        per = _per_failure_s(base, items[0][1]) if items else 0.0
        tasks = batches(items, per, cluster.n_workers() if cluster is not None else 1)
        done = [0]

        def on_result(values) -> None:
            for index, outcome in values:
                outcomes[index] = outcome
            done[0] += 1
            if progress is not None:
                progress(done[0], len(tasks), stage)

        stats.append(
            run_tasks(
                run_batch,
                shared,
                tasks,
                workers=workers,
                on_result=on_result,
                client=cluster.client if cluster is not None else None,
            )
        )

    serial = workers == 0 and scheduler is None and client is None
    with contextlib.ExitStack() as stack:
        # The cluster first: its workers parse the design while this process finds the
        # classes.
        t0 = time.perf_counter()
        cluster = (
            None
            if serial
            else stack.enter_context(Cluster(workers=workers, scheduler=scheduler, client=client))
        )
        where = "serial" if cluster is None else cluster.where
        shared = base if cluster is None else cluster.share(base, warm=evaluate)
        timing["cluster"] = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        intact = evaluate(base)
        if not intact.connected:
            raise SolverError(f"the intact design does not run the study: {intact.error}")
        timing["intact"] = (time.perf_counter() - t0) * 1e3

        t0 = time.perf_counter()
        snap = take_snapshot(topo)
        ranks = resolve_ranks(snap, scenario.ranks) if training is None else None
        gpu_ids = [snap.node_ids[g] for g in snap.gpus.tolist()]
        rank_ids = frozenset(gpu_ids if ranks is None else (gpu_ids[r] for r in ranks))
        groups = (classify or element_classes)(topo, elements, rank_ids, intact_link_loads(base))
        keys = sorted(groups)  # class keys are colours: name-free
        members = [sorted(groups[key], key=lambda m: m[1]) for key in keys]
        if not reduce or k == 2:
            members = [[m] for ms in members for m in ms]
        timing["classes"] = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        enumerated = 0
        if k == 2:
            flat = [m for ms in members for m in ms]
            pairs = _pairs(len(flat), samples, rng)
            failures = [(flat[i], flat[j]) for i, j in pairs]
            solve([(i, f) for i, f in enumerate(failures)], "N-2: sampled pairs")
            results = [_result(f, -1, outcomes[i], intact, True) for i, f in enumerate(failures)]
        else:
            # Stage 1: each class's sample; stage 2: every member of a class that disagreed.
            picks = [rng.sample(range(len(ms)), _sample_size(len(ms), verify)) for ms in members]
            for c, ms in enumerate(members):
                failures.extend(((ms[i],), c, i) for i in picks[c])
            solve([(n, f[0]) for n, f in enumerate(failures)], "N-1: class samples")
            first = {}
            split = set()
            for n, (_f, c, _i) in enumerate(failures):
                if c not in first:
                    first[c] = outcomes[n]
                elif not _agree(first[c], outcomes[n]):
                    split.add(c)
            enumerated = len(split)
            solved = {(c, i): n for n, (_f, c, i) in enumerate(failures)}
            rest = [
                ((members[c][i],), c, i)
                for c in sorted(split)
                for i in range(len(members[c]))
                if (c, i) not in solved
            ]
            start = len(failures)
            failures.extend(rest)
            solve(
                [(start + n, f[0]) for n, f in enumerate(rest)],
                "N-1: every member of the classes that disagreed",
            )
            solved.update({(c, i): start + n for n, (_f, c, i) in enumerate(rest)})
            results = []
            for c, ms in enumerate(members):
                rep = solved[(c, picks[c][0])]
                rep_id = ms[picks[c][0]][1]
                for i, m in enumerate(ms):
                    n = solved.get((c, i))
                    out = outcomes[rep if n is None else n]
                    stood = "" if n is not None else rep_id
                    results.append(_result((m,), c, out, intact, n is not None, stood))
    timing["solve"] = (time.perf_counter() - t0) * 1e3
    timing["total"] = (time.perf_counter() - t_start) * 1e3
    results = _numbered(results)
    engine = EngineStats(
        tasks=sum(s.tasks for s in stats),
        work_s=sum(s.work_s for s in stats),
        wall_s=sum(s.wall_s for s in stats),
        workers=max((s.workers for s in stats), default=0),
        where=where,
    )
    return FailureReport(
        intact,
        scenario,
        training,
        len(members) if k == 1 else 0,
        results,
        timing,
        len(outcomes),
        enumerated,
        engine,
    )


def _sample_size(n: int, verify: int) -> int:
    """Members of a class of ``n`` solved to verify it: the representative and
    ``verify`` more, never more than the class has.  (A larger sample would not catch a
    rare odd member much more often: one odd link in 768 is missed by 11 samples 98 %
    of the time.  What tells such members apart is the intact solve's link loads in
    the classes' colours, `designer.studies.symmetry`.)"""
    return min(n, 1 + verify)


def _per_failure_s(base: StudyBase, failure: tuple) -> float:
    """The time one failure takes to solve here (calibrates the batch size)."""
    t0 = time.perf_counter()
    evaluate(base, failure)
    return time.perf_counter() - t0


def _pairs(n: int, samples: int, rng: random.Random) -> list[tuple[int, int]]:
    """``samples`` distinct unordered pairs of 0..n-1 (all of them when fewer)."""
    total = n * (n - 1) // 2
    if samples >= total:
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < samples:
        i, j = rng.sample(range(n), 2)
        chosen.add((min(i, j), max(i, j)))
    return sorted(chosen)


def _result(
    failure: tuple, cls: int, out: Outcome, intact: Outcome, solved: bool, representative: str = ""
) -> ElementResult:
    ident = "+".join(i for _k, i in failure)
    kind = "+".join(k for k, _i in failure)
    slowdown = out.time_s / intact.time_s if out.time_s is not None and intact.time_s else None
    return ElementResult(
        ident, kind, cls, out.time_s, slowdown, out.connected, solved, out.error, representative
    )


def _numbered(results: list[ElementResult]) -> list[ElementResult]:
    """Worst first, classes renumbered 0.. in that order (a name-free numbering: the
    classes' own order is of colours, this one of outcomes)."""
    results.sort(key=_sort_key)
    renumber: dict[int, int] = {}
    for e in results:
        if e.cls >= 0 and e.cls not in renumber:
            renumber[e.cls] = len(renumber)
    out = [
        ElementResult(
            e.id,
            e.kind,
            renumber.get(e.cls, -1),
            e.time_s,
            e.slowdown,
            e.connected,
            e.solved,
            e.error,
            e.representative,
        )
        for e in results
    ]
    out.sort(key=_sort_key)
    return out
