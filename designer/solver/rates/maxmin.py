"""Exact weighted max-min fair rates of flows sharing capacitated links.

The flow-level model of a fabric: every flow sends as fast as the links it crosses allow,
and links share their capacity max-min fairly (what a well-behaved congestion control
converges to, and what flow-level simulators such as SimGrid compute).  A flow may be
split over several paths with fixed fractions (ECMP, adaptive routing, packet spraying),
so a flow puts ``weight * rate`` on each link it crosses.

The classic algorithm is progressive filling: all unfrozen flows rise together; when a
link saturates, every flow crossing it freezes.  Done one link at a time with a pass over
all flows each time, that is far too slow for a million flows.  :func:`max_min_rates`
instead freezes, in each round, every link whose fair share is a local minimum among the
links it shares flows with.  Symmetric traffic (rings, all-to-all on a symmetric fabric)
finishes in one or two rounds; each round is a handful of vectorised passes over the
flow-link pairs that are still unfrozen.  Where traffic couples everything to everything
and capacities differ, few links are local minima at once; there it switches to
global-minimum steps, taken in batches on the lowest links (`designer.solver.rates.steps`).
Few flows over many pairs (a ring all-reduce's channels) need at most one level per flow,
and a level is a few cheap passes: there it fills level by level
(`designer.solver.rates.levels`).  Input checks live in `designer.solver.rates.checks`.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from designer.solver.arrays.shared_routes import RouteState, SharedRoutes, bincount
from designer.solver.errors import SolverError
from designer.solver.rates.checks import checked_inputs
from designer.solver.rates.levels import LevelFilling
from designer.solver.rates.steps import SATURATED_RTOL, BatchSteps, count_levels, lowest_links
from designer.solver.tuning import current

__all__ = ["TIE_RTOL", "MaxMinResult", "StepChoice", "local_pays", "max_min_rates"]

TIE_RTOL = 1e-10
"""Relative tolerance under which two fair shares count as equal.

Shares of symmetric links computed by summing the same weights in another order differ in
the last bits; treating them as ties lets a whole symmetric fabric freeze in one round.
"""

@dataclass(frozen=True)
class MaxMinResult:
    """Max-min fair rates and what limits them.

    Attributes
    ----------
    rates : ndarray of float64, shape (F,)
        Rate of each flow, in the unit of the capacities.
    link_load : ndarray of float64, shape (L,)
        ``sum_f weight_fl * rate_f`` for each link (never above capacity beyond rounding).
    bottleneck : ndarray of int32, shape (F,)
        The link whose saturation froze each flow; ``-1`` for a flow held at its demand.
    rounds : int
        Number of freezing steps the solver took (local-minimum rounds plus
        global-minimum steps).
    starved : ndarray of int32
        Sorted ids of the flows crossing a zero-capacity (dead) link; their rate is 0.
    trace : tuple of str
        What the solver did, in order: ``"local"`` for each local-minimum round,
        ``"global"`` for each batch of global-minimum steps, ``"level"`` for each level
        filled level by level.  Which strategy ran (and how often) is the only thing
        the strategies change besides the time, so this is how to tell them apart.
    """

    rates: np.ndarray
    link_load: np.ndarray
    bottleneck: np.ndarray
    rounds: int
    starved: np.ndarray
    trace: tuple[str, ...] = ()


StepChoice = Callable[[bool, int, float, float], bool]
"""``auto``'s rule for the next step: ``choose(after_local, levels, round_ns, frozen)``
returns True for a local round next (arguments as `local_pays`)."""


def max_min_rates(
    capacity,
    pair_flow,
    pair_link,
    pair_weight=None,
    *,
    n_flows=None,
    demand=None,
    tie_rtol=TIE_RTOL,
    strategy="auto",
    routes: SharedRoutes | None = None,
) -> MaxMinResult:
    """Weighted max-min fair rates of flows with fixed path splits (progressive filling).

    Parameters
    ----------
    capacity : array_like of float, shape (L,)
        Capacity of each link, finite and ``>= 0``.  A zero-capacity link is dead: every
        flow crossing it gets rate 0 and is listed in ``MaxMinResult.starved``.
    pair_flow, pair_link : array_like of int, shape (P,)
        Flow-link incidence as coordinate pairs: flow ``pair_flow[p]`` crosses link
        ``pair_link[p]``.  Pairs may come in any order; a pair may repeat (the weights add).
    pair_weight : array_like of float, shape (P,), optional
        Fraction of the flow's rate that crosses the link, ``> 0``: 1.0 on a single path,
        ``1/k`` on each of ``k`` equal-cost paths.  Default: all 1.0.
    n_flows : int, optional
        Number of flows F.  Default: ``max(pair_flow) + 1``, or ``len(demand)`` if that is larger.
    demand : array_like of float, shape (F,), optional
        Rate cap of each flow, ``>= 0``; ``np.inf`` means unlimited.
    tie_rtol : float, optional
        Relative tolerance under which two fair shares are treated as equal.
    strategy : {"auto", "local", "global"} or StepChoice, optional
        How each step picks the links to saturate: ``"local"`` freezes every link whose
        share is a local minimum (few rounds when traffic is symmetric or independent),
        ``"global"`` only the links at the lowest share (one step per distinct level,
        taken in batches), ``"auto"`` chooses step by step from their cost
        (`local_pays`), and fills level by level once at most `Tuning.few_flows` flows
        are unfrozen.  A callable is ``auto`` with that rule in place of `local_pays`
        (to study the crossover, or to make every kind of step follow every other).
        Rates agree to within ``tie_rtol``; only ``rounds``, ``trace`` and the running
        time differ.
    routes : SharedRoutes, optional
        More incidence, factored: routes stored once and the flows that take them (see
        `designer.solver.arrays.shared_routes`).  Same rates as passing ``routes.expand()`` as
        extra pairs, at the cost of the distinct routes instead of every flow's copy.

    Returns
    -------
    MaxMinResult

    Raises
    ------
    SolverError
        On malformed input (shape, NaN, negative capacity, non-positive weight,
        out-of-range index) or when a flow crosses no link and has no finite demand.

    Notes
    -----
    Every flow ends either at its demand or on a saturated link on which no flow has a
    higher rate: the max-min fairness certificate.  Rates never overload a link.

    Examples
    --------
    The parking lot: one long flow over links 0 and 1, one short flow on each link.

    >>> r = max_min_rates([1.0, 2.0], pair_flow=[0, 0, 1, 2], pair_link=[0, 1, 0, 1])
    >>> r.rates
    array([0.5, 0.5, 1.5])
    >>> r.bottleneck
    array([0, 0, 1], dtype=int32)
    """
    if not callable(strategy) and strategy not in ("auto", "local", "global"):
        raise SolverError(f"strategy is {strategy!r}; expected 'auto', 'local', 'global' "
                          "or a function")
    cap, flow, link, weight, n_flows, dem, routes, linkless, starved = checked_inputs(
        capacity, pair_flow, pair_link, pair_weight, n_flows, demand, routes)
    rates, load, bottleneck, rounds, trace = _solve(
        cap, flow, link, weight, n_flows, dem, tie_rtol, strategy, linkless, routes
    )
    return MaxMinResult(rates, load, bottleneck, rounds, starved, trace)


class _Filling:
    """Progressive filling state, advanced by local-minimum rounds or global-minimum steps.

    Why a local-minimum link may freeze at once.  Progressive filling raises a common
    level t for all unfrozen flows.  The fair share of link l,
    ``s_l = (c_l - frozen load on l) / (sum of unfrozen weights on l)``, is the level at
    which l would saturate if nothing else froze first.  Freezing a set of flows at a
    level t <= s_m never lowers the share of a link m: with residual R, unfrozen weight W
    and frozen weight w, ``(R - t w) / (W - w) >= R / W`` exactly when ``t <= R / W``.
    So shares only grow while t rises.  Now let l be a local minimum: every link m that
    shares an unfrozen flow with l has ``s_m >= s_l``.  Those links cannot saturate below
    level s_l, so none of l's flows freezes before t reaches s_l, s_l stays put, and all
    of l's unfrozen flows freeze exactly at s_l, whatever else happens elsewhere.  All
    local minima therefore freeze together.  The global minimum link is always a local
    minimum, so every round freezes at least one flow and the loop ends after at most F
    rounds.  A demand cap is a private virtual link of one flow with share = demand.

    A local round costs a few passes over all unfrozen pairs.  When the fabric couples
    every flow to every other (all-to-all with unequal capacities: each host link shares
    flows with every other host link), only about one link is a local minimum per round
    and that cost buys little.  Global steps instead freeze the links at the lowest share,
    level by level, in batches that cost about the pairs they freeze plus a few small
    numpy calls per level (`BatchSteps`).  ``auto`` starts with a local round unless few
    links are lowest (`local_first`) and, after a round that froze too few flows for its
    price, runs batches for a multiple of that price before it tries a local round
    again.  With few flows unfrozen it fills level by
    level instead (`LevelFilling`), which needs none of the per-link totals: those
    (``unfrozen_weight``, ``unfrozen_pairs``) are counted when a local round or a batch
    first needs them.
    """

    def __init__(self, cap, flow, link, weight, n_flows, dem, tie_rtol, linkless,
                 routes=None):
        self.cap, self.dem = cap, dem
        self.n_flows = n_flows
        self.slack = 1.0 + tie_rtol
        n_links = cap.size
        self.rates = np.zeros(n_flows)
        self.bottleneck = np.full(n_flows, -1, np.int32)
        self.frozen = np.zeros(n_flows, bool)
        self.n_active = n_flows
        self.load = np.zeros(n_links)
        self.routes = None if routes is None else RouteState(routes, n_links)
        # Unfrozen weight and pairs per link, for local rounds and global steps (filling
        # by levels needs neither): counted when one of those first runs.
        self.unfrozen_weight = self.unfrozen_pairs = None
        # Unfrozen pairs for local rounds; compacted lazily at the next local round.
        self.pairs = (flow, link, weight)
        self.pairs_stale = False
        # Scratch per flow, so that a round costs O(its pairs), not O(F).
        self.flow_min = np.empty(n_flows)
        self.share = None  # per link, while up to date (global steps keep it so)
        self.steps = None  # BatchSteps, built at the first global step
        self.demand_queue = None  # (flow ids by demand, sorted demands, cursor)
        self.levels = None  # LevelFilling, once ``auto`` fills level by level
        # A flow crossing no link only has its demand: it needs no filling.
        if linkless.size:
            self.rates[linkless] = dem[linkless]
            self.frozen[linkless] = True
            self.n_active -= linkless.size

    # ------------------------------------------------------------------ common state

    def count(self) -> None:
        """Count the unfrozen weight and pairs on each link (once)."""
        if self.unfrozen_weight is not None:
            return
        self.compact()
        n_links = self.cap.size
        _, link, weight = self.pairs
        self.unfrozen_pairs = bincount(link, n_links)
        self.unfrozen_weight = (self.unfrozen_pairs if weight is None else bincount(
            link, n_links, weight)).astype(np.float64)  # int64 if empty
        if self.routes is not None:
            self.unfrozen_weight += self.routes.link_weight()
            self.unfrozen_pairs += self.routes.link_pairs()

    def compact(self) -> None:
        """Drop the pairs (and route pairs) of frozen flows, if any froze since last time."""
        if not self.pairs_stale:
            return
        flow, link, weight = self.pairs
        keep = ~self.frozen[flow]
        flow, link = flow[keep], link[keep]
        weight = None if weight is None else weight[keep]
        self.pairs, self.pairs_stale = (flow, link, weight), False
        if self.routes is not None:
            self.routes.compact(self.frozen)

    def local_first(self) -> bool:
        """``auto``'s first choice: a local round, unless it is dear and a batch of global
        steps on the lowest links (`rates.steps.lowest_links`, as the first batch takes
        them) would be small: under a quarter of the round's work.

        Symmetric traffic ties many links at the lowest share; a local round then
        finishes most of the problem, and a batch would copy all of those links' flows.
        Where few links are lowest, traffic that couples them to everything (ECMP
        collisions, degraded links in an all-to-all) makes a local round freeze a few
        levels for the price of hundreds; the first batch then samples how many local
        minima there are, and ``auto`` turns to local rounds if they would pay.
        """
        work = self.local_work()
        if current().local_ns_per_pair * work <= current().cheap_round_ns:
            return True
        self.share = self._shares_of(slice(None))  # (for whichever comes first)
        lowest = lowest_links(self.share, current().first_k, self.slack)
        # The batch would copy the pairs on those links (routes expanded); a local round
        # passes over every pair once (routes once).
        return 4 * int(self.unfrozen_pairs[lowest].sum()) >= work

    def local_work(self) -> float:
        """Pairs a local round passes over (routes count once, not per flow)."""
        self.count()
        if self.routes is None:
            return float(self.unfrozen_pairs.sum())
        return float(len(self.pairs[0]) + self.routes.size())

    def _shares_of(self, links):
        residual = self.cap[links] - self.load[links]
        residual[residual <= SATURATED_RTOL * self.cap[links]] = 0.0
        share = np.full(residual.size, np.inf)
        np.divide(
            residual, self.unfrozen_weight[links], out=share, where=self.unfrozen_pairs[links] > 0
        )
        return share

    def _freeze_link_state(self, links, weights, rates, last=False):
        """Account for the pairs (links, weights) of flows just frozen at ``rates``.

        ``weights`` is None for unit weights; ``rates`` is per pair or one common level.
        Returns the number of pairs frozen on each link (None if ``last``: nothing is
        left to fill, so only the load matters).
        """
        n_links = self.cap.size
        if last and np.ndim(rates):
            weighted = rates if weights is None else weights * rates
            self.load += bincount(links, n_links, weighted)
            return None
        frozen_weight = bincount(links, n_links, weights)
        if np.ndim(rates) == 0:
            self.load += rates * frozen_weight
        else:
            weighted = rates if weights is None else weights * rates
            self.load += bincount(links, n_links, weighted)
        self.unfrozen_weight -= frozen_weight
        frozen_pairs = bincount(links, n_links)
        self.unfrozen_pairs -= frozen_pairs
        if self.steps is not None:
            self.steps.private_frozen(frozen_pairs)
        return frozen_pairs

    def _settle_routes(self, links, load, frozen_weight, frozen_pairs):
        """Apply what `RouteState.settle` returned; the links whose share changed."""
        self.load += load
        self.unfrozen_weight -= frozen_weight
        self.unfrozen_pairs -= frozen_pairs
        return links

    # ------------------------------------------------------------------ local rounds

    def local_round(self) -> int:
        """Freeze every local-minimum link; return how many levels that took (the
        distinct shares of the links that froze, and one for demand caps)."""
        self.count()
        self.compact()
        flow, link, weight = self.pairs
        rt = self.routes
        crossed = self.unfrozen_pairs > 0
        share = self._shares_of(slice(None)) if self.share is None else self.share

        # The lowest share each flow sees (its demand counts as one more link) ...
        pair_share = share[link]
        flow_min = self.flow_min
        if flow.size >= self.n_flows or rt is not None:  # cheaper than a scatter
            flow_min[:] = np.inf if self.dem is None else self.dem
        else:
            flow_min[flow] = np.inf if self.dem is None else self.dem[flow]
        np.minimum.at(flow_min, flow, pair_share)
        if rt is not None:
            np.minimum.at(flow_min, rt.rp_flow, rt.route_min(share)[rt.rp_route])
        pair_min = flow_min[flow]
        # ... and a link is a local minimum unless one of its flows sees a lower share
        # elsewhere.  (Equivalent to s_l <= min over its flows of their minimum share,
        # without a second segment-min over the pairs.)
        blocked = np.zeros(self.cap.size, bool)
        blocked[link[pair_min * self.slack < pair_share]] = True
        if rt is not None:
            rt.block(blocked, share, flow_min, self.slack)
        local_min = crossed & ~blocked

        by_link = local_min[link]
        frozen_by_link = flow[by_link]
        self.bottleneck[frozen_by_link] = link[by_link]
        self.frozen[frozen_by_link] = True
        del frozen_by_link
        if rt is not None:
            rt.freeze_hit(local_min, self.frozen, self.bottleneck)
        n_capped = 0
        if self.dem is not None:  # capped flows keep bottleneck -1 unless a link froze them
            capped = flow[self.dem[flow] <= pair_min * self.slack]
            if rt is not None:
                f = rt.rp_flow
                capped = np.concatenate([capped, f[self.dem[f] <= flow_min[f] * self.slack]])
            self.frozen[capped] = True
            n_capped = capped.size
        n_frozen = int(np.count_nonzero(self.frozen)) - (self.n_flows - self.n_active)
        if n_frozen == 0:  # impossible (the global minimum qualifies); guard the loop
            raise RuntimeError("max-min rounds stalled; please report this input")
        self.n_active -= n_frozen
        # Each flow freezes at the lowest share it sees: s_l in exact arithmetic, and
        # never above any of its links' shares, so ties within tie_rtol cannot overload.
        if rt is not None:
            f, route, mult = rt.rp_flow, rt.rp_route, rt.rp_mult
            if self.n_active:  # else every flow froze: no subsetting
                sel = self.frozen[f]
                f, route = f[sel], route[sel]
                mult = None if mult is None else mult[sel]
            at = flow_min[f]
            self.rates[f] = at
            self._settle_routes(*rt.settle(route, mult, at, last=self.n_active == 0))
        if self.n_active == 0:  # common for symmetric traffic: skip the subsetting
            self.rates[flow] = pair_min
            self._freeze_link_state(link, weight, pair_min, last=True)
            return 1  # done: nothing to choose any more
        pair_frozen = self.frozen[flow]
        frozen_min = pair_min[pair_frozen]
        self.rates[flow[pair_frozen]] = frozen_min
        self._freeze_link_state(
            link[pair_frozen], None if weight is None else weight[pair_frozen], frozen_min
        )
        self.share = None
        self.pairs_stale = True
        return count_levels(share[local_min], self.slack) + (n_capped > 0)

    # ------------------------------------------------------------------ global steps

    def global_steps(self, minima_from: float = np.inf) -> int:
        """Freeze the lowest links level by level, a batch of levels at a time; return
        the number of levels (freezing steps).  The batch counts its links' local minima
        only if it has at least ``minima_from`` links (see `BatchSteps.step`)."""
        self.count()
        if self.steps is None:
            self.steps = BatchSteps(self)
            if self.dem is not None:
                finite = np.flatnonzero(np.isfinite(self.dem) & ~self.frozen)
                by_demand = finite[np.argsort(self.dem[finite], kind="stable")]
                self.demand_queue = [by_demand, self.dem[by_demand], 0]
        if self.share is None:
            self.share = self._shares_of(slice(None))
        return self.steps.step(self, minima_from)


def local_pays(after_local: bool, levels: int, round_ns: float, frozen: float = 0.0) -> bool:
    """``auto``'s choice: a local round next?

    After a local round that froze ``levels`` levels and the fraction ``frozen`` of the
    flows, yes while rounds pay for themselves (batches would cost `Tuning.level_ns` a level) or
    clear much of the problem (cheaper than building batches for it).  After a batch whose
    links' local minima make ``levels`` levels (a sample of what a round would freeze),
    when they would pay for the round, ``round_ns``, or when it costs less than a few
    levels anyway.
    """
    t = current()
    if after_local:
        return levels * t.level_ns >= round_ns or frozen >= t.worth_another
    return max(levels, 10) * t.level_ns >= round_ns


def _solve(cap, flow, link, weight, n_flows, dem, tie_rtol, strategy, linkless, routes=None):
    """Run the filling with local rounds, batches of global steps, or (``auto``) each
    when it freezes more levels for the price (see `local_pays`; a callable
    ``strategy`` is ``auto`` with its own rule); ``auto`` finishes
    level by level once few flows are left (`designer.solver.rates.levels`), unless
    batches ran: they leave the pairs of frozen flows in place, and sifting them out
    would cost more than the batches that the last few flows need."""
    filling = _Filling(cap, flow, link, weight, n_flows, dem, tie_rtol, linkless, routes)
    choose = strategy if callable(strategy) else local_pays
    auto = strategy == "auto" or callable(strategy)
    use_local = None  # chosen when first needed (filling by levels needs no choice)
    rounds = 0
    trace: list[str] = []
    while filling.n_active:
        if filling.levels is None and auto and filling.steps is None \
                and filling.n_active <= current().few_flows:
            filling.levels = LevelFilling(filling, fresh=rounds == 0)
        if filling.levels is not None:
            rounds += filling.levels.step(filling)
            trace.append("level")
            continue
        if use_local is None:
            use_local = strategy == "local" or (auto and filling.local_first())
        if use_local:
            rounds += 1
            round_ns = current().local_ns_per_pair * filling.local_work()
            active = filling.n_active
            levels = filling.local_round()
            trace.append("local")
            frozen = 1.0 - filling.n_active / active
            use_local = strategy == "local" or (auto and choose(True, levels, round_ns,
                                                                frozen))
        else:
            minima_from = np.inf  # the local minima a batch must count, if it can matter
            if auto:
                live = filling.steps.live_pairs() if filling.steps else filling.local_work()
                round_ns = current().local_ns_per_pair * live
                if not choose(False, 0, round_ns, 0.0):
                    minima_from = round_ns / current().level_ns
            rounds += filling.global_steps(minima_from)
            trace.append("global")
            per_pair = current().local_ns_per_pair
            use_local = auto and choose(
                False, filling.steps.minima, per_pair * filling.steps.live_pairs(), 0.0)
    return filling.rates, filling.load, filling.bottleneck, rounds, tuple(trace)
