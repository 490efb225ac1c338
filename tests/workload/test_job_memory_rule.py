"""Design rule ``job-memory``: a job of the design whose rank does not fit in its GPUs'
memory is an error of `validate_design` (the CLI's ``validate`` and the Problems dock)."""

from __future__ import annotations

from designer.model.rules import CODES
from designer.model.templates import build_template
from designer.workload.checks import validate_design
from designer.workload.files import set_design_jobs
from designer.workload.job import Job, Parallelism
from designer.workload.presets import preset


def memory_findings(topo):
    return [f for f in validate_design(topo) if f.code == "job-memory"]


def too_big(**kw) -> Job:
    # 70B parameters on TP 8 alone: ~186 GB a rank of weights, gradients and Adam
    return Job.from_preset("big", preset("llama3.1-70b"), parallel=Parallelism(tp=8), **kw)


def test_a_job_that_fits_is_quiet_and_one_that_does_not_is_an_error():
    assert "job-memory" in CODES
    topo = build_template("hgx")
    set_design_jobs(topo, [Job.from_preset("small", preset("llama3.1-8b"))])
    assert memory_findings(topo) == []
    set_design_jobs(topo, [Job.from_preset("small", preset("llama3.1-8b")), too_big()])
    found = memory_findings(topo)
    assert [(f.severity, f.code) for f in found] == [("error", "job-memory")]
    msg = found[0].message
    assert "'big'" in msg and "80 GB" in msg and "H100" in msg
    assert "185.7 GB" in msg  # the same figure as `memory_fit`'s summary


def test_a_job_placed_by_hand_names_its_gpus_for_selection():
    topo = build_template("hgx")
    gpus = sorted(n.id for n in topo.nodes("gpu"))
    set_design_jobs(topo, [too_big(placement="explicit", gpus=tuple(gpus))])
    (finding,) = memory_findings(topo)
    assert set(finding.items) == set(gpus)


def test_the_design_rules_still_run_and_errors_come_first():
    topo = build_template("hgx")
    topo.remove_link(next(iter(topo.links())).id)  # a GPU short of a lane: a warning
    set_design_jobs(topo, [too_big()])
    found = validate_design(topo)
    assert found[0].code == "job-memory"
    assert any(f.code == "nvlink-lanes" for f in found)


def test_a_bad_job_entry_is_reported_not_raised():
    topo = build_template("hgx")
    topo.set_setting("workloads", [{"name": "broken"}])
    found = validate_design(topo)
    assert [f.code for f in found if f.severity == "error"] == ["job-invalid"]
