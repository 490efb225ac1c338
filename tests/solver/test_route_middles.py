"""`routing.middles`: fabric DAGs kept as each class's own hops plus the middles classes
share.  Written in full they are the router's DAGs entry for entry; the form is
canonical (equal middles merged, numbered by first use, whatever the digests say); and a
phase that keeps its middles apart puts the same weight of every flow on every arc as
one that writes each class's DAG whole."""

from __future__ import annotations

import numpy as np
import pytest
from test_route_walk import leaf_pairs

from designer.model.templates import build_template
from designer.solver.arrays.ragged import RouteBatch, _ptr, segment_hash
from designer.solver.flows.recipe import phase_transfers
from designer.solver.pipeline import solve_collective
from designer.solver.routing.middles import canonical_middles
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot


def _same_batch(got: RouteBatch, want: RouteBatch) -> None:
    np.testing.assert_array_equal(got.ptr, want.ptr)
    np.testing.assert_array_equal(got.arcs, want.arcs)
    assert got.weights.tolist() == want.weights.tolist()   # bit for bit
    np.testing.assert_array_equal(got.hops, want.hops)


@pytest.fixture(scope="module")
def fat_tree():
    """A 3-tier fat tree (k=8): leaves of other pods are four hops away."""
    return take_snapshot(build_template("fat-tree", k=8))


@pytest.mark.parametrize("pending", [False, True])
def test_split_dags_written_whole_are_the_router_dags(fat_tree, pending):
    la, lb = leaf_pairs(fat_tree)
    want = Router(fat_tree).fabric_dags(la, lb)
    split = Router(fat_tree).fabric_dags(la, lb, pending=pending, split=True)
    _same_batch(split.whole(), want)
    mid = split.middles
    deep = want.hops >= 3
    # Every deep class crosses a middle, no other class does, and the middles are
    # kept once: far fewer entries than the classes' copies of them.
    np.testing.assert_array_equal(mid.of >= 0, deep)
    copies = int(mid.table.lengths[mid.of[deep]].sum())
    assert mid.size * 8 <= copies
    # Numbered in order of first use.
    first = mid.of[deep][np.sort(np.unique(mid.of[deep], return_index=True)[1])]
    np.testing.assert_array_equal(first, np.arange(len(mid.table.hops)))


def test_pairs_the_walk_cannot_batch_keep_whole_rows(fat_tree):
    la, lb = leaf_pairs(fat_tree)
    # The first few pairs start at a NIC cabled to their leaf, not at a switch: they are
    # walked one by one.
    router = Router(fat_tree)
    nics = np.flatnonzero(np.asarray(fat_tree.node_kind) == "nic")
    leaf = fat_tree.arc_dst[router.edge_arcs()[nics]]
    nic_of = dict(zip(leaf.tolist(), nics.tolist(), strict=True))
    la = la.copy()
    la[:40] = [nic_of[int(x)] for x in la[:40]]
    want = Router(fat_tree).fabric_dags(la, lb)
    split = Router(fat_tree).fabric_dags(la, lb, split=True)
    _same_batch(split.whole(), want)
    assert (split.middles.of[:40] == -1).all()
    assert (split.middles.of[40:][want.hops[40:] >= 3] >= 0).all()


def _table(rows, dtype=np.int32):
    lengths = np.array([len(r) for r in rows])
    arcs = np.concatenate([np.asarray(r, dtype) for r in rows])
    return RouteBatch(_ptr(lengths), arcs, np.ones(len(arcs)) / 2, np.zeros(len(rows), np.int64))


def test_canonical_middles_merge_equal_rows_drop_unused_and_number_by_first_use():
    table = _table([[1, 2], [5], [3, 4], [1, 2], [7, 8]])
    head = np.arange(6)
    mid = canonical_middles(head, np.array([2, -1, 3, 0, 2, 1]), table)
    # Row 3 equals row 0; row 4 is crossed by no class.  First uses: 2, then 3 (= 0),
    # then 1.
    assert [mid.table.route(i)[0].tolist() for i in range(3)] == [[3, 4], [1, 2], [5]]
    np.testing.assert_array_equal(mid.of, [0, -1, 1, 1, 0, 2])
    np.testing.assert_array_equal(mid.head, head)


def test_rows_whose_digests_collide_are_told_apart_by_their_entries():
    # `segment_hash` keeps an arc id's low 40 bits, so arc 3 + 2**40 digests as arc 3:
    # rows 0 and 1 collide but differ (kept apart), row 2 equals row 0 (merged).
    alias = 3 + (1 << 40)
    table = _table([[3, 4], [alias, 4], [3, 4]], np.int64)
    digests = segment_hash(table.arcs, table.weights, table.lengths)
    assert digests[0] == digests[1] == digests[2]
    mid = canonical_middles(np.zeros(3, np.int64), np.array([0, 1, 2]), table)
    np.testing.assert_array_equal(mid.of, [0, 1, 0])
    assert [mid.table.route(i)[0].tolist() for i in range(2)] == [[3, 4], [alias, 4]]


def test_rows_of_one_key_are_told_apart_by_their_entries():
    # Same length and arc sum (the cheap key), but only rows 1 and 3 are equal: they are
    # merged even though row 0 comes first among those of their key.
    table = _table([[1, 4], [2, 3], [0, 5], [2, 3]])
    mid = canonical_middles(np.zeros(4, np.int64), np.array([0, 1, 2, 3]), table)
    np.testing.assert_array_equal(mid.of, [0, 1, 2, 1])
    assert [mid.table.route(i)[0].tolist() for i in range(3)] == [[1, 4], [2, 3], [0, 5]]


def test_rows_that_differ_in_weight_alone_stay_apart():
    table = _table([[1, 2], [1, 2]])
    table.weights[2:] = [0.25, 0.75]
    mid = canonical_middles(np.zeros(2, np.int64), np.array([0, 1]), table)
    np.testing.assert_array_equal(mid.of, [0, 1])
    assert len(mid.table.hops) == 2


def test_splicing_middles_gives_the_fresh_form(fat_tree):
    la, lb = leaf_pairs(fat_tree)
    r = Router(fat_tree)
    whole = r.fabric_dags(la, lb, split=True)
    at = np.flatnonzero(whole.own.hops >= 3)[::3]
    part = Router(fat_tree).fabric_dags(la[at], lb[at], split=True)
    mid = whole.middles.spliced(at, part.middles)
    # The same classes crossing the same middles, in the same order: the very arrays.
    np.testing.assert_array_equal(mid.of, whole.middles.of)
    np.testing.assert_array_equal(mid.head, whole.middles.head)
    _same_batch(mid.table, whole.middles.table)


def _by_flow_arc(phase) -> dict[tuple[int, int], float]:
    f, a, w = phase.pairs()
    key = f.astype(np.int64) * (int(a.max()) + 1) + a
    uniq, inv = np.unique(key, return_inverse=True)
    total = np.bincount(inv.reshape(-1), w)
    return dict(zip(uniq.tolist(), total.tolist(), strict=True))


@pytest.mark.parametrize(("collective", "algorithm"),
                         [("allreduce", "ring"), ("alltoall", "auto")])
def test_a_phase_with_middles_apart_loads_every_arc_as_one_with_whole_dags(
        fat_tree, tune, collective, algorithm):
    tune(alltoall_classes=False)   # per pair: classes route their own way (flows.alltoall)
    split = solve_collective(fat_tree, collective, sizes=[1 << 30], algorithm=algorithm)
    routes = split.plan.phases[0].routes
    assert any(sp.mid is not None and (sp.mid.of >= 0).any()
               for sp in split.plan.phases[0].recipe.shared)
    tune(keep_middles=False)   # phases write every class's DAG whole
    whole = solve_collective(fat_tree, collective, sizes=[1 << 30], algorithm=algorithm)
    # (A ring crosses each middle once here: nothing to save; an all-to-all many times.)
    kept, written = len(routes.link), len(whole.plan.phases[0].routes.link)
    assert kept < written if collective == "alltoall" else kept == written
    for p, q in zip(split.plan.phases, whole.plan.phases, strict=True):
        got, want = _by_flow_arc(p), _by_flow_arc(q)
        assert got.keys() == want.keys()
        np.testing.assert_allclose(list(got.values()), list(want.values()), rtol=1e-12)
        assert p.n_pairs == q.n_pairs
    np.testing.assert_allclose(split.time_s, whole.time_s, rtol=1e-12)
    np.testing.assert_allclose(split.arc_load_GBps, whole.arc_load_GBps, rtol=1e-12,
                               atol=1e-9)


def test_a_transfers_arcs_include_its_middle(fat_tree, tune):
    tune(alltoall_classes=False)   # per-pair transfers (classes have none to read back)
    plan = solve_collective(fat_tree, "alltoall", sizes=[1 << 20]).plan
    tr = phase_transfers(plan.phases[0])
    tune(keep_middles=False)
    plan_whole = solve_collective(fat_tree, "alltoall", sizes=[1 << 20]).plan
    tr_whole = phase_transfers(plan_whole.phases[0])
    for rank in (0, 17, 127):
        got = np.unique(np.concatenate(tr.arcs_of(np.array([rank]))))
        want = np.unique(np.concatenate(tr_whole.arcs_of(np.array([rank]))))
        np.testing.assert_array_equal(got, want)
