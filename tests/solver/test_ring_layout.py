"""Tests of the rail-aware ring orders (`ring_layout`): every inter-server hop joins two
GPUs of one rail, with an even or odd number of servers, and the short way for
identical boards gives the general way's rows."""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.solver.flows.collectives import ring_order
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import take_snapshot


def test_ring_order_is_rail_aligned_across_servers():
    snap = take_snapshot(build_template("rail-cluster", nodes=4))
    router = Router(snap)
    ranks = np.arange(snap.n_gpus)
    for c in range(8):
        order = ring_order(snap, ranks, c)
        assert sorted(order.tolist()) == ranks.tolist()
        assert snap.gpu_local[order[0]] == c  # channel c starts on rail c
        crossings = 0
        for a, b in zip(order, np.roll(order, -1), strict=True):
            if snap.gpu_domain[a] == snap.gpu_domain[b]:
                continue
            crossings += 1
            assert snap.gpu_local[a] == snap.gpu_local[b]
            leaf_a = snap.arc_dst[router.edge_arc(int(snap.gpu_nic[a]))]
            leaf_b = snap.arc_dst[router.edge_arc(int(snap.gpu_nic[b]))]
            assert leaf_a == leaf_b  # one leaf per rail: never through a spine
        assert crossings == 4
        # each server's GPUs are contiguous in the ring
        doms = snap.gpu_domain[order]
        assert np.count_nonzero(doms != np.roll(doms, 1)) == 4


def test_ring_order_is_rail_aligned_with_an_odd_number_of_servers():
    snap = take_snapshot(build_template("rail-cluster", nodes=3))
    ranks = np.arange(snap.n_gpus)
    for c in range(8):
        order = ring_order(snap, ranks, c)
        for a, b in zip(order, np.roll(order, -1), strict=True):
            if snap.gpu_domain[a] != snap.gpu_domain[b]:
                assert snap.gpu_local[a] == snap.gpu_local[b], f"channel {c}: {a}->{b}"


@pytest.mark.parametrize("nodes", [2, 4, 6])
def test_ring_orders_of_identical_boards_take_the_short_way(nodes):
    # An even number of domains of one size is laid out by two patterns of positions
    # (`_even_orders`); the general way must give the same rows, for every channel and
    # for rank subsets that keep or break the pattern.
    from designer.solver.flows.ring_layout import _any_orders, _even_orders, ring_layout

    snap = take_snapshot(build_template("rail-cluster", nodes=nodes))
    for ranks in (np.arange(snap.n_gpus), np.arange(0, snap.n_gpus, 2)):
        layout = ring_layout(snap, ranks)
        channels = range(len(layout.heads) + 2)
        short = _even_orders(layout, channels)
        assert short.dtype == np.int32
        np.testing.assert_array_equal(short, _any_orders(layout, channels))
