"""Progressive filling level by level, for max-min problems with few flows.

A ring all-reduce over 16,384 GPUs is a handful of flows (a channel per direction) that
cross 800k flow-link pairs between them.  A local round (``_Filling.local_round`` in
`designer.solver.rates.maxmin`) pays a scatter-minimum per pair to find the lowest share each
flow sees, and keeps per-link totals of unfrozen pairs up to date with more scatters.
With F flows, textbook progressive filling needs at most F levels, and one level takes
only cheap whole-array passes:

1. the unfrozen weight of every link, from scratch: a sum over the unfrozen pairs, and
   for shared routes one over the route entries weighted by the unfrozen multiplicity
   of their route (so a link carries weight exactly when an unfrozen flow crosses it:
   no counts to keep);
2. the level t, the lowest share ``(capacity - load) / unfrozen weight`` (or demand);
3. every unfrozen flow that crosses a link at t (within the tie tolerance) or has its
   demand there freezes at t.

Freezing at the global minimum is progressive filling itself, so the rates are exact.
Loads need no pass of their own: the flows that froze at level t put
``t * (unfrozen weight before - unfrozen weight after)`` on each link, and the next
level computes the second term anyway; after the last level, every flow left froze, so
the whole unfrozen weight counts.  A link whose flows did not change has the same
terms summed in the same order, so the difference there is exactly zero.

The solver's ``auto`` strategy switches to levels once at most `Tuning.few_flows` flows are
unfrozen (from the start for a ring, or after local rounds), unless batches of global
steps ran: F levels of a few cheap passes each cost about a local round then, whatever
the traffic.  Once it switches it stays: levels keep none of the per-link totals that
local rounds and batches update.

Every long array goes in slices of `Tuning.level_slice` entries.  Fresh memory costs a page fault
per 4 KiB on first touch, which on a VM costs more than the arithmetic on it: a ring's
whole-array temporaries (and `numpy.bincount`'s int64 copy of int32 ids) cost as much as
the passes themselves, while slices' temporaries are small enough for the allocator to
reuse.
"""

from __future__ import annotations

import itertools

import numpy as np

from designer.solver.rates.steps import SATURATED_RTOL
from designer.solver.tuning import current

__all__ = ["LevelFilling"]


class LevelFilling:
    """Level-by-level filling that continues the state of a ``_Filling``.

    Reads the filling's unfrozen pairs and route pairs, and writes its rates,
    bottlenecks, frozen flags and loads.  Callers usually list a flow's pairs together;
    then each unfrozen flow's pairs are a span of the pair arrays, and a flow that
    freezes is simply skipped from then on.  Otherwise the pairs of frozen flows are
    sifted out at each level, as for the route pairs.
    """

    def __init__(self, filling, fresh: bool):
        filling.compact()
        self.active = np.flatnonzero(~filling.frozen).astype(np.int32)
        self.pending = None  # (level, unfrozen weight) of the last level, for the loads
        self.fresh = fresh  # no load yet (``filling.load`` all zero, never touched)
        flow = filling.pairs[0]
        self.spans = None  # (start, stop) of each active flow's pairs, if grouped
        if flow.size and not np.any(flow[1:] < flow[:-1]):
            self.spans = (np.searchsorted(flow, self.active, "left"),
                          np.searchsorted(flow, self.active, "right"))

    def step(self, fl) -> int:
        """Freeze the flows at the next level; return 1 (the levels taken)."""
        if self.spans is None:
            fl.compact()
        elif self.pending is not None and fl.routes is not None:
            fl.routes.compact(fl.frozen)  # the private pairs stay, in their spans
        unfrozen = self._unfrozen_weight(fl)
        if self.pending is not None:  # the flows of the last level, now frozen
            level, before = self.pending
            before -= unfrozen
            before *= level
            self._add_load(fl, before)
        cap = fl.cap
        if self.fresh:
            residual = cap
        else:
            residual = cap - fl.load
            residual[residual <= SATURATED_RTOL * cap] = 0.0
        # Residual >= 0: x / 0 is inf, or nan on a link with neither room nor flows,
        # which fmin and the comparison below ignore.  The shares go a slice of links
        # at a time, twice (for the level, then for the links at it): a whole array of
        # them would be fresh memory, a page fault per 512 links.
        step = current().level_slice
        cuts = range(0, cap.size, step)
        level = np.inf
        with np.errstate(divide="ignore", invalid="ignore"):
            for a in cuts:
                share = residual[a:a + step] / unfrozen[a:a + step]
                level = min(level, float(np.fmin.reduce(share, initial=np.inf)))
        active = self.active
        if fl.dem is not None:
            level = min(level, float(fl.dem[active].min(initial=np.inf)))
        if not level < np.inf:  # a flow on routes without links and no demand
            raise RuntimeError("max-min levels stalled; please report this input")
        tie = level * fl.slack
        hit = np.empty(cap.size, dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            for a in cuts:
                np.less_equal(residual[a:a + step] / unfrozen[a:a + step], tie,
                              out=hit[a:a + step])
        self._freeze_crossing(fl, hit)
        if fl.dem is not None:  # capped flows keep bottleneck -1 unless a link froze them
            fl.frozen[active[fl.dem[active] <= tie]] = True
        done = fl.frozen[active]
        new = active[done]
        if not new.size:  # impossible (the lowest link or demand qualifies)
            raise RuntimeError("max-min levels stalled; please report this input")
        fl.rates[new] = level
        fl.n_active -= new.size
        self.active = active[~done]
        if self.spans is not None:
            self.spans = (self.spans[0][~done], self.spans[1][~done])
        if fl.n_active == 0:  # everything left froze at this level
            unfrozen *= level
            self._add_load(fl, unfrozen)
        else:
            self.pending = (level, unfrozen)
            fl.pairs_stale = True
        return 1

    def _add_load(self, fl, load):
        """Add ``load`` (a scratch array) to the filling's loads."""
        if self.fresh:  # adopt it: the zeros were never touched (no page faults)
            fl.load, self.fresh = load, False
        else:
            fl.load += load

    def _pair_slices(self, fl):
        """Slices of the unfrozen flows' pairs, `Tuning.level_slice` pairs at most, with the flow of
        each slice (None: several)."""
        n_pairs, step = fl.pairs[0].size, current().level_slice
        if self.spans is None:
            return [(a, min(a + step, n_pairs), None) for a in range(0, n_pairs, step)]
        return [(a, min(a + step, stop), f)
                for f, start, stop in zip(self.active.tolist(), *(x.tolist() for x in self.spans),
                                          strict=True)
                for a in range(start, stop, step)]

    def _unfrozen_weight(self, fl) -> np.ndarray:
        """The unfrozen weight on each link, from the unfrozen pairs and route pairs.

        np.add.at, not np.bincount: bincount copies int32 ids to int64 first.
        """
        _, link, weight = fl.pairs
        unfrozen = np.zeros(fl.cap.size)
        for a, b, _ in self._pair_slices(fl):
            np.add.at(unfrozen, link[a:b], 1.0 if weight is None else weight[a:b])
        rt = fl.routes
        if rt is not None:
            mult = np.zeros(rt.n_routes)
            np.add.at(mult, rt.rp_route, 1.0 if rt.rp_mult is None else rt.rp_mult)
            ptr = rt.ptr
            for a, b in _route_slices(ptr):
                start, stop = int(ptr[a]), int(ptr[b])
                per_entry = np.repeat(mult[a:b], rt.lengths[a:b])
                per_entry *= rt.weight[start:stop]
                np.add.at(unfrozen, rt.link[start:stop], per_entry)
        return unfrozen

    def _freeze_crossing(self, fl, hit: np.ndarray) -> None:
        """Freeze the unfrozen flows that cross a link where ``hit``; the bottleneck of
        each is one of those links."""
        flow, link, _ = fl.pairs
        frozen, bottleneck = fl.frozen, fl.bottleneck
        for a, b, f in self._pair_slices(fl):
            if f is not None and frozen[f]:
                continue  # found on an earlier slice of its pairs
            links = link[a:b]
            on = hit[links]
            if not on.any():
                continue
            if f is None:
                flows = flow[a:b][on]
                frozen[flows] = True
                bottleneck[flows] = links[on]
            else:
                frozen[f] = True
                bottleneck[f] = links[on.argmax()]
        rt = fl.routes
        if rt is None:
            return
        at_route = None  # a link of the level on each route that has one (any will do)
        ptr = rt.ptr
        for a, b in _route_slices(ptr):
            start, stop = int(ptr[a]), int(ptr[b])
            links = rt.link[start:stop]
            on = hit[links]
            if on.any():
                if at_route is None:
                    at_route = np.full(rt.n_routes, -1, np.int32)
                of = np.repeat(np.arange(a, b, dtype=np.int32), rt.lengths[a:b])
                at_route[of[on]] = links[on]
        if at_route is not None:
            at = at_route[rt.rp_route]
            on = at >= 0
            flows = rt.rp_flow[on]
            frozen[flows] = True
            bottleneck[flows] = at[on]


def _route_slices(ptr: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive route ranges ``(a, b)`` of about `Tuning.level_slice` entries each (a long route
    goes whole)."""
    n_routes, step = ptr.size - 1, current().level_slice
    cuts = np.searchsorted(ptr, np.arange(step, int(ptr[-1]), step)).tolist()
    cuts = sorted({0, n_routes, *cuts})
    return list(itertools.pairwise(cuts))
