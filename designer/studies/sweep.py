"""Design sweeps: every combination of a template's parameters, built, costed and solved.

``grid`` gives each swept parameter its values, ``sets`` fixes others; every
combination is checked against the template before anything is built (a wrong key or
value is reported at once, `designer.model.templates.template_values`), then built and
measured on this process or on Dask (`designer.studies.engine`): cost and power (and
per GPU, `designer.model.bom`), bisection and leaf oversubscription
(`designer.model.report`), the collective's time and bus bandwidth (and the training
step, given a workload).  The Pareto front of cost per GPU against time is marked.

Example
-------
>>> report = sweep_study("leaf-spine", {"spines": ["1", "2"]}, workers=0)
>>> [(v.params["spines"], v.pareto) for v in report.variants]  # a spine more: no faster
[('1', True), ('2', False)]
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from designer.model.errors import DesignError
from designer.model.scenario import Scenario, TrainingSpec
from designer.studies.engine import EngineStats, batches, run_tasks

__all__ = ["SweepReport", "Variant", "parse_grid", "sweep_study", "variants"]


@dataclass
class Variant:
    """One combination and what it measured (``time_s`` None: it could not be solved,
    ``error`` says why)."""

    params: dict[str, str]
    gpus: int = 0
    cost_usd: float = 0.0
    power_w: float = 0.0
    cost_per_gpu_usd: float = 0.0
    power_per_gpu_w: float = 0.0
    time_s: float | None = None
    busbw_GBps: float | None = None
    step_s: float | None = None
    bisection_GBps: float | None = None
    oversubscription: float | None = None
    pareto: bool = False
    error: str = ""

    @property
    def figure_s(self) -> float | None:
        """The time the Pareto front weighs: the step time if known, else the
        collective's."""
        return self.step_s if self.step_s is not None else self.time_s


@dataclass
class SweepReport:
    template: str
    grid: dict[str, list[str]]
    sets: dict[str, str]
    variants: list[Variant]
    timing_ms: dict[str, float] = field(default_factory=dict)
    engine: EngineStats | None = None

    def as_json(self) -> dict:
        """The ``study sweep --json`` document."""
        return {
            "template": self.template,
            "grid": self.grid,
            "set": self.sets,
            "variants": [dict(vars(v)) for v in self.variants],
            "timing_ms": {k: round(v, 1) for k, v in self.timing_ms.items()},
        }


def parse_grid(items: Sequence[str], option: str = "--grid") -> dict[str, list[str]]:
    """``["key=v1,v2", ...]`` as ``{key: [v1, v2]}``; a key given twice, an empty value
    or a missing ``=`` is a `ValueError` naming the item."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        key = key.strip()
        vals = [v.strip() for v in values.split(",")]
        if not sep or not key or not all(vals):
            raise ValueError(f"{option} takes key=v1,v2,..., got {item!r}")
        if key in grid:
            raise ValueError(f"{option} {key} given twice; list all its values once")
        if len(set(vals)) != len(vals):
            raise ValueError(f"{option} {key} lists a value twice: {values}")
        grid[key] = vals
    return grid


def variants(
    template: str, grid: Mapping[str, Sequence[str]], sets: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """Every combination of ``grid`` (with ``sets``), each checked against the template.

    Raises
    ------
    DesignError
        A key the template lacks, a value it refuses, a key both swept and set; the
        message names the combination.
    """
    from designer.model.templates import template_values

    sets = dict(sets or {})
    both = sorted(set(grid) & set(sets))
    if both:
        raise DesignError(f"{both[0]} is both swept (--grid) and set (--set)")
    keys = list(grid)
    out = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        params = {**sets, **dict(zip(keys, combo, strict=True))}
        template_values(template, **params)
        out.append(params)
    return out


def measure(shared: tuple, batch: list[tuple[int, dict]]) -> tuple[list, float]:
    """Build and measure a batch of variants: ``([(index, Variant)], seconds)``."""
    t0 = time.perf_counter()
    return [(i, _measure(shared, params)) for i, params in batch], time.perf_counter() - t0


def _measure(shared: tuple, params: dict[str, str]) -> Variant:
    from designer.model.bom import bom
    from designer.model.report import info
    from designer.model.templates import build_template
    from designer.solver import (
        SolverError,
        TrainingWorkload,
        resolve_ranks,
        solve_collective,
        take_snapshot,
        training_report,
    )

    template, scenario, training = shared
    v = Variant(dict(params))
    topo = build_template(template, **params)
    b = bom(topo)
    v.gpus, v.cost_usd, v.power_w = b.gpus, b.total_price_usd, b.total_power_w
    v.cost_per_gpu_usd = b.price_per_gpu_usd or 0.0
    v.power_per_gpu_w = b.power_per_gpu_w or 0.0
    facts = info(topo)
    v.bisection_GBps = facts.get("bisection_GBps")
    v.oversubscription = facts["oversubscription"]["leaf"]["worst"]
    snap = take_snapshot(topo)
    sc = scenario or Scenario.from_dict(topo.settings["scenario"])
    try:
        cache: dict = {}
        res = solve_collective(
            snap,
            sc.collective,
            sizes=[sc.bytes],
            algorithm=sc.algorithm,
            ranks=resolve_ranks(snap, sc.ranks),
            launch=sc.launch,
            cache=cache,
        )
        v.time_s, v.busbw_GBps = float(res.time_s[0]), float(res.busbw_GBps[0])
        if training is not None:
            wl = TrainingWorkload(
                params=training.params,
                grad_dtype=training.grad_dtype,
                dp_size=min(training.dp_size or snap.n_gpus, snap.n_gpus),
                compute_s=training.compute_s,
                overlap=training.overlap,
            )
            rep = training_report(snap, wl, compute_cv=training.compute_cv, n_steps=64, cache=cache)
            v.step_s = rep.estimate.step_s
    except SolverError as exc:
        v.error = str(exc)
    return v


def pareto(vs: Sequence[Variant]) -> None:
    """Mark the variants no other beats on both cost per GPU and time (lower is better)."""
    ok = [v for v in vs if v.figure_s is not None]
    for v in vs:
        v.pareto = v in ok and not any(
            w.cost_per_gpu_usd <= v.cost_per_gpu_usd
            and w.figure_s <= v.figure_s
            and (w.cost_per_gpu_usd < v.cost_per_gpu_usd or w.figure_s < v.figure_s)
            for w in ok
        )


def sweep_study(
    template: str,
    grid: Mapping[str, Sequence[str]],
    sets: Mapping[str, str] | None = None,
    *,
    scenario: Scenario | None = None,
    training: TrainingSpec | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    client=None,
) -> SweepReport:
    """Build, cost and solve every combination of ``grid`` on ``template``.

    Parameters
    ----------
    template : str
    grid : mapping
        Swept parameters and their values (as text, like ``--set``).
    sets : mapping, optional
        Parameters fixed for every variant.
    scenario : Scenario, optional
        The collective; each variant's own saved scenario (the template's) by default.
    training : TrainingSpec, optional
        Also estimate the training step; the Pareto front then weighs the step time.
    workers, scheduler, client, progress
        As `designer.studies.failures.failure_study`.

    Raises
    ------
    DesignError
        A combination the template refuses (`variants`), before any is built.
    """
    t_start = time.perf_counter()
    combos = variants(template, grid, sets)
    shared = (template, scenario, training)
    found: dict[int, Variant] = {}
    items = list(enumerate(combos))
    # A variant is a build and a solve (~0.1-2 s): one per task keeps the workers busy.
    tasks = batches(items, 1.0, 1)
    done = [0]

    def on_result(values) -> None:
        for i, v in values:
            found[i] = v
        done[0] += 1
        if progress is not None:
            progress(done[0], len(tasks), "variants")

    stats = run_tasks(
        measure,
        shared,
        tasks,
        workers=workers,
        scheduler=scheduler,
        on_result=on_result,
        client=client,
    )
    vs = [found[i] for i in range(len(combos))]
    pareto(vs)
    timing = {"total": (time.perf_counter() - t_start) * 1e3}
    return SweepReport(
        template, {k: list(v) for k, v in grid.items()}, dict(sets or {}), vs, timing, stats
    )
