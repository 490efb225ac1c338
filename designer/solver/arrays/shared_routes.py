"""Routes shared by many flows: the factored flow-link incidence of the max-min solver.

An all-to-all among 1,024 GPUs under adaptive routing is a million flows, each spread
over every equal-cost path between its two leaf switches: listed flow by flow that is
36 million flow-link pairs, nearly all of them in the fabric.  But the fabric part of a
flow depends only on its pair of leaf switches (a route *class*): a thousand distinct
routes carry a million flows.  `SharedRoutes` stores each route once (links and split
weights) and, per flow, which routes it takes; the max-min solver then works on
per-route counts of unfrozen flows instead of expanding every flow's copy of the route.

The meaning is exactly that of the expanded pairs: a flow ``f`` taking route ``r`` with
multiplicity ``m`` puts ``m * w * rate_f`` on every link of ``r`` with weight ``w``
(`SharedRoutes.expand` gives those pairs; the tests solve both forms and compare).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from designer.solver.arrays.ragged import PendingRows, ragged_arange
from designer.solver.tuning import current

__all__ = ["SharedRoutes", "bincount"]


def bincount(ids: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    """``np.bincount(ids, weights, minlength=n)`` for ids in ``[0, n)``, in slices when
    there are many ids and few bins.

    np.bincount copies int32 ids to int64 first; a copy of millions of ids is fresh
    memory, whose page faults cost more than the counting.  A slice's copy is small
    enough to be reused.
    """
    step = current().bincount_slice
    if ids.size <= 2 * step or n > step or ids.dtype == np.intp:
        return np.bincount(ids, weights, minlength=n)
    out = np.zeros(n, np.int64 if weights is None else np.float64)
    for a in range(0, ids.size, step):
        out += np.bincount(ids[a:a + step], None if weights is None else weights[a:a + step],
                           minlength=n)
    return out


@dataclass(frozen=True)
class SharedRoutes:
    """Routes (links with split weights) and the flows that take them.

    Attributes
    ----------
    ptr : ndarray of int64, shape (R + 1,)
        Route ``r`` is entries ``ptr[r]:ptr[r + 1]`` of ``link`` and ``weight``.
    link : ndarray of int, shape (E,)
        Link of each route entry.
    weight : ndarray of float64, shape (E,)
        Fraction of a flow's rate that the route puts on that link, ``> 0``.
    pair_flow, pair_route : ndarray of int, shape (Q,)
        Flow ``pair_flow[q]`` takes route ``pair_route[q]``; a flow may take several
        routes (a ring channel crosses one fabric route per hop) and a route may repeat.
    pair_mult : ndarray of float64, shape (Q,), optional
        How many times the flow takes that route (weights scale by it); default 1.
    local : ndarray of bool, shape (R,), optional
        Routes that are one endpoint's own way in or out (a GPU to its NIC and the NIC's
        cable), as opposed to fabric routes between edge switches; views that name a
        transfer's ends expand them (`Phase.local_view`).  Default: none.

    Examples
    --------
    Two flows share route 0 (links 0 and 1, half each); flow 1 also takes route 1.

    >>> r = SharedRoutes.build([[0, 1], [2]], [[0.5, 0.5], [1.0]], [0, 1, 1], [0, 0, 1])
    >>> r.expand()
    (array([0, 0, 1, 1, 1]), array([0, 1, 0, 1, 2]), array([0.5, 0.5, 0.5, 0.5, 1. ]))
    """

    ptr: np.ndarray
    link: np.ndarray
    weight: np.ndarray
    pair_flow: np.ndarray
    pair_route: np.ndarray
    pair_mult: np.ndarray | None = None
    local: np.ndarray | None = None

    @classmethod
    def build(cls, links, weights, pair_flow, pair_route, pair_mult=None) -> SharedRoutes:
        """From per-route lists of links and weights (for tests and small cases)."""
        lengths = np.array([len(x) for x in links], dtype=np.int64)
        ptr = np.zeros(len(links) + 1, np.int64)
        np.cumsum(lengths, out=ptr[1:])
        flat = lambda xs, dt: np.concatenate([np.asarray(x, dt) for x in xs]) if xs else (  # noqa: E731
            np.zeros(0, dt))
        return cls(ptr, flat(links, np.int64), flat(weights, np.float64),
                   np.asarray(pair_flow, np.int64), np.asarray(pair_route, np.int64),
                   None if pair_mult is None else np.asarray(pair_mult, np.float64))

    @property
    def n_routes(self) -> int:
        return len(self.ptr) - 1

    def route_of_entry(self) -> np.ndarray:
        """The route of each entry of ``link``."""
        return np.repeat(np.arange(self.n_routes, dtype=np.int32), np.diff(self.ptr))

    def expand(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The equivalent flow-link pairs ``(flow, link, weight)`` (memory: every copy)."""
        starts, lengths = self.ptr[self.pair_route], np.diff(self.ptr)[self.pair_route]
        entries = ragged_arange(starts, lengths)
        mult = np.ones(len(self.pair_flow)) if self.pair_mult is None else self.pair_mult
        return (np.repeat(self.pair_flow, lengths), self.link[entries],
                self.weight[entries] * np.repeat(mult, lengths))

    def link_load(self, rates: np.ndarray, n_links: int) -> np.ndarray:
        """``sum_f m * w * rates[f]`` on each link: the load the routes put there."""
        n_pairs = len(self.pair_flow)
        t = current()
        step = t.route_load_slice if self.n_routes <= t.bincount_slice else max(n_pairs, 1)
        # Per route, in slices of pairs when there are few routes: a rate per pair would
        # be a fresh array as long as the pairs (16 MB for an all-to-all among 1,024
        # GPUs); with many routes, a slice's counts would cost more than that.
        per_route = np.zeros(self.n_routes)
        for a in range(0, n_pairs, step):
            b = a + step
            per_pair = rates[self.pair_flow[a:b]]
            if self.pair_mult is not None:
                per_pair *= self.pair_mult[a:b]
            per_route += np.bincount(self.pair_route[a:b], per_pair, minlength=self.n_routes)
        ptr = self.ptr
        if len(self.link) <= t.route_load_slice:
            per_entry = np.repeat(per_route, np.diff(ptr))
            per_entry *= self.weight
            return bincount(self.link, n_links, per_entry)
        # A tree all-reduce on 16k GPUs has 2.7 million route entries: whole-array
        # temporaries page-fault, and one numpy call on them holds the GIL for ~100 ms,
        # which the GUI thread would wait out.  Slices of whole routes instead.
        out = np.zeros(n_links)
        cuts = np.unique(np.searchsorted(
            ptr, np.arange(0, int(ptr[-1]), t.route_load_slice), side="right") - 1)
        cuts = np.append(cuts, self.n_routes)
        for r0, r1 in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            e0, e1 = int(ptr[r0]), int(ptr[r1])
            per_entry = np.repeat(per_route[r0:r1], np.diff(ptr[r0:r1 + 1]))
            per_entry *= self.weight[e0:e1]
            out += np.bincount(self.link[e0:e1], per_entry, minlength=n_links)
        return out

    def offset(self, flows: int, links: int = 0) -> SharedRoutes:
        """The same routes with flow ids (and link ids) shifted: for merging phases."""
        return SharedRoutes(self.ptr, self.link + links, self.weight, self.pair_flow + flows,
                            self.pair_route, self.pair_mult, self.local)

    def select(self, routes: np.ndarray) -> SharedRoutes:
        """Only the route pairs taking ``routes`` (a bool mask over routes); the route
        table is kept whole, so route ids do not change."""
        keep = routes[self.pair_route]
        return SharedRoutes(self.ptr, self.link, self.weight, self.pair_flow[keep],
                            self.pair_route[keep],
                            None if self.pair_mult is None else self.pair_mult[keep],
                            None if self.local is None else self.local)

    @classmethod
    def concat(cls, parts: list[SharedRoutes],
               tails: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None,
               link_dtype: type | None = None) -> SharedRoutes:
        """Routes of several sets side by side (route ids renumbered).

        ``tails[i]``, if given, is ``(link, weight)`` entries that follow
        ``parts[i]``'s own, where ``parts[i].ptr`` already counts them (a set whose
        entries are written here, once, rather than joined first and copied again); or
        a `PendingRows` that writes them; or a list of those, one after another.
        ``link_dtype``: the links' type in a result that is written (narrower than the
        parts' where the caller knows the ids fit); default: numpy's common type of the
        parts'.  One set with no tail, its links of that type, is returned as it is.
        """
        tails = [[] if t is None else t if isinstance(t, list) else [t]
                 for t in ([None] * len(parts) if tails is None else tails)]
        if len(parts) == 1:
            p, tail = parts[0], tails[0]
            if not tail and (link_dtype is None or p.link.dtype == link_dtype):
                return p
            # The entries alone are written: the pairs need no renumbering.
            entries = [(p.link, p.weight), *tail]
            link, weight = _written(entries, int(p.ptr[-1]), link_dtype)
            return cls(p.ptr, link, weight, p.pair_flow, p.pair_route, p.pair_mult, p.local)
        ptrs, base_entry, base_route = [np.zeros(1, np.int64)], 0, 0
        route_ids, entries = [], []
        for p, tail in zip(parts, tails, strict=True):
            ptrs.append(p.ptr[1:] + base_entry)
            route_ids.append(p.pair_route + base_route)
            base_entry += int(p.ptr[-1])
            base_route += p.n_routes
            entries.append((p.link, p.weight))
            entries.extend(tail)
        mult = None
        if any(p.pair_mult is not None for p in parts):
            mult = np.concatenate([np.ones(len(p.pair_flow)) if p.pair_mult is None
                                   else p.pair_mult for p in parts])
        local = None
        if any(p.local is not None for p in parts):
            local = np.concatenate([np.zeros(p.n_routes, bool) if p.local is None
                                    else p.local for p in parts])
        ids = np.int32 if base_route < 2**31 else np.int64
        link, weight = _written(entries, base_entry, link_dtype)
        return cls(np.concatenate(ptrs), link, weight, np.concatenate([p.pair_flow for p in parts]),
                   np.concatenate(route_ids).astype(ids, copy=False), mult, local)


def _written(entries: list, n: int, link_dtype: type | None
             ) -> tuple[np.ndarray, np.ndarray]:
    """``entries`` end to end (``n`` in all), written straight into arrays of the
    result's types (no wider copy first): each a ``(link, weight)`` pair of arrays, or a
    `PendingRows` that writes its own."""
    dtypes = [e.arcs_dtype if isinstance(e, PendingRows) else e[0].dtype for e in entries]
    link = np.empty(n, link_dtype or np.result_type(*dtypes))
    weight = np.empty(n, np.float64)
    at = 0
    for e in entries:
        if isinstance(e, PendingRows):
            m = e.size
            e.write(link[at:at + m], weight[at:at + m])
        else:
            m = len(e[0])
            link[at:at + m] = e[0]
            weight[at:at + m] = e[1]
        at += m
    return link, weight


class RouteState:
    """The max-min filling's view of shared routes: unfrozen multiplicity per route.

    ``w[r]`` is the sum of multiplicities of the unfrozen flows taking route ``r`` (so
    route ``r`` puts ``w[r] * weight`` of unfrozen weight on each of its links), ``c[r]``
    the number of those (flow, route) pairs (so the link's count of unfrozen pairs, as if
    expanded, stays exact).
    """

    def __init__(self, routes: SharedRoutes, n_links: int):
        self.ptr, self.link, self.weight = routes.ptr, routes.link, routes.weight
        self.n_links = n_links
        self.n_routes = routes.n_routes
        self._routes = routes
        self.rp_flow, self.rp_route = routes.pair_flow, routes.pair_route
        self.rp_mult = routes.pair_mult  # None: all 1
        self.lengths = np.diff(self.ptr)

    # Built on first use (filling by levels needs none of them); ``w`` and ``c`` are
    # counted together, then change as flows freeze.
    @cached_property
    def of(self) -> np.ndarray:
        """The route of each entry."""
        return self._routes.route_of_entry()

    @cached_property
    def w(self) -> np.ndarray:
        return self._count()[0]

    @cached_property
    def c(self) -> np.ndarray:
        return self._count()[1]

    def _count(self) -> tuple[np.ndarray, np.ndarray]:
        if "w" not in self.__dict__:
            c = bincount(self.rp_route, self.n_routes).astype(np.int64)
            w = c.astype(np.float64) if self.rp_mult is None else bincount(
                self.rp_route, self.n_routes, self.rp_mult).astype(np.float64)
            self.__dict__.setdefault("c", c)
            self.__dict__["w"] = w
        return self.__dict__["w"], self.__dict__["c"]

    # ------------------------------------------------------------------ per link totals
    def link_weight(self) -> np.ndarray:
        """Unfrozen weight each link carries from the routes."""
        return np.bincount(self.link, weights=self.weight * self.w[self.of],
                           minlength=self.n_links)

    def link_pairs(self) -> np.ndarray:
        """Unfrozen (flow, link) pairs each link carries from the routes, as if expanded."""
        return np.bincount(self.link, weights=self.c[self.of],
                           minlength=self.n_links).round().astype(np.int64)

    def size(self) -> int:
        """Work of one pass over the state (for the solver's cost model)."""
        return len(self.rp_flow) + len(self.link)

    def compact(self, frozen: np.ndarray) -> None:
        keep = ~frozen[self.rp_flow]
        if not keep.all():
            self.rp_flow, self.rp_route = self.rp_flow[keep], self.rp_route[keep]
            self.rp_mult = None if self.rp_mult is None else self.rp_mult[keep]

    # ------------------------------------------------------------------ local rounds
    def route_min(self, share: np.ndarray) -> np.ndarray:
        """The lowest share on each route (inf for a route without links)."""
        out = np.full(self.n_routes, np.inf)
        if self.link.size:
            nonempty = self.lengths > 0
            out[nonempty] = np.minimum.reduceat(share[self.link], self.ptr[:-1][nonempty])
        return out

    def block(self, blocked: np.ndarray, share: np.ndarray, flow_min: np.ndarray,
              slack: float) -> None:
        """Mark the links of each route on which some unfrozen flow of the route sees a
        lower share elsewhere (they are not local minima)."""
        lowest = np.full(self.n_routes, np.inf)
        np.minimum.at(lowest, self.rp_route, flow_min[self.rp_flow])
        blocked[self.link[lowest[self.of] * slack < share[self.link]]] = True

    def freeze_hit(self, local_min: np.ndarray, frozen: np.ndarray,
                   bottleneck: np.ndarray) -> None:
        """Freeze the flows of every route that crosses a local-minimum link."""
        hit = np.flatnonzero(local_min[self.link])
        if not hit.size:
            return
        route_bn = np.full(self.n_routes, -1, np.int32)
        route_bn[self.of[hit]] = self.link[hit]
        at = route_bn[self.rp_route]
        sel = at >= 0
        flows = self.rp_flow[sel]
        bottleneck[flows] = at[sel]
        frozen[flows] = True

    def settle(self, route: np.ndarray, mult: np.ndarray | None, rates: np.ndarray | float,
               last: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Remove route pairs (``route``, ``mult``: of flows just frozen at ``rates``, per
        pair or one level) from the unfrozen totals.  Returns the links touched and, on
        each link, the load added, the unfrozen weight and the unfrozen pairs removed
        (only the load when ``last``: nothing is left to fill)."""
        nr = self.n_routes
        if last and np.ndim(rates):
            load_r = bincount(route, nr, rates if mult is None else mult * rates)
            link, of = self.link, self.of
            return link, np.bincount(link, weights=self.weight * load_r[of],
                                     minlength=self.n_links), 0.0, 0
        k = bincount(route, nr, mult).astype(np.float64)
        c = bincount(route, nr)
        if np.ndim(rates):
            load_r = bincount(route, nr, rates if mult is None else mult * rates)
        else:
            load_r = k * rates
        self.w -= k
        self.c -= c
        routes = np.flatnonzero(c)
        starts, lengths = self.ptr[routes], self.lengths[routes]
        entries = ragged_arange(starts, lengths)
        link, weight, of = self.link[entries], self.weight[entries], self.of[entries]
        n = self.n_links
        return (link,
                np.bincount(link, weights=weight * load_r[of], minlength=n),
                np.bincount(link, weights=weight * k[of], minlength=n),
                np.bincount(link, weights=c[of], minlength=n).round().astype(np.int64))
