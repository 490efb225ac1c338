"""Phases of flows, and the builder that routes rank-to-rank transfers into them.

A `Phase` is a set of flows that run together: each flow's flow-arc pairs (with split
weights), the routes it shares with other flows (`shared_routes`), and the bytes it
carries per message byte; a `Plan` is an algorithm's phases.  `collectives` builds plans
with `FlowBuilder`.

Plans are built with array code: a ring channel, a set of chains or a million all-to-all
pairs is one call of `FlowBuilder.transfers`, which routes a whole batch of transfers
through the router's batched tables (`FlowBuilder.transfer` is the same for one).
Across NVLink domains a transfer leaves through the sender's rail NIC and enters through
the receiver's, however each GPU reaches its NIC (own PCIe link, PXN or host; see
`snapshot`), and crosses the fabric between the two NICs' edge switches, or just the
cable when two NICs are cabled to each other.

A phase also keeps its *recipe* (`flows.recipe`): the route-table rows its pairs and
shared routes were assembled from, with the key of each row, so that after a what-if
edit `reuse` can recompute the rows the edit changed and assemble the phase again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from designer.solver.arrays.shared_routes import SharedRoutes
from designer.solver.errors import SolverError
from designer.solver.flows.labels import Labels
from designer.solver.flows.recipe import (
    NVLINK_ONLY,
    PhaseRecipe,
    Piece,
    SharedPiece,
    _cat,
    legs_and_dags_piece,
    materialize,
    nvlink_piece,
    raw_piece,
    shared_piece,
)
from designer.solver.parallel import fork
from designer.solver.routing.middles import SplitDags
from designer.solver.routing.router import (
    RouteBatch,
    Router,
    ragged_arange,
    unique_inverse,
)
from designer.solver.snapshot.structure import components
from designer.solver.tuning import current

__all__ = ["FlowBuilder", "Phase", "Plan"]


@dataclass(frozen=True, eq=False)
class Phase:
    """Flows that run concurrently, with the bytes each carries per message byte."""

    name: str
    pair_flow: np.ndarray
    pair_arc: np.ndarray
    pair_weight: np.ndarray
    flow_bytes: np.ndarray
    flow_label: Sequence[str]
    steps: int
    nvlink_hops: int
    net_hops: int
    routes: SharedRoutes | None = None
    """Routes shared by many flows, on top of the pairs: ranks' ways to and from the
    fabric, fabric DAGs (adaptive routing), NVLink sprays that several flows cross."""
    recipe: PhaseRecipe | None = field(default=None, repr=False)
    """How the pairs and routes were assembled (`flows.recipe`), for `reuse`."""
    stages: tuple[tuple[str, int], ...] = ()
    """Pipelined stages of the phase, ``(name, steps)`` each, that the timeline shows as
    overlapping bars (SHARP's reduction up its tree and multicast down); () for none."""
    mirrors: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    """Arcs whose load is another arc's times a factor, ``(arc, source, factor)``: legs
    of ranks that a class flow's representative stands for (`flows.alltoall`)."""

    @property
    def n_flows(self) -> int:
        return len(self.flow_bytes)

    @property
    def n_pairs(self) -> int:
        """Flow-arc pairs as if every flow listed its own copy of its routes."""
        if self.routes is None:
            return len(self.pair_arc)
        lengths = np.diff(self.routes.ptr)[self.routes.pair_route]
        return len(self.pair_arc) + int(lengths.sum())

    def local_view(self) -> Phase:
        """The same phase with the endpoints' own routes (`SharedRoutes.local`) expanded
        into pairs and only the fabric routes left shared: for views that name the ends
        of a transfer from its arcs (the canvas's flow tooltips and path outlines)."""
        routes = self.routes
        if routes is None or routes.local is None or not routes.local.any():
            return self
        local = routes.select(routes.local)
        f, a, w = local.expand()
        fabric = routes.select(~routes.local)
        return replace(self, pair_flow=np.concatenate([self.pair_flow, f]),
                       pair_arc=np.concatenate([self.pair_arc, a]),
                       pair_weight=np.concatenate([self.pair_weight, w]),
                       routes=fabric if len(fabric.pair_flow) else None, recipe=None)

    def pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every ``(flow, arc, weight)`` of the phase, shared routes expanded (memory!)."""
        if self.routes is None:
            return self.pair_flow, self.pair_arc, self.pair_weight
        f, a, w = self.routes.expand()
        return (np.concatenate([self.pair_flow, f]), np.concatenate([self.pair_arc, a]),
                np.concatenate([self.pair_weight, w]))


@dataclass(frozen=True, eq=False)
class Plan:
    """An algorithm's phases; ``pipelined`` phases overlap, others run one after another."""

    collective: str
    algorithm: str
    ranks: np.ndarray
    n_nodes: int
    phases: tuple[Phase, ...]
    pipelined: bool = False
    notes: tuple[str, ...] = field(default=())
    step_counts: tuple[int, int] | None = None
    """(intra, inter) latency steps where NCCL's count for the algorithm does not apply
    (a torus's rings per dimension); None: NCCL's."""


class FlowBuilder:
    """Accumulates (flow, arc, weight) pairs for one phase.

    `transfers` routes a whole batch of rank-to-rank transfers with array code; the pairs
    it appends are exactly those `transfer` would append called once per transfer, in
    the same order.  Pairs are kept as pieces of route tables with the key of every row
    (`flows.recipe`), so that `reuse` can recompute only what an edit changed.
    """

    def __init__(self, router: Router):
        self.router = router
        self.snap = router.snap
        self.pieces: list[Piece] = []
        self.shared: list = []         # route_recipe.SharedPiece
        self.bytes: list[np.ndarray] = []
        self.labels: list[Sequence[str]] = []
        self.n_flows = 0
        # Hop counts set other than by route tables (NVLS, SHARP, back-to-back NICs).
        self.nv_fixed = 0
        self.net_fixed = 0

    def new_flow(self, nbytes: float, label: str) -> int:
        return int(self.new_flows(np.array([nbytes], dtype=float), [label])[0])

    def new_flows(self, nbytes: np.ndarray, labels: Sequence[str]) -> np.ndarray:
        """Open ``len(labels)`` flows at once; returns their ids (int32 while they fit)."""
        first = self.n_flows
        self.bytes.append(np.asarray(nbytes, dtype=float))
        self.labels.append(labels)
        self.n_flows += len(labels)
        return np.arange(first, self.n_flows,
                         dtype=np.int32 if self.n_flows < 2**31 else np.int64)

    def add(self, flow: int | np.ndarray, arcs: np.ndarray, weights: np.ndarray,
            nvlink_only: bool = False) -> None:
        """Pairs of ``flow`` (one flow, or one per arc) given as they are.  After an edit
        a phase with such pairs is rebuilt, not patched, unless ``nvlink_only``: they
        were worked out from the ranks' NVLink arcs alone (their ends, families and
        capacities), and stand while none of those changed."""
        self.pieces.append(raw_piece(np.broadcast_to(np.asarray(flow, dtype=np.int64),
                                                     (len(arcs),)).copy(),
                                     np.asarray(arcs, dtype=np.int64),
                                     np.asarray(weights, dtype=float),
                                     NVLINK_ONLY if nvlink_only else ()))

    def add_legs(self, flows: np.ndarray, rows: np.ndarray) -> None:
        """Flow ``flows[i]`` crosses access leg ``rows[i]`` (`Router.access_legs`: rank ``x``'s
        way out is row ``x``, its way in row ``n + x``)."""
        rows = np.asarray(rows, dtype=np.int64)
        self.pieces.append(Piece("legs", np.asarray(flows), self.router.access_legs().take(rows),
                                 (rows,)))

    def transfer(self, flow: int, a: int, b: int, key: int) -> None:
        """Route rank ``a`` -> rank ``b`` into ``flow`` (NVLink in a domain, else NICs):
        `transfers` of one transfer."""
        self.transfers(np.array([flow]), np.array([a]), np.array([b]), np.array([key]))

    def transfers(self, flows: np.ndarray, a: np.ndarray, b: np.ndarray,
                  keys: np.ndarray | None) -> None:
        """Route rank ``a[i]`` -> ``b[i]`` into ``flows[i]`` for every ``i``, in order, with
        array code (``keys[i]``: the transfer's ECMP hash key, read under ECMP only; None
        will do for other routing).

        Inside an NVLink domain: the NVLink spray.  Across domains: the sender's way to
        its NIC (`RankLinks.access_up`), the NIC's cable, the fabric between the two
        edge switches and the far NIC's cable, then the receiver's way from its NIC.  Two
        NICs cabled to each other (servers back to back) cross that one cable only.
        """
        s, r = self.snap, self.router
        # Ids as int32 when they fit: a million-transfer batch halves its memory.
        idx = np.int32 if max(self.n_flows, s.n_gpus) < 2**31 else np.int64
        flows, a, b = (np.asarray(x).reshape(-1).astype(idx, copy=False)
                       for x in (flows, a, b))
        if a.size == 0:
            return
        rl = r.rank_links()
        is_same = s.gpu_domain[a] == s.gpu_domain[b]
        n_same = int(np.count_nonzero(is_same))
        n_cross = len(a) - n_same
        # Masks, or a slice when a side takes every transfer (no copies then).
        same: np.ndarray | slice = slice(None) if n_cross == 0 else is_same
        cross: np.ndarray | slice = slice(None) if n_same == 0 else ~is_same

        ac, bc = a[cross], b[cross]
        keys_cross = None
        if s.routing == "ecmp" and n_cross:
            if keys is None:
                raise ValueError("transfers under ECMP need their hash keys")
            keys_cross = np.asarray(keys).reshape(-1)[cross]
        # Usually every rank reaches the fabric and every NIC is cabled to a switch.
        switched = bool(r.is_switch[rl.leaves[rl.leaves >= 0]].all())
        if n_cross and not (switched and rl.ok.all()):
            self._check_ranks(ac, bc)
        if switched:
            # The NVLink sprays and the fabric routes share nothing but what is already
            # computed (the rank links): on two cores the sprays are found on the second
            # while this thread walks the fabric.
            nv = fork(self._nvlink_transfers, flows, a, b, same) if n_same else None
            n_pieces, n_shared = len(self.pieces), len(self.shared)
            self._switched_transfers(flows[cross], ac, bc, keys_cross)
            if nv is not None:  # in order: the sprays first, as before the fork
                shared, piece = nv.join()
                if shared is not None:
                    self.shared.insert(n_shared, shared)
                else:
                    self.pieces.insert(n_pieces, piece)
            return
        nv = r.nvlink_routes(rl.gpu[a[same]], rl.gpu[b[same]])
        self._direct_transfers(flows, same, cross, nv, ac, bc, keys_cross)

    def _nvlink_transfers(self, flows: np.ndarray, a: np.ndarray, b: np.ndarray,
                          pick: np.ndarray | slice) -> tuple[SharedPiece | None, Piece | None]:
        """Route ranks ``a[i]`` -> ``b[i]`` (one domain each) into ``flows[i]`` over NVLink,
        for the transfers ``i`` that ``pick`` selects: a shared piece, or else a piece, for
        the caller to add (this may run on the helper thread, `parallel.fork`, which then
        also does the selecting).

        Where the batch crosses each spray several times (a ring's channels each take
        nearly every hop of every domain), each distinct spray is kept once, as a
        shared route (`flows.recipe.nvlink_piece`): a fraction of the route table to
        build, and of the pairs for the max-min solver to pass over.  Otherwise (an
        all-to-all: every pair once) the sprays are the phase's own pairs.
        """
        s, r = self.snap, self.router
        flows, a, b = flows[pick], a[pick], b[pick]
        rl = r.rank_links()
        span = int(s.gpu_local.max(initial=0)) + 1
        # (sender, receiver's place in the domain) names a spray: a dense key.
        key = a.astype(np.int64) * span
        key += s.gpu_local[b]
        uniq, inverse = unique_inverse(key, len(s.gpus) * span)
        if 2 * len(uniq) > len(key):
            nv_a, nv_b = rl.gpu[a], rl.gpu[b]
            nv = r.nvlink_routes(nv_a, nv_b)
            return None, Piece("nv", flows, nv, (nv_a, nv_b))
        # The receiver of each distinct spray: from any transfer that has it.
        first = np.empty(len(uniq), dtype=np.int64)
        first[inverse] = np.arange(len(key))
        ends = (rl.gpu[uniq // span], rl.gpu[b[first]])
        nv = r.nvlink_routes(*ends)
        return nvlink_piece(flows, inverse.astype(np.int32, copy=False), nv, ends), None

    def _direct_transfers(self, flows, same, cross, nv: RouteBatch, ac, bc, keys) -> None:
        """`transfers` where some NIC is cabled to a NIC (servers back to back) or to
        something else than a switch: every transfer's pairs in order, gathered from one
        pool."""
        s, r = self.snap, self.router
        rl = r.rank_links()
        n = len(flows)
        cross_ids = np.arange(n)[cross]
        # The cable between two NICs cabled to each other: a's own, else b's.
        to_b, to_a = rl.leaf[ac] == rl.nic[bc], rl.leaf[bc] == rl.nic[ac]
        direct = to_b | to_a
        mid = np.stack([np.where(to_b | ~to_a, rl.up[ac], rl.up[bc] ^ 1), rl.up[bc] ^ 1],
                       axis=1).reshape(-1)
        fab = RouteBatch(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0),
                         np.zeros(0, np.int64))
        fab_at, fab_len = np.zeros(len(ac), np.int64), np.zeros(len(ac), np.int64)
        via_fabric = np.flatnonzero(~direct)
        if via_fabric.size:
            fab, at, _ = self._fabric_routes(ac[via_fabric], bc[via_fabric],
                                             None if keys is None else keys[via_fabric])
            fab_at[via_fabric], fab_len[via_fabric] = at, fab.lengths[at]
            self.net_fixed = max(self.net_fixed, 2 + int(fab.hops.max()))
        if s.routing == "adaptive" and fab_len.any():
            # One DAG per (leaf, leaf) class, kept once and shared by the flows of the
            # class (`SharedRoutes`) instead of copied into each flow's pairs.
            take = np.flatnonzero(fab_len > 0)
            self.shared.append(shared_piece(SharedRoutes(
                fab.ptr, fab.arcs, fab.weights, flows[cross_ids[take]], fab_at[take]), 0))
            fab_len = np.zeros(len(ac), np.int64)
        if direct.any():
            self.net_fixed = max(self.net_fixed, 1)

        # Per cross transfer its local arcs: the way up, the NIC cable(s), the way down.
        up_t, down_t = rl.access_up, rl.access_down
        up_len, down_len = up_t.lengths[ac], down_t.lengths[bc]
        at = np.cumsum([0, len(up_t.arcs), len(mid)])
        pool = np.concatenate([up_t.arcs, mid, down_t.arcs])
        pool_w = np.concatenate([up_t.weights, np.ones(len(mid)), down_t.weights])
        heads = np.stack([up_t.ptr[ac], at[1] + 2 * np.arange(len(ac)),
                          at[2] + down_t.ptr[bc]], axis=1)
        sizes = np.stack([up_len, np.where(direct, 1, 2), down_len], axis=1)
        pick = ragged_arange(heads.reshape(-1), sizes.reshape(-1))
        local, local_w = pool[pick], pool_w[pick]
        local_len = sizes[:, 0] + sizes[:, 1] + sizes[:, 2]   # (not a sum over an axis of 3: slow)
        local_at = np.cumsum(local_len) - local_len

        # Every transfer is one or two pieces of a pool (its NVLink route; or its local
        # arcs, then its fabric route unless shared), laid out in order with one gather.
        pool_arcs = np.concatenate([nv.arcs, local, fab.arcs])
        pool_w = np.concatenate([nv.weights, local_w, fab.weights])
        head = np.zeros(n, dtype=np.int64)
        head_len = np.zeros(n, dtype=np.int64)
        tail = np.zeros(n, dtype=np.int64)
        tail_len = np.zeros(n, dtype=np.int64)
        head[same], head_len[same] = nv.ptr[:-1], nv.lengths
        head[cross] = len(nv.arcs) + local_at
        head_len[cross] = local_len
        tail[cross] = len(nv.arcs) + len(local) + fab.ptr[fab_at]
        tail_len[cross] = fab_len
        pieces = ragged_arange(np.stack([head, tail], axis=1).reshape(-1),
                               np.stack([head_len, tail_len], axis=1).reshape(-1))
        self.pieces.append(raw_piece(np.repeat(flows, head_len + tail_len),
                                     pool_arcs[pieces], pool_w[pieces]))
        if len(nv.hops):
            self.nv_fixed = max(self.nv_fixed, int(nv.hops.max()) - 1, 1)

    def _switched_transfers(self, f_cross, ac, bc, keys) -> None:
        """`transfers` across domains when every NIC is cabled to a switch (the usual
        case): per transfer the sender's way out and the receiver's way in as shared
        routes (`Router.access_legs`: the same for every peer), and the fabric route, shared
        per pair of edge switches under adaptive routing (the router's table of class
        DAGs, after the legs' table: `flows.recipe.legs_and_dags_piece`), else one walk
        per transfer."""
        m = len(ac)
        if not m:
            return
        r = self.router
        fab, fab_at, fab_keys = self._fabric_routes(ac, bc, keys, pending=True)
        legs = r.access_legs()
        n = len(r.rank_links().gpu)
        adaptive = self.snap.routing == "adaptive"
        # Route x: rank x's way out; route n + x: its way in; then the fabric routes.
        # Pairs: every sender's way out, every receiver's way in, then (adaptive) every
        # fabric route, transfer by transfer (`flows.recipe.phase_transfers` reads it).
        pairs = 3 * m if adaptive else 2 * m
        n_fab = len(fab.own.hops if isinstance(fab, SplitDags) else fab.hops)
        ids = f_cross.dtype if 2 * n + n_fab + 1 < 2**31 else np.int64
        pair_flow, pair_route = np.empty(pairs, f_cross.dtype), np.empty(pairs, ids)
        pair_flow[:m] = f_cross
        pair_flow[m:2 * m] = f_cross
        pair_route[:m] = ac
        np.add(bc, n, out=pair_route[m:2 * m])
        if adaptive:
            # The legs' table and the DAGs' stay apart until the phase's table is written
            # (`flows.recipe.materialize`): joining them here would copy every entry.
            pair_flow[2 * m:] = f_cross
            np.add(fab_at, 2 * n, out=pair_route[2 * m:])
            self.shared.append(legs_and_dags_piece(legs, fab, pair_flow, pair_route,
                                                   *fab_keys[:2]))
        else:  # one walk per transfer, in order
            routes = SharedRoutes(legs.ptr, legs.arcs, legs.weights, pair_flow, pair_route,
                                  local=np.ones(2 * n, dtype=bool))
            self.shared.append(shared_piece(routes, 2 * n))
            self.pieces.append(Piece("walk", f_cross, fab, fab_keys))

    def _check_ranks(self, a: np.ndarray, b: np.ndarray) -> None:
        """Raise, naming the culprit, if a transfer ``a[i]`` -> ``b[i]`` across domains
        lacks a NIC, an arc to it, or a switch at the end of a NIC's cable.

        The culprit is the GPU that is cut off, not an end of the first transfer that
        fails (in a lone board or a torus, where no GPU has a fabric, that end may be one
        of the GPUs still joined to the rest).  The design's GPUs fall into groups that
        reach each other (`_reach_groups`); of the groups of the failing transfers' ends
        that have no way to the switched fabric, the smallest is named by its first rank,
        with its size and the number of GPUs it is cut off from.  Where no group is cut
        off (a rank without a way out in a domain that has one), the first failing
        transfer's end without one is named.
        """
        s, r = self.snap, self.router
        rl = r.rank_links()
        direct = (rl.leaf[a] == rl.nic[b]) | (rl.leaf[b] == rl.nic[a])
        sw = r.is_switch
        ok = (rl.ok[a] & rl.ok[b]
              & (direct | (sw[np.maximum(rl.leaf[a], 0)] & sw[np.maximum(rl.leaf[b], 0)])))
        if ok.all():
            return
        group, on_fabric = self._reach_groups()
        labels, first, size = np.unique(group, return_index=True, return_counts=True)
        failing = np.unique(group[np.concatenate((a[~ok], b[~ok]))])
        cut = np.isin(labels, failing) & (labels != on_fabric)
        if len(labels) > 1 and cut.any():
            # The smallest group cut off; among equals, the one of the earliest rank.
            pick = np.flatnonzero(cut)[np.lexsort((first[cut], size[cut]))[0]]
            self._raise_cut_off(int(first[pick]), int(size[pick]), s.n_gpus - int(size[pick]))
        i = int(np.flatnonzero(~ok)[0])
        for rank in (int(a[i]), int(b[i])):
            r.check_rank(rank)
        far = int(b[i])
        for rank in (int(a[i]), int(b[i])):
            if not sw[rl.leaf[rank]]:
                raise SolverError(
                    f"NIC {s.node_ids[rl.nic[rank]]} is cabled to "
                    f"{s.node_ids[rl.leaf[rank]]}, not to a switch: no path from GPU "
                    f"{s.node_ids[rl.gpu[int(a[i])]]} to GPU {s.node_ids[rl.gpu[far]]}")

    def _reach_groups(self) -> tuple[np.ndarray, int]:
        """Per rank, a label of the group of GPUs it can reach, and the label of the
        group on the switched fabric.

        Groups are NVLink domains joined through the fabric (every domain with a rank
        whose NIC is reachable and cabled to a switch) and through NICs cabled back to
        back; the fabric is one more member, so a label equal to the fabric's means
        the rank reaches it.
        """
        s, r = self.snap, self.router
        rl = r.rank_links()
        leaf = rl.leaf
        out = rl.ok & (leaf >= 0)
        switched = out & r.is_switch[np.maximum(leaf, 0)]
        # A NIC cabled to the NIC of another rank: the two servers reach each other.
        owner = np.full(s.n_nodes, -1, dtype=np.int64)
        owner[rl.nic[out]] = np.flatnonzero(out)
        peer = np.where(out & ~switched, owner[np.maximum(leaf, 0)], -1)
        dom = s.gpu_domain
        fabric = s.n_domains
        paired = peer >= 0
        src = np.concatenate((dom[switched], dom[paired]))
        dst = np.concatenate((np.full(int(switched.sum()), fabric), dom[peer[paired]]))
        label = components(fabric + 1, src, dst)
        return label[dom], int(label[fabric])

    def _raise_cut_off(self, rank: int, size: int, others: int) -> None:
        """Raise `SolverError`: ``rank``'s GPU, with ``size - 1`` more, cannot reach the
        design's ``others`` GPUs; why, as `Router.check_rank` or the NIC's cable says."""
        s, r = self.snap, self.router
        rl = r.rank_links()
        gpu = str(s.node_ids[rl.gpu[rank]])
        try:
            r.check_rank(rank)
        except SolverError as err:
            why = str(err)
        else:
            why = (f"NIC {s.node_ids[rl.nic[rank]]} of GPU {gpu} is cabled to "
                   f"{s.node_ids[rl.leaf[rank]]}, not to a switch")
        if gpu not in why:
            why = f"GPU {gpu}: {why}"
        many = f"{others} GPU{'' if others == 1 else 's'}"
        if size == 1:
            raise SolverError(f"{why}; it is cut off from the other {many}")
        more = f"{size - 1} other GPU{'' if size == 2 else 's'}"
        raise SolverError(f"{why}; it and {more} are cut off from the other {many}")

    def _fabric_routes(self, ac: np.ndarray, bc: np.ndarray, keys: np.ndarray | None,
                       pending: bool = False) -> tuple[RouteBatch, np.ndarray, tuple]:
        """Fabric routes of transfers ``ac[i]`` -> ``bc[i]`` between edge switches (``keys``:
        their ECMP keys, under ECMP): a table of routes, per transfer the index of its
        route in the table (one per (edge switch, edge switch) class under adaptive
        routing, one per transfer otherwise), and the rows' keys for `flows.recipe`:
        the classes' edge switches ``(la, lb)``, then for walks each transfer's class,
        hash key and destination, and the routing mode.  ``pending`` (adaptive): the
        class DAGs come as a `routing.middles.SplitDags`, their own rows maybe unwritten
        (`Router.fabric_dags`), for `materialize` to write."""
        s, r = self.snap, self.router
        rl = r.rank_links()
        # Fabric routes are per (edge switch, edge switch) class: find the classes by
        # counting, route each once, then hand them out.
        n_leaf = len(rl.leaves)
        code = rl.leaf_code[ac] * n_leaf
        code += rl.leaf_code[bc]
        cls, inverse = unique_inverse(code, n_leaf * n_leaf)
        del code
        la, lb = rl.leaves[cls // n_leaf], rl.leaves[cls % n_leaf]
        cls_hops = r.fabric_hops(la, lb)
        if np.any(cls_hops < 0):
            i = int(np.flatnonzero(cls_hops < 0)[0])
            r.fabric_dag(int(la[i]), int(lb[i]))  # raises naming the pair
        if s.routing == "adaptive":
            # One DAG per class, shared (``pending``: the middles apart, see
            # `routing.middles`, unless `Tuning.keep_middles` is off).
            split = pending and current().keep_middles
            return (r.fabric_dags(la, lb, hops=cls_hops, pending=pending, split=split),
                    inverse, (la, lb))
        # Static routing picks by destination, numbered by structure (domain, then place
        # in it: `snapshot._domains`), not by id; the keys are ECMP's alone.
        dest = s.gpu_domain[bc].astype(np.int64) * (int(s.gpu_local.max(initial=0)) + 1)
        dest += s.gpu_local[bc]
        wkeys = dest if keys is None else keys
        walks = r.class_walks(la, lb, inverse, wkeys, dest, s.routing, hops=cls_hops)
        return walks, np.arange(len(ac)), (la, lb, inverse, wkeys, dest, s.routing)

    def phase(self, name: str, steps: int) -> Phase:
        """The accumulated flows as a `Phase` (flow and arc ids int32 while they fit)."""
        recipe = PhaseRecipe(tuple(self.pieces), tuple(self.shared), self.nv_fixed,
                             self.net_fixed)
        return materialize(recipe, name, _cat(self.bytes, float), Labels.chain(self.labels), steps,
                           self.n_flows, self.snap.n_arcs, Phase)
