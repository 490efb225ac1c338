"""The ring over an NVLink domain's direct GPU links (`domain_walk`)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from designer.solver.snapshot.domain_walk import domain_walks


def grid(dims, *, wrap: bool, seed: int):
    """Edges of a torus (``wrap``) or mesh of shape ``dims``, nodes renumbered and edges
    listed in a random order."""
    nodes = list(itertools.product(*map(range, dims)))
    rng = random.Random(seed)
    label = list(range(len(nodes)))
    rng.shuffle(label)
    at = {v: label[i] for i, v in enumerate(nodes)}
    edges = set()
    for v in nodes:
        for k, d in enumerate(dims):
            w = list(v)
            w[k] += 1
            if w[k] == d:
                if not wrap or d < 3:
                    continue
                w[k] = 0
            edges.add(tuple(sorted((at[v], at[tuple(w)]))))
    edges = sorted(edges)
    rng.shuffle(edges)
    a, b = (np.array(x) for x in zip(*edges, strict=True))
    return len(nodes), a, b


@pytest.mark.parametrize("dims", [(4, 4, 4), (3, 3, 3), (2, 3, 4), (5, 7, 3), (16, 16, 8)])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_torus_under_any_names_gets_a_ring_of_neighbours(dims, seed):
    n, a, b = grid(dims, wrap=True, seed=seed)
    walk = domain_walks(np.zeros(n, np.int64), a, b)
    assert sorted(walk.tolist()) == list(range(n))
    ring = np.argsort(walk)
    linked = {frozenset(e) for e in zip(a.tolist(), b.tolist(), strict=True)}
    steps = zip(ring.tolist(), np.roll(ring, -1).tolist(), strict=True)
    assert all(frozenset(s) in linked for s in steps)


def test_no_cycle_still_orders_every_gpu():
    """A 3 x 3 mesh has no Hamiltonian cycle (bipartite, odd): the search gives up
    within its budget and still returns each GPU once."""
    n, a, b = grid((3, 3), wrap=False, seed=1)
    walk = domain_walks(np.zeros(n, np.int64), a, b)
    assert sorted(walk.tolist()) == list(range(n))


def test_domains_are_walked_apart_and_switched_ones_left_alone():
    """Two 4-GPU rings in domains 0 and 2 (ranks interleaved), domain 1 with no direct
    link: each ring is ordered within itself, domain 1 gets -1."""
    domain = np.array([0, 2, 0, 2, 0, 2, 0, 2, 1, 1])
    a = np.array([0, 2, 4, 6, 1, 3, 5, 7])
    b = np.array([4, 6, 2, 0, 5, 7, 3, 1])  # cycles 0-4-2-6-0 and 1-5-3-7-1
    walk = domain_walks(domain, a, b)
    assert walk[8:].tolist() == [-1, -1]
    for d in (0, 2):
        ranks = np.flatnonzero(domain == d)
        assert sorted(walk[ranks].tolist()) == [0, 1, 2, 3]
