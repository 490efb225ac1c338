"""Routes reused across what-if edits (`reuse.RouteMemo`) equal routes from scratch.

Property-style: random sequences of edits (counts, technologies, failed and restored
links, failed switches and NICs, added links, the routing setting) on small templates,
in every routing mode; after each edit the memo's plans (patched from the previous
snapshot's) must be the fresh plans array for array, and a failing solve must fail the
same way.
"""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np
import pytest
from fabrics import small_fabric

from designer.model.templates import build_template
from designer.model.topology import Link, Node, Topology
from designer.solver.errors import SolverError
from designer.solver.flows.collectives import candidate_plans
from designer.solver.flows.phases import Phase
from designer.solver.flows.recipe import materialize
from designer.solver.pipeline import solve_collective
from designer.solver.reuse import RouteMemo
from designer.solver.routing.change import diff_snapshots
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot

DESIGNS = {
    "superpod": lambda: build_template("superpod", gpu="H100", sus=1),
    "leaf-spine": lambda: build_template("leaf-spine", leaves=4, spines=3, hosts_per_leaf=3,
                                         uplinks=2),
    "fat-tree": lambda: build_template("fat-tree", k=4),
    "hgx": lambda: build_template("hgx"),
    "nvl72": lambda: build_template("nvl72", gpus=16),
    "rail-pxn": lambda: build_template("rail-cluster", nodes=4, nics_per_node=4),
    "torus": lambda: build_template("torus3d", x=2, y=2, z=3),
}
SAME_FAMILY = {"infiniband": ["ib-hdr", "ib-ndr", "ib-xdr"],
               "ethernet": ["roce-200", "roce-400", "eth-400"],
               "nvlink": ["nvlink3", "nvlink4", "nvlink5"], "pcie": ["pcie4", "pcie5"]}
FAILABLE = ("leaf", "spine", "core", "switch", "nic", "nvswitch", "nvlink-switch-tray")


# ----------------------------------------------------------------- comparing plans
def _same_array(a, b, what):
    assert (a is None) == (b is None), what
    if a is None:
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    np.testing.assert_array_equal(a, b, err_msg=what)


def assert_same_plans(got, want):
    assert [(p.collective, p.algorithm, p.n_nodes, p.pipelined) for p in got] == \
        [(p.collective, p.algorithm, p.n_nodes, p.pipelined) for p in want]
    for p, q in zip(got, want, strict=True):
        _same_array(p.ranks, q.ranks, "ranks")
        assert len(p.phases) == len(q.phases)
        for x, y in zip(p.phases, q.phases, strict=True):
            what = f"{p.algorithm} / {x.name}"
            assert (x.name, x.steps, x.nvlink_hops, x.net_hops, x.n_flows) == \
                (y.name, y.steps, y.nvlink_hops, y.net_hops, y.n_flows), what
            for f in ("pair_flow", "pair_arc", "pair_weight", "flow_bytes"):
                _same_array(getattr(x, f), getattr(y, f), f"{what}: {f}")
            assert (x.routes is None) == (y.routes is None), what
            if x.routes is not None:
                for f in ("ptr", "link", "weight", "pair_flow", "pair_route", "pair_mult",
                          "local"):
                    _same_array(getattr(x.routes, f), getattr(y.routes, f),
                                f"{what}: routes.{f}")


def outcome(fn):
    try:
        return fn(), None
    except SolverError as exc:
        return None, str(exc)


# ----------------------------------------------------------------- random edits
def _links(topo, rng, pred=lambda lk: True):
    links = [lk for lk in topo.links() if pred(lk)]
    return links[int(rng.integers(len(links)))] if links else None


def edit(topo, rng) -> str:
    """One random what-if edit; returns what it did."""
    kind = rng.choice(["count", "count", "tech", "fail", "fail", "restore", "node", "add",
                       "routing", "cross-tech"], p=[.18, .12, .12, .16, .1, .12, .1, .04, .03,
                                                    .03])
    cat = topo.catalog
    if kind in ("count", "tech", "cross-tech", "fail"):
        lk = _links(topo, rng, lambda lk: not lk.failed)
        if lk is None:
            return "none"
        if kind == "count":
            topo.update_link(lk.id, count=max(1, lk.count + int(rng.choice([-1, 1, 2]))))
        elif kind == "tech":
            fam = cat.tech(lk.tech).family
            topo.update_link(lk.id, tech=str(rng.choice(SAME_FAMILY[fam])))
        elif kind == "cross-tech":
            topo.update_link(lk.id, tech="ib-ndr" if cat.tech(lk.tech).family != "infiniband"
                             else "roce-400")
        else:
            topo.update_link(lk.id, failed=True)
        return f"{kind} {lk.id}"
    if kind == "restore":
        lk = _links(topo, rng, lambda lk: lk.failed)
        if lk is not None:
            topo.update_link(lk.id, failed=False)
        return f"restore {lk and lk.id}"
    if kind == "node":
        nodes = [n for n in topo.nodes() if n.kind in FAILABLE]
        if not nodes:
            return "none"
        node = nodes[int(rng.integers(len(nodes)))]
        topo.update_node(node.id, failed=not node.failed)
        return f"node {node.id} failed={not node.failed}"
    if kind == "add":
        lk = _links(topo, rng)
        topo.add_link(Link(topo.new_id("extra"), lk.a, lk.b, lk.tech, lk.count))
        return f"add parallel to {lk.id}"
    modes = ["adaptive", "ecmp", "static"]
    topo.set_setting("routing", modes[(modes.index(topo.settings["routing"]) + 1) % 3])
    return "routing"


def check(memo, snap, collective, algorithm, log):
    ranks = np.arange(snap.n_gpus)
    got, err = outcome(lambda: memo.plans(snap, ranks, collective, algorithm))
    want, want_err = outcome(lambda: candidate_plans(Router(snap), ranks, collective,
                                                     algorithm))
    assert err == want_err, log
    if want is not None:
        assert_same_plans(got, want)


CASES = [  # design, collective, algorithm
    ("superpod", "allreduce", "ring"), ("superpod", "allreduce", "auto"),
    ("leaf-spine", "allreduce", "auto"), ("leaf-spine", "alltoall", "auto"),
    ("fat-tree", "allreduce", "ring"), ("fat-tree", "sendrecv", "auto"),
    ("hgx", "allreduce", "auto"), ("nvl72", "allgather", "ring"),
    ("rail-pxn", "allreduce", "auto"), ("rail-pxn", "alltoall", "auto"),
    ("torus", "allreduce", "ring"),
]


@pytest.mark.parametrize("routing", ["adaptive", "ecmp", "static"])
@pytest.mark.parametrize(("design", "collective", "algorithm"), CASES)
def test_random_edits_reuse_equals_fresh(design, collective, algorithm, routing):
    rng = np.random.default_rng(zlib.crc32(f"{design} {collective} {algorithm} {routing}".encode()))
    topo = DESIGNS[design]()
    topo.set_setting("routing", routing)
    memo = RouteMemo()
    log = []
    check(memo, take_snapshot(topo), collective, algorithm, log)
    for _ in range(7):
        log.append(edit(topo, rng))
        check(memo, take_snapshot(topo), collective, algorithm, log)


@pytest.mark.parametrize("routing", ["adaptive", "ecmp", "static"])
@pytest.mark.parametrize("design", ["leaf-spine", "fat-tree"])
def test_fail_and_restore_fabric_links_and_switches_one_by_one(design, routing, tune):
    # Per pair: an all-to-all by classes (flows.alltoall) is planned afresh, not patched.
    tune(alltoall_classes=False)
    # Each fabric link (and switch) fails, then comes back: routes gain and lose next hops,
    # distances grow and shrink, arcs are renumbered both ways.
    topo = DESIGNS[design]()
    topo.set_setting("routing", routing)
    memo = RouteMemo()
    snap = take_snapshot(topo)
    switches = {n.id for n in topo.nodes() if n.kind in ("leaf", "spine", "core")}
    links = [lk.id for lk in topo.links() if lk.a in switches and lk.b in switches]
    rng = np.random.default_rng(7)
    picks = [("link", lid) for lid in rng.choice(links, 5, replace=False).tolist()]
    picks += [("node", "core-0" if design == "fat-tree" else "spine-0")]
    check(memo, snap, "alltoall", "auto", [])
    for what, ident in picks:
        for failed in (True, False):
            if what == "link":
                topo.update_link(ident, failed=failed)
            else:
                topo.update_node(ident, failed=failed)
            check(memo, take_snapshot(topo), "alltoall", "auto", [what, ident, failed])
            assert memo.last["patched"] == 1


def test_a_dual_homed_nic_moving_to_its_other_leaf_is_planned_afresh():
    # Each NIC is cabled to both leaves and uses its largest cable: adding links to the
    # second cable moves the NIC (and its transfers' classes) to the other leaf.
    topo = small_fabric(hosts_per_leaf=2, leaves=2, spines=2)
    for k in range(4):
        topo.add_link(Link(f"c{k}-L{1 - k // 2}", f"c{k}", f"L{1 - k // 2}", "ib-ndr"))
    memo = RouteMemo()
    check(memo, take_snapshot(topo), "allreduce", "ring", [])
    topo.update_link("c0-L1", count=2)
    check(memo, take_snapshot(topo), "allreduce", "ring", ["c0 moves"])
    assert memo.last["fresh"] == 1
    topo.update_link("L0-S0", count=3)
    check(memo, take_snapshot(topo), "allreduce", "ring", ["capacity"])
    assert memo.last["patched"] == 1


def two_level_nvlink_pxn() -> Topology:
    """Two servers of 4 GPUs on two NVSwitches joined by two NVLink bundles; only GPUs 0
    and 1 have a NIC, so GPUs 2 and 3 reach one through both bundles (PXN)."""
    t = Topology()
    t.add_node(Node("L0", "leaf", "QM9700", "leaf"))
    for s in range(2):
        for sw in "AB":
            t.add_node(Node(f"{sw}{s}", "nvswitch", "NVSwitch-gen3", f"{sw}{s}"))
        for k in range(4):
            g = f"g{s}{k}"
            t.add_node(Node(g, "gpu", "H100", g))
            t.add_link(Link(f"{g}-nv", g, f"{'AB'[k // 2]}{s}", "nvlink4", count=4))
            if k < 2:
                t.add_node(Node(f"c{s}{k}", "nic", "ConnectX-7", f"c{s}{k}"))
                t.add_link(Link(f"{g}-c", g, f"c{s}{k}", "pcie5"))
                t.add_link(Link(f"c{s}{k}-L0", f"c{s}{k}", "L0", "ib-ndr"))
        for j, count in enumerate((2, 3)):
            t.add_link(Link(f"A{s}-B{s}-{j}", f"A{s}", f"B{s}", "nvlink4", count=count))
    return t


def test_pxn_routes_follow_an_nvlink_edit_between_switches():
    topo = two_level_nvlink_pxn()
    memo = RouteMemo()
    check(memo, take_snapshot(topo), "allreduce", "ring", [])
    for count in (5, 1):   # weights of the relayed ways to the NICs change
        topo.update_link("A0-B0-0", count=count)
        check(memo, take_snapshot(topo), "allreduce", "ring", [count])
        assert memo.last["patched"] == 1
    topo.update_link("A0-B0-1", failed=True)
    check(memo, take_snapshot(topo), "allreduce", "ring", ["failed"])


@pytest.mark.parametrize("design", ["fat-tree", "rail-pxn", "torus", "superpod"])
def test_a_rebased_router_answers_like_a_fresh_one(design):
    # Queries made before each edit fill the old router's caches (distances, tables),
    # which the rebased one keeps where still valid.
    topo = DESIGNS[design]()
    rng = np.random.default_rng(3)
    memo = RouteMemo()
    for step in range(6):
        snap = take_snapshot(topo)
        got, want = memo.router(snap), Router(snap)
        sw = np.flatnonzero(want.is_switch & (np.diff(want.net.ptr) > 0))
        gpus = snap.gpus.astype(np.int64)
        for r in (got, want):   # the same queries, in the same order
            out, draw = [], np.random.default_rng(step)
            for a, b in draw.choice(sw, (4, 2)) if sw.size > 1 else ():
                out.append(outcome(lambda r=r, a=a, b=b: r.fabric_dag(int(a), int(b))))
                out.append(outcome(lambda r=r, a=a, b=b: r.fabric_paths(
                    int(a), int(b), np.arange(5), np.arange(5), "ecmp")))
            same = gpus[snap.gpu_domain == snap.gpu_domain[0]]
            for a, b in draw.choice(same, (4, 2)):
                out.append(outcome(lambda r=r, a=a, b=b: r.nvlink_route(int(a), int(b))))
            out.append(outcome(lambda r=r: r.rank_links()))
            out.append(outcome(lambda r=r: r.edge_arcs()))
            nic = snap.gpu_nic
            out.append(outcome(lambda r=r, g=gpus, c=nic: r.pcie_arcs(g, c)))
            out.append(outcome(lambda r=r, g=gpus, c=nic: r.pcie_arcs(c, g)))
            r.answers = out
        for x, y in zip(got.answers, want.answers, strict=True):
            assert x[1] == y[1]
            _same_value(x[0], y[0])
        edit(topo, rng)


def test_a_capacity_edit_leaves_switches_without_an_edge_arc():
    # Edge arcs are an endpoint's (a NIC's) way into the fabric; a capacity edit between
    # two switches recomputes them for its ends, which must stay without one, as in a
    # fresh router's table.
    topo = small_fabric(uplinks=(1, 1))
    memo = RouteMemo()
    memo.router(take_snapshot(topo)).edge_arcs()
    topo.update_link("L0-S0", count=3)
    snap = take_snapshot(topo)
    got = memo.router(snap).edge_arcs()
    assert got.tolist() == Router(snap).edge_arcs().tolist()
    assert got[snap.node_ids.index("L0")] == -1


def _same_value(a, b):
    if hasattr(a, "__dataclass_fields__"):
        for f in a.__dataclass_fields__:
            _same_value(getattr(a, f), getattr(b, f))
    elif isinstance(a, tuple):
        for x, y in zip(a, b, strict=True):
            _same_value(x, y)
    else:
        _same_array(a, b, "router answer")


@pytest.mark.parametrize("design", ["superpod", "rail-pxn", "hgx", "torus"])
def test_every_phase_is_its_recipe_materialized(design):
    snap = take_snapshot(DESIGNS[design]())
    router = Router(snap)
    for collective in ("allreduce", "alltoall"):
        for plan in candidate_plans(router, np.arange(snap.n_gpus), collective):
            for ph in plan.phases:
                again = materialize(ph.recipe, ph.name, ph.flow_bytes, ph.flow_label,
                                    ph.steps, ph.n_flows, snap.n_arcs, Phase)
                assert_same_plans([replace(plan, phases=(again,))],
                                  [replace(plan, phases=(ph,))])


# ----------------------------------------------------------------- reuse really happens
def _leaf_spine_link(snap):
    return next(k for k in snap.link_ids if "leaf" in k and "spine" in k)


@pytest.mark.parametrize("routing", ["adaptive", "ecmp"])
def test_capacity_edit_recomputes_only_the_routes_through_it(routing):
    topo = build_template("superpod", gpu="H100", sus=2)  # rings cross leaves
    topo.set_setting("routing", routing)
    memo = RouteMemo()
    snap = take_snapshot(topo)
    memo.plans(snap, np.arange(snap.n_gpus), "allreduce", "ring")
    lid = _leaf_spine_link(snap)
    topo.update_link(lid, count=topo.link(lid).count + 1)
    snap = take_snapshot(topo)
    plans = memo.plans(snap, np.arange(snap.n_gpus), "allreduce", "ring")
    assert memo.last["change"] == "capacity"
    assert memo.last["patched"] == 1 and memo.last["fresh"] == 0
    fabric = [s for s in plans[0].phases[0].recipe.shared if s.la is not None]
    n_classes = len(fabric[0].la) if routing == "adaptive" else 0
    # Adaptive: the DAGs out of and into the edited leaf; ECMP: no walk depends on it.
    assert 0 < memo.last["rows"] < n_classes / 2 if routing == "adaptive" else \
        memo.last["rows"] == 0
    assert_same_plans(plans, candidate_plans(Router(snap), np.arange(snap.n_gpus),
                                             "allreduce", "ring"))


@pytest.mark.parametrize("routing", ["adaptive", "ecmp", "static"])
def test_fail_and_restore_reroutes_the_affected_routes_only(routing):
    topo = build_template("fat-tree", k=4)
    topo.set_setting("routing", routing)
    memo = RouteMemo()
    snap = take_snapshot(topo)
    ranks = np.arange(snap.n_gpus)
    memo.plans(snap, ranks, "alltoall")
    lid = next(k for k in snap.link_ids if "spine" in k and "core" in k)
    for failed in (True, False):
        topo.update_link(lid, failed=failed)
        snap = take_snapshot(topo)
        plans = memo.plans(snap, ranks, "alltoall")
        assert memo.last["change"] == "live" and memo.last["patched"] == 1
        assert 0 < memo.last["rows"] < len(ranks) * (len(ranks) - 1) / 4
        assert_same_plans(plans, candidate_plans(Router(snap), ranks, "alltoall"))


@pytest.mark.parametrize(("design", "algorithm", "planner"), [
    ("superpod", "nvlstree", "nvlstree"), ("torus", "ring", "ring")])
def test_pairs_made_from_nvlink_arcs_alone_stand_while_nvlink_is_unchanged(
        design, algorithm, planner, monkeypatch):
    """NVLS's in-switch pairs and a torus's neighbour links (raw pieces of NVLink arcs
    only) are kept through a network edit, and rebuilt after an NVLink edit."""
    import designer.solver.reuse as reuse

    topo = DESIGNS[design]()
    memo = RouteMemo()
    snap = take_snapshot(topo)
    ranks = np.arange(snap.n_gpus)
    memo.plans(snap, ranks, "allreduce", algorithm)
    calls = []
    real = reuse.PLANNERS[planner]
    monkeypatch.setitem(reuse.PLANNERS, planner,
                        lambda *a: calls.append(1) or real(*a))
    nvlink = [lk for lk in topo.links() if topo.catalog.tech(lk.tech).family == "nvlink"]
    other = [lk for lk in topo.links() if topo.catalog.tech(lk.tech).family != "nvlink"
             and {topo.node(lk.a).kind, topo.node(lk.b).kind} <= {"leaf", "spine"}]
    edits = ([(other[0].id, "count", other[0].count + 1)] if other else []) + [
        (nvlink[0].id, "count", nvlink[0].count + 1), (nvlink[1].id, "failed", True)]
    for lid, field, value in edits:
        topo.update_link(lid, **{field: value})
        snap = take_snapshot(topo)
        plans = memo.plans(snap, ranks, "allreduce", algorithm)
        rebuilt = bool(calls)
        assert_same_plans(plans, candidate_plans(Router(snap), ranks, "allreduce", algorithm))
        assert rebuilt == (lid != (other[0].id if other else None)), (lid, memo.last)
        calls.clear()


def test_solve_collective_with_a_memo_gives_the_fresh_result():
    topo = build_template("rail-cluster", nodes=3)
    memo = RouteMemo()
    for step in range(3):
        snap = take_snapshot(topo)
        got = solve_collective(snap, sizes=[1 << 20, 1 << 30], memo=memo)
        want = solve_collective(snap, sizes=[1 << 20, 1 << 30])
        np.testing.assert_array_equal(got.time_s, want.time_s)
        np.testing.assert_array_equal(got.arc_load_GBps, want.arc_load_GBps)
        assert got.algorithm_by_size == want.algorithm_by_size
        lid = _leaf_spine_link(snap)
        topo.update_link(lid, count=topo.link(lid).count + 1, failed=step == 1)
    assert memo.last["patched"] > 0


def test_a_memo_given_once_serves_the_later_solves_of_its_cache():
    snap = take_snapshot(build_template("rail-cluster", nodes=2))
    memo, cache = RouteMemo(), {}
    solve_collective(snap, sizes=[1 << 20], algorithm="ring", cache=cache, memo=memo)
    first = memo.last
    solve_collective(snap, sizes=[1 << 20], algorithm="tree", cache=cache)
    assert memo.last is not first and memo.last["fresh"] == 1


def test_snapshots_of_other_designs_or_structures_are_not_compared():
    a, b = build_template("leaf-spine"), build_template("leaf-spine")
    sa, sb = take_snapshot(a), take_snapshot(b)
    assert diff_snapshots(sa, sb) is None                       # another design
    lk = next(iter(a.links()))
    a.add_link(Link("extra-1", lk.a, lk.b, lk.tech))
    assert diff_snapshots(sa, take_snapshot(a)) is None         # a link added
    a.set_setting("routing", "ecmp")
    s1 = take_snapshot(a)
    a.set_setting("routing", "static")
    assert diff_snapshots(s1, take_snapshot(a)) is None         # routing changed


def test_a_memo_starts_afresh_on_another_design():
    memo = RouteMemo()
    for name in ("leaf-spine", "fat-tree"):
        snap = take_snapshot(DESIGNS[name]())
        plans = memo.plans(snap, np.arange(snap.n_gpus), "allreduce", "ring")
        assert memo.last["change"] == "new"
        assert_same_plans(plans, candidate_plans(Router(snap), np.arange(snap.n_gpus),
                                                 "allreduce", "ring"))


@pytest.mark.parametrize("routing", ["adaptive", "ecmp"])
def test_a_memo_lets_go_of_old_routers_without_the_cycle_collector(routing):
    # A router and its tables must not be a reference cycle: held only by the memo, the
    # router of two edits ago is freed the moment the memo lets go of it.  (In a cycle,
    # the tables of a 131k-GPU design, ~100 MB, outlived every edit until the cyclic
    # collector ran, and each edit took fresh memory: page faults doubled its time.)
    import gc
    import weakref

    topo = build_template("superpod", gpu="H100", sus=1)
    topo.set_setting("routing", routing)
    memo = RouteMemo()
    lid = _leaf_spine_link(take_snapshot(topo))
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        olds = []
        for step in range(4):
            snap = take_snapshot(topo)
            solve_collective(snap, sizes=[1 << 30], algorithm="ring", memo=memo)
            solve_collective(snap, collective="alltoall", sizes=[1 << 20], memo=memo)
            router = memo.router(snap)
            # The router's tables were used: the fabric groups and the NVLink templates.
            assert router._fabric is not None and router._nv_batch is not None
            olds.append([weakref.ref(x) for x in (router, router._fabric, router._nv_batch)])
            del router, snap
            topo.update_link(lid, failed=step % 2 == 0)
        # The memo keeps the last router and the one before it (to patch plans from).
        for refs in olds[:-2]:
            assert [r() for r in refs] == [None, None, None]
    finally:
        if enabled:
            gc.enable()


def test_the_errors_a_memo_records_keep_no_older_plans_alive():
    # A planner that does not apply (NVLS without NVSwitch SHARP, collnet without
    # SHARP) fails on every solve; the memo records its error.  Kept with its traceback,
    # the error's frames held the entry it was patching from, whose error held the one
    # before: every snapshot and router since the design was opened stayed alive (the
    # GUI's memory grew ~10 MB with each scenario edit of a 1,024-GPU design).
    import gc
    import weakref

    topo = build_template("leaf-spine")
    memo = RouteMemo()
    lid = _leaf_spine_link(take_snapshot(topo))
    olds = []
    for step in range(5):
        snap = take_snapshot(topo)
        solve_collective(snap, sizes=[1 << 30], algorithm="auto", memo=memo)
        assert memo.last["failed"] > 0
        olds.append(weakref.ref(memo.router(snap)))
        del snap
        topo.update_link(lid, failed=step % 2 == 0)
    gc.collect()
    # The memo keeps the last router and the one before it (to patch plans from).
    assert [r() is None for r in olds[:-2]] == [True, True, True]


def test_a_memo_keeps_plans_within_its_byte_budget():
    snap = take_snapshot(build_template("leaf-spine"))
    ranks = np.arange(snap.n_gpus)
    memo = RouteMemo()
    memo.plans(snap, ranks, "alltoall")
    one = memo.nbytes
    assert one > 0
    memo.plans(snap, ranks, "allreduce", "ring")
    assert memo.nbytes > one  # both kept within the default budget
    # A budget of one all-to-all: adding a plan set drops the least recently used, and
    # the newest is kept even when it alone is over the budget.
    tight = RouteMemo(max_bytes=one)
    tight.plans(snap, ranks, "allreduce", "ring")
    tight.plans(snap, ranks, "alltoall")
    assert tight.nbytes == one
    tight.plans(snap, ranks, "allreduce", "ring")
    assert 0 < tight.nbytes < one
    assert RouteMemo(max_bytes=0).plans(snap, ranks, "alltoall")  # still answers
