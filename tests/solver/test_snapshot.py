"""Tests of `take_snapshot`: arcs, capacities, failures, NVLink domains, flags (rail NICs:
`test_rail_nics`)."""

from __future__ import annotations

import numpy as np
import pytest
from fabrics import small_fabric

from designer.model.catalog import FAMILIES, default_catalog
from designer.model.naming import natural_key
from designer.model.templates import build_template
from designer.model.topology import Link, Node, Topology
from designer.solver.snapshot.build import DEAD, NVLINK, take_snapshot

CAT = default_catalog()


def _GBps(tech: str, count: int = 1) -> float:
    """Hand formula: count x Gb/s / 8 x efficiency."""
    t = CAT.tech(tech)
    return count * t.gbps / 8 * t.efficiency


def _index(snap, node_id: str) -> int:
    return snap.node_ids.index(node_id)


# ----------------------------------------------------------------- arcs and capacities
def test_two_arcs_per_live_link_in_both_directions():
    topo = small_fabric()
    snap = take_snapshot(topo)
    n_links = sum(1 for _ in topo.links())
    assert len(snap.link_ids) == n_links == 4 * 2 + 2 * 2
    assert snap.n_arcs == 2 * n_links
    for k, lid in enumerate(snap.link_ids):
        link = topo.link(lid)
        a, b = _index(snap, link.a), _index(snap, link.b)
        assert (snap.arc_src[2 * k], snap.arc_dst[2 * k]) == (a, b)
        assert (snap.arc_src[2 * k + 1], snap.arc_dst[2 * k + 1]) == (b, a)
        assert snap.arc_name(2 * k) == f"{lid} ({link.a} -> {link.b})"
        assert snap.arc_name(2 * k + 1) == f"{lid} ({link.b} -> {link.a})"


def test_capacity_is_count_times_rate_times_efficiency():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    k = snap.link_ids.index("n01-gpu0:n01-nvs0")  # the outer switch: 5 NVLinks
    # 5 links x 25 GB/s x 0.824 (NCCL's 20.6 GB/s per NVLink4 link)
    assert snap.arc_cap[2 * k] == pytest.approx(5 * 25 * 0.824)
    assert snap.arc_cap[2 * k] == pytest.approx(103.0)
    assert snap.arc_line[2 * k] == pytest.approx(125.0)
    assert snap.arc_cap[2 * k + 1] == snap.arc_cap[2 * k]
    k4 = snap.link_ids.index("n01-gpu0:n01-nvs1")
    assert snap.arc_cap[2 * k4] == pytest.approx(4 * 25 * 0.824)
    # Every GPU's NVLink egress adds up to 18 x 20.6 = 370.8 GB/s.
    nv = snap.arc_family == NVLINK
    for g in snap.gpus.tolist():
        assert snap.arc_cap[nv & (snap.arc_src == g)].sum() == pytest.approx(370.8)


@pytest.mark.parametrize("tech", ["ib-ndr", "ib-hdr", "roce-400", "pcie5", "nvlink5"])
def test_capacity_of_every_family_follows_the_catalog(tech):
    t = Topology()
    family = CAT.tech(tech).family
    if family == "nvlink":
        ends = [Node("a", "gpu", "B200", "a"), Node("b", "gpu", "B200", "b")]
    elif family == "pcie":
        ends = [Node("a", "gpu", "H100", "a"), Node("b", "nic", "ConnectX-7", "b")]
    else:
        model = "SN5600" if family == "ethernet" else "QM9700"
        ends = [Node("a", "leaf", model, "a"), Node("b", "spine", model, "b")]
    for n in ends:
        t.add_node(n)
    t.add_link(Link("l", "a", "b", tech, count=3))
    snap = take_snapshot(t)
    assert snap.arc_cap.tolist() == pytest.approx([_GBps(tech, 3)] * 2)
    assert snap.arc_line.tolist() == pytest.approx([3 * CAT.tech(tech).gbps / 8] * 2)
    assert snap.arc_family.tolist() == [FAMILIES.index(family)] * 2


def test_arc_latency_is_link_plus_the_device_entered():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    k = snap.link_ids.index("n01-gpu0:n01-nvs0")
    link_ns = CAT.tech("nvlink4").latency_ns
    switch_ns = CAT.device("NVSwitch-gen3").specs["latency_ns"]
    assert snap.arc_latency_s[2 * k] == pytest.approx((link_ns + switch_ns) * 1e-9)  # into switch
    assert snap.arc_latency_s[2 * k + 1] == pytest.approx(link_ns * 1e-9)  # into the GPU


def test_per_arc_delays_are_made_on_first_use_and_a_solve_does_without_them():
    """A ring solve reads the latency of some links' arcs (`ArcDelays.link_latencies`)
    and never makes the whole per-arc latency, jitter or line-rate arrays (memory every
    cold snapshot of a large design would pay); asked for, they agree with those few."""
    from designer.solver.pipeline import solve_collective

    snap = take_snapshot(build_template("rail-cluster", nodes=2))
    solve_collective(snap, "allreduce", sizes=[1 << 30], algorithm="ring")
    made = set(snap.__dict__) | set(snap.arc_delays.__dict__)
    assert not made & {"arc_line", "latency", "jitter"}
    links = np.array([0, 3, snap.n_arcs // 2 - 1])
    few = snap.arc_delays.link_latencies(links)
    arcs = np.stack([2 * links, 2 * links + 1], axis=1).reshape(-1)
    assert snap.arc_latency_s[arcs].tolist() == few.tolist()
    assert snap.arc_jitter_s.shape == snap.arc_line.shape == (snap.n_arcs,)
    assert not snap.arc_latency_s.flags.writeable


def test_link_latencies_are_what_the_whole_array_holds(tune):

    tune(arc_slice=7)   # many slices
    snap = take_snapshot(build_template("rail-cluster", nodes=2))
    links = np.flatnonzero(np.random.default_rng(3).random(snap.n_arcs // 2) < 0.4)
    arcs = np.stack([2 * links, 2 * links + 1], axis=1).reshape(-1)
    assert snap.arc_delays.link_latencies(links).tolist() == snap.arc_latency_s[arcs].tolist()


def test_planes_and_families_are_per_arc():
    topo = build_template("rail-cluster", nodes=2, storage=True)
    snap = take_snapshot(topo)
    assert len(snap.arc_plane) == snap.n_arcs
    for k, lid in enumerate(snap.link_ids):
        link = topo.link(lid)
        assert snap.arc_plane[2 * k] == snap.arc_plane[2 * k + 1] == link.plane
        fam = FAMILIES.index(CAT.tech(link.tech).family)
        assert snap.arc_family[2 * k] == snap.arc_family[2 * k + 1] == fam
    assert "storage" in snap.arc_plane


# ----------------------------------------------------------------- failures
def _dead(snap, link_id: str) -> bool:
    k = snap.link_ids.index(link_id)
    return (not snap.live_links()[k] and snap.arc_family[2 * k] == snap.arc_family[2 * k + 1]
            == DEAD and snap.arc_cap[2 * k] == snap.arc_cap[2 * k + 1] == 0)


def test_failed_link_keeps_its_arcs_dead():
    """A failed link keeps its two arcs (ids stay put across a fail), with no capacity
    and no family, so that nothing routes over it."""
    topo = small_fabric()
    before = take_snapshot(topo)
    topo.update_link("L0-S1", failed=True)
    after = take_snapshot(topo)
    assert after.n_arcs == before.n_arcs and after.link_ids == before.link_ids
    assert _dead(after, "L0-S1")
    assert after.live_links().tolist() == [lid != "L0-S1" for lid in after.link_ids]
    alive = np.repeat(after.live_links(), 2)
    assert np.array_equal(after.arc_cap[alive], before.arc_cap[alive])
    assert np.array_equal(after.arc_family[alive], before.arc_family[alive])
    assert after.generation == topo.generation > before.generation
    topo.update_link("L0-S1", failed=False)
    again = take_snapshot(topo)
    assert again.live_links().all()
    assert np.array_equal(again.arc_cap, before.arc_cap)


def test_failed_node_kills_its_links_and_its_gpu():
    topo = small_fabric()
    topo.update_node("S0", failed=True)
    snap = take_snapshot(topo)
    assert _dead(snap, "L0-S0") and _dead(snap, "L1-S0")
    assert int(snap.live_links().sum()) == 12 - 2
    s0 = _index(snap, "S0")
    live = np.repeat(snap.live_links(), 2)
    assert s0 not in snap.arc_src[live] and s0 not in snap.arc_dst[live]

    topo.update_node("g1", failed=True)
    snap = take_snapshot(topo)
    assert [snap.node_ids[g] for g in snap.gpus] == ["g0", "g2", "g3"]
    assert _dead(snap, "g1-c1")
    # c1 still reaches its leaf, but it is nobody's rail NIC any more
    assert snap.node_ids[snap.gpu_nic[0]] == "c0"


def test_failed_gpu_without_links_is_no_rank():
    """Every link live does not mean every node is: a failed GPU with no links of its own
    (just placed on the canvas) is still left out of the ranks."""
    topo = small_fabric()
    topo.add_node(Node("g9", "gpu", "H100", "g9"))
    assert "g9" in [take_snapshot(topo).node_ids[g] for g in take_snapshot(topo).gpus]
    topo.update_node("g9", failed=True)
    snap = take_snapshot(topo)
    assert snap.live_links().all()
    assert [snap.node_ids[g] for g in snap.gpus] == ["g0", "g1", "g2", "g3"]


# ----------------------------------------------------------------- GPUs and domains
def test_gpus_are_in_natural_id_order():
    t = Topology()
    for gid in ("gpu-10", "gpu-2", "gpu-1", "gpu-11", "gpu-20"):
        t.add_node(Node(gid, "gpu", "H100", gid))
    snap = take_snapshot(t)
    assert [snap.node_ids[g] for g in snap.gpus] == ["gpu-1", "gpu-2", "gpu-10", "gpu-11", "gpu-20"]
    assert natural_key("n2-gpu10") > natural_key("n2-gpu9") > natural_key("n1-gpu10")


@pytest.mark.parametrize("seed", range(4))
def test_gpu_order_is_natural_whether_or_not_rows_were_added_in_it(seed):
    # Added in natural order, the columns say so and the snapshot numbers the GPUs by
    # row without reading a name; added shuffled (or failed, removed and added again),
    # it sorts them.  Either way: natural order of the live GPUs.
    rng = np.random.default_rng(seed)
    ids = sorted({f"n{rng.integers(1, 30)}-gpu{rng.integers(0, 12)}" for _ in range(40)},
                 key=natural_key)
    for order in (ids, [ids[i] for i in rng.permutation(len(ids))]):
        t = Topology()
        for gid in order:
            t.add_node(Node(gid, "gpu", "H100", gid))
        assert t.columns().gpus_in_order == (order == ids)
        t.update_node(order[3], failed=True)
        t.remove_node(order[5])
        t.add_node(Node(order[5], "gpu", "H100", "again"))
        live = [g for g in ids if g != order[3]]
        snap = take_snapshot(t)
        assert [snap.node_ids[g] for g in snap.gpus] == live



@pytest.mark.parametrize("seed", range(4))
def test_natural_order_of_gpu_ids_matches_natural_key(seed):
    # Same-shaped ASCII ids (read as one block of bytes), in order or shuffled, and
    # ids of other shapes, lengths or alphabets: the order natural_key gives.
    from designer.solver.snapshot.columns import _sorted_by_natural_key

    rng = np.random.default_rng(seed)
    padded = [f"n{i:03d}-gpu{j}" for i in range(1, 40) for j in range(8)]
    cases = [padded, list(rng.permutation(padded)), ["gpu-10", "gpu-2", "gpu-1"],
             ["n1-gpu10", "n10-gpu1", "n2-gpu3"], ["gpü-1", "gpü-0"], ["a-1", "b-1", "a-0"],
             ["x"], ["a01", "a01", "a00"],
             # lengths that differ but add up as if equal; NULs inside ids
             ["b22", "a1", "c"], ["a1", "b22", "c"], ["b\x00", "a1"], ["a\x00", "\x001"]]
    cases += [["".join(rng.choice(list("ab01-9"), int(rng.integers(3, 5))))
               for _ in range(int(rng.integers(1, 12)))] for _ in range(200)]
    for ids in cases:
        got = [natural_key(ids[i]) for i in _sorted_by_natural_key(ids)]
        assert got == sorted(map(natural_key, ids)), ids


@pytest.mark.parametrize("seed", range(4))
def test_components_match_networkx(seed):
    import networkx as nx

    from designer.solver.snapshot.structure import components as _components

    rng = np.random.default_rng(seed)
    for _ in range(100):
        n = int(rng.integers(1, 80))
        m = int(rng.integers(0, 2 * n))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        g = nx.Graph()
        g.add_nodes_from(range(n))
        g.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
        want = np.empty(n, dtype=np.int64)
        for comp in nx.connected_components(g):
            want[list(comp)] = min(comp)
        assert _components(n, src, dst).tolist() == want.tolist()
    # A long path numbered against its order needs more than one round.
    order = rng.permutation(500)
    assert (_components(500, order[:-1], order[1:]) == 0).all()


@pytest.mark.parametrize("fail", [(), ("n01-gpu3",), ("n02-nvs1", "n01-gpu0"),
                                  tuple(f"n03-nvs{k}" for k in range(4))])
def test_node_domains_are_those_a_walk_over_nvlink_from_the_gpus_finds(fail):
    # The snapshot labels every node with its component's domain; the router's own
    # breadth-first search from every GPU must agree, with failed GPUs and switches
    # (a server whose switches all failed: each GPU its own domain, switches none).
    from designer.solver.routing.nvlink import _node_domains
    from designer.solver.routing.router import Router

    topo = build_template("rail-cluster", nodes=3)
    for node in fail:
        topo.update_node(node, failed=True)
    snap = take_snapshot(topo)
    np.testing.assert_array_equal(snap.node_domain, _node_domains(snap, Router(snap).nvlink))
    assert (snap.node_domain[snap.gpus] == snap.gpu_domain).all()
    switch = snap.node_ids.index("n03-nvs0")
    assert snap.node_domain[switch] == (-1 if "n03-nvs0" in fail else snap.gpu_domain[16])


def test_hgx_is_one_nvlink_domain():
    snap = take_snapshot(build_template("hgx", gpu="H100"))
    assert snap.n_gpus == 8
    assert snap.n_domains == 1
    assert snap.gpu_domain.tolist() == [0] * 8
    assert snap.gpu_local.tolist() == list(range(8))
    assert snap.routing == "adaptive"


def test_rail_cluster_has_a_domain_per_server():
    snap = take_snapshot(build_template("rail-cluster", nodes=4))
    assert snap.n_gpus == 32
    assert snap.n_domains == 4
    assert snap.gpu_domain.tolist() == [d for d in range(4) for _ in range(8)]
    assert snap.gpu_local.tolist() == list(range(8)) * 4
    # the domain id follows the server: n01 -> 0 ... n04 -> 3
    for r, g in enumerate(snap.gpus.tolist()):
        assert snap.node_ids[g] == f"n0{snap.gpu_domain[r] + 1}-gpu{snap.gpu_local[r]}"


def test_nvl72_is_one_domain_of_72_gpus():
    snap = take_snapshot(build_template("nvl72"))
    assert snap.n_gpus == 72
    assert snap.n_domains == 1
    assert bool(snap.domain_nvls[0])


def test_gpus_without_nvlink_are_domains_of_their_own():
    snap = take_snapshot(small_fabric())
    assert snap.n_domains == 4
    assert snap.gpu_domain.tolist() == [0, 1, 2, 3]
    assert snap.gpu_local.tolist() == [0, 0, 0, 0]
    assert not snap.domain_nvls.any()


def test_nvls_flag_follows_gpu_and_switch_generation():
    assert take_snapshot(build_template("hgx", gpu="H100")).domain_nvls.tolist() == [True]
    assert take_snapshot(build_template("hgx", gpu="A100")).domain_nvls.tolist() == [False]
    assert take_snapshot(build_template("hgx", gpu="H800")).domain_nvls.tolist() == [False]
    # a single GPU has nothing to reduce with
    assert take_snapshot(build_template("hgx", gpus=1)).domain_nvls.tolist() == [False]


def test_nvls_efficiency_follows_the_switch_generation():
    # NCCL's nvlsEfficiency as the catalog gives it per NVLink switch: 0.85 Hopper (third-gen
    # NVSwitch), 0.74 Blackwell (fourth-gen chips, on the board or in NVL72 trays); 0 where
    # the domain cannot reduce in-switch.
    eff = {k: take_snapshot(build_template(*k[:1], **dict(k[1:]))).domain_nvls_eff.tolist()
           for k in [("hgx", ("gpu", "H100")), ("hgx", ("gpu", "B200")), ("nvl72",),
                     ("hgx", ("gpu", "A100")), ("hgx", ("gpus", 1))]}
    assert eff == {("hgx", ("gpu", "H100")): [0.85], ("hgx", ("gpu", "B200")): [0.74],
                   ("nvl72",): [0.74], ("hgx", ("gpu", "A100")): [0.0],
                   ("hgx", ("gpus", 1)): [0.0]}


def test_nvls_efficiency_is_the_lowest_of_a_domains_switches():
    topo = build_template("hgx", gpu="H100")
    switch = next(n for n in topo.nodes() if n.kind == "nvswitch")
    topo.update_node(switch.id, model="NVSwitch-gen4")   # one Blackwell chip among Hopper's
    assert take_snapshot(topo).domain_nvls_eff.tolist() == [0.74]


def test_network_flags():
    ib = take_snapshot(build_template("rail-cluster", nodes=2))
    assert ib.net_sharp and ib.net_lossless
    roce = take_snapshot(build_template("leaf-spine", leaves=2, fabric="roce"))
    assert not roce.net_sharp  # Spectrum switches do no in-network reduction


def test_snapshot_carries_generation_and_routing():
    topo = build_template("leaf-spine", leaves=2)
    topo.set_setting("routing", "ecmp")
    snap = take_snapshot(topo)
    assert snap.generation == topo.generation
    assert snap.routing == "ecmp"
    topo.update_node("spine-0", x=123.0)  # any edit makes the snapshot stale
    assert topo.generation > snap.generation


def test_empty_and_tiny_designs():
    t = Topology()
    snap = take_snapshot(t)
    assert (snap.n_gpus, snap.n_arcs, snap.n_domains) == (0, 0, 0)
    t.add_node(Node("g0", "gpu", "H100", "g0"))
    snap = take_snapshot(t)
    assert (snap.n_gpus, snap.n_arcs, snap.n_domains) == (1, 0, 1)
    assert snap.gpu_nic.tolist() == [-1]


def test_snapshot_arrays_are_consistent_in_length():
    snap = take_snapshot(build_template("example"))
    m = snap.n_arcs
    for arr in (
        snap.arc_src,
        snap.arc_dst,
        snap.arc_cap,
        snap.arc_line,
        snap.arc_latency_s,
        snap.arc_jitter_s,
        snap.arc_family,
    ):
        assert len(arr) == m
    for arr in (snap.gpus, snap.gpu_domain, snap.gpu_local, snap.gpu_nic):
        assert len(arr) == snap.n_gpus
    assert np.all(snap.arc_cap > 0)
    assert np.all(snap.arc_cap <= snap.arc_line)


def test_link_positions_map_every_link_across_edits():
    """`Snapshot.link_positions` maps every link id, failed or not, to its index in
    ``link_ids``, and is the same mapping from one snapshot to the next while no link is
    added or removed."""
    topo = build_template("hgx", gpu="H100")
    first = take_snapshot(topo)
    pos = first.link_positions()
    assert len(pos) == len(first.link_ids)
    assert all(pos[lid] == k for k, lid in enumerate(first.link_ids))
    gone = first.link_ids[3]
    topo.update_link(gone, failed=True)
    second = take_snapshot(topo)
    pos2 = second.link_positions()
    assert pos2 is pos and pos2[gone] == 3 and not second.live_links()[3]
    assert pos2.get("no-such-link") is None and "no-such-link" not in pos2
    with pytest.raises(KeyError):
        pos2["no-such-link"]
    assert list(pos2) == list(second.link_ids)
    topo.remove_link(first.link_ids[0])
    third = take_snapshot(topo)
    pos3 = third.link_positions()
    assert pos3 is not pos and first.link_ids[0] not in pos3
    assert all(pos3[lid] == k for k, lid in enumerate(third.link_ids))
    assert first.link_positions()[first.link_ids[0]] == 0  # the earlier one is unchanged
    assert second.compute_links().tolist() == [
        p == "compute" and live
        for p, live in zip(second.arc_plane[0::2], second.live_links(), strict=True)]
