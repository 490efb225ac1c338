"""Tests of `solve_collective`: from max-min rates to busbw, time, utilisation and timeline."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from fabrics import small_fabric

from designer.model.errors import DesignError
from designer.model.templates import build_template
from designer.solver.errors import SolverError
from designer.solver.pipeline import SWEEP, solve_collective
from designer.solver.snapshot.build import NVLINK, take_snapshot
from designer.solver.timing.nccl_model import bus_factor

GiB = 1 << 30
H100_NV = 18 * 25 * 0.824  # 370.8 GB/s
NDR = 50 * 0.94  # 47 GB/s


@pytest.fixture(scope="module")
def hgx():
    return take_snapshot(build_template("hgx", gpu="H100"))


@pytest.fixture(scope="module")
def hgx_auto(hgx):
    return solve_collective(hgx)


@pytest.fixture(scope="module")
def hgx_ring(hgx):
    return solve_collective(hgx, algorithm="ring")


# ----------------------------------------------------------------- the numbers
def test_default_sweep_is_nccl_tests_range():
    assert len(SWEEP) == 20
    assert SWEEP[0] == 32 << 10 and SWEEP[-1] == 16 * GiB
    assert all(b == 2 * a for a, b in itertools.pairwise(SWEEP))


def test_result_arrays_are_consistent(hgx_ring):
    r = hgx_ring
    assert r.sizes.tolist() == list(SWEEP)
    for arr in (r.time_s, r.algbw_GBps, r.busbw_GBps, r.protocol):
        assert len(arr) == len(SWEEP)
    assert len(r.algorithm_by_size) == len(SWEEP)
    assert np.allclose(r.algbw_GBps, r.sizes / r.time_s / 1e9)
    assert np.allclose(r.busbw_GBps, r.algbw_GBps * 2 * 7 / 8)
    assert (r.collective, r.algorithm, r.routing, r.n_ranks, r.n_nodes) == (
        "allreduce",
        "ring",
        "adaptive",
        8,
        1,
    )
    assert set(r.protocol.tolist()) <= {"LL", "LL128", "Simple"}
    assert r.protocol[-1] == "Simple" and r.protocol[0] == "LL"


def test_busbw_at_16_gib_is_within_a_few_percent_of_the_ceiling(hgx_ring):
    assert hgx_ring.ceiling_busbw_GBps == pytest.approx(H100_NV)
    assert hgx_ring.busbw_GBps[-1] == pytest.approx(H100_NV, rel=0.03)
    assert np.all(hgx_ring.busbw_GBps <= H100_NV * (1 + 1e-9))


@pytest.mark.parametrize(
    ("template", "kw", "ceiling"),
    [
        ("rail-cluster", {"nodes": 2}, 8 * NDR),
        ("hgx", {"gpu": "A100"}, 12 * 25 * 0.80),
        ("leaf-spine", {"leaves": 2, "hosts_per_leaf": 2}, NDR),
    ],
)
def test_large_messages_approach_the_ring_ceiling(template, kw, ceiling):
    res = solve_collective(
        take_snapshot(build_template(template, **kw)), algorithm="ring", sizes=[GiB, 16 * GiB]
    )
    assert res.ceiling_busbw_GBps == pytest.approx(ceiling)
    assert ceiling * 0.97 <= res.busbw_GBps[-1] <= ceiling
    assert res.busbw_GBps[0] < res.busbw_GBps[-1]


def test_time_grows_with_size(hgx_auto, hgx_ring):
    for r in (hgx_auto, hgx_ring):
        assert np.all(np.diff(r.time_s) >= 0)
        big = r.sizes >= 1 << 20
        assert np.all(np.diff(r.time_s[big]) > 0)
        # bandwidth bound at the top: twice the bytes take about twice the time
        assert r.time_s[-1] / r.time_s[-2] == pytest.approx(2.0, rel=0.02)
        # latency bound at the bottom: tens of microseconds, not nanoseconds
        assert 5e-6 < r.time_s[0] < 1e-4
    assert np.all(np.diff(hgx_auto.busbw_GBps) >= 0)


def test_auto_takes_the_algorithm_nccl_rates_fastest(hgx, hgx_auto):
    # NCCL's rating (its medium-size tree correction) may pick an algorithm a little
    # slower than the fastest; the time shown is always the picked one's.
    forced = {alg: solve_collective(hgx, algorithm=alg) for alg in ("ring", "tree", "nvls")}
    best = np.min([f.time_s for f in forced.values()], axis=0)
    assert np.all(hgx_auto.time_s >= best * (1 - 1e-12))
    assert np.median(hgx_auto.time_s / best) == pytest.approx(1.0)
    for i, alg in enumerate(hgx_auto.algorithm_by_size):
        assert hgx_auto.time_s[i] == pytest.approx(forced[alg].time_s[i])
    # NVLS wins large messages on 8 x H100; small ones are latency bound (not NVLS)
    assert hgx_auto.algorithm == hgx_auto.algorithm_by_size[-1] == "nvls"
    assert hgx_auto.algorithm_by_size[0] != "nvls"
    assert hgx_auto.ceiling_busbw_GBps == pytest.approx(H100_NV * 2 * 7 / 9)


def test_auto_on_a100_ends_on_the_ring():
    res = solve_collective(take_snapshot(build_template("hgx", gpu="A100")))
    assert "nvls" not in res.algorithm_by_size
    assert res.algorithm_by_size[-1] == res.algorithm == "ring"


def test_bus_factor_per_collective(hgx):
    for coll in ("allgather", "reducescatter", "alltoall", "sendrecv", "broadcast"):
        r = solve_collective(hgx, coll, sizes=[GiB], algorithm="ring")
        assert r.busbw_GBps[0] == pytest.approx(r.algbw_GBps[0] * bus_factor(coll, 8))
        assert r.collective == coll
    assert bus_factor("allgather", 8) == pytest.approx(7 / 8)
    assert bus_factor("sendrecv", 8) == 1.0


def test_launch_mode_and_threads_change_small_sizes_only(hgx):
    def t(**kw):
        return solve_collective(hgx, sizes=[32 << 10, 16 * GiB], **kw).time_s

    eager, graph, eager8 = t(), t(launch="graph"), t(gpus_per_thread=8)
    assert graph[0] < eager[0] < eager8[0]
    assert graph[1] == pytest.approx(eager[1], rel=1e-3)
    assert eager8[1] == pytest.approx(eager[1], rel=1e-3)


def test_bad_sizes(hgx):
    with pytest.raises(DesignError, match="positive"):
        solve_collective(hgx, sizes=[0])


def test_no_sizes_is_a_solver_error(hgx):
    with pytest.raises(SolverError, match="size"):
        solve_collective(hgx, sizes=[])


# ----------------------------------------------------------------- links
def test_bottleneck_arcs_are_fully_used(hgx_ring, hgx):
    r = hgx_ring
    assert r.arc_util.max() == pytest.approx(1.0)
    assert np.all(r.arc_util <= 1 + 1e-9)
    assert np.all(r.arc_load_GBps <= hgx.arc_cap * (1 + 1e-9))
    for ph in r.phases:
        assert r.arc_util[ph.bottleneck_arc] == pytest.approx(1.0)
    top = r.bottlenecks(hgx, top=5)
    assert len(top) == 5
    assert top[0][1] == pytest.approx(1.0)
    rounded = [round(u, 9) for _, u in top]
    assert rounded == sorted(rounded, reverse=True)
    # Ties (to rounding) in arc order: the first of the busiest arcs leads.
    busiest = np.flatnonzero(np.round(r.arc_util, 9) == np.round(r.arc_util.max(), 9))
    assert top[0][0] == hgx.arc_name(int(busiest[0]))
    # a ring over NVSwitches loads every GPU's NVLinks, both ways, completely; the host
    # and NIC PCIe links carry nothing
    nv = hgx.arc_family == NVLINK
    assert np.allclose(r.arc_util[nv], 1.0)
    assert not r.arc_util[~nv].any()


def test_bottlenecks_tied_to_rounding_come_in_arc_order(hgx_ring, hgx):
    # Loads summed in another order differ in the last bits; the list must not follow.
    util = np.zeros_like(hgx_ring.arc_util)
    util[[3, 5, 7, 9]] = [0.5, 1.0 - 2e-16, 1.0, 1.0 - 1e-12]
    r = replace(hgx_ring, arc_util=util)
    assert [name for name, _ in r.bottlenecks(hgx)] == [hgx.arc_name(a) for a in (5, 7, 9, 3)]


@pytest.mark.parametrize("seed", range(20))
def test_the_busiest_arcs_are_those_of_a_full_stable_sort(hgx_ring, hgx, seed):
    # Picked without sorting every arc; ties (to rounding) across the cut-off included.
    rng = np.random.default_rng(seed)
    util = rng.choice([0.0, 0.25, 0.5, 1.0 - 1e-12, 1.0], size=len(hgx_ring.arc_util))
    r = replace(hgx_ring, arc_util=util)
    for top in (1, 3, 10, len(util) - 1, len(util), len(util) + 5):
        order = np.argsort(-np.round(util, 9), kind="stable")[:top]
        want = [(hgx.arc_name(int(a)), float(util[a])) for a in order if util[a] > 0]
        assert r.bottlenecks(hgx, top=top) == want


def test_link_loads_on_a_small_fabric_by_hand():
    # Ring g0 -> g1 -> g2 -> g3 -> g0, g0/g1 under L0, g2/g3 under L1: every NIC sends
    # one ring edge at 47 GB/s; the two cross-leaf edges split 1/2 - 1/2 over the spines.
    snap = take_snapshot(small_fabric())
    r = solve_collective(snap, sizes=[16 * GiB], algorithm="ring")
    assert r.ceiling_busbw_GBps == pytest.approx(NDR)

    def util(a, b):
        k = next(
            i
            for i in range(snap.n_arcs)
            if (snap.node_ids[snap.arc_src[i]], snap.node_ids[snap.arc_dst[i]]) == (a, b)
        )
        return r.arc_util[k], r.arc_load_GBps[k]

    for k in range(4):
        leaf = "L0" if k < 2 else "L1"
        assert util(f"c{k}", leaf) == pytest.approx((1.0, NDR))
        assert util(leaf, f"c{k}") == pytest.approx((1.0, NDR))
        assert util(f"g{k}", f"c{k}") == pytest.approx((NDR / (63 * 0.87), NDR))
    for a, b in (
        ("L0", "S0"),
        ("L0", "S1"),
        ("S0", "L1"),
        ("S1", "L1"),
        ("L1", "S0"),
        ("L1", "S1"),
        ("S0", "L0"),
        ("S1", "L0"),
    ):
        assert util(a, b) == pytest.approx((0.5, NDR / 2))
    names = [name for name, _ in r.bottlenecks(snap)]
    assert len(names) == 10 and all("S0" not in n and "S1" not in n for n in names[:8])


def test_unused_links_carry_nothing():
    snap = take_snapshot(build_template("rail-cluster", nodes=2, storage=True))
    r = solve_collective(snap, sizes=[GiB], algorithm="ring")
    storage = np.array([p == "storage" for p in snap.arc_plane])
    assert storage.any()
    assert not r.arc_load_GBps[storage].any()
    assert not r.arc_util[storage].any()


# ----------------------------------------------------------------- timeline
def test_ring_allreduce_timeline_has_two_halves(hgx_ring):
    bars = hgx_ring.timeline
    assert [b.phase for b in bars] == ["reduce-scatter", "all-gather"]
    assert bars[0].start_s == 0.0
    assert bars[0].end_s == pytest.approx(bars[1].start_s)
    assert bars[1].end_s == pytest.approx(hgx_ring.time_s[-1])
    assert [b.steps for b in bars] == [7, 7]
    assert all(b.bottleneck for b in bars)


# ----------------------------------------------------------------- worker contract
def test_result_is_tagged_with_the_generation():
    topo = build_template("hgx", gpu="H100")
    snap = take_snapshot(topo)
    res = solve_collective(snap, sizes=[GiB])
    assert res.generation == snap.generation == topo.generation
    topo.update_link("n01-gpu0:n01-nvs0", failed=True)
    assert res.generation != topo.generation  # stale: the GUI drops it
    fresh = solve_collective(take_snapshot(topo), sizes=[GiB], algorithm="ring")
    assert fresh.generation == topo.generation
    # gpu0 lost 5 of its 18 NVLinks: the ring runs at 13 x 20.6
    assert fresh.ceiling_busbw_GBps == pytest.approx(13 * 25 * 0.824)


def test_routing_mode_is_reported():
    topo = build_template("leaf-spine", leaves=2)
    topo.set_setting("routing", "static")
    res = solve_collective(take_snapshot(topo), "alltoall", sizes=[GiB])
    assert res.routing == "static"
    assert res.algorithm == "p2p"


def test_cancel_before_anything_is_solved(hgx):
    with pytest.raises(SolverError, match="cancelled"):
        solve_collective(hgx, cancelled=lambda: True)


def test_cancel_between_plans(hgx):
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) >= 3

    with pytest.raises(SolverError, match="cancelled"):
        solve_collective(hgx, cancelled=cancelled)
    assert len(calls) == 3
    polls = []
    solve_collective(hgx, sizes=[GiB], cancelled=lambda: polls.append(1) or False)
    assert len(polls) >= 2  # after routing and after each plan


def test_timing_breakdown(hgx_ring):
    t = hgx_ring.timing_ms
    assert set(t) >= {"route", "rates", "total"}
    assert all(v >= 0 for v in t.values())
    assert t["total"] >= t["route"] + t["rates"] - 1e-6


@pytest.mark.parametrize("collective, degrade", [
    ("allreduce", False),   # ring channels: one common slowdown, loads scaled from max-min
    ("alltoall", True),     # unequal rates on a degraded fabric: summed over the pairs
])
def test_phase_loads_are_the_pairs_at_the_phase_pace(collective, degrade):
    """Whichever way `solve_phase` gets a phase's arc loads, they are the sum of weight x
    pace over every pair (shared routes expanded)."""
    from designer.solver.pipeline import solve_phase

    topo = build_template("superpod", gpu="B200", sus=1)
    if degrade:
        spines = [lk.id for lk in topo.links()
                  if {topo.node(lk.a).kind, topo.node(lk.b).kind} == {"leaf", "spine"}]
        for lid in spines[::3]:
            topo.update_link(lid, count=1)
    snap = take_snapshot(topo)
    res = solve_collective(snap, collective, sizes=[1 << 30], algorithm="auto")
    paces = set()
    for phase in res.plan.phases:
        sol = solve_phase(snap, phase)
        pace = phase.flow_bytes / sol.seconds_per_byte / 1e9
        f, a, w = phase.pairs()
        want = np.bincount(a, w * pace[f], minlength=snap.n_arcs)
        if phase.mirrors is not None:  # legs a class's representative stands for
            arc, source, factor = phase.mirrors
            want[arc] = want[source] * factor
        np.testing.assert_allclose(sol.arc_load_GBps, want, rtol=1e-9, atol=1e-9)
        slowdown = pace / sol.rates_GBps
        paces.add(bool(np.ptp(slowdown) <= 1e-12 * slowdown.max()))
    assert paces == {not degrade}  # each case takes the path it is meant to test


def test_a_solve_lets_go_of_its_router_before_the_rates(monkeypatch):
    """Without a cache to keep it, the router (its route tables are MBs on a big fabric)
    is freed once the plans are made, so the max-min arrays reuse its memory instead of
    taking fresh pages; a cache keeps it for the next call."""
    import gc
    import weakref

    from designer.solver import pipeline as timing
    from designer.solver.routing import router as routing

    made = []
    real_init = routing.Router.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(weakref.ref(self))

    alive_at_rates = []
    real_solve_phase = timing.solve_phase

    def solve_phase(snap, phase):
        alive_at_rates.append(sum(r() is not None for r in made))
        return real_solve_phase(snap, phase)

    monkeypatch.setattr(routing.Router, "__init__", init)
    monkeypatch.setattr(timing, "solve_phase", solve_phase)
    snap = take_snapshot(build_template("superpod", gpu="H100", sus=1))
    enabled = gc.isenabled()
    gc.disable()   # freed by reference counting, not by the cycle collector
    try:
        solve_collective(snap, sizes=[1 << 30], algorithm="ring")
        assert made and alive_at_rates and set(alive_at_rates) == {0}
        made.clear()
        alive_at_rates.clear()
        cache: dict = {}
        solve_collective(snap, sizes=[1 << 30], algorithm="ring", cache=cache)
        assert set(alive_at_rates) == {1} and made[0]() is cache["router"]
    finally:
        if enabled:
            gc.enable()
