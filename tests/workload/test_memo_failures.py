"""After links fail and come back, a simulation with the memo answers as a fresh one.

The memo keeps a result whose switches saw a failure when the route memo patches every
plan weighed for it with nothing computed anew (`SimulationMemo.still`); these tests
fail and restore random network links, on fabrics and routing modes where a failure
reroutes flows that never crossed it (ECMP hashing over fewer next hops, a SHARP tree
re-rooted), and compare every figure with a simulation from scratch.
"""

from __future__ import annotations

import random

import pytest

from designer.model.templates import build_template
from designer.solver import take_snapshot
from designer.workload.memo import SimulationMemo
from designer.workload.simulate import simulate
from designer.workload.tasks import Comm, Compute, JobTraffic

CASES = [
    ("leaf-spine", {"leaves": 4, "spines": 3, "hosts_per_leaf": 2, "uplinks": 1}),
    ("rail-cluster", {"nodes": 4}),
    ("superpod", {"gpu": "B200", "sus": 1}),
    ("fat-tree", {}),
]


def _jobs(snap, rng: random.Random) -> list[JobTraffic]:
    """Three jobs on disjoint GPUs: an all-reduce across the fabric, an all-to-all, and
    a pipeline send, each after a compute span."""
    gpus = [snap.node_ids[g] for g in snap.gpus.tolist()]
    rng.shuffle(gpus)
    n = max(2, len(gpus) // 6)
    a, b, c = gpus[:n], gpus[n: 2 * n], gpus[2 * n: 2 * n + 2]
    return [
        JobTraffic("a", (Compute(0, "compute", 1e-4),
                         Comm(1, "dp", "allreduce", (tuple(a),), 64 << 20, deps=(0,)))),
        JobTraffic("b", (Compute(0, "compute", 2e-4),
                         Comm(1, "ep", "alltoall", (tuple(b),), 16 << 20, deps=(0,)))),
        JobTraffic("c", (Comm(0, "pp", "sendrecv", (tuple(c),), 8 << 20),)),
    ]


def _same(x, y) -> bool:
    return x.to_json() | {"timing_ms": {}} == y.to_json() | {"timing_ms": {}}


@pytest.mark.parametrize("routing", ["adaptive", "ecmp", "static"])
@pytest.mark.parametrize(("template", "params"), CASES, ids=[c[0] for c in CASES])
def test_fail_and_restore_with_the_memo_answer_as_from_scratch(template, params, routing):
    rng = random.Random(f"{template}-{routing}")
    topo = build_template(template, **params)
    net = [lk.id for lk in topo.links()
           if {topo.node(lk.a).kind, topo.node(lk.b).kind} <= {"leaf", "spine", "core"}]
    snap = take_snapshot(topo)
    jobs = _jobs(snap, rng)
    memo = SimulationMemo()
    simulate(snap, jobs, memo=memo, routing=routing)
    failed: list[str] = []
    kept = 0
    for _ in range(10):
        if failed and rng.random() < 0.4:
            lid = failed.pop(rng.randrange(len(failed)))
            topo.update_link(lid, failed=False)
        else:
            lid = rng.choice([x for x in net if x not in failed])
            topo.update_link(lid, failed=True)
            failed.append(lid)
        snap = take_snapshot(topo)
        try:
            fresh = simulate(snap, jobs, routing=routing)
        except Exception as exc:  # the fabric cannot run a job now: the memo must agree
            with pytest.raises(type(exc)):
                simulate(snap, jobs, memo=memo, routing=routing)
            continue
        again = simulate(snap, jobs, memo=memo, routing=routing)
        kept += again.stats["unchanged"]
        assert _same(again, fresh), (template, routing, failed)
    if template == "leaf-spine":  # the shortcut is taken, under every routing mode
        assert kept > 0
