"""Shared by the max-min tests (`test_maxmin.py`, `test_maxmin_cases.py`): the
strategies, the tolerance, the optimality certificate, the comparison with exact
progressive filling, random networks (hypothesis) and an all-to-all over a leaf-spine."""

import math

import numpy as np
from hypothesis import strategies as st
from maxmin_reference import reference_max_min_rates

from designer.solver.rates.maxmin import max_min_rates

RTOL = 1e-9
STRATEGIES = ("auto", "local", "global")


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


def draw_links(draw):
    """1-7 links with random capacities and 1-9 flows: ``(n_flows, capacity, link_ids)``,
    ``link_ids`` a strategy of link ids (for `networks` and the shared-route tests)."""
    n_links = draw(st.integers(1, 7))
    n_flows = draw(st.integers(1, 9))
    # Integral capacities make many exact ties; floats make near-ties.
    integral = draw(st.booleans())
    cap_values = st.integers(0, 12).map(float) if integral else st.floats(0.01, 100.0)
    capacity = draw(st.lists(cap_values, min_size=n_links, max_size=n_links))
    return n_flows, capacity, st.integers(0, n_links - 1)


@st.composite
def networks(draw):
    """Random flows split over 1-3 paths of 1-3 links (links may repeat) with weight 1/k."""
    n_flows, capacity, link_ids = draw_links(draw)
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
