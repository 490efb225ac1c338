"""Shared DAG walks (`routing.walks.walk_shared`): pairs of edge switches that leave alike
walk their middle levels once, and the result is still the per-pair DAG, arc for arc and
bit for bit; also the frontier `walk_from` keeps, and the block copies."""

from __future__ import annotations

import numpy as np
import pytest
from test_routing_batched import assert_same_routes

from designer.model.templates import build_template
from designer.solver.arrays import ragged as route_arrays
from designer.solver.arrays.ragged import RouteBatch, _ptr
from designer.solver.routing import walks as route_walk
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot


def leaf_pairs(snap) -> tuple[np.ndarray, np.ndarray]:
    leaves = np.array([i for i, k in enumerate(snap.node_kind) if k == "leaf"])
    return np.repeat(leaves, len(leaves)), np.tile(leaves, len(leaves))


def middles_walked(monkeypatch) -> list[int]:
    """Record how many routes each middle walk (the one from level 1) takes."""
    seen: list[int] = []
    walk = route_walk.walk_from

    def spy(front, stop, level, *args, **kwargs):
        if level == 1:
            seen.append(len(stop))
        return walk(front, stop, level, *args, **kwargs)

    monkeypatch.setattr(route_walk, "walk_from", spy)
    return seen


def per_pair(snap, la, lb):
    single = Router(snap)
    return [single.fabric_dag(int(x), int(y)) for x, y in zip(la, lb, strict=True)]


@pytest.fixture(scope="module")
def healthy():
    """A 3-tier fat tree (k=4): leaves of other pods are four hops away."""
    snap = take_snapshot(build_template("fat-tree", k=4))
    return (snap, *leaf_pairs(snap))


def test_alike_pairs_walk_their_middle_once(healthy, monkeypatch):
    snap, la, lb = healthy
    expect = per_pair(snap, la, lb)
    seen = middles_walked(monkeypatch)
    batch = Router(snap).fabric_dags(la, lb)
    assert_same_routes(batch, expect)
    deep = int((batch.hops >= 3).sum())
    assert deep > 0 and len(seen) == 1
    # Both leaves of a pod split alike over its two spines, so the pairs going to one
    # remote pod (two targets, one group) share one middle: a quarter as many walks.
    assert seen[0] * 4 == deep


def test_a_leaf_that_splits_differently_walks_its_own_middle(monkeypatch):
    topo = build_template("fat-tree", k=4)
    leaf = next(n for n in topo.nodes() if n.kind == "leaf")
    up = next(lk for lk in topo.links()
              if leaf.id in (lk.a, lk.b) and {topo.node(lk.a).kind, topo.node(lk.b).kind}
              == {"leaf", "spine"})
    topo.update_link(up.id, count=up.count + 2)      # this leaf leans on one spine
    snap = take_snapshot(topo)
    la, lb = leaf_pairs(snap)
    expect = per_pair(snap, la, lb)
    seen = middles_walked(monkeypatch)
    batch = Router(snap).fabric_dags(la, lb)
    assert_same_routes(batch, expect)
    # The pairs from that leaf to each of the 3 remote pods no longer share.
    healthy = int((batch.hops >= 3).sum()) // 4
    assert seen == [healthy + 3]


def test_hash_collisions_cost_sharing_not_correctness():
    """Frontiers that hash alike but differ are told apart state by state: the routes
    are still exact.  `segment_hash` keeps a node id's low 40 bits, so two routes whose
    first hops end at nodes ``x`` and ``x + 2**40`` have frontiers that collide."""
    x, alias = 10, 10 + (1 << 40)
    one = np.ones(1)
    assert (route_arrays.segment_hash(np.array([x]), one, np.array([1]))
            == route_arrays.segment_hash(np.array([alias]), one, np.array([1]))).all()
    # Arcs 0: 0 -> x, 1: 1 -> alias, 2: x -> 20, 3: alias -> 21, 4: 20 -> 30, 5: 21 -> 30.
    arc_dst = np.array([x, alias, 20, 21, 30, 30])
    out = {0: 0, 1: 1, x: 2, alias: 3, 20: 4, 21: 5}

    def next_hops(route, node, level):
        arcs = np.array([out[int(v)] for v in node], np.int64)
        ones = np.ones(len(arcs), np.int64)
        return RouteBatch(_ptr(ones), arcs, np.ones(len(arcs)), ones)

    start, hops, kind = np.array([0, 1]), np.array([3, 3]), np.zeros(2, np.int64)
    want = route_walk.walk_levels(start, hops, arc_dst, 1 << 41, next_hops)
    got = route_walk.walk_shared(start, hops, kind, arc_dst, 1 << 41, next_hops)
    assert_same_routes(got, [want.route(i) for i in range(2)])
    assert got.route(1)[0].tolist() == [1, 3, 5]


@pytest.mark.parametrize("long_block", [1, 10**9])
def test_block_copies_as_slices_or_index_arrays(healthy, tune, long_block):
    snap, la, lb = healthy
    expect = per_pair(snap, la, lb)
    tune(long_block=long_block)
    assert_same_routes(Router(snap).fabric_dags(la, lb), expect)


@pytest.mark.parametrize("long_block", [1, 10**9])
def test_pending_dags_write_the_same_rows_where_they_are_put(healthy, tune, long_block):
    # Unwritten DAGs (for the phase's table) carry the walked table's row pointers, and
    # write its entries, into any arrays (int32 links too) at any offset.
    snap, la, lb = healthy
    tune(long_block=long_block)
    want = Router(snap).fabric_dags(la, lb)
    got = Router(snap).fabric_dags(la, lb, pending=True)
    assert isinstance(got, route_arrays.PendingBatch) and got.arcs is None
    np.testing.assert_array_equal(got.ptr, want.ptr)
    np.testing.assert_array_equal(got.hops, want.hops)
    size = got.rows.size
    arcs, weights = np.full(size + 7, -1, np.int32), np.full(size + 7, -1.0)
    got.rows.write(arcs[5:5 + size], weights[5:5 + size])
    np.testing.assert_array_equal(arcs[5:5 + size], want.arcs)
    np.testing.assert_array_equal(weights[5:5 + size], want.weights)   # bit for bit
    assert (arcs[:5] == -1).all() and (arcs[5 + size:] == -1).all()
    done = got.done()
    np.testing.assert_array_equal(done.arcs, want.arcs)


def test_walk_from_keeps_where_each_route_stops():
    # arcs 0: 0->1, 1: 0->2, 2: 1->3, 3: 2->3; node 0 splits 1/4 : 3/4.
    dst = np.array([1, 2, 3, 3])
    rows = {0: ([0, 1], [0.25, 0.75]), 1: ([2], [1.0]), 2: ([3], [1.0])}

    def step(route, node, level):
        parts = [rows[int(v)] for v in node]
        lengths = np.array([len(a) for a, _ in parts])
        return RouteBatch(_ptr(lengths), np.concatenate([a for a, _ in parts]),
                          np.concatenate([w for _, w in parts]), lengths)

    # Route 0 takes one level, route 1 two, route 2 none: it stays where it starts.
    front = route_walk.Frontier(np.array([0, 1, 2]), np.array([0, 0, 1]), np.ones(3))
    out, end = route_walk.walk_from(front, np.array([1, 2, 0]), 0, dst, 4, step, keep=True)
    assert [out.route(i)[0].tolist() for i in range(3)] == [[0, 1], [0, 1, 2, 3], []]
    assert end.route.tolist() == [0, 0, 1, 2]
    assert end.node.tolist() == [1, 2, 3, 1]
    assert end.frac.tolist() == [0.25, 0.75, 1.0, 1.0]
