"""Tests of designer.solver.rates.maxmin on cases worked by hand (every strategy), and its
refusal of bad input."""

import numpy as np
import pytest
from maxmin_checks import STRATEGIES, assert_max_min_certificate, leaf_spine_all_to_all

from designer.model.errors import DesignError
from designer.solver.arrays.shared_routes import SharedRoutes
from designer.solver.errors import SolverError
from designer.solver.rates.maxmin import MaxMinResult, max_min_rates

# --------------------------------------------------------------------------- hand cases
# Every strategy takes as many steps as the hand cases have distinct levels.


@pytest.fixture(params=STRATEGIES)
def strategy(request):
    return request.param


def test_single_link_shared_by_three_flows(strategy):
    r = max_min_rates([9.0], [0, 1, 2], [0, 0, 0], strategy=strategy)
    np.testing.assert_allclose(r.rates, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(r.bottleneck, [0, 0, 0])
    np.testing.assert_allclose(r.link_load, [9.0])
    assert r.rounds == 1
    assert isinstance(r, MaxMinResult)


def test_demand_cap_leaves_room_for_the_others(strategy):
    r = max_min_rates([9.0], [0, 1, 2], [0, 0, 0], demand=[1.0, np.inf, 100.0], strategy=strategy)
    np.testing.assert_allclose(r.rates, [1.0, 4.0, 4.0])
    np.testing.assert_array_equal(r.bottleneck, [-1, 0, 0])
    assert r.rounds == 2


@pytest.mark.parametrize("n_links", [1, 2, 5, 40])
def test_uniform_parking_lot_splits_every_link_in_half(n_links, strategy):
    long_flow = [0] * n_links
    pf = long_flow + list(range(1, n_links + 1))
    pl = list(range(n_links)) * 2
    r = max_min_rates([10.0] * n_links, pf, pl, strategy=strategy)
    np.testing.assert_allclose(r.rates, 5.0)
    assert r.rounds == 1


def test_parking_lot_with_a_fatter_second_link(strategy):
    # Long flow 0 over links 0 (cap 1) and 1 (cap 2); short flows 1 and 2.
    r = max_min_rates([1.0, 2.0], [0, 0, 1, 2], [0, 1, 0, 1], strategy=strategy)
    np.testing.assert_allclose(r.rates, [0.5, 0.5, 1.5])
    np.testing.assert_array_equal(r.bottleneck, [0, 0, 1])
    np.testing.assert_allclose(r.link_load, [1.0, 2.0])
    assert r.rounds == 2


@pytest.mark.parametrize(("n_gpus", "stride"), [(8, 1), (64, 3), (1024, 7)])
def test_ring_allreduce_on_a_uniform_ring_finishes_in_one_round(n_gpus, stride, strategy):
    # Directed ring links: i -> i+1 is link i, i -> i-1 is link n + i.  Every GPU sends to
    # the GPU `stride` hops ahead in both directions, crossing `stride` links each way.
    cap = 50.0
    pf, pl = [], []
    for gpu in range(n_gpus):
        for hop in range(stride):
            pf += [2 * gpu, 2 * gpu + 1]
            pl += [(gpu + hop) % n_gpus, n_gpus + (gpu - hop) % n_gpus]
    r = max_min_rates([cap] * (2 * n_gpus), pf, pl, strategy=strategy)
    np.testing.assert_allclose(r.rates, cap / stride, rtol=1e-12)
    np.testing.assert_allclose(r.link_load, cap, rtol=1e-12)
    assert r.rounds == 1


def test_all_to_all_on_non_blocking_leaf_spine_is_host_limited_in_one_round(strategy):
    n_leaves, hosts, spines = 6, 6, 3
    capacity, pf, pl, pw = leaf_spine_all_to_all(n_leaves, hosts, spines, 1.0, 100.0)
    r = max_min_rates(capacity, pf, pl, pw, strategy=strategy)
    n_hosts = n_leaves * hosts
    np.testing.assert_allclose(r.rates, 1.0 / (n_hosts - 1), rtol=1e-12)
    assert r.rounds == 1
    assert_max_min_certificate(capacity, pf, pl, pw, None, r)


def test_all_to_all_on_oversubscribed_leaf_spine_needs_two_rounds(strategy):
    n_leaves, hosts, spines = 8, 8, 3
    host_cap, spine_cap = 1.0, 1.0
    capacity, pf, pl, pw = leaf_spine_all_to_all(n_leaves, hosts, spines, host_cap, spine_cap)
    r = max_min_rates(capacity, pf, pl, pw, strategy=strategy)
    n_hosts = n_leaves * hosts
    remote = n_hosts - hosts  # remote peers of a host
    # Each leaf->spine link carries hosts * remote flows at weight 1/spines.
    inter = spine_cap * spines / (hosts * remote)
    assert inter < host_cap / (n_hosts - 1)  # really oversubscribed
    intra = (host_cap - remote * inter) / (hosts - 1)
    rates = r.rates
    src = np.arange(rates.size) // (n_hosts - 1)
    dst_offset = np.arange(rates.size) % (n_hosts - 1)
    dst = np.where(dst_offset < src % n_hosts, dst_offset, dst_offset + 1)
    same_leaf = src // hosts == dst // hosts
    np.testing.assert_allclose(rates[same_leaf], intra, rtol=1e-12)
    np.testing.assert_allclose(rates[~same_leaf], inter, rtol=1e-12)
    assert r.rounds == 2
    assert_max_min_certificate(capacity, pf, pl, pw, None, r)


def test_zero_capacity_link_starves_its_flows_only(strategy):
    # flow 0: dead link 0 then link 1; flow 1: link 1; flow 2: link 2.
    r = max_min_rates([0.0, 4.0, 5.0], [0, 0, 1, 2], [0, 1, 1, 2], strategy=strategy)
    np.testing.assert_allclose(r.rates, [0.0, 4.0, 5.0])
    np.testing.assert_array_equal(r.starved, [0])
    np.testing.assert_array_equal(r.bottleneck, [0, 1, 2])
    np.testing.assert_allclose(r.link_load, [0.0, 4.0, 5.0])


def test_repeated_link_weights_add_up(strategy):
    # Flow 0 sprays over two paths that both cross link 0: it puts its full rate there.
    r = max_min_rates(
        [6.0, 10.0, 10.0], [0, 0, 0, 0, 1], [0, 1, 0, 2, 0], [0.5] * 4 + [1.0], strategy=strategy
    )
    np.testing.assert_allclose(r.rates, [3.0, 3.0])


def test_linkless_flow_runs_at_its_demand(strategy):
    r = max_min_rates(
        [2.0], [0, 0], [0, 0], [0.5, 0.5], n_flows=2, demand=[np.inf, 7.0], strategy=strategy
    )
    np.testing.assert_allclose(r.rates, [2.0, 7.0])
    np.testing.assert_array_equal(r.bottleneck, [0, -1])


def test_empty_problem():
    r = max_min_rates([1.0, 2.0], [], [], n_flows=0)
    assert r.rates.shape == (0,)
    assert r.rounds == 0
    np.testing.assert_array_equal(r.link_load, [0.0, 0.0])


def test_accepts_int64_numpy_and_plain_lists_alike():
    a = max_min_rates(np.array([3.0, 1.0]), np.array([0, 1, 1], np.int64), np.array([0, 0, 1]))
    b = max_min_rates([3, 1], [0, 1, 1], [0, 0, 1])
    np.testing.assert_allclose(a.rates, [2.0, 1.0])
    np.testing.assert_array_equal(a.rates, b.rates)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "culprit"),
    [
        ({"capacity": [1.0, -1.0]}, "link 1"),
        ({"capacity": [np.nan, 1.0]}, "link 0"),
        ({"capacity": [1.0, np.inf]}, "link 1"),
        ({"capacity": [[1.0, 1.0]]}, "capacity must be a 1-D"),
        ({"pair_link": [0, 2, 1]}, "pair_link[1] = 2"),
        ({"pair_link": [0, -1, 1]}, "pair_link[1] = -1"),
        ({"pair_flow": [0, 1, -3]}, "pair_flow[2] = -3"),
        ({"pair_flow": [0.0, 1.0, 1.0]}, "pair_flow must hold integers"),
        ({"pair_flow": [0, 1]}, "pair_flow has 2 entries"),
        ({"pair_weight": [1.0, 0.0, 1.0]}, "pair_weight[1]"),
        ({"pair_weight": [1.0, 1.0, -0.5]}, "pair_weight[2]"),
        ({"pair_weight": [1.0, np.nan, 1.0]}, "pair_weight[1]"),
        ({"pair_weight": [1.0, 1.0]}, "pair_weight has shape"),
        ({"demand": [1.0]}, "demand has shape"),
        ({"demand": [1.0, -2.0]}, "demand of flow 1"),
        ({"demand": [np.nan, 1.0]}, "demand of flow 0"),
        ({"n_flows": 1}, "pair_flow[1] = 1"),
        ({"n_flows": 3}, "flow 2 crosses no link"),
        ({"n_flows": 3, "demand": [1.0, 1.0, np.inf]}, "flow 2 crosses no link"),
        ({"strategy": "fastest"}, "strategy is 'fastest'"),
    ],
)
def test_bad_input_raises_a_domain_error_naming_the_culprit(kwargs, culprit):
    args = {"capacity": [1.0, 2.0], "pair_flow": [0, 1, 1], "pair_link": [0, 0, 1]}
    args |= kwargs
    with pytest.raises(SolverError) as info:
        max_min_rates(**args)
    assert culprit in str(info.value)
    assert isinstance(info.value, DesignError)
    assert isinstance(info.value, ValueError)


def test_a_flow_missing_among_pairs_grouped_by_flow_is_named():
    # Long runs of one flow each (the check takes one id per run); flow 2 has none.
    pf, pl = np.repeat([0, 1, 3], 50), np.tile([0, 1], 75)
    with pytest.raises(SolverError, match="flow 2 crosses no link"):
        max_min_rates([1.0, 2.0], pf, pl, n_flows=4)
    routes = SharedRoutes.build([[1]], [[1.0]], [2], [0])  # unless it takes a route
    r = max_min_rates([1.0, 2.0], pf, pl, n_flows=4, routes=routes)
    # Flows 0, 1, 3 put weight 25 each on both links; link 0 holds them at 1/75, and
    # flow 2 gets what they leave of link 1.
    np.testing.assert_allclose(r.rates, [1 / 75, 1 / 75, 1.0, 1 / 75])
