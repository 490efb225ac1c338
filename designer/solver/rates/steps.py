"""Global-minimum steps of the max-min solver, taken in batches on a small local problem.

Where traffic couples every link to every other (all-to-all with unequal capacities),
progressive filling has to visit its levels one by one: a thousand host links may each
saturate at a level of its own.  A step per level over the whole problem costs dozens of
numpy calls on link- and route-sized arrays, and that overhead, not the pairs the step
freezes, dominates.

`BatchSteps` instead takes the ``k`` links with the lowest fair shares (the set C),
copies the unfrozen flows that cross them into a small local problem, and runs exact
progressive filling there, level by level, with a few numpy calls on arrays of size
``|C|`` and on the entries of the flows each level freezes.  Why the local problem is
exact: every link outside C has a share of at least H (the lowest share outside C), and
shares never fall while the level rises (see ``_Filling`` in `designer.solver.rates.maxmin`),
so no link outside C saturates below H.  Up to level H, the flows crossing C freeze
exactly as if C were the whole fabric, and a flow crossing no link of C freezes only at
its demand.  The batch then writes the rates back and settles the flows it froze in the
link and route totals in one pass.  ``k`` adapts: it doubles while batches freeze most of
C and halves when they stop early.

Flows reach links through shared routes (`SharedRoutes`) and through private flow-link
pairs, which are one-link routes here: route ``R + l`` is link ``l`` with weight 1, the
pair's weight its multiplicity.  Each kind keeps its own indexes (`RoutePairs`, in
`designer.solver.rates.tables` with the local problem), so the shared routes, which
usually have no multiplicities, carry none.

Each batch also counts the levels that the local minima among its links make
(`BatchSteps.minima`): a sample of what a local round would freeze at once, which the
solver's ``auto`` strategy weighs against the round's price.
"""

from __future__ import annotations

import numpy as np

from designer.solver.arrays.ragged import stable_argsort
from designer.solver.rates.tables import LocalProblem, RoutePairs, count_levels, csr, ranges
from designer.solver.tuning import current

__all__ = ["SATURATED_RTOL", "BatchSteps", "count_levels", "lowest_links", "ranges"]

SATURATED_RTOL = 1e-12
"""A link whose residual capacity is below this fraction of its capacity is saturated.

Without it, ``1 - (1/3 + 1/3 + 1/3)`` leaves a residual of one ulp and the next flow would
get a rate of ~1e-16 instead of exactly zero.
"""


def lowest_links(share: np.ndarray, k: int, slack: float) -> np.ndarray:
    """The ``k`` links with the lowest finite shares and those tied with them (a mask)."""
    k = min(k, share.size)
    kth = np.partition(share, k - 1)[k - 1]
    if not np.isfinite(kth):
        kth = share[np.isfinite(share)].max(initial=-np.inf)
    return share <= kth * slack


class BatchSteps:
    """Batches of global-minimum steps on the state of a ``_Filling`` (see module doc).

    Built once, when the filling first needs steps: indexes link -> route entries and,
    per kind of route pair, route -> flows and flow -> routes.  ``c`` (the unfrozen pairs
    of each route) extends the `RouteState`'s own, which becomes a view of it, so local
    rounds and batches share one state.  A route's flow list drops the flows that froze
    when a batch next reads it.
    """

    def __init__(self, filling):
        fl = filling
        n_links, n_flows = fl.cap.size, fl.n_flows
        rt = fl.routes
        flow, link, weight = fl.pairs
        # Unfrozen pairs per route and per link: the counts of the pairs, unless some
        # froze since the pairs were last compacted.
        private = fl.unfrozen_pairs if rt is None else fl.unfrozen_pairs - rt.link_pairs()
        exact = not fl.pairs_stale
        if rt is None:
            n_routes = 0
            ptr, e_link, e_weight = np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0)
            w, c = np.zeros(0), np.zeros(0, np.int64)
            self.sources: list[RoutePairs] = []
        else:
            n_routes = rt.n_routes
            ptr, e_link, e_weight = rt.ptr, rt.link, rt.weight
            w, c = rt.w, rt.c
            self.sources = [RoutePairs(rt.rp_flow, rt.rp_route, rt.rp_mult, 0, n_routes, n_flows,
                                       c if exact else None)]
        self.sources.append(RoutePairs(flow, link, weight, n_routes, n_links, n_flows,
                                       private if exact else None))
        # Route table with one single-link route per link appended.
        self.n_routes = n_routes + n_links
        self.ptr = np.concatenate([ptr, ptr[-1] + np.arange(1, n_links + 1)])
        self.link = np.concatenate([e_link, np.arange(n_links, dtype=np.int32)]).astype(
            np.int32, copy=False)
        self.weight = np.concatenate([e_weight, np.ones(n_links)])
        self.of = np.repeat(np.arange(self.n_routes, dtype=np.int32), np.diff(self.ptr))
        order = stable_argsort(self.link, n_links)
        self.lr_ptr = csr(self.link, n_links)
        self.lr_route, self.lr_weight = self.of[order], self.weight[order]
        # Unfrozen pair count per route (a one-link route's: the link's private pairs)
        # and multiplicity per shared route.  The shared routes' part of ``c`` becomes
        # the RouteState's (a view) and ``w`` is its own, so local rounds and batches see
        # one state.
        self.c = np.concatenate([c, private])
        self.w = w
        if rt is not None:
            rt.c = self.c[:n_routes]
        self.stamp = np.empty(self.n_routes, np.int64)
        self.local_id = np.empty(n_flows, np.int32)
        self.scratch = np.empty(n_flows, np.int32)
        self.k = current().first_k
        self.minima = 0  # levels of the local minima of the last batch's links

    def private_frozen(self, frozen_pairs):
        """Account for private pairs that a local round froze (per link)."""
        self.c[self.n_routes - frozen_pairs.size:] -= frozen_pairs

    def live_pairs(self) -> int:
        """Unfrozen (flow, route) pairs, private pairs included: a local round's work."""
        return int(self.c.sum())

    # ------------------------------------------------------------------ one batch

    def step(self, fl, minima_from: float = 0) -> int:
        """Solve the ``k`` lowest links up to the lowest share outside them; return the
        number of levels (freezing steps).  ``minima`` counts the local minima among the
        links only if there are at least ``minima_from`` of them (else 0): fewer links
        than the levels a local round must freeze to pay cannot make that many."""
        share = fl.share
        n_links = share.size
        in_c = lowest_links(share, self.k, fl.slack)
        links = np.flatnonzero(in_c).astype(np.int32)
        horizon = float(np.min(share, where=~in_c, initial=np.inf))

        flows, lp = self._local_problem(fl, links)
        self.minima = lp.local_minima(share[links], fl.slack) if links.size >= minima_from \
            else 0
        with np.errstate(divide="ignore", invalid="ignore"):
            levels, rates, bottleneck, frozen_links = self._fill(fl, links, horizon, lp)
        done = np.flatnonzero(np.isfinite(rates))
        flows, rates, bottleneck = flows[done], rates[done], bottleneck[done]
        fl.frozen[flows] = True
        fl.bottleneck[flows] = bottleneck
        if fl.demand_queue is not None:
            # Flows crossing no link of C may run at their demand up to the horizon.
            queue, values, cursor = fl.demand_queue
            end = int(np.searchsorted(values, horizon, side="right"))
            capped = queue[cursor:end]
            capped = capped[~fl.frozen[capped]]
            fl.demand_queue[2] = end  # the flows up to here are all frozen now
            if capped.size:
                fl.frozen[capped] = True
                flows = np.concatenate([flows, capped])
                rates = np.concatenate([rates, fl.dem[capped]])
                levels += 1
        if not flows.size:  # impossible (the lowest link qualifies); guard the loop
            raise RuntimeError("max-min steps stalled; please report this input")
        fl.rates[flows] = rates
        fl.n_active -= flows.size
        self._settle(fl, flows, rates)
        fl.share = fl._shares_of(slice(None))
        fl.pairs_stale = True
        # Grow C while batches use most of it, shrink it when they stop early.
        if 2 * frozen_links >= links.size:
            self.k = min(2 * self.k, n_links)
        elif 4 * frozen_links < links.size:
            self.k = max(self.k // 2, 1)
        return levels

    def _local_problem(self, fl, links):
        """The unfrozen flows crossing ``links`` (local ids) and their entries on them."""
        starts, stops = self.lr_ptr[links], self.lr_ptr[links + 1]
        entry = ranges(starts, stops)
        route, weight = self.lr_route[entry], self.lr_weight[entry]
        local_link = np.repeat(np.arange(links.size, dtype=np.int32), stops - starts)
        live = self.c[route] > 0
        route, weight, local_link = route[live], weight[live], local_link[live]
        parts = []
        for src in self.sources:
            mine = (route >= src.offset) & (route < src.offset + src.n_routes)
            if mine.any():
                parts.append(src.entries(route[mine], weight[mine], local_link[mine], self.c,
                                         fl.frozen, self.stamp))
        if not parts:  # no unfrozen flow left on these links
            parts = [(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))]
        e_flow, e_link, e_weight = (np.concatenate(x) for x in zip(*parts, strict=True))
        if len(parts) > 1:  # group by link again: a merge of two sorted runs
            order = np.argsort(e_link, kind="stable")
            e_flow, e_link, e_weight = e_flow[order], e_link[order], e_weight[order]
        lp = LocalProblem(links.size, e_flow, e_link, e_weight, self.scratch, self.local_id)
        return lp.flows, lp

    def _fill(self, fl, links, horizon, lp):
        """Progressive filling of the local problem up to ``horizon``.

        Returns the number of levels, each local flow's rate (inf if still unfrozen) and
        bottleneck (-1 if capped), and the number of links of C frozen.  When all entries
        have one weight (the common case: whole routes of unit weight), a link's unfrozen
        weight is that weight times its count of entries: each level takes one count.
        """
        flows = lp.flows
        n = links.size
        cap = fl.cap[links]
        pairs = np.diff(lp.link_ptr)
        counting = lp.unit is not None
        if counting:  # residuals in units of one entry's weight
            residual = (cap - fl.load[links]) / lp.unit
            tiny = SATURATED_RTOL * cap / lp.unit
            weight = pairs
        else:
            residual = cap - fl.load[links]
            tiny = SATURATED_RTOL * cap
            weight = fl.unfrozen_weight[links].copy()
        share = np.empty(n)
        rates = np.full(flows.size, np.inf)
        bottleneck = np.full(flows.size, -1, np.int32)
        dq, dv, cursor = None, None, 0
        if fl.dem is not None:
            dem = fl.dem[flows]
            dq = np.flatnonzero(np.isfinite(dem) & (dem <= horizon))
            dq = dq[np.argsort(dem[dq], kind="stable")]
            dv = dem[dq]
        link_ptr, link_ids = lp.link_ptr.tolist(), links.tolist()  # cheap scalar access
        levels = 0
        while True:
            # Shares: 0 when saturated (to rounding), inf when no unfrozen flow is left
            # (counting: x / 0, or an inf residual once the link froze here).
            np.divide(residual, weight, out=share)
            share[residual <= tiny] = 0.0
            if not counting:
                share[pairs == 0] = np.inf
            low = int(share.argmin())
            lowest = float(share[low])
            level = lowest
            if dq is not None:
                while cursor < dq.size and np.isfinite(rates[dq[cursor]]):
                    cursor += 1
                if cursor < dq.size:
                    level = min(level, float(dv[cursor]))
            if not (level <= horizon and level < np.inf):  # also when nan
                break
            tie = level * fl.slack
            hit, more = None, True
            if lowest > tie:  # a demand comes first
                new = np.zeros(0, np.int64)
            else:
                share[low] = np.inf
                if share[share.argmin()] > tie:  # one link: its flows are a slice
                    hit = low
                    new = lp.e_flow[link_ptr[low]:link_ptr[low + 1]]
                    new = new[np.isinf(np.take(rates, new))]
                    bottleneck[new] = link_ids[low]
                    if lp.repeats:
                        new = lp.distinct(new)
                    more = lp.more_on_link[low]
                else:
                    hit = np.append(np.flatnonzero(share <= tie), low)
                    starts, stops = lp.link_ptr[hit], lp.link_ptr[hit + 1]
                    new = lp.e_flow[ranges(starts, stops)]
                    at = np.repeat(links[hit], stops - starts)
                    live = np.isinf(rates[new])
                    new = new[live]
                    bottleneck[new] = at[live]
                    new = lp.distinct(new)
            if dq is not None:
                end = int(np.searchsorted(dv, tie, side="right"))
                capped = dq[cursor:end]
                capped = capped[np.isinf(rates[capped])]
                if capped.size:
                    new = lp.distinct(np.concatenate([new, capped]))
                    # Flows capped at their demand are on any links: the promise of
                    # one link's flows (none overflows its table) does not hold for
                    # them.
                    more = True
            if new.size:
                rates[new] = level
                frozen_weight, frozen_pairs = lp.entries_of(new, more)
                pairs -= frozen_pairs
                if counting:
                    residual -= level * frozen_pairs
                else:
                    weight -= frozen_weight
                    residual -= level * frozen_weight
                levels += 1
            if hit is not None:
                if pairs[hit].any() if isinstance(hit, np.ndarray) else pairs[hit]:
                    raise RuntimeError("max-min batch left a saturated link unfrozen")  # never
                residual[hit] = np.inf
        return levels, rates, bottleneck, int(np.count_nonzero(pairs == 0))

    def _settle(self, fl, flows, rates):
        """Remove the route pairs of ``flows`` (frozen at ``rates``) from the shared state."""
        n = self.n_routes
        k, c, load = np.zeros(n), np.zeros(n, np.int64), np.zeros(n)
        for src in self.sources:
            src.settle(flows, rates, k, c, load)
        self.w -= k[:self.w.size]
        self.c -= c
        # One-link routes are links: add their totals as they are, spread the others.
        n_links = fl.cap.size
        first = n - n_links
        shared = np.flatnonzero(c[:first])
        if shared.size:
            entry = ranges(self.ptr[shared], self.ptr[shared + 1])
            link, weight, of = self.link[entry], self.weight[entry], self.of[entry]
            load[first:] += np.bincount(link, weights=weight * load[of], minlength=n_links)
            k[first:] += np.bincount(link, weights=weight * k[of], minlength=n_links)
            c[first:] += np.bincount(link, weights=c[of], minlength=n_links).round().astype(
                np.int64)
        fl.load += load[first:]
        fl.unfrozen_weight -= k[first:]
        fl.unfrozen_pairs -= c[first:]
