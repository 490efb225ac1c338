"""CollNet (SHARP) availability: the model reduces up an aggregation tree of live SHARP
switches (`flows.sharp`; its loads in test_sharp_tree.py), so it must refuse ranks whose
edge switches no live switch path joins (as ring and tree do), and say what it assumes
when it is used."""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.solver.errors import SolverError
from designer.solver.flows.collectives import candidate_plans
from designer.solver.pipeline import solve_collective
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot

BIG = [1 << 30]


def _two_leaves_per_rail():
    """4 servers of 2 GPUs; rail r's leaves leaf-r{r}-0 (n01, n02) and leaf-r{r}-1 (n03,
    n04) meet only through the two spines."""
    return build_template("rail-cluster", nodes=4, leaf_radix=4, gpus_per_node=2)


def _names(snap) -> set[str]:
    ranks = np.arange(snap.n_gpus)
    return {p.algorithm for p in candidate_plans(Router(snap), ranks, "allreduce")}


def test_collnet_runs_and_says_what_it_assumes():
    res = solve_collective(take_snapshot(_two_leaves_per_rail()), sizes=BIG, algorithm="collnet")
    assert res.algorithm == "collnet"
    assert any("aggregation tree" in n and "not modelled" in n for n in res.notes)


def test_no_collnet_without_a_live_path_between_the_edge_switches():
    topo = _two_leaves_per_rail()
    for spine in ("spine-0", "spine-1"):
        topo.update_node(spine, failed=True)
    snap = take_snapshot(topo)
    with pytest.raises(SolverError, match="no fabric path from leaf-r0-0 to leaf-r0-1"):
        solve_collective(snap, sizes=BIG, algorithm="collnet")
    # Ring and tree refuse it too, so auto has nothing left that crosses the fabric.
    for algorithm in ("ring", "tree"):
        with pytest.raises(SolverError, match="no fabric path"):
            solve_collective(snap, sizes=BIG, algorithm=algorithm)
    with pytest.raises(SolverError, match="no algorithm can run allreduce"):
        solve_collective(snap, sizes=BIG)


def test_collnet_stays_where_each_rail_is_one_edge_switch():
    # Two servers: every rail's GPUs share one leaf, so SHARP needs no spine there.
    topo = _two_leaves_per_rail()
    for node in ("n03", "n04"):
        for member in [n.id for n in topo.nodes() if n.id.startswith(node)]:
            topo.remove_node(member)
    for spine in ("spine-0", "spine-1"):
        topo.update_node(spine, failed=True)
    snap = take_snapshot(topo)
    assert "collnet" in _names(snap)


def test_one_failed_spine_leaves_collnet_available():
    topo = _two_leaves_per_rail()
    topo.update_node("spine-1", failed=True)
    assert "collnet" in _names(take_snapshot(topo))
