"""Max-min rates with shared routes: those of the expanded flow-link pairs, by every path
(local rounds, batches of global steps, filling by levels) and index the solver keeps."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from maxmin_checks import (
    RTOL,
    STRATEGIES,
    assert_max_min_certificate,
    draw_links,
    networks,
)
from maxmin_reference import reference_max_min_rates

from designer.solver.arrays.shared_routes import SharedRoutes
from designer.solver.errors import SolverError
from designer.solver.rates import tables as maxmin_tables
from designer.solver.rates.maxmin import max_min_rates
from designer.solver.tuning import Tuning, tuned


@st.composite
def factored_networks(draw):
    """Flows with a few private pairs and 0-3 shared routes (routes may repeat)."""
    n_flows, capacity, link_ids = draw_links(draw)
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
                                   atol=1e-12 * scale, err_msg=str(strategy))
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


@given(factored_networks())
def test_link_load_is_that_of_the_expanded_pairs(case):
    _, _, routes, _, n_flows = case
    rates = np.linspace(1.0, 2.0, n_flows)
    ef, el, ew = routes.expand()
    n_links = int(max(el.max(initial=0), routes.link.max(initial=0))) + 1
    np.testing.assert_allclose(routes.link_load(rates, n_links),
                               np.bincount(el, ew * rates[ef], n_links), rtol=1e-12)


@pytest.mark.parametrize("slice_entries", [1, 3, 7, 1 << 18])
def test_link_load_in_slices_of_routes_is_that_of_the_expanded_pairs(tune, slice_entries):
    """Big route tables are summed in slices of whole routes (empty routes, and routes
    longer than a slice, included)."""
    tune(route_load_slice=slice_entries)
    _, _, routes = sprayed_all_to_all(5)
    n_flows = int(routes.pair_flow.max()) + 1
    rates = np.linspace(1.0, 2.0, n_flows)
    ef, el, ew = routes.expand()
    n_links = int(max(el.max(initial=0), routes.link.max(initial=0))) + 1
    np.testing.assert_allclose(routes.link_load(rates, n_links),
                               np.bincount(el, ew * rates[ef], n_links), rtol=1e-12)
    empty_first = SharedRoutes.build([[], [0, 1, 2], [], [1]], [[], [1.0, 0.5, 0.5], [], [2.0]],
                                     [0, 1, 1], [1, 3, 1])
    ef, el, ew = empty_first.expand()
    np.testing.assert_allclose(empty_first.link_load(np.array([1.0, 3.0]), 3),
                               np.bincount(el, ew * np.array([1.0, 3.0])[ef], 3), rtol=1e-12)


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
    # Negative ids too (the range check reads them as unsigned).
    with pytest.raises(SolverError, match=r"routes\.link\[0\] = -1"):
        max_min_rates([1.0], [0], [0], routes=SharedRoutes.build([[-1]], [[1.0]], [0], [0]))
    with pytest.raises(SolverError, match="pair_route"):
        max_min_rates([1.0], [0], [0], routes=SharedRoutes.build([[0]], [[1.0]], [0], [-1]))
    with pytest.raises(SolverError, match="pair_flow"):
        max_min_rates([1.0], [0], [0], routes=SharedRoutes.build([[0]], [[1.0]], [-2], [0]))


# --------------------------------------------------------------------------- batches and levels
# Batches of global steps (designer.solver.rates.steps) and filling by levels
# (designer.solver.rates.levels) over shared routes.


@st.composite
def networks_with_routes(draw):
    """A network as `networks` draws it, part of whose pairs are shared routes: each
    flow may take some of 1-3 routes (links with weights), with a multiplicity."""
    capacity, pf, pl, pw, demand, n_flows = draw(networks())
    n_links = len(capacity)
    link_ids = st.integers(0, n_links - 1)
    routes = []
    for _ in range(draw(st.integers(1, 3))):
        links = draw(st.lists(link_ids, min_size=1, max_size=3))
        routes.append((links, [1.0 / len(links)] * len(links)))
    rf, rr, rm = [], [], []
    for f in range(n_flows):
        for r in draw(st.lists(st.integers(0, len(routes) - 1), max_size=2)):
            rf.append(f)
            rr.append(r)
            rm.append(draw(st.sampled_from([1.0, 2.0, 0.5])))
    shared = SharedRoutes.build([x for x, _ in routes], [w for _, w in routes], rf, rr, rm)
    return capacity, (pf, pl, pw), shared, demand, n_flows


def assert_routes_match_reference(capacity, pairs, routes, demand, n_flows, strategies):
    ef, el, ew = routes.expand()
    pf, pl, pw = (np.concatenate([np.asarray(a, t), b])
                  for a, b, t in zip(pairs, (ef, el, ew), (np.int64, np.int64, float),
                                     strict=True))
    exact, _ = reference_max_min_rates(capacity, pf.tolist(), pl.tolist(), pw.tolist(),
                                       n_flows=n_flows, demand=demand)
    scale = max([1.0, *capacity, *[d for d in (demand or []) if math.isfinite(d)]])
    for strategy in strategies:
        fast = max_min_rates(capacity, *pairs, n_flows=n_flows, demand=demand,
                             strategy=strategy, routes=routes)
        np.testing.assert_allclose(fast.rates, [float(r) for r in exact], rtol=RTOL,
                                   atol=1e-12 * scale, err_msg=str(strategy))
        assert_max_min_certificate(capacity, pf, pl, pw, demand, fast)


# "auto" fills problems this small level by level (designer.solver.rates.levels);
# FEW_FLOWS = 0 makes it choose between local rounds and batches as on big ones.


@pytest.mark.parametrize("first_k", [1, 3])
@given(case=networks_with_routes())
def test_batches_over_shared_routes_match_exact_filling(first_k, case):
    with tuned(first_k=first_k), \
            tuned(few_flows=0):
        assert_routes_match_reference(*case, strategies=("global", "auto"))


@given(case=networks_with_routes())
def test_local_rounds_and_batches_taking_turns_match_exact_filling(case):
    # "auto" alternates: a local round, a batch, a local round...
    def alternate(after_local, *_):
        return not after_local

    with tuned(first_k=1), \
            tuned(few_flows=0):
        assert_routes_match_reference(*case, strategies=(alternate,))


def grouped_by_flow(case):
    """The case with its private pairs listed flow by flow (as callers usually do)."""
    capacity, (pf, pl, pw), routes, demand, n_flows = case
    order = np.argsort(pf, kind="stable")
    pairs = tuple(np.asarray(x)[order].tolist() for x in (pf, pl, pw))
    return capacity, pairs, routes, demand, n_flows


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("few", [1, 3, 9])
@given(case=networks_with_routes())
def test_levels_match_exact_filling(few, grouped, case):
    # Problems of up to 9 flows: levels from the start (few = 9) or after local rounds,
    # over pairs in any order (sifted at each level) or grouped by flow (spans).
    with tuned(few_flows=few):
        assert_routes_match_reference(*(grouped_by_flow(case) if grouped else case),
                                      strategies=("auto",))


def ring_channels(n_gpus, n_channels, seed=0):
    """A ring all-reduce's channels as few big flows: channel c sends from every GPU to
    the next, over its GPU's shared host route (GPU to NIC, NIC up; two links) and a
    private fabric link per hop with weight 1/2 (two paths), pairs grouped by channel.
    Unequal NICs make several levels.  Returns (capacity, pairs, routes)."""
    rng = np.random.default_rng(seed)
    n_fabric = n_gpus * n_channels
    capacity = np.concatenate([rng.choice([50.0, 25.0, 40.0], 2 * n_gpus),
                               rng.uniform(20.0, 90.0, n_fabric)])
    host = 2 * np.arange(n_gpus)
    links = [[int(a), int(a + 1)] for a in host] + [[]]  # and an empty route (intra-node)
    pf = np.repeat(np.arange(n_channels), 2 * n_gpus)
    pl = 2 * n_gpus + np.tile(np.repeat(np.arange(n_gpus), 2), n_channels) * n_channels \
        + np.repeat(np.arange(n_channels), 2 * n_gpus)
    pw = np.full(pf.size, 0.5)
    rf = np.repeat(np.arange(n_channels), n_gpus + 1)
    rr = np.tile(np.arange(n_gpus + 1), n_channels)
    order = rng.permutation(rf.size)  # route pairs in no particular order
    routes = SharedRoutes.build(links, [[1.0] * len(x) for x in links], rf[order], rr[order])
    return capacity, (pf, pl, pw), routes


@pytest.mark.parametrize("n_channels", [2, 8])
@pytest.mark.parametrize("slice_size", [7, Tuning().level_slice])
def test_ring_channels_over_shared_routes_fill_level_by_level(n_channels, slice_size):
    # Slices of 7: each flow's span of pairs, and the route entries, go in many slices.
    capacity, pairs, routes = ring_channels(64, n_channels)
    ef, el, ew = routes.expand()
    flat = tuple(np.concatenate([a, b]) for a, b in zip(pairs, (ef, el, ew), strict=True))
    local = max_min_rates(capacity, *flat, strategy="local")
    with tuned(level_slice=slice_size):
        fast = max_min_rates(capacity, *pairs, routes=routes)
    exact, levels = reference_max_min_rates(capacity, *flat)
    np.testing.assert_allclose(fast.rates, [float(x) for x in exact], rtol=RTOL)
    np.testing.assert_allclose(fast.link_load, local.link_load, rtol=RTOL, atol=1e-9)
    assert_max_min_certificate(capacity, *flat, None, fast)
    assert fast.rounds == len(set(levels))


def hashed_all_to_all(n_leaves=4, hosts=4, spines=2, seed=0, blocks=False):
    """All-to-all where each host reaches its leaf by a shared two-link route (GPU to NIC,
    NIC to leaf; the same back) and crosses the spines on one hashed path: unequal
    fabric loads couple every host link to every other.  Pairs come flow by flow, or
    with ``blocks`` hop by hop (each hop's pairs in flow order, as the solver lists
    them).  Returns (capacity, pairs, routes)."""
    rng = np.random.default_rng(seed)
    n_hosts = n_leaves * hosts
    # Links: per host up (GPU->NIC, NIC->leaf) and down (leaf->NIC, NIC->GPU), then
    # leaf->spine and spine->leaf.
    host_link = lambda h, i: 4 * h + i  # noqa: E731
    up = lambda leaf, s: 4 * n_hosts + leaf * spines + s  # noqa: E731
    down = lambda leaf, s: 4 * n_hosts + (n_leaves + leaf) * spines + s  # noqa: E731
    capacity = np.tile([54.81, 47.0, 47.0, 54.81], n_hosts).tolist()
    capacity += (rng.uniform(0.5, 1.0, 2 * n_leaves * spines) * 94.0).tolist()
    links = [[host_link(h, 0), host_link(h, 1)] for h in range(n_hosts)]
    links += [[host_link(h, 2), host_link(h, 3)] for h in range(n_hosts)]
    pf, pl, rf, rr = [], [], [], []
    flow = 0
    for src in range(n_hosts):
        for dst in range(n_hosts):
            if src == dst:
                continue
            rf += [flow, flow]
            rr += [src, n_hosts + dst]
            a, b = src // hosts, dst // hosts
            if a != b:
                s = int(rng.integers(spines))
                pf += [flow, flow]
                pl += [up(a, s), down(b, s)]
            flow += 1
    if blocks:  # first hops, then second hops
        rf, rr, pf, pl = rf[::2] + rf[1::2], rr[::2] + rr[1::2], pf[::2] + pf[1::2], \
            pl[::2] + pl[1::2]
    routes = SharedRoutes.build(links, [[1.0, 1.0]] * len(links), rf, rr)
    return capacity, (pf, pl, [1.0] * len(pf)), routes


@pytest.mark.parametrize("blocks", [False, True])
@pytest.mark.parametrize("first_k", [1, 64])
def test_hashed_all_to_all_over_shared_host_routes_needs_many_levels(first_k, blocks):
    capacity, pairs, routes = hashed_all_to_all(blocks=blocks)
    ef, el, ew = routes.expand()
    flat = (np.concatenate([pairs[0], ef]), np.concatenate([pairs[1], el]),
            np.concatenate([pairs[2], ew]))
    local = max_min_rates(capacity, *flat, strategy="local")
    with tuned(first_k=first_k):
        for strategy in STRATEGIES:
            fast = max_min_rates(capacity, *pairs, routes=routes, strategy=strategy)
            np.testing.assert_allclose(fast.rates, local.rates, rtol=RTOL, err_msg=strategy)
            np.testing.assert_allclose(fast.link_load, local.link_load, rtol=RTOL, atol=1e-9)
            assert_max_min_certificate(capacity, *flat, None, fast)
        steps = max_min_rates(capacity, *pairs, routes=routes, strategy="global")
    assert steps.rounds > 20  # really coupled: a level per host link or so
    assert local.rounds < steps.rounds


@pytest.mark.parametrize("with_mult", [False, True])
@pytest.mark.parametrize(("blocks", "repeat", "shuffle", "table", "more"), [
    ((500, 450, 400), 0, False, True, False),
    ((500, 450, 400), 0, True, True, False),
    ((500, 450, 400, 350, 300), 0, False, True, True),
    ((500, 450, 400, 350, 300), 0, True, False, False),
    ((500, 40, 20), 0, False, True, True),
    ((500, 40, 20), 0, True, False, False),
    ((500, 60), 2, False, True, True),
    ((500,), 6, False, True, True),
    ((300, 200, 250), 3, False, False, False),
    ((500, 500), 2, False, True, False),
    ((500, 500, 40), 2, True, False, False)])
def test_route_pairs_settle_alike_from_a_table_or_a_list(with_mult, blocks, repeat, shuffle,
                                                          table, more):
    # Pairs in blocks of these sizes, each listing flows in rising order (each flow once,
    # or with ``repeat`` up to that many times in a row; 2: exactly twice).  Where the
    # blocks are kept in order, their pairs fill a flow -> routes table of as many rows
    # as keep it dense, the pairs past them an overflow (unless that would hold more
    # than a quarter of them); else, or shuffled, a CSR, turned into a table if every
    # flow fits.  Settling some flows adds the same totals either way.
    rng = np.random.default_rng(4)
    n_flows, n_routes, offset = 500, 40, 3
    parts = [np.sort(rng.choice(n_flows, size, replace=False)) for size in blocks]
    if repeat:
        parts = [np.repeat(p, 2 if repeat == 2 else rng.integers(1, repeat + 1, p.size))
                 for p in parts]
    flow = np.concatenate(parts).astype(np.int32)
    route = rng.integers(0, n_routes, flow.size).astype(np.int32)
    mult = rng.choice([0.5, 1.0, 2.0], flow.size) if with_mult else None
    if shuffle:
        order = rng.permutation(flow.size)
        flow, route = flow[order], route[order]
        mult = None if mult is None else mult[order]
    pairs = maxmin_tables.RoutePairs(flow, route, mult, offset, n_routes, n_flows)
    assert (pairs.fr_table is not None) == table
    assert (pairs.more is not None) == more
    if table:  # dense: no more slots than 1.5x the pairs
        assert pairs.fr_table.size <= 1.5 * flow.size
    flows = np.sort(rng.choice(n_flows, 100, replace=False)).astype(np.int32)
    rates = rng.uniform(1.0, 2.0, flows.size)
    # By hand: every pair of a settled flow, at its route.
    rate_of = np.full(n_flows, np.nan)
    rate_of[flows] = rates
    on = np.isin(flow, flows)
    m = np.ones(flow.size) if mult is None else mult
    n = offset + n_routes
    at = offset + route[on]
    k, c, load = np.zeros(n), np.zeros(n, np.int64), np.zeros(n)
    pairs.settle(flows, rates, k, c, load)
    np.testing.assert_allclose(k, np.bincount(at, m[on], n), rtol=1e-12)
    np.testing.assert_array_equal(c, np.bincount(at, minlength=n))
    np.testing.assert_allclose(load, np.bincount(at, m[on] * rate_of[flow[on]], n), rtol=1e-12)


def test_concat_writes_tails_after_their_part_as_if_joined_first():
    a = SharedRoutes.build([[0, 1], [2]], [[0.5, 0.5], [1.0]], [0, 1], [0, 1])
    b = SharedRoutes.build([[3], [4, 5], [6]], [[1.0], [0.25, 0.75], [1.0]], [1, 2, 2],
                           [0, 1, 2])
    # b's last two routes as a tail: its part holds route 0's entries, its ptr all three.
    head = SharedRoutes(b.ptr, b.link[:1], b.weight[:1], b.pair_flow, b.pair_route)
    tail = (b.link[1:], b.weight[1:])
    want = SharedRoutes.concat([a, b])
    for parts in ([a, head], [head]):
        tails = [None] * (len(parts) - 1) + [tail]
        got = SharedRoutes.concat(parts, tails, np.int32)
        ref = want if len(parts) == 2 else b
        assert got.link.dtype == np.int32 and got.weight.dtype == np.float64
        for x, y in zip(got.expand(), ref.expand(), strict=True):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(got.ptr, ref.ptr)
    # One part, no tail, links already of the type: the very object.
    assert SharedRoutes.concat([a]) is a
    assert SharedRoutes.concat([a], None, a.link.dtype) is a
    narrowed = SharedRoutes.concat([a], None, np.int32 if a.link.dtype != np.int32 else np.int64)
    assert narrowed is not a and narrowed.pair_route is a.pair_route


def test_a_flow_capped_at_its_demand_in_a_one_link_level_counts_all_its_entries():
    # Found by the property test above: link 0 (capacity 0) freezes its flows alone, and
    # flow 3, capped at its demand of 0 in the same level, has more entries on link 1
    # than a flow's row of the batch's table holds.  Its overflow entries must be taken
    # off link 1 too, or link 1 keeps an unfrozen pair no flow owns (the batch raised).
    case = ([0.0, 1.0],
            ([0, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3],
             [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1],
             [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]),
            SharedRoutes.build([[1, 1]], [[0.5, 0.5]], [3, 3], [0, 0], [1.0, 1.0]),
            [math.inf, math.inf, math.inf, 0.0], 4)
    with tuned(first_k=3), \
            tuned(few_flows=0):
        assert_routes_match_reference(*case, strategies=("global", "auto"))
