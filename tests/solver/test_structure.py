"""Structural positions (`structure.structural_order`) do not depend on node numbering."""

from __future__ import annotations

import random

import numpy as np
import pytest

from designer.solver.snapshot.structure import structural_order


def random_tree(n: int, rng: random.Random) -> tuple[np.ndarray, np.ndarray]:
    """A random tree of ``n`` nodes (each joins an earlier one)."""
    a = np.array([rng.randrange(k) for k in range(1, n)])
    return a, np.arange(1, n)


def positions_profile(n, a, b, gpu) -> list[tuple[int, bool]]:
    """Degree and GPU flag of the nodes in position order: the same under any numbering
    when positions follow structure alone."""
    kind = np.where(gpu, 7, 3).astype(np.uint64)   # what a node is (GPU or not)
    o = structural_order(n, a, b, np.zeros(len(a), bool), np.ones(len(a), bool),
                         kind, np.zeros(len(a), np.uint64), gpu)
    degree = np.bincount(np.concatenate([a, b]), minlength=n)
    order = np.argsort(o.node_pos())
    return list(zip(degree[order].tolist(), gpu[order].tolist(), strict=True))


@pytest.mark.parametrize("pieces", [1, 3])
@pytest.mark.parametrize("seed", range(20))
def test_positions_do_not_depend_on_node_numbers(seed, pieces):
    """One tree, or a forest of ``pieces`` trees (the search then starts once per
    piece), renumbered and its links shuffled three times."""
    rng = random.Random(seed)
    n = rng.randrange(5, 40)
    a, b = random_tree(n, rng)
    keep = np.ones(len(a), bool)
    keep[rng.sample(range(len(a)), pieces - 1)] = False
    a, b = a[keep], b[keep]
    gpu = np.array([rng.random() < 0.3 for _ in range(n)])
    base = positions_profile(n, a, b, gpu)
    for _ in range(3):
        perm = np.array(rng.sample(range(n), n))   # node k becomes perm[k]
        links = list(zip(perm[a].tolist(), perm[b].tolist(), strict=True))
        rng.shuffle(links)
        pa, pb = (np.array(x) for x in zip(*links, strict=True))
        pgpu = np.empty(n, bool)
        pgpu[perm] = gpu
        assert positions_profile(n, pa, pb, pgpu) == base
