"""Brute-force max-min fair rates in exact arithmetic: the oracle for tests/solver/test_maxmin.

Textbook progressive filling, one event at a time: every iteration finds the link (or
demand cap) with the lowest fair share among all of them, freezes its unfrozen flows at
that level, and starts over.  Fractions make every tie exact.  Slow (O(L * P) per event)
and obviously correct; never used by the application.
"""

import math
from fractions import Fraction


def reference_max_min_rates(
    capacity, pair_flow, pair_link, pair_weight=None, *, n_flows=None, demand=None
):
    """Return ``(rates, levels)``: exact rates (list of Fraction) and the filling levels.

    Inputs mean what they mean for :func:`designer.solver.rates.maxmin.max_min_rates`; floats are
    converted to Fractions exactly, ``math.inf`` demand means unlimited.
    """
    pair_flow = [int(f) for f in pair_flow]
    pair_link = [int(x) for x in pair_link]
    weights = [1.0] * len(pair_flow) if pair_weight is None else list(pair_weight)
    if n_flows is None:
        n_flows = len(demand) if demand is not None else max(pair_flow, default=-1) + 1
    cap = [Fraction(float(c)) for c in capacity]
    dem = [
        None if demand is None or math.isinf(d) else Fraction(float(d))
        for d in (demand if demand is not None else [math.inf] * n_flows)
    ]

    # w[l][f]: total fraction of flow f's rate crossing link l (repeated pairs add up).
    w = [dict() for _ in cap]
    for f, link, x in zip(pair_flow, pair_link, weights, strict=True):
        w[link][f] = w[link].get(f, Fraction(0)) + Fraction(float(x))

    rates: list[Fraction | None] = [None] * n_flows
    load = [Fraction(0)] * len(cap)
    levels = []
    while any(r is None for r in rates):
        best, best_flows = None, None
        for link, on_link in enumerate(w):
            unfrozen = [f for f in on_link if rates[f] is None]
            if not unfrozen:
                continue
            share = (cap[link] - load[link]) / sum(on_link[f] for f in unfrozen)
            if best is None or share < best:
                best, best_flows = share, unfrozen
        for f in range(n_flows):
            if rates[f] is None and dem[f] is not None and (best is None or dem[f] < best):
                best, best_flows = dem[f], [f]
        if best is None:
            raise ValueError("a flow crosses no link and has no demand")
        # Progressive filling never goes down: shares only grow as flows freeze.
        assert not levels or best >= levels[-1]
        levels.append(best)
        for f in best_flows:
            rates[f] = best
        for link, on_link in enumerate(w):
            load[link] += sum((on_link[f] * best for f in best_flows if f in on_link), Fraction(0))
    return rates, levels
