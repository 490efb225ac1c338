"""Many solves at once: failure studies (every link, switch or NIC failed in turn, and
sampled pairs) and design sweeps (every combination of a template's parameters), on this
process or on Dask distributed.  No Qt.

Names are imported on first use, so ``import designer.studies`` loads neither the solver
nor Dask.

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.studies import failure_study
>>> report = failure_study(build_template("fat-tree", k=4), elements="switches",
...                        workers=0)
>>> report.classes, len(report.elements)
(3, 20)
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ELEMENT_KINDS": "designer.studies.symmetry",
    "element_classes": "designer.studies.symmetry",
    "node_colours": "designer.studies.symmetry",
    "ElementResult": "designer.studies.failures",
    "FailureReport": "designer.studies.failures",
    "failure_study": "designer.studies.failures",
    "SweepReport": "designer.studies.sweep",
    "Variant": "designer.studies.sweep",
    "parse_grid": "designer.studies.sweep",
    "sweep_study": "designer.studies.sweep",
    "variants": "designer.studies.sweep",
    "EngineStats": "designer.studies.engine",
    "default_workers": "designer.studies.engine",
    "run_tasks": "designer.studies.engine",
    "StudyBase": "designer.studies.work",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
