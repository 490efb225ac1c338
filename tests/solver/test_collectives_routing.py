"""Collective plans under each routing mode: ECMP collides where adaptive routing spreads,
and a batch of transfers routes exactly as the per-pair routes do (shared routes and
the local view included)."""

from __future__ import annotations

import numpy as np
import pytest
from test_collectives import ceiling, plan_ceiling

from designer.model.templates import build_template
from designer.model.topology import Link, Node, Topology
from designer.solver.flows.collectives import plan_alltoall
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot


# ----------------------------------------------------------------- ECMP versus adaptive
def _with_routing(topo, mode):
    topo.set_setting("routing", mode)
    return take_snapshot(topo)


def test_ecmp_collides_where_adaptive_spreads():
    """Issue 3: on an oversubscribed leaf-spine ECMP hashing piles flows on one uplink."""
    topo = build_template("leaf-spine")  # 4 hosts per leaf, 2 spines x 1 uplink: 2:1
    adaptive = ceiling(_with_routing(topo, "adaptive"), "alltoall")
    ecmp = ceiling(_with_routing(topo, "ecmp"), "alltoall")
    assert adaptive == pytest.approx(29.375)
    assert ecmp < 0.95 * adaptive
    # The ECMP figure is the fullest arc's fair share: every flow has weight 1 and the
    # same bytes, so busbw = (n-1) x min over arcs of capacity / flows on the arc.
    snap = _with_routing(topo, "ecmp")
    (phase,) = plan_alltoall(Router(snap), np.arange(16)).phases
    flows_on = np.bincount(phase.pairs()[1], minlength=snap.n_arcs)
    used = flows_on > 0
    assert ecmp == pytest.approx(15 * np.min(snap.arc_cap[used] / flows_on[used]))
    # adaptive puts 24 flows' worth on every leaf-spine arc; ECMP overloads at least one
    kinds = np.array(snap.node_kind)
    fabric = (kinds[snap.arc_src] != "nic") & (kinds[snap.arc_dst] != "nic") & used
    assert flows_on[fabric].sum() == 4 * 48 * 2
    assert flows_on[fabric].max() > 24


def test_ecmp_penalty_for_several_seeds():
    topo = build_template("leaf-spine", leaves=2, hosts_per_leaf=4)
    adaptive = plan_ceiling(_with_routing(topo, "adaptive"), "alltoall")
    snap = _with_routing(topo, "ecmp")
    ecmp = [plan_ceiling(snap, "alltoall", seed=s) for s in range(6)]
    assert all(e <= adaptive + 1e-9 for e in ecmp)
    assert min(ecmp) < 0.9 * adaptive
    assert plan_ceiling(snap, "alltoall", seed=3) == ecmp[3]  # deterministic


@pytest.mark.parametrize(
    ("template", "kw"),
    [
        ("leaf-spine", {}),
        ("leaf-spine", {"leaves": 2, "hosts_per_leaf": 4}),
        ("fat-tree", {"k": 4}),
        ("rail-cluster", {"nodes": 4, "oversubscription": 2.0}),
    ],
)
@pytest.mark.parametrize("collective", ["alltoall", "allreduce"])
def test_adaptive_never_worse_than_ecmp(template, kw, collective):
    topo = build_template(template, **kw)
    alg = "ring" if collective == "allreduce" else "auto"
    adaptive = ceiling(_with_routing(topo, "adaptive"), collective, algorithm=alg)
    for mode in ("ecmp", "static"):
        assert ceiling(_with_routing(topo, mode), collective, algorithm=alg) <= adaptive * (
            1 + 1e-9
        )


@pytest.mark.parametrize("routing", ["adaptive", "ecmp"])
def test_shared_routes_and_local_view_hold_the_same_pairs(routing, tune):
    # Access legs and fabric DAGs are shared routes; expanding them (pairs()), or only
    # the endpoints' legs (local_view()), lists the same flow-arc weights.
    tune(alltoall_classes=False)  # per pair (classes: test_alltoall_classes)
    topo = build_template("rail-cluster", nodes=3)
    topo.set_setting("routing", routing)
    snap = take_snapshot(topo)
    (phase,) = plan_alltoall(Router(snap), np.arange(snap.n_gpus)).phases
    assert phase.routes is not None and phase.routes.local is not None

    def totals(f, a, w):
        return np.bincount(f * snap.n_arcs + a, weights=w,
                           minlength=phase.n_flows * snap.n_arcs)

    view = phase.local_view()
    assert view.routes is None or not view.routes.local[view.routes.pair_route].any()
    expanded = [view.pair_flow, view.pair_arc, view.pair_weight]
    if view.routes is not None:
        expanded = [np.concatenate([x, y]) for x, y in
                    zip(expanded, view.routes.expand(), strict=True)]
    np.testing.assert_allclose(totals(*expanded), totals(*phase.pairs()))
    assert phase.n_pairs == len(phase.pairs()[0])


# ----------------------------------------------------------------- batches of transfers
def _degraded_rail(routing: str):
    """Four HGX H100 servers on 4 rail NICs each (GPUs 1, 3, 5, 7 reach the fabric over
    PXN), some NVLink and leaf-spine bundles thinner than others."""
    topo = build_template("rail-cluster", nodes=4, nics_per_node=4)
    rng = np.random.default_rng(3)
    for link in list(topo.links()):
        if link.count > 1 and rng.random() < 0.4:
            topo.update_link(link.id, count=int(rng.integers(1, link.count)))
    topo.set_setting("routing", routing)
    return take_snapshot(topo)


def _back_to_back(routing: str):
    """Two servers of two NVLinked GPUs whose rail NICs are cabled to each other."""
    t = Topology()
    for s in range(2):
        for k in range(2):
            t.add_node(Node(f"g{s}{k}", "gpu", "H100", f"g{s}{k}"))
            t.add_node(Node(f"c{s}{k}", "nic", "ConnectX-7", f"c{s}{k}"))
            t.add_link(Link(f"g{s}{k}-c{s}{k}", f"g{s}{k}", f"c{s}{k}", "pcie5"))
        t.add_link(Link(f"g{s}0-g{s}1", f"g{s}0", f"g{s}1", "nvlink4", count=6))
    for k in range(2):
        t.add_link(Link(f"c0{k}-c1{k}", f"c0{k}", f"c1{k}", "ib-ndr"))
    t.set_setting("routing", routing)
    return take_snapshot(t)


def _flow_pairs(phase) -> list[tuple[int, int, float]]:
    f, a, w = phase.pairs()
    return sorted(zip(f.tolist(), a.tolist(), w.tolist(), strict=True))


def _expected_pairs(snap, router, flow, a, b, key) -> list[tuple[int, int, float]]:
    """A transfer's pairs from the per-pair routes: the NVLink spray inside a domain;
    else the way to the NIC, the cable(s), the fabric between the edge switches (DAG or
    single path) and the way down."""
    rl = router.rank_links()
    if snap.gpu_domain[a] == snap.gpu_domain[b]:
        route = [router.nvlink_route(int(rl.gpu[a]), int(rl.gpu[b]))]
    elif rl.leaf[a] == rl.nic[b] or rl.leaf[b] == rl.nic[a]:  # NICs cabled together
        cable = rl.up[a] if rl.leaf[a] == rl.nic[b] else rl.up[b] ^ 1
        route = [rl.access_up.route(a), ([cable], [1.0]), rl.access_down.route(b)]
    else:
        la, lb = int(rl.leaf[a]), int(rl.leaf[b])
        if snap.routing == "adaptive":
            fabric = router.fabric_dag(la, lb)
        else:
            _, arcs = router.fabric_paths(la, lb, np.array([key]), np.array([b]), snap.routing)
            fabric = (arcs, np.ones(len(arcs)))
        route = [rl.access_up.route(a), ([rl.up[a]], [1.0]), fabric,
                 ([rl.up[b] ^ 1], [1.0]), rl.access_down.route(b)]
    return [(flow, int(x), float(w)) for arcs, ws in route
            for x, w in zip(arcs, ws, strict=True)]


@pytest.mark.parametrize("routing", ["adaptive", "ecmp", "static"])
@pytest.mark.parametrize("design", ["degraded rail", "back to back"])
def test_a_batch_of_transfers_equals_the_per_pair_routes(design, routing):
    from designer.solver.flows.phases import FlowBuilder

    snap = (_degraded_rail if design == "degraded rail" else _back_to_back)(routing)
    rng = np.random.default_rng(4)
    if design == "back to back":  # within a server, or rail to rail across
        a = np.array([0, 1, 0, 2, 1, 3, 2, 3, 0])
        b = np.array([1, 0, 2, 0, 3, 1, 3, 2, 0])
    else:
        a, b = rng.integers(0, snap.n_gpus, 300), rng.integers(0, snap.n_gpus, 300)
    keys = rng.integers(0, 1 << 30, len(a))
    fb = FlowBuilder(Router(snap))
    flows = fb.new_flows(np.ones(len(a)), [str(i) for i in range(len(a))])
    fb.transfers(flows, a, b, keys)
    phase = fb.phase("batch", 1)
    reference = Router(snap)
    expect = sorted(p for i in range(len(a))
                    for p in _expected_pairs(snap, reference, i, a[i], b[i], keys[i]))
    assert _flow_pairs(phase) == expect
    assert set(phase.pairs()[0].tolist()) == set(np.flatnonzero(a != b).tolist())
    # one transfer at a time: the same pairs
    each = FlowBuilder(Router(snap))
    flows2 = each.new_flows(np.ones(len(a)), [str(i) for i in range(len(a))])
    for i in range(len(a)):
        each.transfer(int(flows2[i]), int(a[i]), int(b[i]), int(keys[i]))
    single = each.phase("single", 1)
    assert _flow_pairs(single) == expect
    assert (phase.nvlink_hops, phase.net_hops) == (single.nvlink_hops, single.net_hops)


@pytest.mark.parametrize("ranks", ["one per domain", "one domain"])
def test_alltoall_with_transfers_all_across_or_all_inside_domains(ranks, tune):
    # One GPU per server: every transfer crosses the fabric; one server: none does.
    tune(alltoall_classes=False)  # a flow per pair (classes: test_alltoall_classes)
    snap = take_snapshot(build_template("rail-cluster", nodes=4))
    chosen = (np.flatnonzero(snap.gpu_local == 2) if ranks == "one per domain"
              else np.flatnonzero(snap.gpu_domain == 1))
    (phase,) = plan_alltoall(Router(snap), chosen).phases
    f, a, _ = phase.pairs()
    assert np.array_equal(np.unique(f), np.arange(len(chosen) * (len(chosen) - 1)))
    crossed = {snap.node_kind[snap.arc_dst[x]] for x in a.tolist()}
    if ranks == "one per domain":
        assert "leaf" in crossed and "nvswitch" not in crossed
        assert phase.net_hops == 2 + 0 and phase.nvlink_hops == 0  # one rail: one leaf
    else:
        assert crossed == {"nvswitch", "gpu"} and phase.routes is None
