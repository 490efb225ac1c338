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
from designer.solver.flows.mesh import directed_rings, full_mesh, hamiltonian_cycles
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
    ``auto`` picks it over the rings, which reach the same bandwidth (7 directed rings)
    in 14 steps instead of 2."""
    b = _link_rate("xgmi-64")
    res = solve_collective(mi300x, "allreduce", sizes=BIG, algorithm="auto")
    assert res.ceiling_busbw_GBps == pytest.approx(7 * b)
    assert res.algorithm_by_size[0].startswith("direct")
    ring = solve_collective(mi300x, "allreduce", sizes=BIG, algorithm="ring")
    assert ring.ceiling_busbw_GBps == pytest.approx(res.ceiling_busbw_GBps)
    assert float(ring.time_s[0]) > float(res.time_s[0])
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


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 9, 10, 16])
def test_directed_rings_use_each_link_direction_once(n):
    """``n - 1`` directed Hamiltonian cycles covering every arc of the complete symmetric
    digraph once (Tillson: for every ``n`` but 4 and 6; there, Walecki's cycles both
    ways, ``n - 2`` rings, the matching idle)."""
    rings = directed_rings(n)
    assert all(sorted(r) == list(range(n)) for r in rings.tolist())
    arcs = [(a, b) for r in rings.tolist() for a, b in zip(r, r[1:] + r[:1], strict=True)]
    assert len(set(arcs)) == len(arcs)
    assert len(rings) == (n - 2 if n in (4, 6) else n - 1)


def test_mi300x_ring_runs_disjoint_rings_that_add_up(mi300x):
    """Ring all-reduce on 8 x MI300X: 7 directed Hamiltonian rings, a seventh of the
    bytes each, each on link directions no other ring uses: every xGMI link busy both
    ways, ``busbw = (n - 1) B`` = 7 x 48 (one ring alone: ``B``)."""
    b = _link_rate("xgmi-64")
    res = solve_collective(mi300x, "allreduce", sizes=BIG, algorithm="ring")
    assert res.ceiling_busbw_GBps == pytest.approx(7 * b)
    (phase,) = res.plan.phases
    assert phase.n_flows == 7
    assert phase.flow_bytes == pytest.approx(np.full(7, 2 * 7 / 8 / 7))
    # every arc carries exactly one ring: 7 x 8 = 56 arcs, all of the mesh's
    owners = np.bincount(phase.pair_arc, minlength=mi300x.n_arcs)
    assert owners.max() == 1 and owners.sum() == 56
    assert (res.arc_util > 0).sum() == 56
