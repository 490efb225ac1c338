"""Chakra execution traces (``OUT.chakra/``) of the design's training jobs, for
ASTRA-sim's workload input: one ``<job>.<rank>.et`` per rank of each job.

Input is the workload engine's task graph of one iteration (`designer.workload.traffic.
iteration_traffic` on the job's placement, jobs placed in the design's order as
``workload check`` places them); output follows MLCommons Chakra ``et_def.proto``
(`chakra_schema`): ``GlobalMetadata`` (version ``0.0.4``), then per task the rank takes
part in:

* a compute span: ``COMP_NODE`` with ``duration_micros`` (at least 1 when the span has
  length, ASTRA-sim's unit being microseconds) and ``is_cpu_op = false``;
* a collective: ``COMM_COLL_NODE`` with ``is_cpu_op = false``, ``comm_type``
  (``CollectiveCommType``), ``comm_size`` (bytes as nccl-tests counts them, the
  task's ``nbytes``) and ``pg_name``, the id of its group in ``<job>.comm_group.json``
  (ASTRA-sim's ``--comm-group-configuration``: group id -> ranks);
* a pipeline send/receive pair: ``COMM_SEND_NODE`` on the sender with ``comm_dst``,
  ``COMM_RECV_NODE`` on the receiver with ``comm_src``, both with ``comm_size`` and
  ``comm_tag`` (the task id).

Dependencies are ``data_deps``: a task's dependencies as this rank sees them (a task
the rank does not run is replaced by the rank's tasks it waits on), so overlap between
compute and communication is kept.  Node ids are the task ids.

Which ranks run a compute span: the task graph gives compute no GPUs, so they come from
the graph — compute spans joined by dependencies (directly, or through a collective of
one stage) form one pipeline stage's chain, run by every GPU of the collectives that
touch the chain (the sender of a pipeline message it feeds, the receiver of one it
waits for); a chain that touches none (a job of one GPU) runs on every rank.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from itertools import pairwise

from designer.io.exports.common import ExportFormatError, write_folder
from designer.model.topology import Topology

__all__ = ["chakra_files", "job_traces", "write_chakra"]

_COLL = {
    "allreduce": "ALL_REDUCE",
    "allgather": "ALL_GATHER",
    "reducescatter": "REDUCE_SCATTER",
    "alltoall": "ALL_TO_ALL",
    "broadcast": "BROADCAST",
}


def _compute_ranks(traffic, rank_of: dict[str, int], n_ranks: int) -> dict[int, set[int]]:
    """Task id -> ranks, for every compute task (see module doc)."""
    from designer.workload.tasks import Comm, Compute

    parent = {t.id: t.id for t in traffic.tasks if isinstance(t, Compute)}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    users: dict[int, list[int]] = defaultdict(list)
    for t in traffic.tasks:
        for d in t.deps:
            users[d].append(t.id)
    for t in traffic.tasks:
        if isinstance(t, Compute):
            for d in t.deps:
                if d in parent:
                    join(t.id, d)
        elif t.collective != "sendrecv":
            near = [d for d in t.deps if d in parent] + [u for u in users[t.id] if u in parent]
            for a, b in pairwise(near):
                join(a, b)
    ranks: dict[int, set[int]] = defaultdict(set)
    for t in traffic.tasks:
        if not isinstance(t, Comm):
            continue
        if t.collective == "sendrecv":
            for d in t.deps:
                if d in parent:
                    ranks[find(d)].update(rank_of[g[0]] for g in t.groups)
            for u in users[t.id]:
                if u in parent:
                    ranks[find(u)].update(rank_of[g[1]] for g in t.groups)
            continue
        gpus = {rank_of[x] for g in t.groups for x in g}
        for c in [d for d in t.deps if d in parent] + [u for u in users[t.id] if u in parent]:
            ranks[find(c)].update(gpus)
    everyone = set(range(n_ranks))
    return {c: ranks.get(find(c)) or everyone for c in parent}


def _attr(schema, name: str, **value):
    return schema.AttributeProto(name=name, **value)


def job_traces(traffic, gpus: tuple[str, ...]) -> tuple[dict[int, bytes], dict[str, list[int]]]:
    """Rank -> ET file bytes, and comm group id -> ranks, for one job's ``traffic`` whose
    rank ``r`` runs on GPU ``gpus[r]``."""
    from designer.io.exports import chakra_schema as s
    from designer.workload.tasks import Compute

    rank_of = {g: r for r, g in enumerate(gpus)}
    n = len(gpus)
    comp = _compute_ranks(traffic, rank_of, n)
    groups: dict[tuple[int, ...], str] = {}
    per_rank: dict[int, dict[int, tuple]] = defaultdict(dict)  # rank -> task id -> (kind, ...)
    for t in traffic.tasks:
        if isinstance(t, Compute):
            for r in comp[t.id]:
                per_rank[r][t.id] = ("comp",)
        elif t.collective == "sendrecv":
            for src, dst in t.groups:
                per_rank[rank_of[src]][t.id] = ("send", rank_of[dst])
                per_rank[rank_of[dst]][t.id] = ("recv", rank_of[src])
        else:
            for g in t.groups:
                members = tuple(sorted(rank_of[x] for x in g))
                pg = groups.setdefault(members, str(len(groups) + 1))
                for r in members:
                    per_rank[r][t.id] = ("coll", pg)
    by_id = {t.id: t for t in traffic.tasks}
    files: dict[int, bytes] = {}
    for r in range(n):
        mine = per_rank.get(r, {})
        seen: dict[int, tuple[int, ...]] = {}

        def visible(task_id: int, mine=mine, seen=seen) -> tuple[int, ...]:
            """The rank's own tasks ``task_id`` stands for (itself, or what it waits on)."""
            if task_id in mine:
                return (task_id,)
            stack, out, order = [task_id], set(), []
            while stack:
                x = stack.pop()
                if x in seen:
                    out.update(seen[x])
                    continue
                order.append(x)
                for d in by_id[x].deps:
                    if d in mine:
                        out.add(d)
                    else:
                        stack.append(d)
            result = tuple(sorted(out))
            seen[task_id] = result
            return result

        nodes = [s.GlobalMetadata(version=s.SCHEMA_VERSION)]
        for tid in sorted(mine):
            t = by_id[tid]
            deps = sorted({d2 for d in t.deps for d2 in visible(d)})
            kind = mine[tid]
            node = s.Node(id=tid, name=t.label or f"task {tid}", data_deps=deps)
            node.attr.append(_attr(s, "is_cpu_op", bool_val=False))
            if kind[0] == "comp":
                node.type = s.NODE_TYPES["COMP_NODE"]
                micros = t.seconds * 1e6
                node.duration_micros = max(1, round(micros)) if micros > 0 else 0
            else:
                size = round(t.nbytes)
                node.attr.append(_attr(s, "comm_size", int64_val=size))
                if kind[0] == "coll":
                    node.type = s.NODE_TYPES["COMM_COLL_NODE"]
                    ctype = s.COLLECTIVE_TYPES[_COLL[t.collective]]
                    node.attr.append(_attr(s, "comm_type", int64_val=ctype))
                    node.attr.append(_attr(s, "pg_name", string_val=kind[1]))
                else:
                    send = kind[0] == "send"
                    node.type = s.NODE_TYPES["COMM_SEND_NODE" if send else "COMM_RECV_NODE"]
                    node.attr.append(_attr(s, "comm_src", int32_val=kind[1] if not send else r))
                    node.attr.append(_attr(s, "comm_dst", int32_val=r if not send else kind[1]))
                    node.attr.append(_attr(s, "comm_tag", int32_val=tid))
            nodes.append(node)
        files[r] = s.write_delimited(nodes)
    return files, {pg: list(members) for members, pg in groups.items()}


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "job"


def chakra_files(topology: Topology) -> dict[str, bytes]:
    """File name -> bytes of the export folder (see module doc)."""
    try:
        from designer.io.exports import chakra_schema  # noqa: F401 - needs protobuf
    except ImportError as err:
        raise ExportFormatError(f"Chakra traces need the protobuf package ({err})") from err
    from designer.solver import take_snapshot
    from designer.workload.files import design_jobs
    from designer.workload.placement import place
    from designer.workload.traffic import iteration_traffic, job_speeds

    try:
        jobs = design_jobs(topology)
    except ValueError as err:
        raise ExportFormatError(str(err)) from err
    if not jobs:
        raise ExportFormatError(
            "the design holds no training jobs to trace (add one in the Workload panel, or "
            "`fabric-designer workload new` and save it into the design)"
        )
    snap = take_snapshot(topology)
    taken: dict[str, str] = {}
    files: dict[str, bytes] = {}
    readme = ["Chakra execution traces (et_def.proto, version 0.0.4), one per rank:"]
    for job in jobs:
        try:
            placement = place(job, snap, taken)
            traffic = iteration_traffic(job, placement, *job_speeds(job, snap, placement))
        except ValueError as err:
            raise ExportFormatError(str(err)) from err
        taken.update(dict.fromkeys(placement.gpus, job.name))
        prefix = _slug(job.name)
        traces, comm_groups = job_traces(traffic, placement.gpus)
        for rank, data in traces.items():
            files[f"{prefix}.{rank}.et"] = data
        files[f"{prefix}.comm_group.json"] = (json.dumps(comm_groups, indent=1) + "\n").encode()
        files[f"{prefix}.ranks.json"] = (json.dumps(list(placement.gpus), indent=1) + "\n").encode()
        readme.append(
            f"  {prefix}: {len(placement.gpus)} ranks; ASTRA-sim --workload-configuration="
            f"{prefix} --comm-group-configuration={prefix}.comm_group.json; rank r runs on "
            f"the GPU {prefix}.ranks.json lists at r"
        )
    files["README.txt"] = ("\n".join(readme) + "\n").encode()
    return files


def write_chakra(topology: Topology, path: str | os.PathLike[str]) -> None:
    """Write the `chakra_files` as the folder ``path``, all or nothing."""
    write_folder(path, chakra_files(topology))
