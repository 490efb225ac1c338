"""Max-min rates with shared routes equal the rates of the expanded flow-link pairs."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from maxmin_reference import reference_max_min_rates
from test_maxmin import assert_max_min_certificate

from designer.solver.errors import SolverError
from designer.solver.maxmin import max_min_rates
from designer.solver.shared_routes import SharedRoutes

RTOL = 1e-9
STRATEGIES = ("auto", "local", "global")


@st.composite
def factored_networks(draw):
    """Flows with a few private pairs and 0-3 shared routes (routes may repeat)."""
    n_links = draw(st.integers(1, 7))
    n_flows = draw(st.integers(1, 9))
    integral = draw(st.booleans())
    cap_values = st.integers(0, 12).map(float) if integral else st.floats(0.01, 100.0)
    capacity = draw(st.lists(cap_values, min_size=n_links, max_size=n_links))
    link_ids = st.integers(0, n_links - 1)
    n_routes = draw(st.integers(1, 4))
    links, weights = [], []
    for _ in range(n_routes):
        paths = draw(st.lists(st.lists(link_ids, min_size=1, max_size=3), min_size=1,
                              max_size=3))
        links.append([x for p in paths for x in p])
        weights.append([1.0 / len(paths) for p in paths for _ in p])
    pf, pl, pw, rf, rr, rm = [], [], [], [], [], []
    for f in range(n_flows):
        for link in draw(st.lists(link_ids, max_size=2)):
            pf.append(f)
            pl.append(link)
            pw.append(draw(st.sampled_from([1.0, 0.5])))
        for r in draw(st.lists(st.integers(0, n_routes - 1), max_size=3)):
            rf.append(f)
            rr.append(r)
            rm.append(draw(st.sampled_from([1.0, 2.0, 0.25])))
    demand_values = st.one_of(st.just(math.inf), st.integers(0, 10).map(float),
                              st.floats(0.01, 50.0))
    demand = draw(st.lists(demand_values, min_size=n_flows, max_size=n_flows))
    # A flow with neither pairs nor routes needs a finite demand.
    for f in range(n_flows):
        if f not in pf and f not in rf and math.isinf(demand[f]):
            demand[f] = 1.0
    routes = SharedRoutes.build(links, weights, rf, rr, rm)
    return capacity, (pf, pl, pw), routes, demand, n_flows


def expanded(pairs, routes):
    ef, el, ew = routes.expand()
    pf, pl, pw = pairs
    return (np.concatenate([np.asarray(pf, np.int64), ef]),
            np.concatenate([np.asarray(pl, np.int64), el]),
            np.concatenate([np.asarray(pw, float), ew]))


@given(factored_networks())
def test_shared_routes_give_the_rates_of_the_expanded_pairs(case):
    capacity, pairs, routes, demand, n_flows = case
    ef, el, ew = expanded(pairs, routes)
    exact, _ = reference_max_min_rates(capacity, ef.tolist(), el.tolist(), ew.tolist(),
                                       n_flows=n_flows, demand=demand)
    scale = max([1.0, *capacity, *[d for d in demand if math.isfinite(d)]])
    for strategy in STRATEGIES:
        fast = max_min_rates(capacity, *pairs, n_flows=n_flows, demand=demand,
                             strategy=strategy, routes=routes)
        np.testing.assert_allclose(fast.rates, [float(r) for r in exact], rtol=RTOL,
                                   atol=1e-12 * scale, err_msg=strategy)
        assert_max_min_certificate(capacity, ef, el, ew, demand, fast)
        flat = max_min_rates(capacity, ef, el, ew, n_flows=n_flows, demand=demand)
        np.testing.assert_array_equal(fast.starved, flat.starved)


def sprayed_all_to_all(seed, n_leaves=6, hosts=5, spines=4):
    """All-to-all on a leaf-spine: private host links as pairs, the spine part as one
    shared route per (leaf, leaf); degraded, unequal capacities."""
    rng = np.random.default_rng(seed)
    n_hosts = n_leaves * hosts
    n_links = 2 * n_hosts + 2 * n_leaves * spines
    capacity = rng.uniform(0.5, 1.5, n_links)
    capacity[rng.choice(n_links, 2, replace=False)] *= 0.1
    up = lambda leaf, s: 2 * n_hosts + leaf * spines + s  # noqa: E731
    down = lambda leaf, s: 2 * n_hosts + (n_leaves + leaf) * spines + s  # noqa: E731
    links = [[up(a, s) for s in range(spines)] + [down(b, s) for s in range(spines)]
             for a in range(n_leaves) for b in range(n_leaves)]
    weights = [[1.0 / spines] * (2 * spines)] * len(links)
    pf, pl, rf, rr = [], [], [], []
    flow = 0
    for src in range(n_hosts):
        for dst in range(n_hosts):
            if src == dst:
                continue
            pf += [flow, flow]
            pl += [src, n_hosts + dst]
            a, b = src // hosts, dst // hosts
            if a != b:
                rf.append(flow)
                rr.append(a * n_leaves + b)
            flow += 1
    return capacity, (pf, pl, [1.0] * len(pf)), SharedRoutes.build(links, weights, rf, rr)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_degraded_all_to_all_with_shared_routes_matches_the_flat_solve(strategy):
    capacity, pairs, routes = sprayed_all_to_all(5)
    ef, el, ew = expanded(pairs, routes)
    flat = max_min_rates(capacity, ef, el, ew, strategy=strategy)
    fast = max_min_rates(capacity, *pairs, routes=routes, strategy=strategy)
    np.testing.assert_allclose(fast.rates, flat.rates, rtol=RTOL)
    np.testing.assert_allclose(fast.link_load, flat.link_load, rtol=RTOL, atol=1e-12)
    assert_max_min_certificate(capacity, ef, el, ew, None, fast)
    assert fast.rounds > 3  # really coupled: several levels


def test_routes_only_no_private_pairs():
    # Two flows on one route over links 0 (cap 2) and 1 (cap 1, half weight): link 0
    # limits them to 1 each; a third flow alone on link 1 gets what is left.
    routes = SharedRoutes.build([[0, 1]], [[1.0, 0.5]], [0, 1], [0, 0])
    r = max_min_rates([2.0, 3.0], [2], [1], routes=routes)
    np.testing.assert_allclose(r.rates, [1.0, 1.0, 2.0])
    assert r.bottleneck.tolist() == [0, 0, 1]


def test_bad_routes_name_the_field():
    with pytest.raises(SolverError, match=r"routes\.link"):
        max_min_rates([1.0], [0], [0], routes=SharedRoutes.build([[3]], [[1.0]], [0], [0]))
    with pytest.raises(SolverError, match=r"routes\.weight"):
        max_min_rates([1.0], [0], [0], routes=SharedRoutes.build([[0]], [[0.0]], [0], [0]))
    with pytest.raises(SolverError, match="pair_route"):
        max_min_rates([1.0], [0], [0], routes=SharedRoutes.build([[0]], [[1.0]], [0], [2]))
