"""Collectives as phases of flows: what each algorithm sends over which arcs.

A *flow* is one pipelined stream: a ring channel, a tree, one all-to-all pair.  Every arc
it crosses carries the stream at the same rate, so a ring channel is ONE flow whose
incidence covers all its ring edges, and exact max-min fairness over flows then gives
each channel's rate directly.  ``flow_bytes`` is what each flow must carry per byte of
message (the nccl-tests "size"), so a phase's bandwidth time is
``max(flow_bytes / rate)`` for a message of one byte.

Algorithms (NCCL's names): ``ring`` (rail-aware ring order, one channel per rail),
``tree`` (double binary tree across NVLink domains, chains inside), ``nvls`` (in-switch
reduction inside one NVLink domain), ``hierarchical`` (intra-domain reduce-scatter,
per-rail inter-domain ring, intra-domain all-gather), ``collnet`` (IB SHARP: in-network
reduction at the edge switch).

Plans are built with array code: a ring channel, a set of chains or a million all-to-all
pairs is one call of `_FlowBuilder.transfers`, which routes a whole batch of transfers
through the router's batched tables (`_FlowBuilder.transfer` is the same for one).
Across NVLink domains a transfer leaves through the sender's rail NIC and enters through
the receiver's, however each GPU reaches its NIC (own PCIe link, PXN or host; see
`snapshot`), and crosses the fabric between the two NICs' edge switches, or just the
cable when two NICs are cabled to each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.labels import Labels
from designer.solver.routing import (
    RouteBatch,
    Router,
    _concat,
    _single,
    ragged_arange,
    unique_inverse,
)
from designer.solver.shared_routes import SharedRoutes
from designer.solver.snapshot import NVLINK, Snapshot

COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
               "sendrecv")
ALGORITHMS = ("ring", "tree", "nvls", "hierarchical", "collnet")


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
    """Fabric routes shared by many flows (adaptive routing), on top of the pairs."""

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
                       routes=fabric if len(fabric.pair_flow) else None)

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


class _FlowBuilder:
    """Accumulates (flow, arc, weight) pairs for one phase.

    `transfers` routes a whole batch of rank-to-rank transfers with array code; the pairs
    it appends are exactly those `transfer` would append called once per transfer, in
    the same order.
    """

    def __init__(self, router: Router):
        self.router = router
        self.snap = router.snap
        self.flows: list[np.ndarray] = []
        self.arcs: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.bytes: list[np.ndarray] = []
        self.labels: list[Sequence[str]] = []
        self.routes: list[SharedRoutes] = []
        self.n_flows = 0
        self.net_hops = 0
        self.nv_hops = 0

    def new_flow(self, nbytes: float, label: str) -> int:
        return int(self.new_flows(np.array([nbytes], dtype=float), [label])[0])

    def new_flows(self, nbytes: np.ndarray, labels: Sequence[str]) -> np.ndarray:
        """Open ``len(labels)`` flows at once; returns their ids."""
        first = self.n_flows
        self.bytes.append(np.asarray(nbytes, dtype=float))
        self.labels.append(labels)
        self.n_flows += len(labels)
        return np.arange(first, self.n_flows, dtype=np.int64)

    def add(self, flow: int, arcs: np.ndarray, weights: np.ndarray) -> None:
        self.flows.append(np.full(len(arcs), flow, dtype=np.int64))
        self.arcs.append(np.asarray(arcs, dtype=np.int64))
        self.weights.append(np.asarray(weights, dtype=float))

    def transfer(self, flow: int, a: int, b: int, key: int) -> None:
        """Route rank ``a`` -> rank ``b`` into ``flow`` (NVLink in a domain, else NICs):
        `transfers` of one transfer."""
        self.transfers(np.array([flow]), np.array([a]), np.array([b]), np.array([key]))

    def transfers(self, flows: np.ndarray, a: np.ndarray, b: np.ndarray,
                  keys: np.ndarray) -> None:
        """Route rank ``a[i]`` -> ``b[i]`` into ``flows[i]`` for every ``i``, in order, with
        array code.

        Inside an NVLink domain: the NVLink spray.  Across domains: the sender's way to
        its NIC (`RankLinks.access_up`), the NIC's cable, the fabric between the two
        edge switches and the far NIC's cable, then the receiver's way from its NIC.  Two
        NICs cabled to each other (servers back to back) cross that one cable only.
        """
        s, r = self.snap, self.router
        flows, a, b, keys = (np.asarray(x, dtype=np.int64).reshape(-1)
                             for x in (flows, a, b, keys))
        if a.size == 0:
            return
        rl = r.rank_links()
        is_same = s.gpu_domain[a] == s.gpu_domain[b]
        same, cross = np.flatnonzero(is_same), np.flatnonzero(~is_same)

        nv = r.nvlink_routes(rl.gpu[a[same]], rl.gpu[b[same]])
        if same.size:
            self.nv_hops = max(self.nv_hops, int(nv.hops.max()) - 1, 1)

        ac, bc = a[cross], b[cross]
        # Usually every rank reaches the fabric and every NIC is cabled to a switch.
        switched = bool(r.is_switch[rl.leaves[rl.leaves >= 0]].all())
        if cross.size and not (switched and rl.ok.all()):
            self._check_ranks(ac, bc)
        if switched:
            self._switched_transfers(flows[same], nv, flows[cross], ac, bc, keys[cross])
            return
        # The cable between two NICs cabled to each other: a's own, else b's.
        to_b, to_a = rl.leaf[ac] == rl.nic[bc], rl.leaf[bc] == rl.nic[ac]
        direct = to_b | to_a
        mid = np.stack([np.where(to_b | ~to_a, rl.up[ac], rl.up[bc] ^ 1), rl.up[bc] ^ 1],
                       axis=1).reshape(-1)
        fab = RouteBatch(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0),
                         np.zeros(0, np.int64))
        fab_at, fab_len = np.zeros(len(cross), np.int64), np.zeros(len(cross), np.int64)
        via_fabric = np.flatnonzero(~direct)
        if via_fabric.size:
            fab, at, length = self._fabric_routes(ac[via_fabric], bc[via_fabric],
                                                  keys[cross][via_fabric])
            fab_at[via_fabric], fab_len[via_fabric] = at, length
        if s.routing == "adaptive" and fab_len.any():
            # One DAG per (leaf, leaf) class, kept once and shared by the flows of the
            # class (`SharedRoutes`) instead of copied into each flow's pairs.
            take = np.flatnonzero(fab_len > 0)
            self.routes.append(SharedRoutes(fab.ptr, fab.arcs, fab.weights,
                                            flows[cross[take]], fab_at[take]))
            fab_len = np.zeros(len(cross), np.int64)
        if direct.any():
            self.net_hops = max(self.net_hops, 1)

        # Per cross transfer its local arcs: the way up, the NIC cable(s), the way down.
        up_t, down_t = rl.access_up, rl.access_down
        up_len, down_len = up_t.lengths[ac], down_t.lengths[bc]
        if np.all(up_len == 1) and np.all(down_len == 1) and not direct.any():
            # Every GPU on its own NIC's PCIe link, every NIC on a switch: 4 arcs each.
            first_up, first_down = up_t.ptr[ac], down_t.ptr[bc]
            mid2 = mid.reshape(-1, 2)
            local = np.stack([up_t.arcs[first_up], mid2[:, 0], mid2[:, 1],
                              down_t.arcs[first_down]], axis=1).reshape(-1)
            local_w = np.stack([up_t.weights[first_up], np.ones(len(ac)), np.ones(len(ac)),
                                down_t.weights[first_down]], axis=1).reshape(-1)
            local_at = 4 * np.arange(len(ac))
            local_len = 4
        else:
            at = np.cumsum([0, len(up_t.arcs), len(mid)])
            pool = np.concatenate([up_t.arcs, mid, down_t.arcs])
            pool_w = np.concatenate([up_t.weights, np.ones(len(mid)), down_t.weights])
            heads = np.stack([up_t.ptr[ac], at[1] + 2 * np.arange(len(ac)),
                              at[2] + down_t.ptr[bc]], axis=1)
            sizes = np.stack([up_len, np.where(direct, 1, 2), down_len], axis=1)
            pick = ragged_arange(heads.reshape(-1), sizes.reshape(-1))
            local, local_w = pool[pick], pool_w[pick]
            local_len = sizes.sum(axis=1)
            local_at = np.cumsum(local_len) - local_len

        # Every transfer is one or two pieces of a pool (its NVLink route; or its local
        # arcs, then its fabric route unless shared), laid out in order with one gather.
        pool_arcs = np.concatenate([nv.arcs, local, fab.arcs])
        pool_w = np.concatenate([nv.weights, local_w, fab.weights])
        head = np.zeros(len(a), dtype=np.int64)
        head_len = np.zeros(len(a), dtype=np.int64)
        tail = np.zeros(len(a), dtype=np.int64)
        tail_len = np.zeros(len(a), dtype=np.int64)
        head[same], head_len[same] = nv.ptr[:-1], nv.lengths
        head[cross] = len(nv.arcs) + local_at
        head_len[cross] = local_len
        tail[cross] = len(nv.arcs) + len(local) + fab.ptr[fab_at]
        tail_len[cross] = fab_len
        pieces = ragged_arange(np.stack([head, tail], axis=1).reshape(-1),
                               np.stack([head_len, tail_len], axis=1).reshape(-1))
        self.flows.append(np.repeat(flows, head_len + tail_len))
        self.arcs.append(pool_arcs[pieces])
        self.weights.append(pool_w[pieces])

    def _switched_transfers(self, f_same, nv: RouteBatch, f_cross, ac, bc, keys) -> None:
        """`transfers` when every NIC is cabled to a switch (the usual case): the NVLink
        routes as pairs; per cross-domain transfer the sender's way out and the
        receiver's way in as shared routes (`_access_legs`: the same for every peer), and
        the fabric route, shared per pair of edge switches under adaptive routing."""
        self.flows.append(np.repeat(f_same, nv.lengths))
        self.arcs.append(nv.arcs)
        self.weights.append(nv.weights)
        if not len(ac):
            return
        r = self.router
        fab, fab_at, fab_len = self._fabric_routes(ac, bc, keys)
        legs = _access_legs(r)
        n = len(r.rank_links().gpu)
        self.routes.append(SharedRoutes(legs.ptr, legs.arcs, legs.weights,
                                        np.concatenate([f_cross, f_cross]),
                                        np.concatenate([ac, n + bc]),
                                        local=np.ones(len(legs.ptr) - 1, bool)))
        if self.snap.routing == "adaptive":
            self.routes.append(SharedRoutes(fab.ptr, fab.arcs, fab.weights, f_cross, fab_at))
        else:  # one walk per transfer, in order
            self.flows.append(np.repeat(f_cross, fab_len))
            self.arcs.append(fab.arcs)
            self.weights.append(fab.weights)

    def _check_ranks(self, a: np.ndarray, b: np.ndarray) -> None:
        """Raise, naming the first culprit, if a transfer ``a[i]`` -> ``b[i]`` across
        domains lacks a NIC, an arc to it, or a switch at the end of a NIC's cable."""
        s, r = self.snap, self.router
        rl = r.rank_links()
        direct = (rl.leaf[a] == rl.nic[b]) | (rl.leaf[b] == rl.nic[a])
        sw = r.is_switch
        ok = (rl.ok[a] & rl.ok[b]
              & (direct | (sw[np.maximum(rl.leaf[a], 0)] & sw[np.maximum(rl.leaf[b], 0)])))
        if ok.all():
            return
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

    def _fabric_routes(self, ac: np.ndarray, bc: np.ndarray, keys: np.ndarray):
        """Fabric routes of transfers ``ac[i]`` -> ``bc[i]`` between edge switches: a
        table of routes, and per transfer the index of its route in the table and that
        route's length."""
        s, r = self.snap, self.router
        rl = r.rank_links()
        # Fabric routes are per (edge switch, edge switch) class: find the classes by
        # counting, route each once, then hand them out.
        n_leaf = len(rl.leaves)
        cls, inverse = unique_inverse(rl.leaf_code[ac] * n_leaf + rl.leaf_code[bc],
                                      n_leaf * n_leaf)
        la, lb = rl.leaves[cls // n_leaf], rl.leaves[cls % n_leaf]
        cls_hops = r.fabric_hops(la, lb)
        if np.any(cls_hops < 0):
            i = int(np.flatnonzero(cls_hops < 0)[0])
            r.fabric_dag(int(la[i]), int(lb[i]))  # raises naming the pair
        self.net_hops = max(self.net_hops, 2 + int(cls_hops.max()))
        if s.routing == "adaptive":
            dags = r.fabric_dags(la, lb)          # one DAG per class, shared
            return dags, inverse, dags.lengths[inverse]
        walks = r.fabric_walks(la[inverse], lb[inverse], keys, bc, s.routing,
                               hops=cls_hops[inverse])
        return walks, np.arange(len(ac)), walks.lengths

    def phase(self, name: str, steps: int) -> Phase:
        def cat(xs, dt):
            if not xs:
                return np.zeros(0, dt)
            return (xs[0] if len(xs) == 1 else np.concatenate(xs)).astype(dt, copy=False)

        return Phase(name, cat(self.flows, np.int64), cat(self.arcs, np.int64),
                     cat(self.weights, float), cat(self.bytes, float),
                     Labels.chain(self.labels), steps, self.nv_hops, self.net_hops,
                     SharedRoutes.concat(self.routes) if self.routes else None)


# ----------------------------------------------------------------- rank layout
def _access_legs(router: Router) -> RouteBatch:
    """Route ``x`` is rank ``x``'s way out to the fabric (to its NIC, then the NIC's
    cable), route ``n + x`` its way in; empty for a rank without a NIC.  Kept on the
    router: every phase of every plan shares them."""
    legs = getattr(router, "_access_legs", None)
    if legs is not None:
        return legs
    rl = router.rank_links()
    up_t, down_t = rl.access_up, rl.access_down
    ok = rl.ok.astype(np.int64)
    n = len(ok)
    # Out: the access arcs, then the cable; in: the cable reversed, then the access arcs;
    # gathered from one pool.
    up = np.where(rl.ok, rl.up, 0).astype(np.int64)
    pool = np.concatenate([up_t.arcs, up, up ^ 1, down_t.arcs]).astype(np.int64)
    pool_w = np.concatenate([up_t.weights, np.ones(n), np.ones(n), down_t.weights])
    base = np.cumsum([0, len(up_t.arcs), n, n])
    rank = np.arange(n)
    heads = np.concatenate([np.stack([up_t.ptr[:-1], base[1] + rank], axis=1),
                            np.stack([base[2] + rank, base[3] + down_t.ptr[:-1]], axis=1)])
    one = np.ones(n, np.int64)
    sizes = np.concatenate([np.stack([up_t.lengths, one], axis=1),
                            np.stack([one, down_t.lengths], axis=1)])
    sizes = sizes * np.concatenate([ok, ok])[:, None]
    pick = ragged_arange(heads.reshape(-1), sizes.reshape(-1))
    lengths = sizes.sum(axis=1)
    ptr = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=ptr[1:])
    legs = RouteBatch(ptr, pool[pick], pool_w[pick], np.zeros(len(lengths), np.int64))
    router._access_legs = legs
    return legs


def _grouped(snap: Snapshot, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_by_domain` as arrays: the ranks in order, and each domain group's start and size."""
    ranks = np.asarray(ranks)
    if ranks.size == 0:
        return ranks, np.zeros(0, np.int64), np.zeros(0, np.int64)
    dom = snap.gpu_domain[ranks]
    order = np.lexsort((snap.gpu_local[ranks], dom))  # stable, like the per-domain argsort
    dom = dom[order]
    starts = np.flatnonzero(np.r_[True, dom[1:] != dom[:-1]])
    return ranks[order], starts, np.diff(np.r_[starts, len(ranks)])


def _by_domain(snap: Snapshot, ranks: np.ndarray) -> list[np.ndarray]:
    """Ranks grouped by NVLink domain (domains in order), each sorted by local index."""
    srt, starts, sizes = _grouped(snap, ranks)
    return [srt[i:i + n] for i, n in zip(starts.tolist(), sizes.tolist(), strict=True)]


@dataclass(frozen=True, eq=False)
class _RingLayout:
    """Ranks of a ring, grouped by domain (``srt``, ``starts``, ``sizes`` as `_grouped`),
    and ``heads``: the position in its domain where each channel starts."""

    srt: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    heads: np.ndarray


def _ring_layout(snap: Snapshot, ranks: np.ndarray) -> _RingLayout:
    """Domain order for rings, and one channel per NIC when the ring leaves its domain.

    Inside one domain: local order, a channel per GPU.  Across domains, GPUs that share a
    NIC (PXN, see `snapshot._assign_nics`) are put next to each other (by the first local
    index of their NIC's GPUs, then local index; the identity when every GPU has its own
    NIC) and channel ``c`` starts at the ``c``-th NIC's first GPU of the domain with the
    fewest NICs, so every NIC sends one channel and receives one (NCCL opens channels per
    NIC: 4 NICs give 4 x the NIC rate, not 8 channels on 4 NICs).
    """
    srt, starts, sizes = _grouped(snap, ranks)
    if len(starts) <= 1:
        return _RingLayout(srt, starts, sizes, np.arange(int(sizes[0]) if len(sizes) else 1))
    n_dom = len(starts)
    nic = snap.gpu_nic[srt].astype(np.int64)
    if nic.min() >= 0 and np.all(np.bincount(nic, minlength=snap.n_nodes)[nic] == 1):
        # Every rank on its own NIC (the common case): local order, a channel per rail.
        return _RingLayout(srt, starts, sizes, np.arange(int(sizes.min())))
    dom = np.repeat(np.arange(n_dom), sizes)
    pos = np.arange(len(srt)) - np.repeat(starts, sizes)
    width = snap.n_nodes + int(sizes.max())
    # A rank without a NIC is a group of its own (the route will say what is missing).
    key = dom * width + np.where(nic >= 0, nic, snap.n_nodes + pos)
    uniq, inverse = np.unique(key, return_inverse=True)
    first = np.full(len(uniq), len(srt), dtype=np.int64)
    np.minimum.at(first, inverse.reshape(-1), pos)
    head_of = first[inverse.reshape(-1)]
    order = np.lexsort((pos, head_of, dom))
    srt, head_of = srt[order], head_of[order]
    new_group = np.r_[True, head_of[1:] != head_of[:-1]] | (pos == 0)
    groups = np.bincount(dom, weights=new_group, minlength=n_dom).astype(np.int64)
    poorest = int(np.argmin(groups))
    sl = slice(int(starts[poorest]), int(starts[poorest] + sizes[poorest]))
    heads = np.flatnonzero(new_group[sl])
    return _RingLayout(srt, starts, sizes, heads)


def _ring_orders(layout: _RingLayout, channels: range | list[int]) -> np.ndarray:
    """`ring_order` for each channel, one row per channel."""
    srt, starts, sizes = layout.srt, layout.starts, layout.sizes
    n_dom = len(starts)
    j = np.repeat(np.arange(n_dom), sizes)
    base = np.repeat(starts, sizes)
    k = np.arange(len(srt)) - base
    size = np.repeat(sizes, sizes)
    odd = j % 2 == 1
    # With an odd number of domains the alternation would end where it started (one hop
    # between two rails): the last domain starts one position further on instead, and
    # the one before it swaps its last two GPUs to end there.
    fix = n_dom % 2 == 1 and n_dom >= 3 and bool(np.all(sizes[-2:] >= 3))
    last = j == n_dom - 1 if fix else np.zeros(len(srt), dtype=bool)
    swap = (j == n_dom - 2) & (k >= size - 2) if fix else np.zeros(len(srt), dtype=bool)
    out = np.empty((len(channels), len(srt)), dtype=srt.dtype)
    for row, c in enumerate(channels):
        shift = int(layout.heads[c % len(layout.heads)]) % size + last
        # Even groups: rolled to start at the channel's head; odd groups: the same,
        # reversed (start one before the head, end on it).
        at = np.where(odd, (size - 1 - k + shift) % size, (k + shift) % size)
        at = np.where(swap, (k - (size - 2) + shift) % size, at)
        out[row] = srt[base + at]
    return out


def ring_order(snap: Snapshot, ranks: np.ndarray, channel: int) -> np.ndarray:
    """Rail-aware ring order of ``ranks`` for ``channel``.

    Inside a domain the ring is rotated to start at the channel's head (local position
    ``channel`` when every GPU has its own NIC; see `_ring_layout`).  Domains alternate
    direction, so the hop from one domain to the next joins GPUs of the same rail
    (domain j ends on the rail where domain j+1 starts) and inter-node traffic stays on
    one leaf per rail.  With an odd number of domains the last one enters on a third rail
    (the one before it ends there), so the wrap-around hop is rail-aligned too; only
    domains of 2 GPUs cannot do that.  NCCL gets the same by entering and leaving a node
    through one NIC (the last GPU sends through PXN); here no hop needs the relay.

    >>> from designer.model.templates import build_template
    >>> from designer.solver.snapshot import take_snapshot
    >>> snap = take_snapshot(build_template("rail-cluster", nodes=3))
    >>> order = ring_order(snap, np.arange(snap.n_gpus), 0)
    >>> [(int(snap.gpu_local[a]), int(snap.gpu_local[b])) for a, b in
    ...  zip(order, np.roll(order, -1)) if snap.gpu_domain[a] != snap.gpu_domain[b]]
    [(7, 7), (1, 1), (0, 0)]
    """
    return _ring_orders(_ring_layout(snap, ranks), [channel])[0]


# ----------------------------------------------------------------- algorithms
_RING_FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
                "reducescatter": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0,
                "reduce": lambda n: 1.0}
_RING_STEPS = {"allreduce": lambda n: 2 * (n - 1), "allgather": lambda n: n - 1,
               "reducescatter": lambda n: n - 1, "broadcast": lambda n: n - 1,
               "reduce": lambda n: n - 1}


def _ring_transfers(fb: _FlowBuilder, flows: np.ndarray, orders: np.ndarray, chain: bool,
                    channel: np.ndarray) -> None:
    """Ring ``f`` follows ``orders[f]``: transfer ``i`` goes ``orders[f, i] -> orders[f,
    i + 1]`` (wrapping unless ``chain``) with ECMP key ``channel[f] * n + i``."""
    n = orders.shape[1]
    i = np.arange(n - 1 if chain else n)
    keys = channel[:, None] * n + i
    fb.transfers(np.repeat(flows, len(i)), orders[:, i], orders[:, (i + 1) % n], keys)


def _ring_phase(router: Router, ranks: np.ndarray, collective: str, name: str,
                scale: float = 1.0, channels: int | None = None) -> Phase:
    snap, n = router.snap, len(ranks)
    layout = _ring_layout(snap, ranks)
    c_count = channels or max(1, len(layout.heads))
    fb = _FlowBuilder(router)
    chain = collective in ("broadcast", "reduce")  # pipelined chain: no wrap-around edge
    flows = fb.new_flows(np.full(c_count, _RING_FACTOR[collective](n) * scale / c_count),
                         [f"{name} ch{c}" for c in range(c_count)])
    orders = _ring_orders(layout, range(c_count))
    if chain:
        # Every channel's chain starts at the root (the first rank): rotating the ring
        # per channel would give each channel a different root, i.e. more sources of
        # data than a broadcast has.
        root = ranks[0]
        start = np.argmax(orders == root, axis=1)
        orders = np.stack([np.roll(o, -s) for o, s in zip(orders, start, strict=True)])
    _ring_transfers(fb, flows, orders, chain, np.arange(c_count))
    return fb.phase(name, _RING_STEPS[collective](n))


def plan_ring(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    phase = _ring_phase(router, ranks, collective, f"ring {collective}")
    return Plan(collective, "ring", ranks, len(_grouped(router.snap, ranks)[1]), (phase,), True)


def btree(n: int, mirror: bool) -> list[int]:
    """Parent of each of ``n`` positions in NCCL-style double binary trees (-1 = root).

    Tree 0 is the in-order binary tree given by each position's lowest set bit; tree 1
    is its mirror (``n`` even) or its shift by one (``n`` odd), so a node that is
    interior in one tree is a leaf in the other and every node sends about ``2S``
    across both trees.
    """
    parent = np.full(n, -1, dtype=np.int64)
    r = np.arange(1, n, dtype=np.int64)
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    parent[1:] = np.where(up < n, up, r ^ bit)
    if not mirror:
        return parent.tolist()
    pos = np.arange(n, dtype=np.int64)
    m = n - 1 - pos if n % 2 == 0 else (pos + 1) % n
    out = np.full(n, -1, dtype=np.int64)
    has = parent >= 0
    out[m[has]] = m[parent[has]]
    return out.tolist()


def _chains(grouped: tuple[np.ndarray, np.ndarray, np.ndarray], c: int,
            extra: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Transfers of channel ``c``'s chains, group by group: each group rotated by ``c``,
    then up (``local[i + 1] -> local[i]``) and down (``local[i] -> local[i + 1]``) for each
    link of the chain, followed by ``extra[j]`` free slots after group ``j``.

    Returns ``(src, dst, slot_start)``: the transfers with the free slots still unset
    (-1), and where each group's free slots start.
    """
    srt, starts, sizes = grouped
    links = sizes - 1
    block = 2 * links + extra
    ptr = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(block, out=ptr[1:])
    src, dst = np.full(ptr[-1], -1, dtype=np.int64), np.full(ptr[-1], -1, dtype=np.int64)
    i = ragged_arange(np.zeros(len(sizes), np.int64), links)
    grp = np.repeat(np.arange(len(sizes)), links)
    size = sizes[grp]
    lo = srt[starts[grp] + (i + c) % size]
    hi = srt[starts[grp] + (i + 1 + c) % size]
    at = ptr[grp] + 2 * i
    src[at], dst[at] = hi, lo
    src[at + 1], dst[at + 1] = lo, hi
    return src, dst, ptr[:-1] + 2 * links


def plan_tree(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """Double binary tree over domains (a pair of trees per rail channel), chains inside;
    a single chain when all ranks share one domain."""
    if collective != "allreduce":
        raise SolverError("tree is an all-reduce algorithm")
    snap = router.snap
    grouped = _grouped(snap, ranks)
    srt, starts, sizes = grouped
    nodes = len(starts)
    c_count = max(1, int(sizes.min()))
    fb = _FlowBuilder(router)
    if nodes == 1:
        # Inside one domain NCCL's tree is a chain: up (reduce) and down (broadcast), so
        # each GPU sends about 2S per direction.
        flows = fb.new_flows(np.full(c_count, 1.0 / c_count),
                             [f"chain ch{c}" for c in range(c_count)])
        # Not rotated per channel: the middle GPUs of a chain send 2S each way and
        # the ends less, which is what caps NCCL's chain at B (n-1)/n.
        src, dst, _ = _chains(grouped, 0, np.zeros(1, np.int64))
        for c in range(c_count):
            fb.transfers(np.full(len(src), flows[c]), src, dst, np.zeros(len(src), np.int64))
        phase = fb.phase("chain all-reduce", 2 * (len(ranks) - 1))
        return Plan(collective, "tree", ranks, 1, (phase,), True)
    parents = [np.array(btree(nodes, mirror=t == 1), dtype=np.int64) for t in range(2)]
    j = np.arange(nodes, dtype=np.int64)
    for c in range(c_count):
        heads = srt[starts + c % sizes]
        for t in range(2):  # the two complementary trees each carry half the data
            flow = fb.new_flow(0.5 / c_count, f"tree{t} ch{c}")
            pj = parents[t]
            has = pj >= 0
            src, dst, slot = _chains(grouped, c, np.where(has, 2, 0))
            keys = np.zeros(len(src), dtype=np.int64)
            # Chains up and down inside each domain, then the domain's tree edge both ways.
            key = (c * 2 + t) * nodes + j[has]
            at = slot[has]
            src[at], dst[at], keys[at] = heads[has], heads[pj[has]], key
            src[at + 1], dst[at + 1], keys[at + 1] = heads[pj[has]], heads[has], key + 7919
            fb.transfers(np.full(len(src), flow), src, dst, keys)
    depth = int(np.ceil(np.log2(nodes + 1)))
    phase = fb.phase("double binary tree all-reduce", 2 * depth)
    return Plan(collective, "tree", ranks, nodes, (phase,), True)


def plan_nvls(router: Router, ranks: np.ndarray, collective: str) -> Plan:
    """In-switch reduction: each GPU sends its data into the NVSwitches once and receives
    the reduced result once, sprayed over all its NVLinks."""
    snap = router.snap
    if collective != "allreduce":
        raise SolverError("nvls is an all-reduce algorithm")
    groups = _by_domain(snap, ranks)
    if len(groups) != 1:
        raise SolverError("nvls runs inside one NVLink domain (use hierarchical across domains)")
    if not snap.domain_nvls[snap.gpu_domain[ranks[0]]]:
        raise SolverError("this NVLink domain's switches or GPUs cannot reduce in-switch (NVLS)")
    fb = _FlowBuilder(router)
    nv = snap.arc_family == NVLINK
    for r in ranks.tolist():
        g = int(snap.gpus[r])
        ends = (("send", snap.arc_src), ("recv", snap.arc_dst))
        for direction, end in ends:
            sel = nv & (end == g)
            arcs = np.flatnonzero(sel)
            # S to the switch plus the reduced shard back for multicast (S/n), and the
            # mirror image downstream: S (1 + 1/n) each way.
            flow = fb.new_flow(1.0 + 1.0 / len(ranks), f"nvls {direction} {snap.node_ids[g]}")
            fb.add(flow, arcs, snap.arc_cap[arcs] / snap.arc_cap[arcs].sum())
    fb.nv_hops = 2
    phase = fb.phase("NVLS in-switch all-reduce", 2)
    return Plan(collective, "nvls", ranks, 1, (phase,), True)


def _domain_rings(router: Router, table: np.ndarray, collective: str, label: str,
                  name: str) -> Phase:
    """Every domain's ring at once (row ``d`` of ``table``: domain ``d``'s ranks in local
    order), one channel per GPU: `_merge` of `_ring_phase` per domain."""
    d, g = table.shape
    fb = _FlowBuilder(router)
    flows = fb.new_flows(np.full(d * g, _RING_FACTOR[collective](g) * 1.0 / g),
                         [f"{label} ch{c}" for _ in range(d) for c in range(g)])
    # Channel c of a domain's ring starts at local position c (one group: no reversal).
    col = (np.arange(g)[:, None] + np.arange(g)[None, :]) % g      # [c, k] -> position
    orders = table[:, col].reshape(d * g, g)
    _ring_transfers(fb, flows, orders, collective in ("broadcast", "reduce"),
                    np.tile(np.arange(g), d))
    return fb.phase(name, _RING_STEPS[collective](g))


def plan_hierarchical(router: Router, ranks: np.ndarray, collective: str,
                      inter: str = "ring") -> Plan:
    """Reduce-scatter inside each domain, all-reduce of a 1/g shard per rail across domains
    (``ring`` or ``collnet`` in-network reduction), all-gather inside each domain."""
    if collective != "allreduce":
        raise SolverError("hierarchical is an all-reduce algorithm")
    snap = router.snap
    srt, starts, sizes = _grouped(snap, ranks)
    if len(starts) < 2:
        raise SolverError("hierarchical needs ranks in more than one NVLink domain")
    g = int(sizes.min())
    if np.any(sizes != g):
        raise SolverError("hierarchical needs the same number of ranks in every domain")
    if g < 2:
        raise SolverError("hierarchical needs at least 2 ranks per domain (use ring)")
    table = srt.reshape(len(starts), g)   # equal groups: row d = domain d in local order
    rs = _domain_rings(router, table, "reducescatter", "intra reduce-scatter",
                       "intra-domain reduce-scatter")
    if inter == "collnet":
        if not snap.net_sharp:
            raise SolverError("collnet needs in-network reduction (SHARP) on every fabric switch")
        mid = _sharp_phase(router, srt, g)
    else:
        # Rail i: the i-th GPU of every domain, domains in order, one channel each.
        n = len(starts)
        fb = _FlowBuilder(router)
        flows = fb.new_flows(np.full(g, _RING_FACTOR["allreduce"](n) * (1.0 / g) / 1),
                             [f"rail {i} ring ch0" for i in range(g)])
        _ring_transfers(fb, flows, table.T, False, np.zeros(g, dtype=np.int64))
        mid = fb.phase("inter-domain all-reduce per rail", _RING_STEPS["allreduce"](n))
    ag = _domain_rings(router, table, "allgather", "intra all-gather", "intra-domain all-gather")
    return Plan(collective, "collnet" if inter == "collnet" else "hierarchical", ranks,
                len(starts), (rs, mid, ag), False)


def _sharp_phase(router: Router, ranks: np.ndarray, g: int) -> Phase:
    """SHARP: each GPU sends its 1/g shard up to its edge switch and gets the result back
    (through its NIC, however it reaches it: `RankLinks.access_up`)."""
    snap, r = router.snap, router
    ranks = np.asarray(ranks, dtype=np.int64)
    rl = r.rank_links()
    bad = np.flatnonzero(~rl.ok[ranks])
    if bad.size:
        r.check_rank(int(ranks[bad[0]]))  # raises naming the GPU and what it lacks
    fb = _FlowBuilder(r)
    names = [snap.node_ids[i] for i in rl.gpu[ranks].tolist()]
    flows = fb.new_flows(np.full(2 * len(ranks), 1.0 / g),
                         [f"sharp {d} {nid}" for nid in names for d in ("up", "down")])
    # Per GPU: flow "up" crosses its way to the NIC and the NIC's cable; flow "down" the
    # cable back and its way from the NIC.
    edge = rl.up[ranks]
    up = _concat([rl.access_up.take(ranks), _single(edge)])
    down = _concat([_single(edge ^ 1), rl.access_down.take(ranks)])
    fb.flows += [np.repeat(flows[0::2], up.lengths), np.repeat(flows[1::2], down.lengths)]
    fb.arcs += [up.arcs, down.arcs]
    fb.weights += [up.weights, down.weights]
    fb.net_hops = 2
    return fb.phase("SHARP in-network all-reduce", 2)


def _merge(phases: list[Phase], name: str) -> Phase:
    """Run several phases' flows together (e.g. every domain's ring at once)."""
    offset, flows, routes = 0, [], []
    for p in phases:
        flows.append(p.pair_flow + offset)
        if p.routes is not None:
            routes.append(p.routes.offset(offset))
        offset += p.n_flows
    return Phase(name, np.concatenate(flows), np.concatenate([p.pair_arc for p in phases]),
                 np.concatenate([p.pair_weight for p in phases]),
                 np.concatenate([p.flow_bytes for p in phases]),
                 Labels.chain([p.flow_label for p in phases]),
                 max(p.steps for p in phases), max(p.nvlink_hops for p in phases),
                 max(p.net_hops for p in phases),
                 SharedRoutes.concat(routes) if routes else None)


def plan_alltoall(router: Router, ranks: np.ndarray, collective: str = "alltoall") -> Plan:
    """Every rank sends 1/n of its buffer to every other rank, all at once."""
    n = len(ranks)
    ranks_arr = np.asarray(ranks)
    # Pairs (i, j), i != j, i-major: j runs over 0..n-1 skipping i.
    i = np.repeat(np.arange(n, dtype=np.int64), n - 1)
    j = np.tile(np.arange(n - 1, dtype=np.int64), n)
    j += j >= i
    a, b = ranks_arr[i], ranks_arr[j]
    fb = _FlowBuilder(router)
    # Labels "a->b", made when read: a million strings would cost more than the routes.
    txt = [str(x) for x in ranks_arr.tolist()]
    labels = Labels(len(i), lambda k: f"{txt[k // (n - 1)]}->{txt[int(j[k])]}")
    flows = fb.new_flows(np.full(len(i), 1.0 / n), labels)
    fb.transfers(flows, a, b, i * n + j)
    phase = fb.phase("all-to-all", n - 1)
    return Plan("alltoall", "direct", ranks, len(_grouped(router.snap, ranks)[1]), (phase,),
                True)


def plan_sendrecv(router: Router, ranks: np.ndarray, collective: str = "sendrecv") -> Plan:
    """Each rank sends its whole buffer to the next rank (nccl-tests sendrecv)."""
    n = len(ranks)
    i = np.arange(n if n > 2 else 1)
    a, b = np.asarray(ranks)[i], np.asarray(ranks)[(i + 1) % n]
    fb = _FlowBuilder(router)
    flows = fb.new_flows(np.ones(len(i)),
                         [f"{x}->{y}" for x, y in zip(a.tolist(), b.tolist(), strict=True)])
    fb.transfers(flows, a, b, i)
    phase = fb.phase("send/recv", 1)
    return Plan("sendrecv", "direct", ranks, len(_grouped(router.snap, ranks)[1]), (phase,),
                True)


def candidate_plans(router: Router, ranks: np.ndarray, collective: str,
                    algorithm: str = "auto") -> list[Plan]:
    """Plans to consider: the forced algorithm, or every one that applies (``auto``)."""
    if collective not in COLLECTIVES:
        raise SolverError(f"unknown collective {collective!r}; one of {', '.join(COLLECTIVES)}")
    if len(ranks) < 2:
        raise SolverError("a collective needs at least 2 ranks")
    if collective == "alltoall":
        return [plan_alltoall(router, ranks)]
    if collective == "sendrecv":
        return [plan_sendrecv(router, ranks)]
    builders = {
        "ring": plan_ring, "tree": plan_tree, "nvls": plan_nvls,
        "hierarchical": plan_hierarchical,
        "collnet": lambda r, k, c: plan_hierarchical(r, k, c, inter="collnet"),
    }
    if algorithm != "auto":
        if algorithm not in builders:
            raise SolverError(f"unknown algorithm {algorithm!r}; one of auto, "
                              f"{', '.join(ALGORITHMS)}")
        return [builders[algorithm](router, ranks, collective)]
    plans = []
    first_error: SolverError | None = None
    for name in ALGORITHMS:
        if name == "nvls" and len(ranks) <= 4:
            continue  # NCCL's tuner enables NVLS only above 4 GPUs (force it to see it)
        try:
            plans.append(builders[name](router, ranks, collective))
        except SolverError as exc:
            first_error = first_error or exc  # ring's reason is the most telling
            continue  # not applicable here (e.g. nvls across domains)
    if not plans:
        reason = f": {first_error}" if first_error else ""
        raise SolverError(f"no algorithm can run {collective} on these ranks{reason}")
    return plans
