"""Indexes of the max-min solver's batches of global steps (`designer.solver.rates.steps`).

`RoutePairs` holds one kind of route pairs (flows taking shared routes, or private
flow-link pairs as one-link routes) indexed by route, to list the flows on a batch's
links, and by flow, to settle the flows a batch froze.  `LocalProblem` is a batch's
small problem: the entries of its flows on its links, indexed by link and by flow.

Flows usually take a few routes each (a host route at each end, a link or two per
hop), so the index by flow is a table with a row per route a flow takes: settling a
batch's flows is then one gather, not a gather of ranges.  The solver lists pairs hop by
hop, each hop's in flow order; such blocks fill the table's rows without sorting.
"""

from __future__ import annotations

import itertools

import numpy as np

from designer.solver.arrays.ragged import ragged_arange, stable_argsort
from designer.solver.arrays.shared_routes import bincount
from designer.solver.tuning import current

__all__ = ["LocalProblem", "RoutePairs", "count_levels", "csr", "ranges"]


def count_levels(values: np.ndarray, slack: float) -> int:
    """How many distinct levels ``values`` hold, counting values within ``slack`` (a
    factor just above 1) of the one below as the same."""
    if not values.size:
        return 0
    values = np.sort(values)
    return 1 + int(np.count_nonzero(values[1:] > values[:-1] * slack))


def ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(start, stop)`` for each pair, vectorised."""
    return ragged_arange(starts, stops - starts)


def _order(ids: np.ndarray, n: int) -> np.ndarray:
    """An order that groups ``ids`` in ``[0, n)``; cheap when they come presorted."""
    if ids.size < 2:
        return np.arange(ids.size)
    n_descents = int(np.count_nonzero(ids[1:] < ids[:-1]))
    if n_descents == 0:
        return np.arange(ids.size)
    if n <= 1 << 16 and n_descents >= ids.size // 64:
        return stable_argsort(ids, n)
    # A few presorted runs (one per hop, say) merge fast; otherwise any sort will do.
    return np.argsort(ids, kind="stable" if n_descents < ids.size // 64 else "quicksort")


def csr(ids: np.ndarray, n: int, counts: np.ndarray | None = None) -> np.ndarray:
    """Offsets of ids ``[0, n)`` grouped (``counts``: of each id, if known)."""
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(bincount(ids, n) if counts is None else counts, out=ptr[1:])
    return ptr


class RoutePairs:
    """One kind of route pairs (flows taking shared routes, or private flow-link pairs as
    one-link routes), indexed by route (a CSR) and by flow (a table, or a CSR when some
    flows take more than `Tuning.table_rows` routes).  Route ids are local to the source;
    ``offset`` places them among all routes."""

    def __init__(self, flow, route, mult, offset, n_routes, n_flows, counts=None):
        """``counts``: the pairs of each route, if known (else counted here)."""
        self.offset, self.n_routes = offset, n_routes
        if mult is not None and np.array_equal(mult.astype(np.float32), mult):
            mult = mult.astype(np.float32)  # exact (1/2, 1/4...): half the memory traffic
        # Route -> flows.  Flows that froze already are dropped when a batch first reads
        # their route (`entries`).
        order = _order(route, n_routes)
        self.rf_ptr = csr(route, n_routes, counts)
        self.rf_end = self.rf_ptr[1:].copy()  # flow lists shrink as flows freeze
        self.rf_flow = flow[order]
        self.rf_mult = None if mult is None else mult[order]
        # Flow -> routes, for the flows that freeze: a table (row j: each flow's j-th
        # route, or n_routes for none) when flows take few routes each, so that settling
        # a batch's flows is one gather; else a CSR.  Pairs usually come in a few blocks,
        # each listing flows in rising order (one block per hop, say; a flow may be listed
        # several times in a row, once per link of its hop): the blocks then give each
        # pair's row without sorting (`_ranks`).  The few pairs past the table's rows
        # (flows that take more routes than most) go to a small overflow CSR.
        self.fr_table = self.fr_table_mult = None
        self.more = None
        # (Only if few slots would be empty: a gather of them costs as much as of routes.)
        t = current()
        most = min(t.table_rows, 3 * flow.size // (2 * max(n_flows, 1)))
        blocks = _sorted_blocks(flow, t.max_blocks)
        if blocks is not None and most >= 1 and self._table_from_blocks(
                flow, route, mult, blocks, n_flows, most):
            return
        order = _order(flow, n_flows)
        self.fr_ptr = csr(flow, n_flows)
        self.fr_route = route[order]
        self.fr_mult = None if mult is None else mult[order]
        counts = np.diff(self.fr_ptr)
        rows = int(counts.max(initial=0))
        if rows and rows <= most:  # the CSR's columns, one row at a time
            self._table(rows, n_flows, mult)
            flows = np.flatnonzero(counts)
            for row in range(rows):
                flows = flows[counts[flows] > row]
                at = self.fr_ptr[flows] + row
                self._fill_row(row, flows, self.fr_route[at],
                               None if mult is None else self.fr_mult[at])
            del self.fr_ptr, self.fr_route, self.fr_mult

    def _table_from_blocks(self, flow, route, mult, blocks, n_flows, most):
        """The flow -> routes table (at most ``most`` rows) from pairs in ``blocks``
        (`_sorted_blocks`) and the overflow CSR of the pairs it has no row for; False
        (nothing built) if more than `Tuning.most_overflow` of the pairs would overflow.

        A block's pairs of rank ``r`` among their flow's (`_ranks`) fill one row; the
        largest blocks take the first rows, so the overflow holds the smallest."""
        pieces = []  # (block size, ranks of the block's pairs, pairs past the ranks)
        for a, b in blocks:
            ranks, rest = _ranks(flow, a, b, most)
            pieces.append((b - a, ranks, rest))
        pieces.sort(key=lambda p: -p[0])  # (stable)
        n_rows = min(most, sum(len(ranks) for _, ranks, _ in pieces))
        count = lambda at: len(range(at.start, at.stop, at.step)) if isinstance(  # noqa: E731
            at, slice) else at.size
        listed = [at for _, ranks, _ in pieces for at in ranks]
        past = sum(map(count, listed[n_rows:])) + sum(
            rest.size for _, _, rest in pieces if rest is not None)
        if past > current().most_overflow * flow.size:
            return False  # a CSR of them all is about as dear, and smaller
        self._table(n_rows, n_flows, mult)
        row, over = 0, []
        for _, ranks, rest in pieces:
            for at in ranks:
                if row < n_rows:
                    self._fill_row(row, flow[at], route[at], None if mult is None else mult[at])
                    row += 1
                else:
                    over.append(np.arange(at.start, at.stop, at.step) if isinstance(
                        at, slice) else at)
            if rest is not None:
                over.append(rest)
        if over:
            self._overflow(np.concatenate(over), flow, route, mult, n_flows)
        return True

    def _overflow(self, pairs, flow, route, mult, n_flows):
        """The pairs ``pairs`` (positions) as a CSR over the flows that have any."""
        flow, route = flow[pairs], route[pairs]
        order = np.argsort(flow, kind="stable")
        flow = flow[order]
        head = np.flatnonzero(np.concatenate([[True], flow[1:] != flow[:-1]]))
        self.more = np.zeros(n_flows, bool)
        self.more[flow[head]] = True
        self.more_flow = flow[head]                   # sorted
        self.more_ptr = np.append(head, flow.size)
        self.more_route = route[order]
        self.more_mult = None if mult is None else mult[pairs][order]

    def _table(self, rows, n_flows, mult):
        self.fr_table = np.full((rows, n_flows), self.n_routes, np.int32)
        self.fr_table_mult = None if mult is None else np.zeros((rows, n_flows), mult.dtype)

    def _fill_row(self, row, flows, routes, mult):
        self.fr_table[row][flows] = routes  # (1-D scatters: 2x faster than 2-D ones)
        if mult is not None:
            self.fr_table_mult[row][flows] = mult

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
        n = self.n_routes
        mine = slice(self.offset, self.offset + n)
        if self.fr_table is not None:
            route = np.take(self.fr_table, flows, axis=1).ravel()  # row by row
            per_pair = np.tile(rates, self.fr_table.shape[0])
            mult = None if self.fr_table_mult is None else np.take(
                self.fr_table_mult, flows, axis=1).ravel()
            if self.more is not None:
                extra = np.flatnonzero(self.more[flows])
                if extra.size:
                    at = np.searchsorted(self.more_flow, flows[extra])
                    starts, stops = self.more_ptr[at], self.more_ptr[at + 1]
                    pair = ranges(starts, stops)
                    route = np.concatenate([route, self.more_route[pair]])
                    per_pair = np.concatenate([per_pair, np.repeat(rates[extra], stops - starts)])
                    if mult is not None:
                        mult = np.concatenate([mult, self.more_mult[pair]])
            count = bincount(route, n + 1)[:n]
            c[mine] += count
            if mult is None:
                k[mine] += count
            else:
                k[mine] += bincount(route, n + 1, mult)[:n]
                per_pair *= mult
            load[mine] += bincount(route, n + 1, per_pair)[:n]
            return
        starts, stops = self.fr_ptr[flows], self.fr_ptr[1:][flows]
        pair = ranges(starts, stops)
        if not pair.size:
            return
        route = self.fr_route[pair].astype(np.intp)
        per_pair = np.repeat(rates, stops - starts)
        count = bincount(route, n)
        c[mine] += count
        if self.fr_mult is None:
            k[mine] += count
        else:
            mult = self.fr_mult[pair]
            k[mine] += bincount(route, n, mult)
            per_pair *= mult
        load[mine] += bincount(route, n, per_pair)


def _sorted_blocks(ids: np.ndarray, most: int) -> list[tuple[int, int]] | None:
    """``ids`` cut into runs that never fall, as ``(start, stop)``; None if there are
    more than ``most`` (or no ids)."""
    if not ids.size:
        return None
    cuts = np.flatnonzero(ids[1:] < ids[:-1])
    if cuts.size >= most:
        return None
    bounds = [0, *(cuts + 1).tolist(), ids.size]
    return list(itertools.pairwise(bounds))


def _ranks(flow: np.ndarray, a: int, b: int, most: int) -> tuple[list, np.ndarray | None]:
    """The pairs ``a:b`` of ``flow`` (a block that lists flows in order, so a flow's pairs
    are adjacent) by rank among their flow's pairs: one index (slice or positions) per
    rank below ``most``, and the positions of the pairs of higher rank (or None).

    Blocks usually list every flow the same number of times in a row (once per link of
    a hop): then each rank is a strided slice, found without a pass per pair."""
    f = flow[a:b]
    first = np.flatnonzero(f[:current().run_probe] != f[0])
    run = int(first[0]) if first.size else 0  # the first flow's pairs
    # Runs of one length: each stride's first and last pairs are one flow (run 1: trivially)
    # and flows rise from stride to stride.
    if run and f.size % run == 0 and (run == 1 or np.array_equal(f[::run], f[run - 1::run])) \
            and bool(np.all(f[run::run] > f[:-run:run])):
        ranks = [slice(a + r, b, run) for r in range(min(run, most))]
        rest = None if run <= most else np.flatnonzero(
            np.arange(f.size) % run >= most) + a
        return ranks, rest
    head = np.empty(f.size, bool)
    head[0] = True
    np.not_equal(f[1:], f[:-1], out=head[1:])
    at, ranked, ranks = head, np.zeros(f.size, bool), []
    for _ in range(most):
        ranks.append(np.flatnonzero(at) + a)
        ranked |= at
        nxt = np.zeros(f.size, bool)
        np.greater(at[:-1], head[1:], out=nxt[1:])  # at[i-1] and not head[i]
        if not nxt.any():
            return ranks, None
        at = nxt
    return ranks, np.flatnonzero(~ranked) + a


class LocalProblem:
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
        self.link_ptr = csr(e_link, n_links)
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
            order = stable_argsort(flow, n_flows)
            self.more = per_flow > width
            self.more_ptr = csr(flow, n_flows)
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
