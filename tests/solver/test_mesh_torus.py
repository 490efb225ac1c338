"""Collectives on a switchless full mesh (AMD xGMI nodes), checked against the hand
formulas of docs/model.md ("Collectives on full meshes, tori and UALink pods").

``B`` is one xGMI link's achieved rate in one direction: the catalog's line rate times
its efficiency (64 GB/s x 0.75 = 48 GB/s for MI300X).
"""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.catalog import default_catalog
from designer.model.templates import build_template
from designer.solver.errors import SolverError
from designer.solver.flows.collectives import candidate_plans
from designer.solver.flows.mesh import full_mesh, hamiltonian_cycles
from designer.solver.pipeline import solve_collective
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot

CAT = default_catalog()
BIG = [16 << 30]


def _link_rate(tech: str) -> float:
    t = CAT.tech(tech)
    return t.gbps / 8 * t.efficiency


@pytest.fixture(scope="module")
def mi300x():
    return take_snapshot(build_template("hgx", gpu="MI300X"))


def test_mi300x_allreduce_uses_all_seven_links(mi300x):
    """Direct all-reduce on 8 x MI300X: ``busbw = (n - 1) B`` = 7 x 48 = 336 GB/s, and
    ``auto`` picks it over a ring (one link per GPU, ``busbw = B``)."""
    b = _link_rate("xgmi-64")
    res = solve_collective(mi300x, "allreduce", sizes=BIG, algorithm="auto")
    assert res.ceiling_busbw_GBps == pytest.approx(7 * b)
    assert res.algorithm_by_size[0].startswith("direct")
    ring = solve_collective(mi300x, "allreduce", sizes=BIG, algorithm="ring")
    assert ring.ceiling_busbw_GBps < res.ceiling_busbw_GBps
    # large sizes reach the ceiling up to the latency of two steps
    assert float(res.busbw_GBps[0]) == pytest.approx(7 * b, rel=0.01)


@pytest.mark.parametrize("collective", ["allgather", "reducescatter", "alltoall"])
def test_mi300x_other_collectives_use_every_link(mi300x, collective):
    """All-gather / reduce-scatter direct and all-to-all: ``busbw = (n - 1) B``."""
    res = solve_collective(mi300x, collective, sizes=BIG, algorithm="auto")
    assert res.ceiling_busbw_GBps == pytest.approx(7 * _link_rate("xgmi-64"))


def test_direct_runs_only_on_a_full_mesh(mi300x):
    """Through NVSwitches (H100) or on a subset missing no link it applies only where
    every pair has its own link."""
    h100 = take_snapshot(build_template("hgx", gpu="H100"))
    assert not full_mesh(Router(h100), np.arange(8))
    assert full_mesh(Router(mi300x), np.arange(8))
    assert full_mesh(Router(mi300x), np.array([1, 4, 6]))
    with pytest.raises(SolverError):
        candidate_plans(Router(h100), np.arange(8), "allreduce", "direct")
    assert all(
        p.algorithm != "direct" for p in candidate_plans(Router(h100), np.arange(8), "allreduce")
    )


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8, 9, 16])
def test_hamiltonian_cycles_are_edge_disjoint(n):
    """Walecki's decomposition: ``(n-1)//2`` Hamiltonian cycles of ``K_n`` sharing no
    edge (``n`` even: all edges but a perfect matching)."""
    cycles = hamiltonian_cycles(n)
    assert cycles.shape == ((n - 1) // 2, n)
    assert all(sorted(c) == list(range(n)) for c in cycles.tolist())
    edges = [frozenset(e) for c in cycles for e in zip(c, np.roll(c, -1), strict=True)]
    assert len(set(edges)) == len(edges) == n * ((n - 1) // 2)


def test_mi300x_ring_runs_disjoint_rings_that_add_up(mi300x):
    """Ring all-reduce on 8 x MI300X: 3 Hamiltonian cycles each run both ways, 6 rings of
    a sixth of the bytes each on links no other ring uses: ``busbw = (n - 2) B`` = 6 x 48,
    not one ring's ``B``; the matching's links stay idle."""
    b = _link_rate("xgmi-64")
    res = solve_collective(mi300x, "allreduce", sizes=BIG, algorithm="ring")
    assert res.ceiling_busbw_GBps == pytest.approx(6 * b)
    (phase,) = res.plan.phases
    assert phase.n_flows == 6
    assert phase.flow_bytes == pytest.approx(np.full(6, 2 * 7 / 8 / 6))
    # every arc carries at most one ring, and 6 x 8 arcs carry one
    owners = np.bincount(phase.pair_arc, minlength=mi300x.n_arcs)
    assert owners.max() == 1 and owners.sum() == 48
    assert (res.arc_util > 0).sum() == 48
