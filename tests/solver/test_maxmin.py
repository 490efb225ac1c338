"""Tests of designer.solver.maxmin: exact weighted max-min fair rates."""

import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from maxmin_reference import reference_max_min_rates

from designer.model.errors import DesignError
from designer.solver import maxmin, maxmin_levels, maxmin_steps, maxmin_tables
from designer.solver.errors import SolverError
from designer.solver.maxmin import MaxMinResult, max_min_rates
from designer.solver.shared_routes import SharedRoutes

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


# --------------------------------------------------------------------------- batches
# Global steps run in batches on the k lowest links (designer.solver.maxmin_steps); the
# problems above mostly fit in one batch.  Starting from one or two links makes every
# batch stop at its horizon, and a strategy that gives up on local rounds after each one
# makes local rounds and batches take turns on one state.


@pytest.mark.parametrize("first_k", [1, 2])
@given(case=networks())
def test_batches_that_stop_at_their_horizon_match_exact_filling(first_k, case):
    with mock.patch.object(maxmin_steps, "FIRST_K", first_k), \
            mock.patch.object(maxmin_levels, "FEW_FLOWS", 0):
        assert_matches_reference(*case)


# --------------------------------------------------------------------------- levels
# With few unfrozen flows, "auto" fills level by level (designer.solver.maxmin_levels):
# from the start when the problem has few flows, after local rounds when they leave few.
# The property tests above take that path for "auto" (up to 9 flows, pairs in any order).


@given(networks())
def test_levels_over_pairs_grouped_by_flow_match_exact_filling(case):
    # Each flow's pairs in one span, as callers list them: levels skip frozen flows' spans.
    capacity, pf, pl, pw, demand, n_flows = case
    order = np.argsort(pf, kind="stable")
    pf, pl, pw = (np.asarray(x)[order].tolist() for x in (pf, pl, pw))
    assert_matches_reference(capacity, pf, pl, pw, demand, n_flows)


@pytest.mark.parametrize(("n_flows", "levels"), [(maxmin_levels.FEW_FLOWS, True),
                                                 (maxmin_levels.FEW_FLOWS + 1, False)])
def test_auto_fills_level_by_level_up_to_few_flows(n_flows, levels):
    # Each flow alone on a link of its own capacity: local rounds freeze every link at
    # once (each is a local minimum); levels take one step per distinct capacity.
    capacity = np.arange(1.0, n_flows + 1)
    flows = np.arange(n_flows)
    with mock.patch.object(maxmin_levels.LevelFilling, "step", autospec=True,
                           side_effect=maxmin_levels.LevelFilling.step) as step:
        r = max_min_rates(capacity, flows, flows)
    np.testing.assert_array_equal(r.rates, capacity)
    np.testing.assert_array_equal(r.bottleneck, flows)
    np.testing.assert_array_equal(r.link_load, capacity)
    assert r.rounds == (n_flows if levels else 1)
    assert step.call_count == (n_flows if levels else 0)


def test_levels_finish_what_a_local_round_leaves():
    # 40 flows on links of their own (cap 1) and a parking lot of 5 flows: long flow 0
    # over links A, B (cap 3 and 10), short flows on A and B, and two more on B.  The first
    # local round freezes the 40 and link A (level 1.5); one level does the rest (B).
    n = 40
    pf = [*range(5, 5 + n), 0, 0, 1, 2, 3, 4]
    pl = [*range(n), n, n + 1, n, n + 1, n + 1, n + 1]
    capacity = [1.0] * n + [3.0, 10.0]
    with mock.patch.object(maxmin_levels, "FEW_FLOWS", 4), \
            mock.patch.object(maxmin_levels.LevelFilling, "step", autospec=True,
                              side_effect=maxmin_levels.LevelFilling.step) as step:
        r = max_min_rates(capacity, pf, pl)
    assert step.call_count == 1
    exact, _ = reference_max_min_rates(capacity, pf, pl)
    np.testing.assert_allclose(r.rates, [float(x) for x in exact], rtol=RTOL)
    np.testing.assert_allclose(r.rates[:5], [1.5, 1.5, 8.5 / 3, 8.5 / 3, 8.5 / 3])
    assert_max_min_certificate(capacity, pf, pl, None, None, r)


@pytest.mark.parametrize(("tied", "local_first"), [(1, False), (2, True), (3, True)])
def test_auto_starts_with_batches_when_few_links_are_lowest(tied, local_first):
    # Eight flows, each alone on its link (its capacity): ``tied`` links share the lowest
    # capacity, the others have capacities of their own.  With local rounds made dear,
    # "auto" starts with batches unless the lowest links (the first batch's, FIRST_K = 1
    # plus ties) carry at least a quarter of the pairs.
    capacity = np.concatenate([np.ones(tied), np.arange(2.0, 10.0 - tied)])
    flows = np.arange(8)
    calls = []
    local_round, global_steps = maxmin._Filling.local_round, maxmin._Filling.global_steps

    def spy(name, method):
        return lambda self, *args: calls.append(name) or method(self, *args)

    with mock.patch.object(maxmin, "_LOCAL_NS_PER_PAIR", 1e9), \
            mock.patch.object(maxmin_steps, "FIRST_K", 1), \
            mock.patch.object(maxmin_levels, "FEW_FLOWS", 0), \
            mock.patch.object(maxmin._Filling, "local_round", spy("local", local_round)), \
            mock.patch.object(maxmin._Filling, "global_steps", spy("batch", global_steps)):
        r = max_min_rates(capacity, flows, flows)
    assert calls[0] == ("local" if local_first else "batch")
    np.testing.assert_array_equal(r.rates, capacity)


def test_a_batch_stops_at_the_lowest_share_outside_it():
    # Links A (cap 2), B (cap 3), D (cap 3.3); flows 0: A+B, 1: A, 2: B+D, 3: D.  A batch
    # of the two lowest links {A (share 1), B (1.5)} freezes flows 0 and 1 at 1; B's share
    # then rises to 2, past D's 1.65, so the batch must stop: D saturates first and holds
    # flow 2 at 1.65.
    pf, pl = [0, 0, 1, 2, 2, 3], [0, 1, 0, 1, 2, 2]
    with mock.patch.object(maxmin_steps, "FIRST_K", 2):
        r = max_min_rates([2.0, 3.0, 3.3], pf, pl, strategy="global")
    np.testing.assert_allclose(r.rates, [1.0, 1.0, 1.65, 1.65])
    np.testing.assert_array_equal(r.bottleneck, [0, 0, 2, 2])
    assert r.rounds == 2


def test_a_flow_listed_twice_on_a_link_counts_twice_in_batches():
    # Flow 0 crosses link 0 twice (weight 2 in all); flows 1-3 cross link 0 once and
    # links 1-3 (cap 1) once each, so link 0 (cap 10) is left to flow 0 and flows 1-3 are
    # held at 1: flow 0 gets (10 - 3) / 2.
    pf = [0, 0, 1, 1, 2, 2, 3, 3]
    pl = [0, 0, 0, 1, 0, 2, 0, 3]
    with mock.patch.object(maxmin_steps, "FIRST_K", 1):
        r = max_min_rates([10.0, 1.0, 1.0, 1.0], pf, pl, strategy="global")
    np.testing.assert_allclose(r.rates, [3.5, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(r.link_load, [10.0, 1.0, 1.0, 1.0])
    assert r.rounds == 2


@pytest.mark.parametrize("seed", range(6))
def test_local_problem_indexes_entries_both_ways(seed):
    # Many flows on one link and a few on many (some twice on a link): the per-flow table
    # is narrower than the longest flows, whose other entries overflow into a CSR.
    rng = np.random.default_rng(seed)
    n_links, n_flows = 12, 3000
    flows = [np.arange(n_flows)]
    links = [rng.integers(1, n_links, n_flows)]
    long = rng.choice(n_flows, 20, replace=False)
    for f in long:  # seven distinct links (not link 0) each
        spread = rng.permutation(np.arange(1, n_links))[:7]
        links[0][f] = spread[0]
        flows.append(np.full(6, f))
        links.append(spread[1:])
    if seed % 2:  # a flow listed twice on link 0, among its overflowing entries
        flows.append(np.repeat(long[:1], 2))
        links.append(np.zeros(2, np.int64))
    if seed % 3 == 2:  # and a short flow listed twice on its link, in its table row
        short = np.setdiff1d(np.arange(n_flows), long)[:1]
        flows.append(short)
        links.append(links[0][short])
    e_flow, e_link = np.concatenate(flows) * 7 + 3, np.concatenate(links)  # any flow ids
    unit = seed % 3 == 0
    e_weight = np.ones(e_flow.size) if unit else rng.choice([0.5, 1.0, 0.25], e_flow.size)
    order = np.argsort(e_link, kind="stable")  # entries come grouped by link
    e_flow, e_link, e_weight = e_flow[order], e_link[order].astype(np.int32), e_weight[order]
    scratch = np.empty(e_flow.max() + 1, np.int32)
    local_id = np.empty(e_flow.max() + 1, np.int32)
    lp = maxmin_tables.LocalProblem(n_links, e_flow, e_link, e_weight, scratch, local_id)

    assert lp.more is not None  # the long flows overflow
    assert lp.unit == (1.0 if unit else None)
    np.testing.assert_array_equal(np.sort(lp.flows), np.unique(e_flow))
    np.testing.assert_array_equal(lp.flows[lp.e_flow], e_flow)
    for link in range(n_links):
        on = np.sort(e_flow[e_link == link])
        np.testing.assert_array_equal(np.sort(lp.flows[lp.flows_of(np.array([link]))]), on)
    pairs = list(zip(e_flow.tolist(), e_link.tolist(), strict=True))
    assert lp.repeats == (len(set(pairs)) < len(pairs))
    pick = rng.choice(lp.flows.size, 500, replace=False)
    weight, count = lp.entries_of(pick)
    chosen = np.isin(e_flow, lp.flows[pick])
    np.testing.assert_array_equal(count, np.bincount(e_link[chosen], minlength=n_links))
    if unit:  # the filling counts entries instead
        assert weight is None
    else:
        np.testing.assert_allclose(
            weight, np.bincount(e_link[chosen], e_weight[chosen], n_links))
    # A link whose flows all fit the table needs no look at the overflow.
    for link in np.flatnonzero(~np.asarray(lp.more_on_link)):
        on = lp.flows_of(np.array([link]))
        np.testing.assert_array_equal(lp.entries_of(on, more=False)[1],
                                      lp.entries_of(on)[1])


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

