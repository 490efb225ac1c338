"""`flows.recipe`: a phase's transfers across NVLink domains read back from its recipe
(sender, receiver, whole route), checked against the collective's own transfer list
routed independently; NVLink sprays shared by the flows that cross them."""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.commands import SetSetting
from designer.model.templates import build_template
from designer.solver.flows.collectives import plan_ring, ring_order
from designer.solver.flows.recipe import phase_transfers
from designer.solver.pipeline import solve_collective
from designer.solver.rates.maxmin import max_min_rates
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot


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


# ----------------------------------------------------------------- NVLink sprays
def _nv_pieces(phase):
    shared = [s for s in phase.recipe.shared if s.nv is not None]
    pieces = [p for p in phase.recipe.pieces if p.kind == "nv"]
    return shared, pieces


@pytest.mark.parametrize("design", ["hgx", "rail"])
def test_a_ring_keeps_each_nvlink_spray_once_and_solves_as_the_pairs(design):
    topo = (build_template("hgx", gpu="H100") if design == "hgx"
            else build_template("rail-cluster", nodes=3))
    snap = take_snapshot(topo)
    router = Router(snap)
    (phase,) = plan_ring(router, np.arange(snap.n_gpus), "allreduce").phases
    (sp,), pieces = _nv_pieces(phase)
    assert not pieces
    a, b = sp.ends
    # One route per distinct (sender, receiver), each the router's own spray; every
    # channel crosses it (8 channels, hops shared between them).
    assert len(set(zip(a.tolist(), b.tolist(), strict=True))) == len(a)
    assert len(sp.routes.pair_route) >= 4 * len(a)
    for i in range(len(a)):
        arcs, weights = router.nvlink_route(int(a[i]), int(b[i]))
        lo, hi = sp.routes.ptr[i], sp.routes.ptr[i + 1]
        np.testing.assert_array_equal(sp.routes.link[lo:hi], arcs)
        np.testing.assert_array_equal(sp.routes.weight[lo:hi], weights)
    assert sp.routes.local.all()
    # The shared form and the same incidence as plain pairs give the same rates.
    flow, arc, weight = phase.pairs()
    shared = max_min_rates(snap.arc_cap, phase.pair_flow, phase.pair_arc, phase.pair_weight,
                           n_flows=phase.n_flows, routes=phase.routes)
    plain = max_min_rates(snap.arc_cap, flow, arc, weight, n_flows=phase.n_flows)
    np.testing.assert_allclose(shared.rates, plain.rates, rtol=1e-12)
    np.testing.assert_allclose(shared.link_load, plain.link_load, rtol=1e-12, atol=1e-6)
    # Views that name a transfer's ends see the sprays as pairs again.
    local = phase.local_view()
    assert local.routes is None or not local.routes.local[local.routes.pair_route].any()
    assert len(local.pair_arc) == len(arc)


def test_an_alltoall_lists_its_nvlink_sprays_as_pairs():
    # Every (sender, receiver) once: nothing to share, the sprays stay the phase's pairs.
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    plan = solve_collective(snap, "alltoall", sizes=[1 << 30]).plan
    shared, pieces = _nv_pieces(plan.phases[0])
    assert not shared and len(pieces) == 1 and len(pieces[0].flows) == 8 * 7


@pytest.mark.parametrize("design", ["rail-cluster", "fat-tree"])
def test_shared_pieces_are_views_of_the_phase_routes_not_copies(design):
    # A ring across servers: NVLink sprays and the legs + class DAGs, two shared pieces,
    # concatenated for the solver; the recipe's pieces must then point into that one
    # table (their own copies freed), with the same entries as a fresh router gives.
    # 40 servers: more than one leaf per rail, so some class DAGs cross the spines; the
    # 3-tier fat tree's cross the cores too, and keep their middles apart (after the
    # piece's own entries).
    topo = (build_template("rail-cluster", nodes=40) if design == "rail-cluster"
            else build_template("fat-tree", k=8))
    snap = take_snapshot(topo)
    router = Router(snap)
    (phase,) = plan_ring(router, np.arange(snap.n_gpus), "allreduce").phases
    shared = phase.recipe.shared
    # (The fat tree's GPUs have no NVLink: no sprays.)
    nv = [sp.nv is not None for sp in shared]
    assert sorted(nv) == ([False, True] if design == "rail-cluster" else [False])
    at = 0
    for sp in shared:
        n = int(sp.routes.ptr[-1])
        for part in (sp.routes.link, sp.routes.weight):
            assert np.shares_memory(part, phase.routes.link) or np.shares_memory(
                part, phase.routes.weight)
        np.testing.assert_array_equal(sp.routes.link, phase.routes.link[at:at + n])
        np.testing.assert_array_equal(sp.routes.weight, phase.routes.weight[at:at + n])
        table = sp.nv if sp.nv is not None else sp.fab
        assert len(table.arcs) and np.shares_memory(table.arcs, phase.routes.link)
        at += n
        if sp.mid is not None:
            k = sp.mid.size
            assert (k > 0) == (design == "fat-tree")
            np.testing.assert_array_equal(sp.mid.table.arcs, phase.routes.link[at:at + k])
            assert not k or np.shares_memory(sp.mid.table.arcs, phase.routes.link)
            at += k
    assert at == len(phase.routes.link)
    # Written once, as int32 ids, and every piece joined.
    assert phase.routes.link.dtype == np.int32 and all(sp.joined for sp in shared)
    # The fabric piece's class DAGs (middles written in) are still the router's own.
    fab = next(sp for sp in shared if sp.fab is not None)
    again = Router(snap).fabric_dags(fab.la, fab.lb)
    rows = fab.fab if fab.mid is None else fab.mid.whole(fab.fab)
    np.testing.assert_array_equal(rows.arcs, again.arcs)
    np.testing.assert_array_equal(rows.weights, again.weights)
