"""Tests of the array helpers behind the batched route walks (`arrays.ragged`)."""

from __future__ import annotations

import numpy as np
import pytest

from designer.solver.tuning import tuned


@pytest.mark.parametrize("space", [50, 1 << 16, 1 << 20, 1 << 30, 1 << 40])
def test_sorting_helpers_match_numpy(space):
    from designer.solver.arrays.ragged import (
        distinct,
        first_occurrence,
        stable_argsort,
        unique_inverse,
    )

    rng = np.random.default_rng(space % 97)
    keys = rng.integers(0, space, 5000, dtype=np.int64)
    keys[::7] = keys[0]  # plenty of repeats
    assert stable_argsort(keys, space).tolist() == np.argsort(keys, kind="stable").tolist()
    assert distinct(keys).tolist() == np.unique(keys).tolist()
    uniq, at = first_occurrence(keys, space)
    first = {}
    for k in keys.tolist():
        first.setdefault(k, len(first))
    assert uniq.tolist() == list(first)
    assert at.tolist() == [first[k] for k in keys.tolist()]
    assert [x.tolist() for x in first_occurrence(keys)] == [uniq.tolist(), at.tolist()]
    # By a table (small spaces), by radix sort (up to 2**32) or by np.unique: the same.
    u, inv = unique_inverse(keys, space)
    ref_u, ref_inv = np.unique(keys, return_inverse=True)
    assert u.tolist() == ref_u.tolist() and inv.tolist() == ref_inv.tolist()


@pytest.mark.parametrize("least", [1, 1 << 16])
@pytest.mark.parametrize("table", [1, 7, 64, 1 << 20])
def test_first_occurrence_by_groups_matches_the_sort(table, least):
    # Keys (group, item) with groups in order, as a DAG walk's level lists them: the
    # table of first positions, one group or a few at a time, gives the sort's answer.
    # (``least``: the smallest table; with 1 the table is sized by the keys alone.)
    from designer.solver.arrays.ragged import first_occurrence, first_occurrence_grouped

    rng = np.random.default_rng(table)
    for _ in range(200):
        n_items = int(rng.integers(1, 40))
        group = np.sort(rng.integers(0, int(rng.integers(1, 60)), int(rng.integers(0, 400))))
        group += int(rng.integers(0, 5))  # need not start at 0
        item = rng.integers(0, n_items, group.size)
        with (tuned(grouped_table=table),
              tuned(grouped_min=least)):
            first, at = first_occurrence_grouped(group, item, n_items)
        uniq, ref_at = first_occurrence(group * n_items + item)
        assert (group * n_items + item)[first].tolist() == uniq.tolist()
        assert at.tolist() == ref_at.tolist()


@pytest.mark.parametrize("seed", range(40))
def test_sorted_ptr_is_where_each_key_would_be_inserted(seed):
    """Against a binary search per key: keys missing at the start, the end and between
    runs, none at all, int32 or int64."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    keys = np.sort(rng.integers(0, n, int(rng.integers(0, 60)))).astype(
        np.int32 if seed % 2 else np.int64)
    from designer.solver.routing.subgraph import sorted_ptr

    expect = np.searchsorted(keys, np.arange(n + 1))
    assert sorted_ptr(keys, n).tolist() == expect.tolist()


def test_a_dense_key_map_is_a_mapping_of_its_own():
    # `KeyedRows`' large maps are anonymous mappings (zero pages until a key touches
    # one), not np.zeros, which zeroes a block that malloc reuses from its heap whole.
    import mmap

    from designer.solver.arrays.keyed_rows import KeyedRows, _lazy_zeros

    big = _lazy_zeros(4 << 20)
    assert big.dtype == np.int32 and big.size == 4 << 20 and big.flags.writeable
    assert isinstance(big.base, memoryview) and isinstance(big.base.obj, mmap.mmap)
    big[[5, -1]] = 7
    assert big.sum() == 14
    small = _lazy_zeros(1000)          # under a MB: calloc's zeros will do
    assert small.base is None and not small.any()
    rows = KeyedRows(4 << 20)
    assert isinstance(rows._dense.base, memoryview)


@pytest.mark.parametrize("pxn", [False, True])
def test_access_legs_are_each_ranks_way_to_and_from_the_fabric(pxn):
    # Route x: rank x's arcs to its NIC, then the NIC's cable; route n + x: the cable
    # reversed, then the arcs back to the rank.  Every rank on a NIC of its own takes
    # the short way (two arcs each); a failed GPU-NIC link sends one GPU through a
    # sibling (PXN) and all ranks the general way: the same routes rank by rank.
    from designer.model.templates import build_template
    from designer.solver.routing.access import access_legs
    from designer.solver.routing.router import Router
    from designer.solver.snapshot.build import take_snapshot

    topo = build_template("rail-cluster", nodes=2)
    if pxn:
        pcie = next(lk for lk in topo.links()
                    if {topo.node(lk.a).kind, topo.node(lk.b).kind} == {"gpu", "nic"})
        topo.update_link(pcie.id, failed=True)
    snap = take_snapshot(topo)
    rl = Router(snap).rank_links()
    legs = access_legs(rl, snap.n_arcs)
    n = snap.n_gpus
    assert legs.arcs.dtype == np.int32 and len(legs.hops) == 2 * n
    lengths = np.diff(legs.ptr)
    assert (lengths > 2).any() == pxn
    for x in range(n):
        up, w_up = rl.access_up.route(x)
        down, w_down = rl.access_down.route(x)
        assert legs.route(x)[0].tolist() == [*up.tolist(), int(rl.up[x])]
        assert legs.route(n + x)[0].tolist() == [int(rl.up[x]) ^ 1, *down.tolist()]
        assert legs.route(x)[1].tolist() == [*w_up.tolist(), 1.0]
        assert legs.route(n + x)[1].tolist() == [1.0, *w_down.tolist()]


@pytest.mark.parametrize("lengths", [[3] * 40, [1] * 40, [200] * 3, [4, 1, 3, 3, 0, 2] * 7])
def test_capacity_splits_are_the_per_row_arithmetic(lengths):
    # Each row of next hops is split as one route would be, ``cap[row] / cap[row].sum()``,
    # bit for bit, whether its rows share one length (a matrix's row sums) or not.
    from designer.solver.arrays.ragged import split_by_capacity

    rng = np.random.default_rng(len(lengths))
    cap = rng.random(200) * 400.0
    lengths = np.array(lengths, np.int64)
    arcs = rng.integers(0, 200, int(lengths.sum()))
    out = split_by_capacity(arcs, lengths, cap)
    for i in range(len(lengths)):
        row, weights = out.route(i)
        assert weights.tobytes() == (cap[row] / cap[row].sum()).tobytes()
    assert out.hops.tolist() == lengths.tolist()
