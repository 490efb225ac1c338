"""Tests of the array helpers behind the batched route walks (`route_arrays`)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest


@pytest.mark.parametrize("space", [50, 1 << 16, 1 << 20, 1 << 30, 1 << 40])
def test_sorting_helpers_match_numpy(space):
    from designer.solver.route_arrays import (
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
    from designer.solver import route_arrays
    from designer.solver.route_arrays import first_occurrence, first_occurrence_grouped

    rng = np.random.default_rng(table)
    for _ in range(200):
        n_items = int(rng.integers(1, 40))
        group = np.sort(rng.integers(0, int(rng.integers(1, 60)), int(rng.integers(0, 400))))
        group += int(rng.integers(0, 5))  # need not start at 0
        item = rng.integers(0, n_items, group.size)
        with (mock.patch.object(route_arrays, "_GROUPED_TABLE", table),
              mock.patch.object(route_arrays, "_GROUPED_MIN", least)):
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
    from designer.solver.route_subgraph import sorted_ptr

    expect = np.searchsorted(keys, np.arange(n + 1))
    assert sorted_ptr(keys, n).tolist() == expect.tolist()


def test_a_dense_key_map_is_a_mapping_of_its_own():
    # `KeyedRows`' large maps are anonymous mappings (zero pages until a key touches
    # one), not np.zeros, which zeroes a block that malloc reuses from its heap whole.
    import mmap

    from designer.solver.keyed_rows import KeyedRows, _lazy_zeros

    big = _lazy_zeros(4 << 20)
    assert big.dtype == np.int32 and big.size == 4 << 20 and big.flags.writeable
    assert isinstance(big.base, memoryview) and isinstance(big.base.obj, mmap.mmap)
    big[[5, -1]] = 7
    assert big.sum() == 14
    small = _lazy_zeros(1000)          # under a MB: calloc's zeros will do
    assert small.base is None and not small.any()
    rows = KeyedRows(4 << 20)
    assert isinstance(rows._dense.base, memoryview)
