"""How a phase was assembled from route tables: its *recipe*.

`phases.FlowBuilder` appends a phase's flow-arc pairs piece by piece, each piece a run of
rows of one kind of route table, and its shared routes (`SharedRoutes`) as the router's
access legs followed by one adaptive DAG per pair of edge switches (its own hops, the
middles that pairs share kept apart: `routing.middles`).  The recipe keeps, for every
row, the key that made it:

``nv``
    the NVLink spray between two nodes of one domain (key: the two nodes); as pairs of
    the phase, or, where the phase crosses each spray many times (a ring's channels
    all take a domain's hops), as shared routes, one per distinct spray
    (`SharedPiece.nv`);
``walk``
    the ECMP or static path of one transfer between two edge switches (key: its class of
    edge switches, its ECMP key and its destination rank);
``legs``
    rows of the router's access legs (`Router.access_legs`; key: the row);
``raw``
    pairs given as they are (`FlowBuilder.add`: in-switch reductions, a torus's
    neighbour links, a SHARP tree): no key, so a phase with such a piece is rebuilt
    after an edit, unless the piece says it reads NVLink arcs only (key
    `NVLINK_ONLY`): it then stands while no NVLink arc changed.

`phase_transfers` reads a phase's transfers across NVLink domains back from its recipe
(each one's sender, receiver and fabric route: the canvas outlines a GPU's paths with
it).  `materialize` turns a recipe into a `Phase`; the builder uses it for every phase it
makes, and `reuse` for phases whose changed rows it has recomputed after an edit,
so that a patched phase is assembled by the very code that assembles a fresh one.  Once
materialized, the pieces, and the entries of the shared routes, are views into the
phase's arrays, not copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from designer.solver.arrays.ragged import RouteBatch, ragged_arange
from designer.solver.arrays.shared_routes import SharedRoutes
from designer.solver.routing.middles import Middles, SplitDags, with_middles


@dataclass(frozen=True, eq=False)
class Piece:
    """Rows of one route table: row ``i`` is ``rows.route(i)``, taken by ``flows[i]``.

    ``keys`` say what each row is (see the module docstring); for ``raw`` pieces
    ``rows`` has one pair per row.
    """

    kind: str
    flows: np.ndarray
    rows: RouteBatch
    keys: tuple = ()

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The piece's ``(flow, arc, weight)`` pairs."""
        return np.repeat(self.flows, self.rows.lengths), self.rows.arcs, self.rows.weights


#: The key of a raw piece made from the ranks' NVLink arcs alone (see the module).
NVLINK_ONLY = ("nvlink-only",)


def raw_piece(flows: np.ndarray, arcs: np.ndarray, weights: np.ndarray,
              keys: tuple = ()) -> Piece:
    """Pairs as they are: one row per pair."""
    n = len(arcs)
    return Piece("raw", np.asarray(flows), RouteBatch(np.arange(n + 1, dtype=np.int64),
                                                      np.asarray(arcs), np.asarray(weights),
                                                      np.zeros(n, np.int64)), keys)


@dataclass(frozen=True, eq=False)
class SharedPiece:
    """One `SharedRoutes` of a phase: its route table is the router's access legs (the
    first ``n_legs`` routes; 0: none) then, under adaptive routing, ``fab``: the DAG of
    each (``la[c]``, ``lb[c]``) class of edge switches (``fab.hops``: their hop counts).
    Or, apart from those, NVLink sprays: ``nv`` is the whole table, row ``i`` the spray
    from node ``ends[0][i]`` to node ``ends[1][i]`` (``nv.hops``: NVLink hop counts).
    ``routes`` is the table as built; who takes which route never changes.

    ``joined`` False (only between `phases.FlowBuilder` and `materialize`): ``routes``
    holds the legs' entries alone, and ``fab``'s rows (the router's table) follow them,
    to be written once into the phase's table instead of joined here and copied there.

    ``mid`` (adaptive DAGs over a multi-tier fabric): the DAGs' shared middles
    (`routing.middles`); ``fab`` is then each class's own row, and the phase's table
    holds the middles once, after ``routes``' entries, with a (flow, middle) pair for
    every transfer whose class crosses one (`routing.middles.with_middles`).
    """

    routes: SharedRoutes
    n_legs: int
    fab: RouteBatch | None = None
    la: np.ndarray | None = None
    lb: np.ndarray | None = None
    nv: RouteBatch | None = None
    ends: tuple[np.ndarray, np.ndarray] | None = None
    joined: bool = True
    mid: Middles | None = None

    def with_nv(self, nv: RouteBatch) -> SharedPiece:
        """The same pairs over a new table of NVLink sprays (row for row)."""
        r = self.routes
        routes = SharedRoutes(nv.ptr, nv.arcs, nv.weights, r.pair_flow, r.pair_route,
                              r.pair_mult, r.local)
        return replace(self, routes=routes, nv=nv)

    def with_tables(self, legs: RouteBatch | None, fab: RouteBatch | None,
                    old_legs: RouteBatch | None = None, mid: Middles | None = None
                    ) -> SharedPiece:
        """The same pairs over new tables (the legs and the class DAGs, row for row;
        ``mid``: their middles, if they changed); ``old_legs``: the legs the table has
        now, if known (when they and the DAGs' arcs are unchanged only the weights are
        copied)."""
        if mid is not None:
            return replace(self, mid=mid).with_tables(legs, fab, old_legs)
        r = self.routes
        if (legs is not None and legs is old_legs and fab is not None
                and self.fab is not None and fab.ptr is self.fab.ptr
                and fab.arcs is self.fab.arcs):
            at = int(r.ptr[self.n_legs])
            weight = np.concatenate([r.weight[:at], fab.weights])
            routes = SharedRoutes(r.ptr, r.link, weight, r.pair_flow, r.pair_route,
                                  r.pair_mult, r.local)
            return replace(self, routes=routes, fab=_fab_view(routes, self.n_legs, fab))
        if legs is None:     # no legs: the class DAGs alone
            ptr, link, weight = fab.ptr, fab.arcs, fab.weights
        else:
            ptr, link, weight = legs.ptr, legs.arcs, legs.weights
            if fab is not None:
                ptr = np.concatenate([ptr, fab.ptr[1:] + ptr[-1]])
                link = np.concatenate([link, fab.arcs])
                weight = np.concatenate([weight, fab.weights])
        routes = SharedRoutes(ptr, link, weight, r.pair_flow, r.pair_route, r.pair_mult,
                              r.local)
        return replace(self, routes=routes, fab=_fab_view(routes, self.n_legs, fab))

    def spliced(self, at: np.ndarray, new: RouteBatch, mid: Middles | None = None
                ) -> SharedPiece:
        """The same pairs with the class DAGs ``at`` (sorted, distinct) replaced by
        ``new``'s rows (``mid``: the middles, if they changed), the legs kept: one
        splice of the whole table (`splice`), where splicing the DAGs and then joining
        them to the legs would copy it twice (~10^7 entries at 131,072 GPUs)."""
        if mid is not None:
            return replace(self, mid=mid).spliced(at, new)
        r, n = self.routes, self.n_legs
        hops = np.concatenate([np.zeros(n, np.int64), self.fab.hops])
        whole = splice(RouteBatch(r.ptr, r.link, r.weight, hops), at + n, new)
        routes = SharedRoutes(whole.ptr, whole.arcs, whole.weights, r.pair_flow,
                              r.pair_route, r.pair_mult, r.local)
        fab = RouteBatch(whole.ptr[n:], whole.arcs, whole.weights, whole.hops[n:])
        return replace(self, routes=routes, fab=_fab_view(routes, n, fab))


def shared_piece(routes: SharedRoutes, n_legs: int, fab: RouteBatch | None = None,
                 la: np.ndarray | None = None, lb: np.ndarray | None = None) -> SharedPiece:
    """A `SharedPiece` whose ``fab`` rows are views into ``routes``."""
    return SharedPiece(routes, n_legs, _fab_view(routes, n_legs, fab), la, lb)


def legs_and_dags_piece(legs: RouteBatch, fab: RouteBatch | SplitDags, pair_flow: np.ndarray,
                        pair_route: np.ndarray, la: np.ndarray, lb: np.ndarray
                        ) -> SharedPiece:
    """Pairs over the access legs (routes ``0 .. len(legs) - 1``, an endpoint's own) and
    then the class DAGs ``fab`` (class ``(la[c], lb[c])``; split: their own rows, the
    middles apart), left unjoined (``joined=False``) for `materialize` to write into the
    phase's table."""
    mid = None
    if isinstance(fab, SplitDags):
        fab, mid = fab.own, fab.middles
    n_legs = len(legs.ptr) - 1
    ptr = np.concatenate([legs.ptr, fab.ptr[1:] + legs.ptr[-1]])
    local = np.zeros(len(ptr) - 1, dtype=bool)
    local[:n_legs] = True
    routes = SharedRoutes(ptr, legs.arcs, legs.weights, pair_flow, pair_route, local=local)
    return SharedPiece(routes, n_legs, fab, la, lb, joined=False, mid=mid)


def nvlink_piece(flows: np.ndarray, rows: np.ndarray, nv: RouteBatch,
                 ends: tuple[np.ndarray, np.ndarray]) -> SharedPiece:
    """Flow ``flows[i]`` crosses NVLink spray ``rows[i]`` of ``nv`` (row ``j`` from node
    ``ends[0][j]`` to ``ends[1][j]``), as shared routes: each spray kept once however
    many flows cross it.  The sprays are an endpoint's own routes (``local``: views that
    name a transfer's ends expand them)."""
    routes = SharedRoutes(nv.ptr, nv.arcs, nv.weights, flows, rows,
                          local=np.ones(len(nv.hops), dtype=bool))
    return SharedPiece(routes, 0, nv=nv, ends=ends)


def _fab_view(routes: SharedRoutes, n_legs: int, fab: RouteBatch | None) -> RouteBatch | None:
    if fab is None:
        return None
    at = int(routes.ptr[n_legs])
    return RouteBatch(routes.ptr[n_legs:] - at, routes.link[at:], routes.weight[at:], fab.hops)


@dataclass(frozen=True, eq=False)
class PhaseRecipe:
    """A phase's pieces (in order) and shared routes, and the hop counts set other than
    by its route tables (`phase_hops`)."""

    pieces: tuple[Piece, ...]
    shared: tuple[SharedPiece, ...]
    nv_fixed: int = 0
    net_fixed: int = 0

    @property
    def patchable(self) -> bool:
        """Whether every row has a key (a ``raw`` piece only of NVLink arcs), so it can
        be recomputed."""
        return all(p.kind != "raw" or p.keys == NVLINK_ONLY for p in self.pieces) and all(
            s.n_legs or s.fab is not None or s.nv is not None for s in self.shared)

    @property
    def has_raw(self) -> bool:
        """Whether a piece is pairs as they are (valid while NVLink is unchanged)."""
        return any(p.kind == "raw" for p in self.pieces)

    def phase_hops(self) -> tuple[int, int]:
        """``(nvlink_hops, net_hops)`` of the phase: NVLink hops of its longest spray less
        one, at least one; the edge-switch hops of its longest fabric class plus the two
        NIC cables (as `FlowBuilder.transfers` counts them)."""
        nv, net = self.nv_fixed, self.net_fixed
        for p in self.pieces:
            if p.kind == "nv" and len(p.flows):
                nv = max(nv, int(p.rows.hops.max()) - 1, 1)
            elif p.kind == "walk" and len(p.flows):
                net = max(net, 2 + int(p.rows.hops.max()))
        for s in self.shared:
            if s.fab is not None and len(s.fab.hops):
                net = max(net, 2 + int(s.fab.hops.max()))
            if s.nv is not None and len(s.routes.pair_route):
                nv = max(nv, int(s.nv.hops.max()) - 1, 1)
        return nv, net


def materialize(recipe: PhaseRecipe, name: str, flow_bytes: np.ndarray,
                flow_label: Sequence[str], steps: int, n_flows: int, n_arcs: int,
                phase_type: type, pairs: tuple | None = None,
                pair_flow: np.ndarray | None = None):
    """The `Phase` (``phase_type``) of ``recipe``: its pieces' pairs one after another
    (flow and arc ids int32 while they fit), its shared routes side by side, and the
    recipe re-pointed at views of the phase's arrays.  ``pairs``: the pieces' pairs when
    the caller has them already (an unchanged phase's arrays); ``pair_flow``: their flows
    alone (rows of unchanged lengths)."""
    ids = np.int32 if max(n_flows, n_arcs) < 2**31 else np.int64
    if pairs is not None and pairs[1].dtype == ids:
        pair_flow, pair_arc, pair_weight = pairs
    else:
        if pair_flow is None or pair_flow.dtype != ids:
            pair_flow = _cat([np.repeat(p.flows, p.rows.lengths) for p in recipe.pieces],
                             ids)
        pair_arc = _cat([p.rows.arcs for p in recipe.pieces], ids)
        pair_weight = _cat([p.rows.weights for p in recipe.pieces], float)
    pieces, at = [], 0
    for p in recipe.pieces:
        n = len(p.rows.arcs)
        rows = RouteBatch(p.rows.ptr, pair_arc[at:at + n], pair_weight[at:at + n], p.rows.hops)
        pieces.append(replace(p, rows=rows))
        at += n
    routes = None
    if recipe.shared:
        parts, tails = [], []
        for s in recipe.shared:
            tail = [] if s.joined else [s.fab.entries()]
            part = s.routes
            if s.mid is not None:   # the middles once, after the classes' own rows
                part = with_middles(part, s.n_legs, s.mid)
                tail.append((s.mid.table.arcs, s.mid.table.weights))
            parts.append(part)
            tails.append(tail)
        routes = SharedRoutes.concat(parts, tails, ids)
    recipe = replace(recipe, pieces=tuple(pieces), shared=_on_views(recipe.shared, routes))
    nv_hops, net_hops = recipe.phase_hops()
    return phase_type(name, pair_flow, pair_arc, pair_weight, flow_bytes, flow_label, steps,
                      nv_hops, net_hops, routes, recipe)


def _on_views(shared: tuple[SharedPiece, ...], routes: SharedRoutes | None
              ) -> tuple[SharedPiece, ...]:
    """``shared`` with each piece's entries (arcs and weights) re-pointed at its slice of
    ``routes``, the phase's table written from them, and every piece joined.

    Why: the pieces' own copies (the largest, a fabric's class DAGs after the access
    legs, holds ~4 million entries at 131,072 GPUs) are then freed before the max-min
    solver allocates its arrays.
    """
    if len(shared) == 1 and shared[0].routes is routes:
        return shared
    out, at = [], 0
    for sp in shared:
        r = sp.routes
        n = int(r.ptr[-1])
        link, weight = routes.link[at:at + n], routes.weight[at:at + n]
        at += n
        view = SharedRoutes(r.ptr, link, weight, r.pair_flow, r.pair_route, r.pair_mult,
                            r.local)
        nv = None if sp.nv is None else RouteBatch(sp.nv.ptr, link, weight, sp.nv.hops)
        mid = sp.mid
        if mid is not None:
            k = mid.size
            mid = mid.on(routes.link[at:at + k], routes.weight[at:at + k])
            at += k
        out.append(replace(sp, routes=view, fab=_fab_view(view, sp.n_legs, sp.fab), nv=nv,
                           joined=True, mid=mid))
    return tuple(out)


def _cat(xs: list[np.ndarray], dt) -> np.ndarray:
    """``xs`` end to end as ``dt``, written straight into the result (no wider copy)."""
    if not xs:
        return np.zeros(0, dt)
    if len(xs) == 1:
        return np.asarray(xs[0]).astype(dt, copy=False)
    out = np.empty(sum(len(x) for x in xs), dt)
    np.concatenate(xs, out=out, casting="same_kind")
    return out


def splice(rows: RouteBatch, at: np.ndarray, new: RouteBatch) -> RouteBatch:
    """``rows`` with rows ``at`` (sorted, distinct) replaced by ``new``'s, in order.

    In place of a copy when the lengths agree (a capacity edit changes weights only),
    else by copying the runs between the replaced rows (a few of them) or by one gather.
    """
    if len(at) == 0:
        return rows
    old_len = rows.lengths[at]
    hops = rows.hops.copy()
    hops[at] = new.hops
    if np.array_equal(old_len, new.lengths):
        pos = ragged_arange(rows.ptr[at], old_len)
        arcs = rows.arcs
        if not np.array_equal(arcs[pos], new.arcs):
            arcs = arcs.astype(np.result_type(arcs, new.arcs), copy=True)
            arcs[pos] = new.arcs
        weights = np.array(rows.weights, dtype=float, copy=True)
        weights[pos] = new.weights
        return RouteBatch(rows.ptr, arcs, weights, hops)
    lengths = rows.lengths
    lengths[at] = new.lengths
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    if len(at) <= 64:   # a few rows: the runs between them copied whole
        cut = np.stack([rows.ptr[at], rows.ptr[at + 1]], axis=1).reshape(-1).tolist()
        bounds = [0, *cut, len(rows.arcs)]
        put = new.ptr.tolist()
        arcs, weights = [], []
        for i in range(len(at) + 1):
            lo, hi = bounds[2 * i], bounds[2 * i + 1]
            arcs.append(rows.arcs[lo:hi])
            weights.append(rows.weights[lo:hi])
            if i < len(at):
                arcs.append(new.arcs[put[i]:put[i + 1]])
                weights.append(new.weights[put[i]:put[i + 1]])
        return RouteBatch(ptr, np.concatenate(arcs).astype(rows.arcs.dtype, copy=False),
                          np.concatenate(weights).astype(float, copy=False), hops)
    # Take every row from the pool [old rows, new rows]: old rows by their own index,
    # replaced ones from the new table.
    n_old = len(rows.ptr) - 1
    source = np.arange(n_old)
    source[at] = n_old + np.arange(len(at))
    pool = RouteBatch(np.concatenate([rows.ptr, new.ptr[1:] + rows.ptr[-1]]),
                      np.concatenate([rows.arcs, new.arcs.astype(rows.arcs.dtype,
                                                                 copy=False)]),
                      np.concatenate([np.asarray(rows.weights, float), new.weights]),
                      np.concatenate([rows.hops, new.hops]))
    out = pool.take(source)
    return RouteBatch(ptr, out.arcs, out.weights, hops)


@dataclass(frozen=True, eq=False)
class TransferPart:
    """The transfers of one shared-routes piece: rank ``sender[i]`` -> ``receiver[i]``,
    each end's way to or from the fabric (``legs`` table: row ``x`` is rank x's way out,
    row ``n_ranks + x`` its way in) and the transfer's fabric route (row ``fabric_row[i]``
    of the ``fabric`` table, and row ``mid_of[fabric_row[i]]`` of the ``middle`` table
    where the DAGs keep their middles apart and it crosses one)."""

    sender: np.ndarray
    receiver: np.ndarray
    n_ranks: int
    legs: tuple[np.ndarray, np.ndarray]       # (ptr, arcs)
    fabric_row: np.ndarray
    fabric: tuple[np.ndarray, np.ndarray]     # (ptr, arcs)
    middle: tuple[np.ndarray, np.ndarray] | None = None   # (ptr, arcs)
    mid_of: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Transfers:
    """A phase's transfers between NVLink domains, read from its recipe: one
    `TransferPart` per shared-routes piece."""

    parts: tuple[TransferPart, ...]

    def arcs_of(self, ranks: np.ndarray) -> list[np.ndarray]:
        """The arcs of every transfer that ``ranks`` send or receive, whole: the
        sender's way to the fabric, the fabric route, the receiver's way in."""
        out = []
        for p in self.parts:
            hit = np.isin(p.sender, ranks) | np.isin(p.receiver, ranks)
            if hit.any():
                legs = np.concatenate([p.sender[hit], p.n_ranks + p.receiver[hit]])
                out.append(_route_arcs(*p.legs, legs))
                out.append(_route_arcs(*p.fabric, p.fabric_row[hit]))
                if p.middle is not None:
                    mids = p.mid_of[p.fabric_row[hit]]
                    out.append(_route_arcs(*p.middle, mids[mids >= 0]))
        return out


def phase_transfers(phase) -> Transfers | None:
    """The `Transfers` of ``phase``, or None when its recipe does not name them (no
    recipe; NICs cabled back to back; a phase without cross-domain transfers).

    It reads the layout `phases.FlowBuilder` writes: a piece's pairs are every sender's
    way out, every receiver's way in, then (adaptive) every transfer's class DAG, in the
    same table after the legs; otherwise one walk per transfer, in order, in the
    phase's next ``walk`` piece.
    """
    recipe = getattr(phase, "recipe", None)
    if recipe is None or not recipe.shared:
        return None
    walks = iter([p for p in recipe.pieces if p.kind == "walk"])
    parts = []
    for sp in recipe.shared:
        routes = sp.routes
        if sp.nv is not None:  # NVLink sprays: transfers inside a domain
            continue
        if not sp.n_legs:  # fabric routes of back-to-back designs: ends not recorded
            return None
        n = sp.n_legs // 2
        m = len(routes.pair_route) // (3 if sp.fab is not None else 2)
        sender = np.asarray(routes.pair_route[:m], dtype=np.int64)
        receiver = np.asarray(routes.pair_route[m:2 * m], dtype=np.int64) - n
        table = (routes.ptr, routes.link)
        if sp.fab is not None:
            row = np.asarray(routes.pair_route[2 * m:3 * m], dtype=np.int64)
            mid = sp.mid
            parts.append(TransferPart(
                sender, receiver, n, table, row, table,
                None if mid is None else (mid.table.ptr, mid.table.arcs),
                None if mid is None else np.concatenate([np.full(sp.n_legs, -1), mid.of])))
        else:
            walk = next(walks, None)
            if walk is None or len(walk.flows) != m:
                return None
            parts.append(TransferPart(sender, receiver, n, table, np.arange(m),
                                      (walk.rows.ptr, walk.rows.arcs)))
    return Transfers(tuple(parts)) if parts else None


def _route_arcs(ptr: np.ndarray, arcs: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The arcs of routes ``rows`` of a table (``ptr``, ``arcs``)."""
    rows = np.unique(rows)
    ptr = np.asarray(ptr)
    return np.asarray(arcs)[ragged_arange(ptr[rows], ptr[rows + 1] - ptr[rows])].astype(
        np.int64)
