"""Tests of designer.solver.rates.maxmin: exact weighted max-min fair rates (properties,
batches and levels; the cases worked by hand and input checks are in
`test_maxmin_cases.py`)."""

import numpy as np
import pytest
from hypothesis import given
from maxmin_checks import (
    RTOL,
    STRATEGIES,
    assert_matches_reference,
    assert_max_min_certificate,
    leaf_spine_all_to_all,
    networks,
)
from maxmin_reference import reference_max_min_rates

from designer.solver.rates import tables as maxmin_tables
from designer.solver.rates.maxmin import max_min_rates
from designer.solver.tuning import Tuning, tuned

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
# Global steps run in batches on the k lowest links (designer.solver.rates.steps); the
# problems above mostly fit in one batch.  Starting from one or two links makes every
# batch stop at its horizon, and a strategy that gives up on local rounds after each one
# makes local rounds and batches take turns on one state.


@pytest.mark.parametrize("first_k", [1, 2])
@given(case=networks())
def test_batches_that_stop_at_their_horizon_match_exact_filling(first_k, case):
    with tuned(first_k=first_k), \
            tuned(few_flows=0):
        assert_matches_reference(*case)


# --------------------------------------------------------------------------- levels
# With few unfrozen flows, "auto" fills level by level (designer.solver.rates.levels):
# from the start when the problem has few flows, after local rounds when they leave few.
# The property tests above take that path for "auto" (up to 9 flows, pairs in any order).


@given(networks())
def test_levels_over_pairs_grouped_by_flow_match_exact_filling(case):
    # Each flow's pairs in one span, as callers list them: levels skip frozen flows' spans.
    capacity, pf, pl, pw, demand, n_flows = case
    order = np.argsort(pf, kind="stable")
    pf, pl, pw = (np.asarray(x)[order].tolist() for x in (pf, pl, pw))
    assert_matches_reference(capacity, pf, pl, pw, demand, n_flows)


@pytest.mark.parametrize(("n_flows", "levels"), [(Tuning().few_flows, True),
                                                 (Tuning().few_flows + 1, False)])
def test_auto_fills_level_by_level_up_to_few_flows(n_flows, levels):
    # Each flow alone on a link of its own capacity: local rounds freeze every link at
    # once (each is a local minimum); levels take one step per distinct capacity.
    capacity = np.arange(1.0, n_flows + 1)
    flows = np.arange(n_flows)
    r = max_min_rates(capacity, flows, flows)
    np.testing.assert_array_equal(r.rates, capacity)
    np.testing.assert_array_equal(r.bottleneck, flows)
    np.testing.assert_array_equal(r.link_load, capacity)
    assert r.rounds == (n_flows if levels else 1)
    assert r.trace.count("level") == (n_flows if levels else 0)


def test_levels_finish_what_a_local_round_leaves():
    # 40 flows on links of their own (cap 1) and a parking lot of 5 flows: long flow 0
    # over links A, B (cap 3 and 10), short flows on A and B, and two more on B.  The first
    # local round freezes the 40 and link A (level 1.5); one level does the rest (B).
    n = 40
    pf = [*range(5, 5 + n), 0, 0, 1, 2, 3, 4]
    pl = [*range(n), n, n + 1, n, n + 1, n + 1, n + 1]
    capacity = [1.0] * n + [3.0, 10.0]
    with tuned(few_flows=4):
        r = max_min_rates(capacity, pf, pl)
    assert r.trace.count("level") == 1
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
    with tuned(local_ns_per_pair=1e9), \
            tuned(first_k=1), \
            tuned(few_flows=0):
        r = max_min_rates(capacity, flows, flows)
    assert r.trace[0] == ("local" if local_first else "global")
    np.testing.assert_array_equal(r.rates, capacity)


def test_a_batch_stops_at_the_lowest_share_outside_it():
    # Links A (cap 2), B (cap 3), D (cap 3.3); flows 0: A+B, 1: A, 2: B+D, 3: D.  A batch
    # of the two lowest links {A (share 1), B (1.5)} freezes flows 0 and 1 at 1; B's share
    # then rises to 2, past D's 1.65, so the batch must stop: D saturates first and holds
    # flow 2 at 1.65.
    pf, pl = [0, 0, 1, 2, 2, 3], [0, 1, 0, 1, 2, 2]
    with tuned(first_k=2):
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
    with tuned(first_k=1):
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
