"""Batched routes equal the per-pair ones, arc for arc and bit for bit: NVLink sprays of
many pairs (domains built alike, degraded, cut into batches), fabric DAGs and ECMP /
static walks of many flows."""

from __future__ import annotations

import numpy as np
import pytest
from fabrics import named

from designer.model.templates import build_template
from designer.model.topology import Link, Node, Topology
from designer.solver.routing.change import diff_snapshots
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import NVLINK, take_snapshot


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


def test_batched_nvlink_routes_read_only_the_class_domains_arcs():
    # Four identical boards: the templates are found on the first board's arcs alone,
    # and the router makes no NVLink subgraph of the whole design for a batch (only
    # for a route asked pair by pair), nor does a rebased router, until asked.
    topo = build_template("rail-cluster", nodes=4, gpu="B200")
    snap = take_snapshot(topo)
    a, b = domain_pairs(snap)
    router = Router(snap)
    batch = router.nvlink_routes(a, b)
    tables = router._nv_tables()
    assert len(tables.dom.class_rep) == 1 and router._nvlink is None
    first = tables.dom.class_rep[0]
    board = tables.dom.arcs[tables.dom.arc_ptr[first]:tables.dom.arc_ptr[first + 1]]
    np.testing.assert_array_equal(np.sort(tables.graph.arcs), np.sort(board))
    assert len(board) * 4 == int((snap.arc_family == NVLINK).sum())
    single = Router(snap)
    pairs = list(zip(a.tolist(), b.tolist(), strict=True))
    assert_same_routes(batch, [single.nvlink_route(x, y) for x, y in pairs])
    assert single._nvlink is not None and single._nvlink.arcs.size == len(board) * 4
    # A network link fails: the rebased router keeps the templates and their graph.
    topo.update_link(next(lk.id for lk in topo.links() if "leaf" in lk.a + lk.b),
                     failed=True)
    after = take_snapshot(topo)
    new = router.rebased(diff_snapshots(snap, after))
    assert new._nvlink is None and new._nv_tables().graph is tables.graph
    assert_same_routes(new.nvlink_routes(a, b), [Router(after).nvlink_route(x, y)
                                                 for x, y in pairs])


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


def test_nvlink_batches_cut_by_target_give_the_same_routes(tune):

    snap = take_snapshot(NVLINK_DESIGNS["degraded hgx"]())
    a, b = domain_pairs(snap)
    whole = Router(snap).nvlink_routes(a, b)
    tune(nvlink_max_table=25)  # two targets per search
    tune(keyed_dense=0)          # templates found by binary search
    cut = Router(snap).nvlink_routes(a, b)
    assert_same_routes(cut, [whole.route(i) for i in range(len(a))])
    assert cut.hops.tolist() == whole.hops.tolist()


@pytest.mark.parametrize("block", [None, 1, 50])
def test_domain_classes_are_the_same_made_a_block_at_a_time(tune, block):
    # Domains are grouped by a hash of their signatures, made a block of domains at a
    # time: one domain, or a few, per block must give the same classes as all at once.
    snap = take_snapshot(NVLINK_DESIGNS["degraded hgx"]())
    a, b = domain_pairs(snap)
    expect = Router(snap).nvlink_routes(a, b)
    dom = Router(snap)._nv_tables().dom
    n_classes, classes = len(dom.class_rep), dom.dom_class.copy()
    if block is not None:
        tune(row_block=block)
    router = Router(snap)
    again = router._nv_tables().dom
    assert len(again.class_rep) == n_classes > 1
    np.testing.assert_array_equal(again.dom_class, classes)
    assert_same_routes(router.nvlink_routes(a, b), [expect.route(i) for i in range(len(a))])


@pytest.mark.parametrize("block", [None, 3, 6])
def test_distinct_rows_survive_hash_collisions(tune, block):
    # `row_hash` sums the entries times one odd multiplier per column (m), so a row plus
    # (m[1], -m[0], 0) hashes as the row itself: colliding hashes must not merge rows
    # that differ (the byte-by-byte fallback decides), a block of rows at a time or all
    # at once.
    from designer.solver.routing.nvlink import distinct_rows, row_hash

    m = row_hash(np.eye(3, dtype=np.int64))
    row = np.array([7, -2, 5], np.int64)
    alias = row.view(np.uint64) + np.array([m[1], 0, 0], np.uint64)
    alias -= np.array([0, m[0], 0], np.uint64)       # (wraps modulo 2**64, as the hash)
    alias = alias.view(np.int64)
    other = np.array([1, 2, 3], np.int64)
    rows = np.stack([row, alias, other, row, alias])
    hashes = row_hash(rows)
    assert hashes[0] == hashes[1] == hashes[3] == hashes[4] != hashes[2]
    if block is not None:
        tune(row_block=block)   # 3 entries a row: one or two rows a block
    first, number = distinct_rows(lambda items: rows[items], np.arange(len(rows)))
    assert first.tolist() == [0, 1, 2]
    assert number.tolist() == [0, 1, 2, 0, 1]


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
def test_batched_fabric_dags_equal_fabric_dag(fat_tree, tune, dense):
    if not dense:  # the sorted-key lookup that large fabrics use, three searches at a time
        tune(keyed_dense=0)
        tune(bfs_batch=3)
    if dense == "sliced":  # next hops found a few states at a time, as at 131k GPUs,
        # each state's own arcs tested (`downhill`'s per-group pass turned off)
        tune(downhill_slice=5)
        tune(dense_downhill=False)
    snap, la, lb = fat_tree
    single = Router(snap)
    routes = [single.fabric_dag(int(x), int(y)) for x, y in zip(la, lb, strict=True)]
    router = Router(snap)
    batch = router.fabric_dags(la, lb)
    # The per-group pass served some level (the cores towards every pod) unless off.
    assert (router.fabric_groups().dense_passes > 0) == (dense != "sliced")
    assert_same_routes(batch, routes)
    assert batch.hops.tolist() == [
        0 if x == y else int(single.net.dist_to(int(y), through=single.is_switch)[x])
        for x, y in zip(la, lb, strict=True)]
    # some pairs lost paths to the failures: weights differ from an even split
    assert len({round(float(w), 9) for _, ws in routes for w in ws}) > 4


def _bundled_leaf_spine(order: str) -> Topology:
    """Three leaves, two spines, each leaf-spine pair cabled by two separate links (each
    edge switch has one host); ``order`` "sorted" adds every switch's links in order of
    their far ends, "mixed" adds them shuffled."""
    t = Topology()
    for i in range(3):
        t.add_node(Node(f"L{i}", "leaf", "QM9700", f"leaf {i}"))
        t.add_node(Node(f"g{i}", "gpu", "H100", f"gpu {i}"))
        t.add_node(Node(f"c{i}", "nic", "ConnectX-7", f"nic {i}"))
        t.add_link(Link(f"g{i}-c{i}", f"g{i}", f"c{i}", "pcie5"))
        t.add_link(Link(f"c{i}-L{i}", f"c{i}", f"L{i}", "ib-ndr"))
    for j in range(2):
        t.add_node(Node(f"S{j}", "spine", "QM9700", f"spine {j}"))
    cables = [(i, j, k) for i in range(3) for j in range(2) for k in "ab"]
    if order == "mixed":
        cables = [cables[k] for k in np.random.default_rng(3).permutation(len(cables))]
    for i, j, k in cables:
        t.add_link(Link(f"L{i}-S{j}{k}", f"L{i}", f"S{j}", "ib-ndr", count=1 + (i + j) % 2))
    return t


@pytest.mark.parametrize("design", ["fat tree", "bundles sorted", "bundles mixed"])
@pytest.mark.parametrize("search", [True, False])
def test_last_hops_by_search_or_sort(fat_tree, tune, design, search):
    # The last hop's arcs (a switch's arcs into the target) are found by binary search
    # where every switch lists its arcs in order of their far ends (the templates'
    # designs), with or without parallel arcs, and by a sort otherwise; the targets'
    # switch neighbours (their groups) are read off those arcs where no pair has
    # parallel ones, and sorted out of the fabric's arcs otherwise: the same DAGs.
    if design == "fat tree":
        snap, la, lb = fat_tree
    else:
        snap = take_snapshot(_bundled_leaf_spine(design.split()[1]))
        leaves = np.array([i for i, k in enumerate(snap.node_kind) if k == "leaf"])
        la, lb = np.repeat(leaves, len(leaves)), np.tile(leaves, len(leaves))
    keys, single = Router(snap).fabric_groups().arc_pairs()
    assert (keys is not None) == (design != "bundles mixed")
    assert single == (design == "fat tree")
    if not search:
        tune(arc_search=False)
    single_pair = Router(snap)
    routes = [single_pair.fabric_dag(int(x), int(y)) for x, y in zip(la, lb, strict=True)]
    assert_same_routes(Router(snap).fabric_dags(la, lb), routes)
    # (the bundles: every last hop crosses both cables of its pair)
    assert design == "fat tree" or max(len(a) for a, _ in routes) == 8


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


def test_walks_longer_than_one_chunk(fat_tree, tune):
    snap, la, lb = fat_tree
    keys = np.arange(len(la)) * 7919
    whole = Router(snap).fabric_walks(la, lb, keys, keys, "ecmp")
    tune(walk_chunk=7)
    chunked = Router(snap).fabric_walks(la, lb, keys, keys, "ecmp")
    assert chunked.arcs.tolist() == whole.arcs.tolist()
    assert chunked.ptr.tolist() == whole.ptr.tolist()
    # chunks of flows that stay on their leaf (no hop) between ones that do not
    i = int(np.flatnonzero(la != lb)[0])
    leaf = (la[i], lb[i])
    a = np.array([leaf[0], leaf[0], leaf[0], leaf[1], leaf[1], leaf[1]])
    b = np.array([leaf[0], leaf[0], leaf[1], leaf[0], leaf[1], leaf[1]])
    tune(walk_chunk=2)
    mixed = Router(snap).fabric_walks(a, b, np.arange(6), np.arange(6), "static")
    assert mixed.hops.tolist()[:2] == [0, 0] and mixed.hops.tolist()[4:] == [0, 0]
    assert mixed.hops[2] == mixed.hops[3] > 0
    assert len(mixed.arcs) == 2 * mixed.hops[2]


def test_edge_switches_are_grouped_by_their_switch_neighbours(fat_tree):
    # Leaves with the same spines share a group (one search), whatever order they are
    # asked in; the failures leave some leaves with spines of their own.
    snap, la, lb = fat_tree
    leaves = np.unique(lb)
    groups = Router(snap).fabric_groups()
    got = groups.groups_of(leaves[::-1])[::-1]         # any order of asking
    net = groups.net
    spines = [frozenset(int(x) for x in net.dst[net.ptr[v]:net.ptr[v + 1]]
                        if snap.node_kind[x] != "nic") for v in leaves.tolist()]
    for i in range(len(leaves)):
        for j in range(len(leaves)):
            assert (got[i] == got[j]) == (spines[i] == spines[j])
    assert len(set(got.tolist())) == len(set(spines)) > 1
    # Numbered by first appearance, targets ascending.
    firsts = [got[i] for i in sorted({got.tolist().index(g) for g in got.tolist()})]
    assert firsts == list(range(len(firsts)))
    single = Router(snap)
    assert_same_routes(Router(snap).fabric_dags(la, lb),
                       [single.fabric_dag(int(x), int(y)) for x, y in zip(la, lb, strict=True)])
