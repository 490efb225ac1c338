"""Tests of `Router`: NVLink spraying and adaptive / ECMP / static fabric routing."""

from __future__ import annotations

import numpy as np
import pytest
from fabrics import host_nic_fabric, idx, named, small_fabric

from designer.model.templates import build_template
from designer.model.topology import Link, Node, Topology
from designer.solver.errors import SolverError
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot


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


@pytest.mark.parametrize("design", ["pxn", "host", "own"])
def test_rank_links_from_the_snapshots_nic_arcs_match_the_pcie_lookup(design):
    # The ranks' arcs to their own NICs come with the snapshot; rank links made from them
    # equal those looked up in the PCIe subgraph, which is made only when some rank
    # needs it (PXN or host NICs), not for a design whose every NIC is its GPU's own.
    import dataclasses

    topo = {"pxn": lambda: build_template("rail-cluster", nodes=2, nics_per_node=4),
            "host": host_nic_fabric,
            "own": lambda: build_template("rail-cluster", nodes=2)}[design]()
    snap = take_snapshot(topo)
    fast = Router(snap)
    slow = Router(dataclasses.replace(snap, gpu_nic_arc=None))
    a, b = fast.rank_links(), slow.rank_links()
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        for part in ("ptr", "arcs", "weights", "hops") if hasattr(x, "arcs") else (None,):
            np.testing.assert_array_equal(x if part is None else getattr(x, part),
                                          y if part is None else getattr(y, part))
    assert (fast._pcie is None) == (design == "own")
    assert slow._pcie is not None


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


def test_the_way_down_is_the_reverse_of_the_way_up_with_parallel_pcie_links():
    # Two PCIe links between each GPU and the host, and between host and NIC, drawn in
    # either direction: the first arc down (lowest id) is the reverse of the first arc
    # up, which `routing.access` uses instead of a second search; a search gives the same.
    from designer.solver.routing.access import make_rank_links

    topo = host_nic_fabric()
    for i in range(2):
        topo.add_link(Link(f"g{i}0-h{i}", f"g{i}0", f"h{i}", "pcie5"))
        topo.add_link(Link(f"c{i}0-h{i}", f"c{i}0", f"h{i}", "pcie5"))
    snap = take_snapshot(topo)
    router = Router(snap)
    assert router.pcie.symmetric
    shortcut = make_rank_links(router)
    router.pcie._symmetric = False      # search both ways
    searched = make_rank_links(router)
    for f in ("access_up", "access_down"):
        for part in ("ptr", "arcs", "weights"):
            np.testing.assert_array_equal(getattr(getattr(shortcut, f), part),
                                          getattr(getattr(searched, f), part))
    assert named(snap, shortcut.access_down.route(0)) == {("c00", "h0"): 1.0, ("h0", "g00"): 1.0}
