"""Chakra execution traces of the design's jobs: per-rank ``.et`` files that decode with
the et_def.proto schema and hold the workload's collectives (type, size, group) and
dependencies."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from designer.io.exports import export
from designer.io.exports.common import ExportFormatError
from designer.model.templates import build_template
from designer.solver import take_snapshot
from designer.workload.files import set_design_jobs
from designer.workload.job import Job, Parallelism
from designer.workload.placement import place
from designer.workload.presets import preset
from designer.workload.tasks import Comm, Compute
from designer.workload.traffic import iteration_traffic, job_speeds

s = pytest.importorskip("designer.io.exports.chakra_schema")

# Upstream mlcommons/chakra schema/protobuf/et_def.proto field numbers.
UPSTREAM = {
    "Node": {
        "id": 1,
        "name": 2,
        "type": 3,
        "ctrl_deps": 4,
        "data_deps": 5,
        "duration_micros": 7,
        "attr": 10,
    },
    "GlobalMetadata": {"version": 1, "attr": 2},
    "AttributeProto": {"name": 1, "int32_val": 7, "int64_val": 9, "bool_val": 27, "string_val": 29},
}
TYPES = {"allreduce": 0, "allgather": 2, "reducescatter": 7, "alltoall": 6, "broadcast": 5}


def _attrs(node):
    return {a.name: getattr(a, a.WhichOneof("value")) for a in node.attr}


def _decode(path):
    raw = list(s.read_delimited(path.read_bytes()))
    meta = s.GlobalMetadata.FromString(raw[0])
    return meta, {n.id: n for n in map(s.Node.FromString, raw[1:])}


def test_schema_mirrors_upstream_field_numbers():
    for message, fields in UPSTREAM.items():
        desc = getattr(s, message).DESCRIPTOR
        assert {f: desc.fields_by_name[f].number for f in fields} == fields


@pytest.mark.parametrize(
    "name, parallel",
    [
        ("tiny", None),
        ("tiny-moe", None),
        ("tiny", Parallelism(tp=2, pp=2, dp=1, cp=2, vp=2)),  # interleaved, context parallel
    ],
)
def test_traces_hold_the_workloads_collectives_and_dependencies(tmp_path, name, parallel):
    t = build_template("hgx")
    job = Job.from_preset("job one", preset(name))
    if parallel is not None:
        job = replace(job, parallel=parallel)
    set_design_jobs(t, [job])
    export(t, tmp_path / "w.chakra")
    snap = take_snapshot(t)
    placement = place(job, snap)
    traffic = iteration_traffic(job, placement, *job_speeds(job, snap, placement))
    by_id = {x.id: x for x in traffic.tasks}
    rank_of = {g: r for r, g in enumerate(placement.gpus)}
    assert json.loads((tmp_path / "w.chakra" / "job-one.ranks.json").read_text()) == list(
        placement.gpus
    )
    groups = json.loads((tmp_path / "w.chakra" / "job-one.comm_group.json").read_text())
    traces = {}
    for r in range(len(placement.gpus)):
        meta, nodes = _decode(tmp_path / "w.chakra" / f"job-one.{r}.et")
        assert meta.version == "0.0.4"
        traces[r] = nodes

    ancestors: dict[int, set[int]] = {}

    def above(i):
        if i not in ancestors:
            ancestors[i] = set(by_id[i].deps).union(*(above(d) for d in by_id[i].deps))
        return ancestors[i]

    collectives = 0
    for task in traffic.tasks:
        if isinstance(task, Comm) and task.collective != "sendrecv":
            for g in task.groups:
                members = sorted(rank_of[x] for x in g)
                for r in members:
                    node = traces[r][task.id]
                    a = _attrs(node)
                    assert node.type == s.NODE_TYPES["COMM_COLL_NODE"]
                    assert (
                        a["comm_size"] == round(task.nbytes)
                        and a["comm_type"] == TYPES[task.collective]
                    )
                    assert a["is_cpu_op"] is False
                    assert groups[a["pg_name"]] == members
                    collectives += 1
                outside = set(traces) - set(members) - {rank_of[x] for h in task.groups for x in h}
                assert all(task.id not in traces[r] for r in outside)
        elif isinstance(task, Comm):
            for src, dst in task.groups:
                send, recv = traces[rank_of[src]][task.id], traces[rank_of[dst]][task.id]
                assert send.type == s.NODE_TYPES["COMM_SEND_NODE"]
                assert recv.type == s.NODE_TYPES["COMM_RECV_NODE"]
                assert _attrs(send)["comm_dst"] == rank_of[dst] == _attrs(recv)["comm_dst"]
                assert _attrs(send)["comm_size"] == round(task.nbytes)
    assert collectives > 0
    # Compute: every span on one pipeline stage's ranks, the stages splitting the job.
    par = job.parallel
    for task in traffic.tasks:
        if isinstance(task, Compute):
            on = [r for r in traces if task.id in traces[r]]
            assert len(on) == len(placement.gpus) // par.pp
            node = traces[on[0]][task.id]
            assert node.type == s.NODE_TYPES["COMP_NODE"]
            assert abs(node.duration_micros - task.seconds * 1e6) <= max(1, 1e-6 * task.seconds)
    # Dependencies: each one an ancestor in the task graph, and every direct dependency
    # the rank runs is kept.
    for nodes in traces.values():
        for tid, node in nodes.items():
            assert set(node.data_deps) <= above(tid)
            assert {d for d in by_id[tid].deps if d in nodes} <= set(node.data_deps)
            assert all(d in nodes for d in node.data_deps)


def test_a_design_without_jobs_is_refused(tmp_path):
    with pytest.raises(ExportFormatError, match="no training jobs"):
        export(build_template("hgx"), tmp_path / "w.chakra")
