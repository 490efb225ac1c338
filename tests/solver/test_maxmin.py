"""Tests of designer.solver.maxmin: exact weighted max-min fair rates."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from maxmin_reference import reference_max_min_rates

from designer.model.errors import DesignError
from designer.solver.errors import SolverError
from designer.solver.maxmin import MaxMinResult, max_min_rates

RTOL = 1e-9
STRATEGIES = ("auto", "local", "global")


# --------------------------------------------------------------------------- helpers


def assert_max_min_certificate(capacity, pair_flow, pair_link, pair_weight, demand, result):
    """Check feasibility and the bottleneck certificate of weighted max-min fairness.

    With fixed splits, rates r are max-min fair iff they are feasible and every flow f
    either sits at its demand or crosses (with weight > 0) a saturated link l on which
    no flow has a higher *rate* than f.  The weights enter only through saturation: raising
    f by e adds w_fl * e > 0 to l, so some flow g on l with r_g <= r_f must give way.
    The reported bottleneck must be such a link (or -1 for a flow at its demand).
    """
    cap = np.asarray(capacity, float)
    pf = np.asarray(pair_flow)
    pl = np.asarray(pair_link)
    pw = np.ones(pf.size) if pair_weight is None else np.asarray(pair_weight, float)
    rates = result.rates
    n_flows = rates.size
    dem = np.full(n_flows, np.inf) if demand is None else np.asarray(demand, float)
    scale = max(cap.max(initial=0.0), 1.0)
    atol = 1e-12 * scale

    assert np.all(rates >= 0)
    load = np.bincount(pl, weights=pw * rates[pf], minlength=cap.size)
    np.testing.assert_allclose(result.link_load, load, rtol=RTOL, atol=atol)
    assert np.all(load <= cap * (1 + RTOL) + atol), "a link is loaded past its capacity"
    assert np.all(rates <= dem * (1 + RTOL) + atol), "a flow exceeds its demand"

    top_rate = np.zeros(cap.size)
    np.maximum.at(top_rate, pl, rates[pf])
    crossed = set(zip(pf.tolist(), pl.tolist(), strict=True))
    for f in range(n_flows):
        b = int(result.bottleneck[f])
        if b == -1:
            assert rates[f] >= dem[f] * (1 - RTOL) - atol, f"flow {f} is not at its demand"
            continue
        assert (f, b) in crossed, f"flow {f} does not cross its bottleneck {b}"
        assert load[b] >= cap[b] * (1 - RTOL) - atol, f"bottleneck {b} of flow {f} has room"
        assert top_rate[b] <= rates[f] * (1 + RTOL) + atol, f"flow {f} is not the top on {b}"


def assert_matches_reference(capacity, pair_flow, pair_link, pair_weight, demand, n_flows):
    """Every strategy agrees with exact progressive filling and passes the certificate."""
    exact, _ = reference_max_min_rates(
        capacity, pair_flow, pair_link, pair_weight, n_flows=n_flows, demand=demand
    )
    finite_demand = [d for d in (demand or []) if math.isfinite(d)]
    scale = max([1.0, *capacity, *finite_demand])
    for strategy in STRATEGIES:
        fast = max_min_rates(
            capacity,
            pair_flow,
            pair_link,
            pair_weight,
            n_flows=n_flows,
            demand=demand,
            strategy=strategy,
        )
        # atol: a residual that is exactly 0 in Fractions may be one ulp in floats.
        np.testing.assert_allclose(
            fast.rates,
            [float(r) for r in exact],
            rtol=RTOL,
            atol=1e-12 * scale,
            err_msg=f"strategy={strategy}",
        )
        assert_max_min_certificate(capacity, pair_flow, pair_link, pair_weight, demand, fast)


@st.composite
def networks(draw):
    """Random flows split over 1-3 paths of 1-3 links (links may repeat) with weight 1/k."""
    n_links = draw(st.integers(1, 7))
    n_flows = draw(st.integers(1, 9))
    # Integral capacities make many exact ties; floats make near-ties.
    integral = draw(st.booleans())
    cap_values = st.integers(0, 12).map(float) if integral else st.floats(0.01, 100.0)
    capacity = draw(st.lists(cap_values, min_size=n_links, max_size=n_links))
    link_ids = st.integers(0, n_links - 1)
    pair_flow, pair_link, pair_weight = [], [], []
    for f in range(n_flows):
        paths = draw(st.lists(st.lists(link_ids, min_size=1, max_size=3), min_size=1, max_size=3))
        for path in paths:
            for link in path:
                pair_flow.append(f)
                pair_link.append(link)
                pair_weight.append(1.0 / len(paths))
    order = draw(st.permutations(range(len(pair_flow))))
    pair_flow = [pair_flow[i] for i in order]
    pair_link = [pair_link[i] for i in order]
    pair_weight = [pair_weight[i] for i in order]
    demand_values = st.one_of(
        st.just(math.inf), st.integers(0, 10).map(float), st.floats(0.01, 50.0)
    )
    demand = draw(st.none() | st.lists(demand_values, min_size=n_flows, max_size=n_flows))
    return capacity, pair_flow, pair_link, pair_weight, demand, n_flows


def leaf_spine_all_to_all(n_leaves, hosts_per_leaf, n_spines, host_cap, spine_cap):
    """All-to-all between the hosts of a leaf-spine fabric, each flow sprayed over all spines.

    Links: host uplinks [0, N), host downlinks [N, 2N), leaf->spine and spine->leaf
    links after that.  Returns (capacity, pair_flow, pair_link, pair_weight).
    """
    n_hosts = n_leaves * hosts_per_leaf
    up = lambda leaf, s: 2 * n_hosts + leaf * n_spines + s  # noqa: E731
    down = lambda leaf, s: 2 * n_hosts + (n_leaves + leaf) * n_spines + s  # noqa: E731
    capacity = [host_cap] * (2 * n_hosts) + [spine_cap] * (2 * n_leaves * n_spines)
    pf, pl, pw = [], [], []
    flow = 0
    for src in range(n_hosts):
        for dst in range(n_hosts):
            if src == dst:
                continue
            hops = [(src, 1.0), (n_hosts + dst, 1.0)]
            a, b = src // hosts_per_leaf, dst // hosts_per_leaf
            if a != b:
                for s in range(n_spines):
                    hops += [(up(a, s), 1.0 / n_spines), (down(b, s), 1.0 / n_spines)]
            for link, w in hops:
                pf.append(flow)
                pl.append(link)
                pw.append(w)
            flow += 1
    return capacity, pf, pl, pw


# --------------------------------------------------------------------------- properties


@given(networks())
def test_random_networks_match_exact_progressive_filling(case):
    assert_matches_reference(*case)


@given(networks())
def test_pair_order_and_duplicate_splitting_do_not_change_rates(case):
    capacity, pf, pl, pw, demand, n_flows = case
    base = max_min_rates(capacity, pf, pl, pw, n_flows=n_flows, demand=demand)
    # Every pair split into two half-weight pairs, listed in reverse order.
    halves = [w / 2 for w in pw[::-1]] * 2
    split = max_min_rates(
        capacity, pf[::-1] * 2, pl[::-1] * 2, halves, n_flows=n_flows, demand=demand
    )
    np.testing.assert_allclose(split.rates, base.rates, rtol=RTOL, atol=1e-12 * max(capacity))


def degraded_fabric(seed, n_links=300, n_flows=5000):
    """Random 3-hop flows sprayed over 1-4 paths, unequal caps, dead links, some demands."""
    rng = np.random.default_rng(seed)
    capacity = rng.uniform(10.0, 100.0, n_links)
    capacity[rng.choice(n_links, 3, replace=False)] = 0.0
    k = rng.integers(1, 5, n_flows)  # paths per flow
    hops = 3
    pair_flow = np.repeat(np.arange(n_flows), k * hops)
    pair_link = rng.integers(0, n_links, pair_flow.size)
    pair_weight = 1.0 / np.repeat(k, k * hops)
    order = rng.permutation(pair_flow.size)  # pairs need not be grouped by flow
    demand = np.where(rng.random(n_flows) < 0.2, rng.uniform(0.0, 2.0, n_flows), np.inf)
    return capacity, pair_flow[order], pair_link[order], pair_weight[order], demand


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_large_random_fabric_satisfies_certificate(strategy):
    capacity, pair_flow, pair_link, pair_weight, demand = degraded_fabric(7)
    result = max_min_rates(
        capacity, pair_flow, pair_link, pair_weight, demand=demand, strategy=strategy
    )
    assert_max_min_certificate(capacity, pair_flow, pair_link, pair_weight, demand, result)
    dead_flows = np.unique(pair_flow[capacity[pair_link] == 0])
    np.testing.assert_array_equal(result.starved, dead_flows)
    assert np.all(result.rates[dead_flows] == 0)
    assert 1 < result.rounds < demand.size


def test_strategies_agree_on_a_coupled_all_to_all_with_degraded_links():
    # All-to-all couples every host link to every other: few local minima per round,
    # so "auto" switches to global steps part of the way.
    capacity, pf, pl, pw = leaf_spine_all_to_all(6, 6, 3, 1.0, 1.0)
    rng = np.random.default_rng(3)
    capacity = np.asarray(capacity) * rng.uniform(0.5, 1.5, len(capacity))
    results = {
        strategy: max_min_rates(capacity, pf, pl, pw, strategy=strategy) for strategy in STRATEGIES
    }
    for strategy, result in results.items():
        np.testing.assert_allclose(
            result.rates, results["local"].rates, rtol=RTOL, err_msg=strategy
        )
        assert_max_min_certificate(capacity, pf, pl, pw, None, result)
    assert results["local"].rounds > 10  # really coupled


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
