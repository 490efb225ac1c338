"""The design rules with the design's jobs: `designer.model.rules.validate` plus the
rules only a workload can answer (does each job fit in its GPUs' memory?).

`validate_design` is what ``fabric-designer validate`` and the editor's Problems dock
run, so both list the same findings.

* ``job-memory`` (error): the fullest pipeline stage of a job needs more memory per
  rank (`designer.workload.memory.memory_fit`: weights, gradients, optimizer states,
  activations) than the smallest ``memory_GB`` of the GPUs it may run on: its own
  GPUs when placed by hand, else the design's working GPUs (a placement policy may
  pick any of them).  The finding lists the job's GPUs (``items``) so a view can
  select them.
* ``job-invalid`` (error): a saved job that cannot be read.

Example
-------
>>> from designer.model.topology import Topology
>>> [f.code for f in validate_design(Topology())]
['no-gpus']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from designer.model.rules import Finding, sort_findings, validate
from designer.model.topology import Topology
from designer.workload.files import job_from_dict
from designer.workload.job import Job
from designer.workload.memory import memory_fit

__all__ = ["job_findings", "validate_design"]


def validate_design(
    topology: Topology, progress: Callable[[str, int, int], Any] | None = None
) -> list[Finding]:
    """Every design rule and every job rule, errors first (`rules.sort_findings`);
    ``progress`` as `validate` calls it."""
    return sort_findings(validate(topology, progress) + job_findings(topology))


def job_findings(topology: Topology) -> list[Finding]:
    """The job rules (``job-memory``, ``job-invalid``) of the jobs saved in ``topology``.

    Examples
    --------
    >>> from designer.model.templates import build_template
    >>> job_findings(build_template("hgx"))
    []
    """
    out: list[Finding] = []
    for i, data in enumerate(topology.settings.get("workloads", [])):
        try:
            job = job_from_dict(data, f"settings.workloads[{i}]")
        except ValueError as exc:
            out.append(Finding("error", "job-invalid", "", str(exc)))
            continue
        finding = _memory(topology, job)
        if finding is not None:
            out.append(finding)
    return out


def _memory(topology: Topology, job: Job) -> Finding | None:
    gpus = _candidate_gpus(topology, job)
    catalog = topology.catalog
    memory = {
        m: float(catalog.device(m).specs.get("memory_GB", 0) or 0)
        for m in {topology.node(g).model for g in gpus}
    }
    known = {m: gb for m, gb in memory.items() if gb > 0}
    if not known:
        return None  # no GPU, or memory unknown: nothing to check against
    model = min(known, key=lambda m: (known[m], m))
    fit = memory_fit(job, known[model])
    if fit.fits:
        return None
    return Finding(
        "error",
        "job-memory",
        "",
        f"job {job.name!r} needs {fit.total_GB:.1f} GB per GPU (stage {fit.stage}: "
        f"weights {fit.weights_GB:.1f}, gradients {fit.grads_GB:.1f}, optimizer "
        f"{fit.optimizer_GB:.1f}, activations {fit.activations_GB:.1f}) but its GPUs "
        f"({model}) have {known[model]:.0f} GB: raise TP, PP or ZeRO, or recompute",
        tuple(job.gpus) if job.placement == "explicit" else (),
    )


def _candidate_gpus(topology: Topology, job: Job) -> list[str]:
    if job.placement == "explicit" and job.gpus:
        return [g for g in job.gpus if g in topology.graph]
    return [n.id for n in topology.nodes("gpu") if not n.failed]
