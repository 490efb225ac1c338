"""An all-to-all solved by classes (one flow standing for many pairs, the other ranks'
legs mirrored from a representative's) loads every rank's own links in the simulation,
as it does in the solver: per-link bytes add up to what the ranks send, and a job that
shares one of the mirrored legs is slowed by it."""

from __future__ import annotations

import pytest

from designer.model.templates import build_template
from designer.solver import solve_collective, take_snapshot
from designer.workload.simulate import simulate
from designer.workload.tasks import Comm, JobTraffic


@pytest.fixture(scope="module")
def four():
    topo = build_template("rail-cluster", nodes=4, gpu="H800", nic_gbps=400)
    return topo, take_snapshot(topo)


def test_alltoall_by_classes_loads_every_nic(four):
    topo, snap = four
    n, size = 32, 64 << 20
    gpus = tuple(snap.node_ids[g] for g in snap.gpus[:n].tolist())
    res = simulate(snap, [JobTraffic("a", (Comm(0, "ep", "alltoall", (gpus,), size),))])
    t = float(solve_collective(snap, "alltoall", sizes=[size], ranks=list(range(n))).time_s[0])
    assert res.jobs[0].iteration_s == pytest.approx(t, rel=1e-12)
    kinds = {x.id: x.kind for x in topo.nodes()}
    nic_links = {}
    for row in res.to_json()["links"]:
        link = topo.link(row["id"])
        ends = {kinds[link.a], kinds[link.b]}
        if "nic" in ends and "gpu" not in ends:
            nic_links[row["id"]] = row["bytes"]
    # Each rank sends (n - 8) / n of its buffer off its server, and receives as much:
    # both cross its NIC's leaf link.
    assert sum(nic_links.values()) == pytest.approx(2 * size * (n - 8), rel=1e-9)
    assert len(nic_links) == n
    assert min(nic_links.values()) == pytest.approx(max(nic_links.values()), rel=1e-9)
