"""Tests of `LineBatch`: O(1) moves of lines between the schematic's pens, and views
that later changes leave alone."""

from __future__ import annotations

import numpy as np
import pytest

from designer.gui.canvas.line_batches import LineBatch


@pytest.mark.parametrize("seed", range(5))
def test_random_changes_match_a_dict_and_views_stay_put(seed):
    rng = np.random.default_rng(seed)
    batch = LineBatch.of((f"i{k}", k) for k in range(20))
    ref = {f"i{k}": k for k in range(20)}
    views = []
    for step in range(400):
        item = f"i{int(rng.integers(60))}"
        op = rng.integers(3)
        if op == 0:
            batch.add(item, step * 1000)
            ref[item] = step * 1000
        elif op == 1:
            batch.remove(item)
            ref.pop(item, None)
        elif rng.random() < 0.3:
            views.append((batch.lines(), sorted(ref.values())))
        assert len(batch) == len(ref)
        assert (item in batch) == (item in ref)
    assert sorted(batch.lines().tolist()) == sorted(ref.values())
    for view, expect in views:  # each view is what the batch held when it was taken
        assert sorted(view.tolist()) == expect


def test_a_removal_fills_the_hole_with_the_last_line():
    batch = LineBatch.of([("a", 1), ("b", 2), ("c", 3)])
    batch.remove("a")
    assert batch.lines().tolist() == [3, 2]
    batch.remove("zzz")  # not there: nothing happens
    assert len(batch) == 2


def test_an_unshared_batch_changes_in_place_and_a_shared_one_is_copied():
    batch = LineBatch(4)
    batch.add("a", 1)
    arr = batch._lines
    batch.add("b", 2)
    assert batch._lines is arr  # no view handed out: written in place
    view = batch.lines()
    batch.add("a", 10)
    assert batch._lines is not arr and view.tolist() == [1, 2]
    assert batch.lines().tolist() == [10, 2]
