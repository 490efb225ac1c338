"""The solver: snapshot -> routing -> flows -> max-min rates -> timing (see
``docs/model.md``), numpy only, no Qt.

The front door names what callers outside the solver use; each name is imported from
its module when first asked for, so importing one sub-module (``designer.solver.errors``)
does not load the others.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Name -> the module that defines it.
_EXPORTS = {
    "MemoryEstimate": "designer.solver.memory_estimate",
    "MemoryLimit": "designer.solver.machine_memory",
    "SolveTooLarge": "designer.solver.memory_estimate",
    "check_solve_memory": "designer.solver.memory_estimate",
    "estimate_solve": "designer.solver.memory_estimate",
    "memory_limit": "designer.solver.machine_memory",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
