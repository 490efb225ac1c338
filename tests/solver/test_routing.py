"""Tests of `Router`: NVLink spraying and adaptive / ECMP / static fabric routing."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from fabrics import host_nic_fabric, small_fabric

from designer.model.templates import build_template
from designer.model.topology import Link, Node, Topology
from designer.solver.errors import SolverError
from designer.solver.routing import Router
from designer.solver.snapshot import take_snapshot


def named(snap, route) -> dict[tuple[str, str], float]:
    """A route as {(from, to): weight}, parallel arcs summed."""
    out: dict[tuple[str, str], float] = defaultdict(float)
    for arc, w in zip(*route, strict=True):
        out[(snap.node_ids[snap.arc_src[arc]], snap.node_ids[snap.arc_dst[arc]])] += float(w)
    return dict(out)


def idx(snap, node_id: str) -> int:
    return snap.node_ids.index(node_id)


# ----------------------------------------------------------------- NVLink
def test_hgx_h100_nvlink_route_splits_5_4_4_5_over_the_switches():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    router = Router(snap)
    route = named(snap, router.nvlink_route(idx(snap, "n01-gpu0"), idx(snap, "n01-gpu5")))
    expect = {}
    for k, links in enumerate((5, 4, 4, 5)):
        expect[("n01-gpu0", f"n01-nvs{k}")] = links / 18
        expect[(f"n01-nvs{k}", "n01-gpu5")] = links / 18
    assert route.keys() == expect.keys()
    for key, w in expect.items():
        assert route[key] == pytest.approx(w)


def test_nvlink_weights_sum_to_one_per_hop():
    snap = take_snapshot(build_template("hgx", gpu="A100"))  # 6 switches, 2 links each
    router = Router(snap)
    a, b = idx(snap, "n01-gpu3"), idx(snap, "n01-gpu7")
    arcs, w = router.nvlink_route(a, b)
    first = snap.arc_src[arcs] == a
    last = snap.arc_dst[arcs] == b
    assert first.sum() == last.sum() == 6
    assert w[first].sum() == pytest.approx(1.0)
    assert w[last].sum() == pytest.approx(1.0)
    assert np.allclose(w, 1 / 6)
    # the route is cached: the same arrays come back
    assert router.nvlink_route(a, b)[0] is arcs


def test_nvlink_route_through_a_torus_uses_shortest_paths_only():
    # 4x1x1 ring of GPUs: 0-1-2-3-0; from 0 to 2 there are two 2-hop paths.
    snap = take_snapshot(build_template("torus3d", x=4, y=1, z=1))
    ids = [snap.node_ids[g] for g in snap.gpus]
    route = named(snap, Router(snap).nvlink_route(int(snap.gpus[0]), int(snap.gpus[2])))
    assert sum(w for (s, _), w in route.items() if s == ids[0]) == pytest.approx(1.0)
    assert sum(w for (_, d), w in route.items() if d == ids[2]) == pytest.approx(1.0)
    assert len(route) == 4
    assert route[(ids[0], ids[1])] == pytest.approx(0.5)
    assert route[(ids[0], ids[3])] == pytest.approx(0.5)


def test_no_nvlink_path_is_a_solver_error():
    snap = take_snapshot(small_fabric())
    with pytest.raises(SolverError, match="no NVLink path from g0 to g1"):
        Router(snap).nvlink_route(idx(snap, "g0"), idx(snap, "g1"))


# ----------------------------------------------------------------- adaptive
def test_adaptive_splits_half_and_half_over_two_spines():
    snap = take_snapshot(small_fabric())
    route = named(snap, Router(snap).fabric_dag(idx(snap, "L0"), idx(snap, "L1")))
    assert route == pytest.approx(
        {("L0", "S0"): 0.5, ("L0", "S1"): 0.5, ("S0", "L1"): 0.5, ("S1", "L1"): 0.5}
    )


def test_adaptive_splits_in_proportion_to_capacity():
    snap = take_snapshot(small_fabric(uplinks=(2, 1)))
    route = named(snap, Router(snap).fabric_dag(idx(snap, "L1"), idx(snap, "L0")))
    assert route == pytest.approx(
        {("L1", "S0"): 2 / 3, ("L1", "S1"): 1 / 3, ("S0", "L0"): 2 / 3, ("S1", "L0"): 1 / 3}
    )


def test_adaptive_on_a_leaf_spine_template():
    snap = take_snapshot(build_template("leaf-spine", leaves=4, spines=2))
    route = named(snap, Router(snap).fabric_dag(idx(snap, "leaf-0"), idx(snap, "leaf-3")))
    assert route == pytest.approx(
        {
            ("leaf-0", "spine-0"): 0.5,
            ("leaf-0", "spine-1"): 0.5,
            ("spine-0", "leaf-3"): 0.5,
            ("spine-1", "leaf-3"): 0.5,
        }
    )


def test_same_leaf_needs_no_fabric_hop():
    snap = take_snapshot(small_fabric())
    r = Router(snap)
    arcs, w = r.fabric_dag(idx(snap, "L0"), idx(snap, "L0"))
    assert arcs.size == w.size == 0
    flows, arcs = r.fabric_paths(
        idx(snap, "L0"), idx(snap, "L0"), np.arange(4), np.arange(4), "ecmp"
    )
    assert flows.size == arcs.size == 0


def test_fabric_paths_never_transit_an_endpoint():
    # Two leaves whose only connection runs through a dual-homed NIC: not a path.
    t = Topology()
    for leaf in ("L0", "L1"):
        t.add_node(Node(leaf, "leaf", "QM9700", leaf))
    t.add_node(Node("c0", "nic", "ConnectX-7", "c0"))
    t.add_link(Link("c0-L0", "c0", "L0", "ib-ndr"))
    t.add_link(Link("c0-L1", "c0", "L1", "ib-ndr"))
    snap = take_snapshot(t)
    with pytest.raises(SolverError, match="no fabric path from L0 to L1"):
        Router(snap).fabric_dag(idx(snap, "L0"), idx(snap, "L1"))


def test_dual_homed_nic_is_not_a_transit_hop():
    # L0 and L1 meet at spine S0; NIC c0 is cabled to both leaves (dual-ToR).  Leaf-to-leaf
    # traffic must go through the spine only, never through the host's NIC.
    t = Topology()
    for nid, kind in (("L0", "leaf"), ("L1", "leaf"), ("S0", "spine")):
        t.add_node(Node(nid, kind, "QM9700", nid))
    t.add_node(Node("c0", "nic", "ConnectX-7", "c0"))
    for a, b in (("c0", "L0"), ("c0", "L1"), ("L0", "S0"), ("L1", "S0")):
        t.add_link(Link(f"{a}-{b}", a, b, "ib-ndr"))
    snap = take_snapshot(t)
    r = Router(snap)
    la, lb = idx(snap, "L0"), idx(snap, "L1")
    assert named(snap, r.fabric_dag(la, lb)) == pytest.approx(
        {("L0", "S0"): 1.0, ("S0", "L1"): 1.0}
    )
    _, arcs = r.fabric_paths(la, lb, np.arange(8), np.arange(8), "ecmp")
    assert idx(snap, "c0") not in snap.arc_dst[arcs]


def test_dual_homed_nic_batched_routes_match_and_never_transit():
    # The batched tables (switch-only walks) agree with the per-pair routes.
    t = Topology()
    for nid, kind in (("L0", "leaf"), ("L1", "leaf"), ("S0", "spine"), ("S1", "spine")):
        t.add_node(Node(nid, kind, "QM9700", nid))
    t.add_node(Node("c0", "nic", "ConnectX-7", "c0"))
    for a, b in (("c0", "L0"), ("c0", "L1"), ("L0", "S0"), ("L1", "S0"), ("L0", "S1"),
                 ("L1", "S1")):
        t.add_link(Link(f"{a}-{b}", a, b, "ib-ndr"))
    snap = take_snapshot(t)
    r = Router(snap)
    la, lb = idx(snap, "L0"), idx(snap, "L1")
    batch = r.fabric_dags(np.array([la, lb]), np.array([lb, la]))
    for i, (a, b) in enumerate(((la, lb), (lb, la))):
        arcs, w = r.fabric_dag(a, b)
        assert batch.route(i)[0].tolist() == arcs.tolist()
        assert batch.route(i)[1].tolist() == w.tolist()
    assert named(snap, batch.route(0)) == pytest.approx(
        {("L0", "S0"): 0.5, ("L0", "S1"): 0.5, ("S0", "L1"): 0.5, ("S1", "L1"): 0.5}
    )
    walks = r.fabric_walks(np.full(8, la), np.full(8, lb), np.arange(8), np.arange(8), "ecmp")
    assert idx(snap, "c0") not in snap.arc_dst[walks.arcs]
    assert walks.hops.tolist() == [2] * 8


def test_pxn_access_route_crosses_nvlink_then_the_siblings_pcie():
    # GPU 1 has no NIC (nics_per_node=4): up, NVLink spray to GPU 0 (5/4/4/5 over the
    # four NVSwitches), then GPU 0's PCIe link to NIC 0; down, the mirror image.
    snap = take_snapshot(build_template("rail-cluster", nodes=2, nics_per_node=4))
    rl = Router(snap).rank_links()
    up = named(snap, rl.access_up.route(1))
    expect = {}
    for k, links in enumerate((5, 4, 4, 5)):
        expect[("n01-gpu1", f"n01-nvs{k}")] = links / 18
        expect[(f"n01-nvs{k}", "n01-gpu0")] = links / 18
    expect[("n01-gpu0", "n01-nic0")] = 1.0
    assert up == pytest.approx(expect)
    down = named(snap, rl.access_down.route(1))
    assert down == pytest.approx({(b, a): w for (a, b), w in expect.items()})
    assert named(snap, rl.access_up.route(0)) == {("n01-gpu0", "n01-nic0"): 1.0}
    assert rl.ok.all()


def test_host_access_route_crosses_two_pcie_links():
    snap = take_snapshot(host_nic_fabric())
    rl = Router(snap).rank_links()
    assert named(snap, rl.access_up.route(1)) == {("g01", "h0"): 1.0, ("h0", "c01"): 1.0}
    assert named(snap, rl.access_down.route(1)) == {("c01", "h0"): 1.0, ("h0", "g01"): 1.0}


def test_failed_spine_moves_everything_to_the_other():
    topo = small_fabric()
    topo.update_node("S1", failed=True)
    snap = take_snapshot(topo)
    route = named(snap, Router(snap).fabric_dag(idx(snap, "L0"), idx(snap, "L1")))
    assert route == pytest.approx({("L0", "S0"): 1.0, ("S0", "L1"): 1.0})


def test_both_spines_failed_is_no_path():
    topo = small_fabric()
    topo.update_link("L0-S0", failed=True)
    topo.update_link("L1-S1", failed=True)
    snap = take_snapshot(topo)
    r = Router(snap)
    with pytest.raises(SolverError, match="no fabric path from L0 to L1"):
        r.fabric_dag(idx(snap, "L0"), idx(snap, "L1"))
    with pytest.raises(SolverError, match="no fabric path from L0 to L1"):
        r.fabric_paths(idx(snap, "L0"), idx(snap, "L1"), np.arange(2), np.arange(2), "ecmp")


# ----------------------------------------------------------------- ecmp and static
def _paths(snap, flows, arcs) -> dict[int, list[str]]:
    """Node sequence of each flow's single path."""
    out: dict[int, list[str]] = {}
    for f, a in zip(flows.tolist(), arcs.tolist(), strict=True):
        seq = out.setdefault(f, [snap.node_ids[snap.arc_src[a]]])
        assert seq[-1] == snap.node_ids[snap.arc_src[a]], "path is not contiguous"
        seq.append(snap.node_ids[snap.arc_dst[a]])
    return out


@pytest.fixture(scope="module")
def four_spines():
    return take_snapshot(small_fabric(spines=4))


def test_ecmp_picks_exactly_one_path_per_flow(four_spines):
    snap = four_spines
    keys = np.arange(64)
    flows, arcs = Router(snap, seed=0).fabric_paths(
        idx(snap, "L0"), idx(snap, "L1"), keys, keys, "ecmp"
    )
    paths = _paths(snap, flows, arcs)
    assert sorted(paths) == list(range(64))
    for p in paths.values():
        assert len(p) == 3 and p[0] == "L0" and p[2] == "L1" and p[1].startswith("S")
    # 64 hashed flows land on every one of the 4 spines, unevenly (that is the point)
    per_spine = np.bincount([int(p[1][1:]) for p in paths.values()], minlength=4)
    assert per_spine.sum() == 64 and np.all(per_spine > 0)


def test_ecmp_is_deterministic_per_seed_and_key(four_spines):
    snap = four_spines
    la, lb = idx(snap, "L0"), idx(snap, "L1")
    keys = np.arange(32)

    def spines(seed, ks):
        f, a = Router(snap, seed=seed).fabric_paths(la, lb, ks, ks, "ecmp")
        return [p[1] for _, p in sorted(_paths(snap, f, a).items())]

    assert spines(7, keys) == spines(7, keys)
    # a flow's path depends on its key only, not on the other flows in the batch
    assert spines(7, keys)[5] == spines(7, keys[5:6])[0]
    assert spines(7, keys)[::-1] == spines(7, keys[::-1])
    # another seed (or other keys) hashes differently
    assert spines(7, keys) != spines(8, keys)
    assert spines(7, keys) != spines(7, keys + 1000)


def test_static_routes_by_destination(four_spines):
    snap = four_spines
    la, lb = idx(snap, "L0"), idx(snap, "L1")
    dest = np.array([0, 1, 2, 3, 4, 5, 6, 7, 5, 5, 5])
    keys = np.arange(len(dest)) * 7919  # keys do not matter in static mode
    r = Router(snap, seed=3)
    f, a = r.fabric_paths(la, lb, keys, dest, "static")
    via = [p[1] for _, p in sorted(_paths(snap, f, a).items())]
    out = r.net.next_arcs(la, r.net.dist_to(lb, through=r.is_switch))
    choice = [snap.node_ids[snap.arc_dst[out[d % out.size]]] for d in dest]
    assert via == choice
    assert via[:4] != [via[0]] * 4  # d mod 4 uses all four spines
    assert via[4:8] == via[:4]  # ... periodically
    assert via[8:] == [via[5]] * 3  # same destination, same path, whatever the key
    f2, a2 = Router(snap, seed=99).fabric_paths(la, lb, keys + 1, dest, "static")
    assert [p[1] for _, p in sorted(_paths(snap, f2, a2).items())] == via


def test_static_spreads_destinations_over_every_core_of_a_fat_tree():
    """D-mod-k on a full fat-tree: destinations spread over all (k/2)^2 cores.

    With the same ``d mod k`` digit at every tier, only k/2 of the cores are ever used
    (a leaf's choice of aggregation switch fixes the core too)."""
    snap = take_snapshot(build_template("fat-tree", k=4))
    r = Router(snap)
    la, lb = idx(snap, "p1-leaf-0"), idx(snap, "p3-leaf-1")
    dest = np.arange(16)
    f, a = r.fabric_paths(la, lb, dest, dest, "static")
    cores = {n for p in _paths(snap, f, a).values() for n in p if n.startswith("core")}
    assert sorted(cores) == ["core-0", "core-1", "core-2", "core-3"]


def test_nic_not_cabled_is_a_solver_error():
    topo = small_fabric()
    topo.update_link("c3-L1", failed=True)
    snap = take_snapshot(topo)
    with pytest.raises(SolverError, match="NIC c3 is not cabled to the fabric"):
        Router(snap).edge_arc(idx(snap, "c3"))
    assert Router(snap).edge_arc(idx(snap, "c2")) % 2 == 0  # c2 -> L1 is the a->b arc


def test_pcie_arc_lookup():
    snap = take_snapshot(small_fabric())
    r = Router(snap)
    arc = r.pcie_arc(idx(snap, "c1"), idx(snap, "g1"))
    assert (snap.node_ids[snap.arc_src[arc]], snap.node_ids[snap.arc_dst[arc]]) == ("c1", "g1")
    with pytest.raises(SolverError, match="no PCIe link between g0 and c1"):
        r.pcie_arc(idx(snap, "g0"), idx(snap, "c1"))


def test_a_nic_cabled_twice_leaves_by_its_fattest_cable_first_of_equals():
    topo = small_fabric()
    topo.add_link(Link("c0-L1", "c0", "L1", "ib-ndr", count=2))   # fatter than c0-L0
    topo.add_link(Link("c1-L1", "c1", "L1", "ib-ndr"))            # as fat as c1-L0
    snap = take_snapshot(topo)
    table = Router(snap).edge_arcs()
    assert snap.link_ids[table[idx(snap, "c0")] // 2] == "c0-L1"
    assert snap.link_ids[table[idx(snap, "c1")] // 2] == "c1-L0"       # the first one
    assert table[idx(snap, "c1")] % 2 == 0                              # c1 -> L0
    assert table[idx(snap, "L0")] == -1 and table[idx(snap, "g0")] == -1


def test_pcie_arcs_take_the_lowest_of_parallel_links_and_skip_failed_ones():
    topo = small_fabric()
    topo.add_link(Link("g1-c1-b", "g1", "c1", "pcie5"))   # a second link, added later
    topo.add_link(Link("c0-g0-b", "c0", "g0", "pcie5"))   # reversed ends
    topo.update_link("g0-c0", failed=True)
    snap = take_snapshot(topo)
    r = Router(snap)
    g0, c0, g1, c1, L0 = (idx(snap, x) for x in ("g0", "c0", "g1", "c1", "L0"))
    arcs = r.pcie_arcs(np.array([g1, c1, g0, c0, g0, -1, g1]),
                       np.array([c1, g1, c0, g0, L0, c1, -1]))
    names = [None if a < 0 else snap.link_ids[a // 2] for a in arcs.tolist()]
    assert names == ["g1-c1", "g1-c1", "c0-g0-b", "c0-g0-b", None, None, None]
    assert [snap.node_ids[snap.arc_src[a]] for a in arcs[:4]] == ["g1", "c1", "g0", "c0"]


# ----------------------------------------------------------------- batched = per pair
def degraded(topo: Topology, seed: int, fail: float = 0.0) -> Topology:
    """Unequal capacities: bundles of several links lose some with probability 0.4 (so
    NVLink domains built alike all differ), and a fraction ``fail`` of the switch-to-switch
    bundles fail."""
    rng = np.random.default_rng(seed)
    switches = {"leaf", "spine", "core"}
    for link in list(topo.links()):
        ends = {topo.node(link.a).kind, topo.node(link.b).kind}
        if link.count > 1 and rng.random() < 0.4:
            topo.update_link(link.id, count=int(rng.integers(1, link.count)))
        elif ends <= switches and rng.random() < fail:
            topo.update_link(link.id, failed=True)
    return topo


def domain_pairs(snap) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of GPUs (node indices) of one NVLink domain, self pairs too."""
    a, b = [], []
    for d in range(snap.n_domains):
        gpus = snap.gpus[snap.gpu_domain == d].astype(np.int64)
        a.append(np.repeat(gpus, len(gpus)))
        b.append(np.tile(gpus, len(gpus)))
    return np.concatenate(a), np.concatenate(b)


def assert_same_routes(batch, routes) -> None:
    """Batch route i is ``routes[i]`` arc for arc and bit for bit."""
    assert len(batch.ptr) == len(routes) + 1
    for i, (arcs, w) in enumerate(routes):
        got_arcs, got_w = batch.route(i)
        assert got_arcs.tolist() == arcs.tolist(), f"route {i}"
        assert got_w.tolist() == w.tolist(), f"route {i}"


NVLINK_DESIGNS = {
    # every domain different: 30% of the NVLink bundles of 4 HGX B200 lose links
    "degraded hgx": lambda: degraded(build_template("rail-cluster", nodes=4, gpu="B200"), 1),
    # GPUs forward (multi-hop shortest paths, several of them)
    "torus": lambda: build_template("torus3d", x=4, y=3, z=2),
    # 18 switch chips per GPU with unequal capacities (sums over more than 8 arcs)
    "degraded nvl72": lambda: degraded(build_template("nvl72"), 2),
    "hgx a100": lambda: build_template("hgx", gpu="A100"),
}


@pytest.mark.parametrize("design", NVLINK_DESIGNS)
def test_batched_nvlink_routes_equal_the_per_pair_spray(design):
    snap = take_snapshot(NVLINK_DESIGNS[design]())
    a, b = domain_pairs(snap)
    if len(a) > 2000:  # NVL72: a sample of the 5,184 pairs, self pairs included
        pick = np.random.default_rng(0).choice(len(a), 2000, replace=False)
        a, b = np.concatenate([a[pick], a[:3]]), np.concatenate([b[pick], a[:3]])
    batch = Router(snap).nvlink_routes(a, b)
    single = Router(snap)
    pairs = list(zip(a.tolist(), b.tolist(), strict=True))
    assert_same_routes(batch, [single.nvlink_route(x, y) for x, y in pairs])
    hops = [0 if x == y else int(single.nvlink.dist_to(y)[x]) for x, y in pairs]
    assert batch.hops.tolist() == hops
    if design == "torus":
        assert batch.hops.max() >= 3  # really multi-hop


def test_degraded_domains_get_their_own_routes():
    # Two HGX boards, one of them with a thinner gpu0 bundle: their routes differ (no
    # template shared by mistake), and each splits by its own capacities.
    topo = build_template("rail-cluster", nodes=2, gpu="H100")
    topo.update_link(next(lk.id for lk in topo.links()
                          if {lk.a, lk.b} == {"n02-gpu0", "n02-nvs0"}), count=1)
    snap = take_snapshot(topo)
    g = {snap.node_ids[n]: int(n) for n in snap.gpus}
    batch = Router(snap).nvlink_routes(np.array([g["n01-gpu0"], g["n02-gpu0"]]),
                                       np.array([g["n01-gpu5"], g["n02-gpu5"]]))
    first, second = named(snap, batch.route(0)), named(snap, batch.route(1))
    assert first[("n01-gpu0", "n01-nvs0")] == pytest.approx(5 / 18)
    assert second[("n02-gpu0", "n02-nvs0")] == pytest.approx(1 / 14)
    assert second[("n02-nvs0", "n02-gpu5")] == pytest.approx(1 / 14)
    assert second[("n02-gpu0", "n02-nvs1")] == pytest.approx(4 / 14)


def test_nvlink_routes_to_oneself_are_empty():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    gpus = snap.gpus.astype(np.int64)
    batch = Router(snap).nvlink_routes(gpus, gpus)
    assert batch.ptr.tolist() == [0] * (len(gpus) + 1) and batch.hops.tolist() == [0] * 8
    mixed = Router(snap).nvlink_routes(gpus[:2], gpus[1::-1])   # gpu0 -> gpu1, gpu1 -> gpu0
    assert mixed.lengths.tolist() == [8, 8] and mixed.hops.tolist() == [2, 2]


def test_nvlink_batches_cut_by_target_give_the_same_routes(monkeypatch):
    from designer.solver import route_nvlink
    from designer.solver.keyed_rows import KeyedRows

    snap = take_snapshot(NVLINK_DESIGNS["degraded hgx"]())
    a, b = domain_pairs(snap)
    whole = Router(snap).nvlink_routes(a, b)
    monkeypatch.setattr(route_nvlink, "_MAX_TABLE", 25)  # two targets per search
    monkeypatch.setattr(KeyedRows, "_DENSE", 0)          # templates found by binary search
    cut = Router(snap).nvlink_routes(a, b)
    assert_same_routes(cut, [whole.route(i) for i in range(len(a))])
    assert cut.hops.tolist() == whole.hops.tolist()


def test_domain_classes_survive_hash_collisions(monkeypatch):
    # Domains are grouped by a hash of their arc lists; colliding hashes must not merge
    # domains that differ (every hash equal: the byte-by-byte fallback decides).
    from designer.solver import route_nvlink

    snap = take_snapshot(NVLINK_DESIGNS["degraded hgx"]())
    a, b = domain_pairs(snap)
    expect = Router(snap).nvlink_routes(a, b)
    n_classes = len(Router(snap)._nv_tables().dom.class_rep)
    monkeypatch.setattr(route_nvlink, "_row_hash", lambda rows: np.zeros(len(rows), np.uint64))
    router = Router(snap)
    assert len(router._nv_tables().dom.class_rep) == n_classes > 1
    assert_same_routes(router.nvlink_routes(a, b), [expect.route(i) for i in range(len(a))])


def fabric_design():
    """A 3-tier fat-tree (k=6) with unequal bundle sizes and some failed switch links."""
    topo = build_template("fat-tree", k=6)
    rng = np.random.default_rng(5)
    for link in list(topo.links()):
        kinds = {topo.node(link.a).kind, topo.node(link.b).kind}
        if kinds <= {"leaf", "spine", "core"}:
            if rng.random() < 0.08:
                topo.update_link(link.id, failed=True)
            else:
                topo.update_link(link.id, count=int(rng.integers(1, 4)))
    return take_snapshot(topo)


@pytest.fixture(scope="module")
def fat_tree():
    snap = fabric_design()
    leaves = np.array([i for i, k in enumerate(snap.node_kind) if k == "leaf"])
    la, lb = np.repeat(leaves, len(leaves)), np.tile(leaves, len(leaves))
    return snap, la, lb


@pytest.mark.parametrize("dense", [True, False, "sliced"])
def test_batched_fabric_dags_equal_fabric_dag(fat_tree, monkeypatch, dense):
    from designer.solver.keyed_rows import KeyedRows
    from designer.solver.route_tables import _FabricGroups

    if not dense:  # the sorted-key lookup that large fabrics use, one search at a time
        monkeypatch.setattr(KeyedRows, "_DENSE", 0)
        monkeypatch.setattr(_FabricGroups, "_BFS_BATCH", 3)
    if dense == "sliced":  # next hops found a few states at a time, as at 131k GPUs
        monkeypatch.setattr(_FabricGroups, "_SLICE_ENTRIES", 5)
    snap, la, lb = fat_tree
    single = Router(snap)
    routes = [single.fabric_dag(int(x), int(y)) for x, y in zip(la, lb, strict=True)]
    batch = Router(snap).fabric_dags(la, lb)
    assert_same_routes(batch, routes)
    assert batch.hops.tolist() == [
        0 if x == y else int(single.net.dist_to(int(y), through=single.is_switch)[x])
        for x, y in zip(la, lb, strict=True)]
    # some pairs lost paths to the failures: weights differ from an even split
    assert len({round(float(w), 9) for _, ws in routes for w in ws}) > 4


@pytest.mark.parametrize("mode", ["ecmp", "static"])
def test_batched_fabric_walks_equal_fabric_paths(fat_tree, mode):
    snap, la, lb = fat_tree
    rng = np.random.default_rng(1)
    pick = rng.choice(len(la), 400)
    la, lb = la[pick], lb[pick]
    keys = rng.integers(0, 1 << 40, len(la))
    dest = rng.integers(0, 500, len(la))
    router = Router(snap, seed=11)
    walks = Router(snap, seed=11).fabric_walks(la, lb, keys, dest, mode)
    for i in range(len(la)):
        _, path = router.fabric_paths(int(la[i]), int(lb[i]), keys[i:i + 1], dest[i:i + 1],
                                      mode)
        assert walks.route(i)[0].tolist() == path.tolist()
        assert walks.hops[i] == len(path)
    assert np.all(walks.weights == 1.0)
    # by class: the same walks
    _, first, cls = np.unique(la * snap.n_nodes + lb, return_index=True, return_inverse=True)
    by_class = Router(snap, seed=11).class_walks(la[first], lb[first], cls, keys, dest, mode)
    assert by_class.arcs.tolist() == walks.arcs.tolist()
    assert by_class.ptr.tolist() == walks.ptr.tolist()


def test_walks_longer_than_one_chunk(fat_tree, monkeypatch):
    from designer.solver.route_tables import _FabricGroups

    snap, la, lb = fat_tree
    keys = np.arange(len(la)) * 7919
    whole = Router(snap).fabric_walks(la, lb, keys, keys, "ecmp")
    monkeypatch.setattr(_FabricGroups, "_CHUNK", 7)
    chunked = Router(snap).fabric_walks(la, lb, keys, keys, "ecmp")
    assert chunked.arcs.tolist() == whole.arcs.tolist()
    assert chunked.ptr.tolist() == whole.ptr.tolist()
    # chunks of flows that stay on their leaf (no hop) between ones that do not
    i = int(np.flatnonzero(la != lb)[0])
    leaf = (la[i], lb[i])
    a = np.array([leaf[0], leaf[0], leaf[0], leaf[1], leaf[1], leaf[1]])
    b = np.array([leaf[0], leaf[0], leaf[1], leaf[0], leaf[1], leaf[1]])
    monkeypatch.setattr(_FabricGroups, "_CHUNK", 2)
    mixed = Router(snap).fabric_walks(a, b, np.arange(6), np.arange(6), "static")
    assert mixed.hops.tolist()[:2] == [0, 0] and mixed.hops.tolist()[4:] == [0, 0]
    assert mixed.hops[2] == mixed.hops[3] > 0
    assert len(mixed.arcs) == 2 * mixed.hops[2]
