"""Max flow with exact network reductions (`designer.model.cut_flow`)."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest

from designer.model.cut_flow import max_flow, reduce_network


def random_network(seed: int):
    rng = random.Random(seed)
    n = rng.randint(3, 30)
    m = rng.randint(1, 4 * n)
    u = np.array([rng.randrange(n) for _ in range(m)])
    w = np.array([rng.randrange(n) for _ in range(m)])
    cap = np.array([rng.choice([12.5, 25.0, 50.0, 100.0]) * rng.randint(1, 4) for _ in range(m)])
    return n, u, w, cap


@pytest.mark.parametrize("seed", range(60))
def test_reductions_keep_the_max_flow(seed):
    n, u, w, cap = random_network(seed)
    assert max_flow(n, u, w, cap) == pytest.approx(max_flow(n, u, w, cap, reduce=False))


def fat_layer(leaves: int, spines: int, hosts: int):
    """Terminal 0 feeds the first half of the leaves through one NIC per host, terminal 1
    drains the other half; every leaf has one link to every spine."""
    u, w, cap = [], [], []
    node = 2
    leaf0 = node
    node += leaves
    spine0 = node
    node += spines
    for leaf in range(leaves):
        for _ in range(hosts):
            nic = node
            node += 1
            u += [0 if leaf < leaves // 2 else 1, nic]
            w += [nic, leaf0 + leaf]
            cap += [50.0, 50.0]
        for s in range(spines):
            u.append(leaf0 + leaf)
            w.append(spine0 + s)
            cap.append(50.0)
    return node, np.array(u), np.array(w), np.array(cap)


def test_symmetric_fabric_collapses_to_a_few_nodes():
    # Identical leaves of one half and identical spines are twins: the network of 1,000+
    # nodes ends as the terminals, one leaf per half and one spine.
    n, u, w, cap = fat_layer(leaves=32, spines=16, hosts=32)
    lo, hi, _ = reduce_network(n, *_merged_input(n, u, w, cap))
    assert len(set(lo.tolist()) | set(hi.tolist())) <= 5
    assert max_flow(n, u, w, cap) == pytest.approx(16 * 16 * 50.0)
    assert max_flow(n, u, w, cap) == pytest.approx(max_flow(n, u, w, cap, reduce=False))


def _merged_input(n, u, w, cap):
    lo, hi = np.minimum(u, w), np.maximum(u, w)
    return lo, hi, cap.astype(float)


@pytest.mark.parametrize("seed", range(60))
def test_dinic_agrees_with_networkx(seed):
    n, u, w, cap = random_network(seed)
    reference = max_flow(n, u, w, cap, flow_func=nx.algorithms.flow.preflow_push, reduce=False)
    assert max_flow(n, u, w, cap, reduce=False) == pytest.approx(reference)
    assert max_flow(n, u, w, cap) == pytest.approx(reference)
