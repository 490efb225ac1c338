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
shares never fall while the level rises (see ``_Filling`` in `designer.solver.maxmin`),
so no link outside C saturates below H.  Up to level H, the flows crossing C freeze
exactly as if C were the whole fabric, and a flow crossing no link of C freezes only at
its demand.  The batch then writes the rates back and settles the flows it froze in the
link and route totals in one pass.  ``k`` adapts: it doubles while batches freeze most of
C and halves when they stop early.

Flows reach links through shared routes (`SharedRoutes`) and through private flow-link
pairs, which are one-link routes here: route ``R + l`` is link ``l`` with weight 1, the
pair's weight its multiplicity.  Each kind keeps its own indexes (`_Source`), so the
shared routes, which usually have no multiplicities, carry none.

Each batch also counts the levels that the local minima among its links make
(`BatchSteps.minima`): a sample of what a local round would freeze at once, which the
solver's ``auto`` strategy weighs against the round's price.
"""

from __future__ import annotations

import numpy as np

from designer.solver.shared_routes import argsort_ids

__all__ = ["SATURATED_RTOL", "BatchSteps", "count_levels", "ranges"]

SATURATED_RTOL = 1e-12
"""A link whose residual capacity is below this fraction of its capacity is saturated.

Without it, ``1 - (1/3 + 1/3 + 1/3)`` leaves a residual of one ulp and the next flow would
get a rate of ~1e-16 instead of exactly zero.
"""


_FIRST_K = 64  # links in the first batch


def count_levels(values: np.ndarray, slack: float) -> int:
    """How many distinct levels ``values`` hold, counting values within ``slack`` (a
    factor just above 1) of the one below as the same."""
    if not values.size:
        return 0
    values = np.sort(values)
    return 1 + int(np.count_nonzero(values[1:] > values[:-1] * slack))


def ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(start, stop)`` for each pair, vectorised."""
    lengths = stops - starts
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, np.int64)
    offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
    return offsets + np.arange(total)


def _order(ids: np.ndarray, n: int) -> np.ndarray:
    """An order that groups ``ids`` in ``[0, n)``; cheap when they come presorted."""
    if ids.size < 2:
        return np.arange(ids.size)
    n_descents = int(np.count_nonzero(ids[1:] < ids[:-1]))
    if n_descents == 0:
        return np.arange(ids.size)
    if n <= 1 << 16 and n_descents >= ids.size // 64:
        return argsort_ids(ids, n)
    # A few presorted runs (one per hop, say) merge fast; otherwise any sort will do.
    return np.argsort(ids, kind="stable" if n_descents < ids.size // 64 else "quicksort")


def _csr(ids: np.ndarray, n: int) -> np.ndarray:
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(ids, minlength=n), out=ptr[1:])
    return ptr


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
        if rt is None:
            n_routes = 0
            ptr, e_link, e_weight = np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0)
            w, c = np.zeros(0), np.zeros(0, np.int64)
            self.sources: list[_Source] = []
        else:
            n_routes = rt.n_routes
            ptr, e_link, e_weight = rt.ptr, rt.link, rt.weight
            w, c = rt.w, rt.c
            self.sources = [_Source(rt.rp_flow, rt.rp_route, rt.rp_mult, 0, n_routes, n_flows)]
        self.sources.append(_Source(flow, link, weight, n_routes, n_links, n_flows))
        # Route table with one single-link route per link appended.
        self.n_routes = n_routes + n_links
        self.ptr = np.concatenate([ptr, ptr[-1] + np.arange(1, n_links + 1)])
        self.link = np.concatenate([e_link, np.arange(n_links, dtype=np.int32)]).astype(
            np.int32, copy=False)
        self.weight = np.concatenate([e_weight, np.ones(n_links)])
        self.of = np.repeat(np.arange(self.n_routes, dtype=np.int32), np.diff(self.ptr))
        order = argsort_ids(self.link, n_links)
        self.lr_ptr = _csr(self.link, n_links)
        self.lr_route, self.lr_weight = self.of[order], self.weight[order]
        # Unfrozen pair count per route (a one-link route's: the link's private pairs)
        # and multiplicity per shared route.  The shared routes' part of ``c`` becomes
        # the RouteState's (a view) and ``w`` is its own, so local rounds and batches see
        # one state.
        private = fl.unfrozen_pairs if rt is None else fl.unfrozen_pairs - rt.link_pairs()
        self.c = np.concatenate([c, private])
        self.w = w
        if rt is not None:
            rt.c = self.c[:n_routes]
        self.stamp = np.empty(self.n_routes, np.int64)
        self.local_id = np.empty(n_flows, np.int32)
        self.scratch = np.empty(n_flows, np.int32)
        self.k = _FIRST_K
        self.minima = 0  # levels of the local minima of the last batch's links

    def private_frozen(self, frozen_pairs):
        """Account for private pairs that a local round froze (per link)."""
        self.c[self.n_routes - frozen_pairs.size:] -= frozen_pairs

    def live_pairs(self) -> int:
        """Unfrozen (flow, route) pairs, private pairs included: a local round's work."""
        return int(self.c.sum())

    # ------------------------------------------------------------------ one batch

    def step(self, fl) -> int:
        """Solve the ``k`` lowest links up to the lowest share outside them; return the
        number of levels (freezing steps)."""
        share = fl.share
        n_links = share.size
        k = min(self.k, n_links)
        kth = np.partition(share, k - 1)[k - 1]
        if not np.isfinite(kth):
            kth = share[np.isfinite(share)].max(initial=-np.inf)
        in_c = share <= kth * fl.slack
        links = np.flatnonzero(in_c).astype(np.int32)
        horizon = float(np.min(share, where=~in_c, initial=np.inf))

        flows, lp = self._local_problem(fl, links)
        self.minima = lp.local_minima(share[links], fl.slack)
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
        lp = _LocalProblem(links.size, e_flow, e_link, e_weight, self.scratch, self.local_id)
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


class _Source:
    """One kind of route pairs (flows taking shared routes, or private flow-link pairs as
    one-link routes), indexed by route and by flow.  Route ids are local to the source;
    ``offset`` places them among all routes."""

    def __init__(self, flow, route, mult, offset, n_routes, n_flows):
        self.offset, self.n_routes = offset, n_routes
        if mult is not None and np.array_equal(mult.astype(np.float32), mult):
            mult = mult.astype(np.float32)  # exact (1/2, 1/4...): half the memory traffic
        # Route -> flows.  Flows that froze already are dropped when a batch first reads
        # their route (`entries`).
        order = _order(route, n_routes)
        self.rf_ptr = _csr(route, n_routes)
        self.rf_end = self.rf_ptr[1:].copy()  # flow lists shrink as flows freeze
        self.rf_flow = flow[order]
        self.rf_mult = None if mult is None else mult[order]
        # Flow -> routes, for the flows that freeze.  Pairs usually come in a few runs
        # sorted by flow (one per hop, say), which a stable sort merges fast.
        order = _order(flow, n_flows)
        self.fr_ptr = _csr(flow, n_flows)
        self.fr_route = route[order]
        self.fr_mult = None if mult is None else mult[order]

    def entries(self, route, weight, local_link, count, frozen, stamp):
        """Unfrozen (flow, local link, weight) of ``route`` (global ids) crossing local
        links with ``weight``; ``count`` is the unfrozen pairs of each route."""
        route = route - self.offset
        self._compact(route, count[self.offset:self.offset + self.n_routes], frozen, stamp)
        starts, stops = self.rf_ptr[route], self.rf_end[route]
        pair = ranges(starts, stops)
        counts = stops - starts
        e_weight = np.repeat(weight, counts)
        if self.rf_mult is not None:
            e_weight *= self.rf_mult[pair]
        return self.rf_flow[pair], np.repeat(local_link, counts), e_weight

    def _compact(self, routes, count, frozen, stamp):
        """Drop frozen flows from the flow lists of ``routes`` (those that have any)."""
        start, end = self.rf_ptr[routes], self.rf_end[routes]
        stale = end - start > count[routes]
        if not stale.any():
            return
        routes = routes[stale]
        position = np.arange(routes.size)
        stamp[routes] = position
        routes = routes[stamp[routes] == position]  # each once
        start, end = self.rf_ptr[routes], self.rf_end[routes]
        pair = ranges(start, end)
        flow = self.rf_flow[pair]
        keep = ~frozen[flow]
        kept = count[routes]  # the live pairs of each route, exactly
        into = ranges(start, start + kept)
        self.rf_flow[into] = flow[keep]
        if self.rf_mult is not None:
            self.rf_mult[into] = self.rf_mult[pair][keep]
        self.rf_end[routes] = start + kept

    def settle(self, flows, rates, k, c, load) -> None:
        """Add the multiplicity, count and load (``rates`` per flow) of the route pairs of
        ``flows`` to ``k``, ``c`` and ``load`` (per route)."""
        starts, stops = self.fr_ptr[flows], self.fr_ptr[1:][flows]
        pair = ranges(starts, stops)
        if not pair.size:
            return
        route = self.fr_route[pair].astype(np.intp)
        per_pair = np.repeat(rates, stops - starts)
        n = self.n_routes
        mine = slice(self.offset, self.offset + n)
        count = np.bincount(route, minlength=n)
        c[mine] += count
        if self.fr_mult is None:
            k[mine] += count
        else:
            mult = self.fr_mult[pair]
            k[mine] += np.bincount(route, weights=mult, minlength=n)
            per_pair *= mult
        load[mine] += np.bincount(route, weights=per_pair, minlength=n)


class _LocalProblem:
    """Entries (local flow, local link, weight) of a batch, indexed both ways.

    By link: CSR over the entries as they come (grouped by link).  By flow: a padded
    ``(width, flows)`` table of links (and weights, unless all are ``unit``), so that a
    level takes one gather; filled slot by slot without sorting, each flow's column
    listing its links in falling order and then the padding, ``n_links``.  The table is kept within
    about twice the entries: the entries of the few flows that cross more links of C
    than it has slots go to an overflow CSR.  ``repeats`` tells whether some flow is
    listed twice on one link (then a link's flows need deduplication).
    """

    def __init__(self, n_links, e_flow, e_link, e_weight, scratch, local_id):
        self.n_links = n_links
        n_entries = e_flow.size
        position = np.arange(n_entries, dtype=np.int32)
        scratch[e_flow] = position
        last = scratch[e_flow] == position  # one entry per flow: its last
        self.flows = e_flow[last]
        n_flows = self.flows.size
        local_id[self.flows] = np.arange(n_flows, dtype=np.int32)
        self.e_flow = local_id[e_flow]
        self.link_ptr = _csr(e_link, n_links)
        self.stamp = np.empty(n_flows, np.int64)
        # One weight for all entries (the common case: whole routes of unit weight) lets
        # the filling count entries instead of summing weights.
        self.unit = float(e_weight[0]) if n_entries and bool(
            np.all(e_weight == e_weight[0])) else None
        per_flow = np.bincount(self.e_flow, minlength=n_flows)
        width = min(int(per_flow.max(initial=1)), 8,
                    max(1, (2 * n_entries + 1024) // max(n_flows, 1)))
        # Slot-major: a slot is filled by 1-D scatters (2x faster than 2-D ones).
        link = np.full((width, n_flows), n_links, np.int32)
        weight = None if self.unit is not None else np.zeros((width, n_flows))
        link[0] = e_link[last]
        if weight is not None:
            weight[0] = e_weight[last]
        rest = np.flatnonzero(~last)
        repeats = False
        for slot in range(1, width):
            flow = self.e_flow[rest]
            position = np.arange(rest.size)
            self.stamp[flow] = position
            last = self.stamp[flow] == position
            flow = flow[last]
            link[slot, flow] = e_link[rest[last]]
            if weight is not None:
                weight[slot, flow] = e_weight[rest[last]]
            # A flow listed twice on a link has the two entries in adjacent slots.
            repeats = repeats or bool(np.any(link[slot, flow] == link[slot - 1, flow]))
            rest = rest[~last]
        self.table = (link, weight)
        self.repeats = repeats
        self.more = None
        self.more_on_link = [False] * n_links  # some flow of the link overflows
        if rest.size:
            flow = self.e_flow[rest]
            order = _stable_order(flow, n_flows)
            self.more = per_flow > width
            self.more_ptr = _csr(flow, n_flows)
            self.more_link = e_link[rest][order]
            self.more_weight = e_weight[rest][order]
            long = np.flatnonzero(self.more)
            pair_flow = np.concatenate([np.tile(long, width), flow])
            pair_link = np.concatenate([link[:, long].ravel(), e_link[rest]])
            on = np.zeros(n_links + 1, bool)
            on[pair_link] = True
            self.more_on_link = on[:n_links].tolist()
            if not self.repeats:  # look for repeats among the long flows' entries too
                order = np.lexsort((pair_link, pair_flow))
                pair_flow, pair_link = pair_flow[order], pair_link[order]
                self.repeats = bool(np.any((pair_flow[1:] == pair_flow[:-1])
                                           & (pair_link[1:] == pair_link[:-1])))

    def local_minima(self, share, slack) -> int:
        """How many levels the local minima among the links (at ``share``) make: what a
        local round would freeze at once (by the table; overflow entries unseen)."""
        counts = np.diff(self.link_ptr)
        if not self.e_flow.size:
            return 0
        flow_min = np.take(np.append(share, np.inf), self.table[0]).min(axis=0)
        starts = self.link_ptr[:-1][counts > 0]
        link_min = np.minimum.reduceat(flow_min[self.e_flow], starts)
        share = share[counts > 0]
        return count_levels(share[link_min * slack >= share], slack)

    def flows_of(self, links):
        """The entries' flows of ``links``."""
        if links.size == 1:
            return self.e_flow[self.link_ptr[links[0]]:self.link_ptr[links[0] + 1]]
        return self.e_flow[ranges(self.link_ptr[links], self.link_ptr[links + 1])]

    def distinct(self, flows):
        position = np.arange(flows.size)
        self.stamp[flows] = position
        return flows[self.stamp[flows] == position]

    def entries_of(self, flows, more=True):
        """Weight (None if ``unit``) and number of entries of ``flows`` on each link
        (flows distinct); ``more=False`` promises that none of them overflows."""
        n = self.n_links
        # np.take: 2x faster than fancy indexing here
        link = np.take(self.table[0], flows, axis=1).ravel()
        weight = None if self.unit is not None else np.take(self.table[1], flows,
                                                                axis=1).ravel()
        if more and self.more is not None:
            extra = flows[self.more[flows]]
            if extra.size:
                entry = ranges(self.more_ptr[extra], self.more_ptr[extra + 1])
                link = np.concatenate([link, self.more_link[entry]])
                if weight is not None:
                    weight = np.concatenate([weight, self.more_weight[entry]])
        count = np.bincount(link, minlength=n + 1)[:n]
        if weight is None:
            return None, count
        return np.bincount(link, weights=weight, minlength=n + 1)[:n], count


def _stable_order(ids: np.ndarray, n: int) -> np.ndarray:
    """A stable argsort of ``ids`` in ``[0, n)``: radix sorts on 16-bit digits."""
    if n <= 1 << 16:
        return argsort_ids(ids, n)
    low = np.argsort((ids & 0xFFFF).astype(np.uint16), kind="stable")
    high = np.argsort((ids[low] >> 16).astype(np.uint16), kind="stable")
    return low[high]
