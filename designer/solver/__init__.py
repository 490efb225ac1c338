"""The solver: snapshot -> routing -> flows -> max-min rates -> timing (see
``docs/architecture.md`` for the folders, ``docs/model.md`` for the model), numpy
only, no Qt.

This front door names what callers outside the solver (the GUI, the CLI, the
benchmarks) use.  Each name is imported from its module when first asked for, so
importing one sub-module (``designer.solver.errors``) does not load the others.

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver import solve_collective, take_snapshot
>>> snap = take_snapshot(build_template("hgx", gpu="H100"))
>>> result = solve_collective(snap, sizes=[1 << 30], algorithm="ring")
>>> float(result.busbw_GBps[0]) > 0
True
"""

from __future__ import annotations

import importlib
from typing import Any

#: Name -> the module that defines it.
_EXPORTS = {
    # one analysis as the GUI shows it (collective at its size, sweep, training)
    "AnalysisResult": "designer.solver.analysis",
    "Cancelled": "designer.solver.analysis",
    "GroupRanks": "designer.solver.analysis",
    "analyse": "designer.solver.analysis",
    "failed_elements": "designer.solver.analysis",
    "rank_spec": "designer.solver.analysis",
    "resolve_ranks": "designer.solver.analysis",
    # a design as arrays
    "Snapshot": "designer.solver.snapshot.build",
    "take_snapshot": "designer.solver.snapshot.build",
    "build_snapshot": "designer.solver.snapshot.build",
    "capture_design": "designer.solver.snapshot.build",
    "NVLINK": "designer.solver.snapshot.build",
    "PCIE": "designer.solver.snapshot.build",
    # one collective, end to end, and the routes kept from one edit to the next
    "solve_collective": "designer.solver.pipeline",
    "CollectiveResult": "designer.solver.pipeline",
    "SWEEP": "designer.solver.pipeline",
    "switch_latency": "designer.solver.pipeline",
    "RouteMemo": "designer.solver.reuse",
    "first_ranks": "designer.solver.flows.ring_layout",
    "FlowIndex": "designer.solver.flows.index",
    "FlowRow": "designer.solver.flows.index",
    # the max-min core on its own
    "max_min_rates": "designer.solver.rates.maxmin",
    "MaxMinResult": "designer.solver.rates.maxmin",
    "SharedRoutes": "designer.solver.arrays.shared_routes",
    # training steps
    "TrainingWorkload": "designer.solver.training.step",
    "TrainingReport": "designer.solver.training.workload",
    "training_report": "designer.solver.training.workload",
    # errors and memory
    "SolverError": "designer.solver.errors",
    "MemoryEstimate": "designer.solver.memory_estimate",
    "SolveTooLarge": "designer.solver.memory_estimate",
    "check_solve_memory": "designer.solver.memory_estimate",
    "estimate_solve": "designer.solver.memory_estimate",
    "MemoryLimit": "designer.solver.machine_memory",
    "memory_limit": "designer.solver.machine_memory",
    "parse_memory": "designer.solver.machine_memory",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
