"""Each new template and GPU builds, validates clean and solves an all-reduce, at a small
size (the CLI's `new` / `validate` / `solve` path, without the files)."""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.rules import validate
from designer.model.templates import build_template
from designer.solver import solve_collective, take_snapshot

CASES = [
    ("nvl72", {"racks": 2}),
    ("nvl72", {"racks": 2, "gpu": "GB300", "planes": 2}),
    ("nvl72", {"racks": 2, "gpu": "Rubin", "fabric": "roce"}),
    ("hgx", {"gpu": "B300"}),
    ("rail-cluster", {"gpu": "MI355X", "nodes": 2}),
    ("rail-cluster", {"gpu": "MI300X", "nodes": 2, "fabric": "roce"}),
    ("rail-cluster", {"gpu": "MI325X", "nodes": 2, "nics_per_node": 4}),
    ("rail-cluster", {"gpu": "B300", "nodes": 2, "nic_gbps": 800, "planes": 4}),
    ("leaf-spine", {"gpu": "GB300", "leaves": 2, "hosts_per_leaf": 2}),
    ("torus3d", {"gpu": "TPU-v5p", "x": 2, "y": 2, "z": 2}),
    ("torus3d", {"gpu": "TPU7x", "x": 2, "y": 2, "z": 2}),
    ("torus3d", {"gpu": "Trainium2", "x": 4, "y": 4, "z": 1}),
]


def _ranks(topo, snap) -> np.ndarray | None:
    """Two GPUs of each of two NVLink domains on a big design (a whole 144-GPU solve
    takes seconds), every GPU on a small one."""
    gpus = [n.id for n in topo.nodes("gpu")]
    if len(gpus) <= 32:
        return None
    rank_of = {snap.node_ids[node]: r for r, node in enumerate(snap.gpus.tolist())}
    by_rack: dict[str, list[str]] = {}
    for g in gpus:
        by_rack.setdefault(g.split("-")[0], []).append(g)
    picked = [g for rack in sorted(by_rack)[:2] for g in by_rack[rack][:2]]
    return np.array([rank_of[g] for g in picked])


@pytest.mark.parametrize(("name", "params"), CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_builds_validates_and_solves(name, params):
    topo = build_template(name, **params)
    assert [str(f) for f in validate(topo)] == []
    snap = take_snapshot(topo)
    res = solve_collective(snap, "allreduce", sizes=[1 << 26], ranks=_ranks(topo, snap))
    assert res.busbw_GBps[0] > 0 and np.isfinite(res.time_s[0])
