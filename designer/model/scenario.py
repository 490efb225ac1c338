"""What the live analysis evaluates: the collective scenario and the training workload.

Both are stored in the design's settings (so they save with the file and change through
undoable commands) as plain dicts, validated here.

Example
-------
>>> s = Scenario.from_dict({"collective": "allreduce", "bytes": 1 << 30})
>>> s.algorithm, s.ranks
('auto', 'all')
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from designer.model.errors import DesignError

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
               "sendrecv")
ALGORITHMS = ("auto", "ring", "tree", "nvls", "nvlstree", "hierarchical", "collnet", "pat",
              "direct")
LAUNCH_MODES = ("eager", "graph")
ROUTING_MODES = ("ecmp", "adaptive", "static")
DTYPES = ("fp32", "bf16", "fp16", "fp8")


def _check(cls, data: Any, what: str) -> dict:
    if not isinstance(data, dict):
        raise DesignError(f"{what} must be an object")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise DesignError(f"{what}: unknown field {unknown[0]!r}")
    return data


def _number(value: Any, name: str, lo: float, hi: float, integer: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if integer:
        ok = ok and float(value).is_integer()
    if not ok or not lo <= value <= hi:
        kind = "a whole number" if integer else "a number"
        raise DesignError(f"{name} must be {kind} between {lo:g} and {hi:g}")
    return int(value) if integer else float(value)


@dataclass(frozen=True)
class Scenario:
    """The collective the canvas colours and the panels plot.

    ``ranks`` is ``"all"``, a number N (the first N GPUs in the design's structural
    order, whole NVLink domains first: `designer.solver.flows.ring_layout.first_ranks`), a
    list of GPU ids, or ``"group:<id>"`` (the GPUs of a group).
    """

    collective: str = "allreduce"
    bytes: int = 1 << 30
    algorithm: str = "auto"
    ranks: Any = "all"
    launch: str = "eager"

    @classmethod
    def from_dict(cls, data: Any) -> Scenario:
        data = _check(cls, data, "scenario")
        s = cls(**data)
        if s.collective not in COLLECTIVES:
            raise DesignError(f"scenario: unknown collective {s.collective!r}")
        if s.algorithm not in ALGORITHMS:
            raise DesignError(f"scenario: unknown algorithm {s.algorithm!r}")
        if s.launch not in LAUNCH_MODES:
            raise DesignError("scenario: launch must be eager or graph")
        _number(s.bytes, "scenario: bytes", 1, 1 << 44, integer=True)
        r = s.ranks
        valid = (r == "all" or (isinstance(r, str) and r.startswith("group:"))
                 or (isinstance(r, int) and not isinstance(r, bool) and r >= 2)
                 or (isinstance(r, list) and len(r) >= 2
                     and all(isinstance(x, str) for x in r)))
        if not valid:
            raise DesignError("scenario: ranks must be 'all', N >= 2, 'group:<id>' or a list "
                              "of GPU ids")
        return cls(s.collective, int(s.bytes), s.algorithm, r, s.launch)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class TrainingSpec:
    """The training workload of the step-time estimate (``dp_size`` 0 = every GPU)."""

    params: float = 70e9
    grad_dtype: str = "bf16"
    dp_size: int = 0
    compute_s: float = 1.0
    overlap: float = 0.0
    compute_cv: float = 0.02

    @classmethod
    def from_dict(cls, data: Any) -> TrainingSpec:
        data = _check(cls, data, "training")
        t = cls(**data)
        if t.grad_dtype not in DTYPES:
            raise DesignError(f"training: unknown gradient dtype {t.grad_dtype!r}")
        return cls(
            params=_number(t.params, "training: params", 1, 1e15),
            grad_dtype=t.grad_dtype,
            dp_size=_number(t.dp_size, "training: dp_size", 0, 10_000_000, integer=True),
            compute_s=_number(t.compute_s, "training: compute_s", 0, 1e6),
            overlap=_number(t.overlap, "training: overlap", 0, 1),
            compute_cv=_number(t.compute_cv, "training: compute_cv", 0, 10),
        )

    def to_dict(self) -> dict:
        return asdict(self)


def check_workloads(value: Any) -> list[dict]:
    """The design's training jobs (``settings["workloads"]``) as a private list of plain
    JSON values, checked for what the model needs: a list of objects, each with a name
    no other job has.  What a job's fields mean is `designer.workload`'s to check.

    >>> check_workloads([{"name": "a", "parallel": {"tp": 8}}])
    [{'name': 'a', 'parallel': {'tp': 8}}]
    """
    if not isinstance(value, list | tuple):
        raise DesignError("workloads: expected a list of jobs")
    names: set[str] = set()
    out = []
    for i, job in enumerate(value):
        if not isinstance(job, dict):
            raise DesignError(f"workloads: item {i}: expected an object")
        name = job.get("name")
        if not isinstance(name, str) or not name:
            raise DesignError(f"workloads: item {i}: a job needs a name")
        if name in names:
            raise DesignError(f"workloads: item {i}: two jobs are named {name!r}")
        names.add(name)
        try:
            out.append(json.loads(json.dumps(job, allow_nan=False)))
        except (TypeError, ValueError) as exc:
            raise DesignError(f"workloads: item {i} ({name!r}): not plain data: {exc}") from None
    return out
