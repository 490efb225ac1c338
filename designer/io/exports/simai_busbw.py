"""SimAI-Analytical's ``busbw.yaml``, filled from our own solver.

SimAI-Analytical estimates each communication from a bus bandwidth per parallel group
and collective instead of simulating the network.  Upstream ships a hand-written
example (SimAI ``example/busbw.yaml``)::

    <name>
    TP:
    allreduce,: 300
    allgather,: 280
    reducescatter,: 280
    alltoall,: 230
    DP:
    ...
    EP:
    ...
    PP:
    busbw: 47.5

Values are GB/s; ``null`` is a collective SimAI does not ask for in that group.  We fill
each one with the busbw ``fabric-designer solve --collective C --algorithm auto --ranks
IDS`` prints for the design (same solver, same rounding), at the saved scenario's
message size, on these groups (Megatron's layout on a rail-optimised fabric):

* TP: the GPUs of the first NVLink domain (structural order);
* DP and EP: the first GPU of every NVLink domain (one rail, across the scale-out);
* PP: send/recv between the first GPUs of the first two domains (a stage boundary).

A group the design cannot form (one NVLink domain: no DP/EP/PP; one GPU per domain:
no TP) or a solve the solver refuses is written ``null``; the README says which and why.
The file carries no comments because SimAI's reader expects only these lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from designer.io.exports.common import one_line
from designer.model.scenario import Scenario
from designer.model.topology import Topology

__all__ = ["COLLECTIVES", "BusbwTable", "busbw_table", "busbw_yaml"]

#: The collectives SimAI's busbw.yaml lists per group, as its keys spell them (our
#: solver's names are the same).
COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall")


@dataclass
class BusbwTable:
    """Busbw (GB/s, 2 decimals, None when not available) per group and collective, the
    GPU ids each group used, the message size, and why any value is missing."""

    values: dict[str, dict[str, float | None]]
    groups: dict[str, list[str]]
    size: int
    missing: list[str]


def _groups(domains: list[list[str]]) -> dict[str, list[str]]:
    firsts = [d[0] for d in domains]
    return {
        "TP": domains[0] if len(domains[0]) > 1 else [],
        "DP": firsts if len(firsts) > 1 else [],
        "EP": firsts if len(firsts) > 1 else [],
        "PP": firsts[:2] if len(firsts) > 1 else [],
    }


def busbw_table(topology: Topology, domains: list[list[str]]) -> BusbwTable:
    """Solve every group's collectives on ``topology``; ``domains`` are the GPU ids of
    each NVLink domain in structural order (`simulators.flatten`)."""
    from designer.solver import SolverError, solve_collective, take_snapshot

    saved = Scenario.from_dict(topology.settings["scenario"])
    snap = take_snapshot(topology)
    index = {snap.node_ids[g]: r for r, g in enumerate(snap.gpus.tolist())}
    groups = _groups(domains)
    values: dict[str, dict[str, float | None]] = {}
    missing: list[str] = []
    for name, members in groups.items():
        wanted = ("sendrecv",) if name == "PP" else COLLECTIVES
        row: dict[str, float | None] = {}
        for coll in wanted:
            row[coll] = None
            if not members:
                continue
            ranks = sorted(index[g] for g in members)
            try:
                res = solve_collective(
                    snap,
                    coll,
                    sizes=[saved.bytes],
                    algorithm="auto",
                    ranks=ranks,
                    launch=saved.launch,
                )
            except SolverError as exc:
                missing.append(f"{name} {coll}: {one_line(str(exc))}")
                continue
            row[coll] = round(float(res.busbw_GBps[0]), 2)
        if not members:
            why = "one GPU per NVLink domain" if name == "TP" else "one NVLink domain"
            missing.append(f"{name}: the design has {why}")
        values[name] = row
    return BusbwTable(values, groups, saved.bytes, missing)


def _value(v: float | None) -> str:
    return "null" if v is None else repr(v)


def busbw_yaml(topology: Topology, table: BusbwTable) -> str:
    """The file's text in upstream's layout (see module doc)."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in one_line(topology.name))
    lines = [name or "fabric"]
    for group in ("TP", "DP", "EP"):
        lines.append(f"{group}:")
        lines += [f"{c},: {_value(table.values[group][c])}" for c in COLLECTIVES]
    lines += ["PP:", f"busbw: {_value(table.values['PP']['sendrecv'])}"]
    return "\n".join(lines) + "\n"
