"""`route_recipe.phase_transfers`: a phase's transfers across NVLink domains read back
from its recipe (sender, receiver, whole route), checked against the collective's own
transfer list routed independently."""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.commands import SetSetting
from designer.model.templates import build_template
from designer.solver.collectives import ring_order
from designer.solver.route_recipe import phase_transfers
from designer.solver.routing import Router
from designer.solver.snapshot import take_snapshot
from designer.solver.timing import solve_collective


@pytest.mark.parametrize("routing", ["adaptive", "ecmp", "static"])
def test_ring_transfers_and_their_routes_read_back_from_the_recipe(routing):
    topo = build_template("superpod", gpu="B200", sus=2)
    SetSetting("routing", routing).do(topo)
    snap = take_snapshot(topo)
    plan = solve_collective(snap, sizes=[1 << 30], algorithm="ring").plan
    (phase,) = plan.phases
    tr = phase_transfers(phase)
    assert tr is not None
    router = Router(snap)
    ranks = np.arange(snap.n_gpus)
    n = len(ranks)
    channels = int(np.bincount(snap.gpu_domain).min())
    want = set()
    for c in range(channels):
        order = ring_order(snap, ranks, c).tolist()
        want |= {(order[i], order[(i + 1) % n]) for i in range(n)
                 if snap.gpu_domain[order[i]] != snap.gpu_domain[order[(i + 1) % n]]}
    got = set()
    for part in tr.parts:
        got |= set(zip(part.sender.tolist(), part.receiver.tolist(), strict=True))
    assert got == want
    # One rank's transfers: its own cable and PCIe link, the far end's, and the fabric
    # route between the two edge switches (a DAG, or one ECMP/static path).
    leaf = {r: int(snap.arc_dst[router.edge_arc(int(snap.gpu_nic[r]))]) for r in ranks}
    for rank in (0, 255, 256):
        arcs = set(np.concatenate(tr.arcs_of(np.array([rank]))).tolist())
        mine = [(a, b) for a, b in want if rank in (a, b)]
        assert mine
        for a, b in mine:
            na, nb = int(snap.gpu_nic[a]), int(snap.gpu_nic[b])
            assert {router.pcie_arc(int(snap.gpus[a]), na), router.edge_arc(na),
                    router.edge_arc(nb) ^ 1, router.pcie_arc(nb, int(snap.gpus[b]))} <= arcs
            if leaf[a] != leaf[b] and routing == "adaptive":
                assert set(router.fabric_dag(leaf[a], leaf[b])[0].tolist()) <= arcs
        if routing != "adaptive":  # a path: exactly one arc out of the sender's leaf
            ups = [x for x in arcs if snap.arc_src[x] == leaf[rank]
                   and "spine" in snap.node_ids[snap.arc_dst[x]]]
            assert len(ups) <= len(mine)


def test_a_phase_without_a_recipe_names_no_transfers():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    plan = solve_collective(snap, sizes=[1 << 30], algorithm="ring").plan
    assert all(phase_transfers(p) is None for p in plan.phases)  # one domain: no legs
