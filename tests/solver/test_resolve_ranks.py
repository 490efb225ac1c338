"""`resolve_ranks`: the one place the GUI and the CLI turn a scenario's ranks into GPUs."""

from __future__ import annotations

import pytest

from designer.model.templates import build_template
from designer.solver import GroupRanks, SolverError, resolve_ranks, take_snapshot


@pytest.fixture(scope="module")
def snap():
    return take_snapshot(build_template("hgx", gpu="H100"))


def _gpu(snap, rank: int) -> str:
    return snap.node_ids[int(snap.gpus[rank])]


@pytest.mark.parametrize(("spec", "message"), [
    (1, "at least 2 ranks"),
    (99, "only 8 GPUs"),
    (["nope", "also-nope"], "no working GPU 'nope'"),
    (GroupRanks("g", ("nope",)), "group 'g' has 0 working GPU"),
])
def test_specs_the_design_cannot_satisfy_are_refused(snap, spec, message):
    with pytest.raises(SolverError, match=message):
        resolve_ranks(snap, spec)


def test_a_gpu_listed_twice_is_refused_not_counted_twice(snap):
    a, b = _gpu(snap, 0), _gpu(snap, 1)
    with pytest.raises(SolverError, match=f"GPU '{a}' is listed twice"):
        resolve_ranks(snap, [a, b, a])


def test_lists_selections_and_groups_resolve_to_the_same_ranks(snap):
    ids = [_gpu(snap, r) for r in (5, 2, 7)]
    expected = [2, 5, 7]
    assert resolve_ranks(snap, ids) == expected
    assert resolve_ranks(snap, "selection", [*ids, "not-a-gpu"]) == expected
    assert resolve_ranks(snap, GroupRanks("g", tuple(ids))) == expected
    assert resolve_ranks(snap, "all") is None
    with pytest.raises(SolverError, match="select at least two"):
        resolve_ranks(snap, "selection", ids[:1])
