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
through the router's batched tables and lays their pairs out exactly (same order, same
bits) as routing them one by one with `_FlowBuilder.transfer` would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.routing import RouteBatch, Router, ragged_arange, unique_inverse
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
    flow_label: tuple[str, ...]
    steps: int
    nvlink_hops: int
    net_hops: int

    @property
    def n_flows(self) -> int:
        return len(self.flow_bytes)


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
        self.labels: list[str] = []
        self.n_flows = 0
        self.net_hops = 0
        self.nv_hops = 0

    def new_flow(self, nbytes: float, label: str) -> int:
        return int(self.new_flows(np.array([nbytes], dtype=float), [label])[0])

    def new_flows(self, nbytes: np.ndarray, labels: list[str]) -> np.ndarray:
        """Open ``len(labels)`` flows at once; returns their ids."""
        first = self.n_flows
        self.bytes.append(np.asarray(nbytes, dtype=float))
        self.labels.extend(labels)
        self.n_flows += len(labels)
        return np.arange(first, self.n_flows, dtype=np.int64)

    def add(self, flow: int, arcs: np.ndarray, weights: np.ndarray) -> None:
        self.flows.append(np.full(len(arcs), flow, dtype=np.int64))
        self.arcs.append(np.asarray(arcs, dtype=np.int64))
        self.weights.append(np.asarray(weights, dtype=float))

    def transfer(self, flow: int, a: int, b: int, key: int) -> None:
        """Route rank ``a`` -> rank ``b`` into ``flow`` (NVLink in a domain, else NICs)."""
        s, r = self.snap, self.router
        ga, gb = int(s.gpus[a]), int(s.gpus[b])
        if s.gpu_domain[a] == s.gpu_domain[b]:
            arcs, w = r.nvlink_route(ga, gb)
            self.add(flow, arcs, w)
            # Hops as NCCL counts them: through one NVSwitch plane (2 arcs) is one hop.
            self.nv_hops = max(self.nv_hops, int(r.nvlink.dist_to(gb)[ga]) - 1, 1)
            return
        na, nb = int(s.gpu_nic[a]), int(s.gpu_nic[b])
        for g, n in ((ga, na), (gb, nb)):
            if n < 0:
                raise SolverError(f"GPU {s.node_ids[g]} has no NIC on the compute fabric, so "
                                  "it cannot reach GPUs outside its NVLink domain")
        up, down = r.edge_arc(na), r.edge_arc(nb) ^ 1
        la, lb = int(s.arc_dst[up]), int(s.arc_src[down])
        local = np.array([r.pcie_arc(ga, na), up, down, r.pcie_arc(nb, gb)])
        self.add(flow, local, np.ones(4))
        if s.routing == "adaptive":
            arcs, w = r.fabric_dag(la, lb)
            self.add(flow, arcs, w)
        else:
            _, arcs = r.fabric_paths(la, lb, np.array([key]), np.array([b]), s.routing)
            self.add(flow, arcs, np.ones(len(arcs)))
        hops = 2 + (0 if la == lb else int(r.net.dist_to(lb, r.is_switch)[la]))
        self.net_hops = max(self.net_hops, hops)

    def transfers(self, flows: np.ndarray, a: np.ndarray, b: np.ndarray,
                  keys: np.ndarray) -> None:
        """`transfer` of rank ``a[i]`` -> ``b[i]`` into ``flows[i]`` for every ``i``, in
        order, with array code."""
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

        # Cross-domain: GPU -PCIe- NIC -> edge switch ... edge switch -> NIC -PCIe- GPU,
        # then the fabric route between the two edge switches.
        ac, bc = a[cross], b[cross]
        local = np.stack([rl.pcie_up[ac], rl.up[ac], rl.up[bc] ^ 1, rl.pcie_down[bc]],
                         axis=1).reshape(-1)
        fab = RouteBatch(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0),
                         np.zeros(0, np.int64))
        fab_at, fab_len = np.zeros(len(cross), np.int64), np.zeros(len(cross), np.int64)
        if cross.size:
            fab, fab_at, fab_len = self._fabric_routes(flows, a, b, keys, cross)

        # Every transfer is one or two pieces of a pool (its NVLink route; or its 4 local
        # arcs, then its fabric route), laid out in order with one gather.
        pool_arcs = np.concatenate([nv.arcs, local, fab.arcs])
        pool_w = np.concatenate([nv.weights, np.ones(len(local)), fab.weights])
        head = np.zeros(len(a), dtype=np.int64)
        head_len = np.zeros(len(a), dtype=np.int64)
        tail = np.zeros(len(a), dtype=np.int64)
        tail_len = np.zeros(len(a), dtype=np.int64)
        head[same], head_len[same] = nv.ptr[:-1], nv.lengths
        head[cross] = len(nv.arcs) + 4 * np.arange(len(cross))
        head_len[cross] = 4
        tail[cross] = len(nv.arcs) + len(local) + fab.ptr[fab_at]
        tail_len[cross] = fab_len
        pieces = ragged_arange(np.stack([head, tail], axis=1).reshape(-1),
                               np.stack([head_len, tail_len], axis=1).reshape(-1))
        self.flows.append(np.repeat(flows, head_len + tail_len))
        self.arcs.append(pool_arcs[pieces])
        self.weights.append(pool_w[pieces])

    def _fabric_routes(self, flows, a, b, keys, cross: np.ndarray):
        """Fabric routes of the cross-domain transfers ``cross``: a table of routes, and
        per transfer the index of its route in the table and that route's length."""
        s, r = self.snap, self.router
        rl = r.rank_links()
        ac, bc = a[cross], b[cross]
        ok = rl.ok[ac] & rl.ok[bc]
        if not ok.all():
            ac, bc = ac[ok], bc[ok]
        # Fabric routes are per (edge switch, edge switch) class: find the classes by
        # counting, route each once, then hand them out.
        n_leaf = len(rl.leaves)
        cls, inverse = unique_inverse(rl.leaf_code[ac] * n_leaf + rl.leaf_code[bc],
                                      n_leaf * n_leaf)
        la, lb = rl.leaves[cls // n_leaf], rl.leaves[cls % n_leaf]
        cls_hops = r.fabric_hops(la, lb)
        no_path = cls_hops[inverse] < 0
        if not ok.all() or no_path.any():
            culprits = np.concatenate([cross[~ok], cross[ok][no_path]])
            self._raise_first(flows, a, b, keys, culprits)
        self.net_hops = max(self.net_hops, 2 + int(cls_hops.max()))
        if s.routing == "adaptive":
            dags = r.fabric_dags(la, lb)          # one DAG per class, shared
            return dags, inverse, dags.lengths[inverse]
        walks = r.fabric_walks(la[inverse], lb[inverse], keys[cross], bc, s.routing,
                               hops=cls_hops[inverse])
        return walks, np.arange(len(cross)), walks.lengths

    def _raise_first(self, flows, a, b, keys, culprits: np.ndarray) -> None:
        """Let the one-transfer path raise its exact message for the first culprit."""
        i = int(culprits.min())
        self.transfer(int(flows[i]), int(a[i]), int(b[i]), int(keys[i]))
        raise SolverError(f"cannot route rank {a[i]} to rank {b[i]}")

    def phase(self, name: str, steps: int) -> Phase:
        def cat(xs, dt):
            if not xs:
                return np.zeros(0, dt)
            return (xs[0] if len(xs) == 1 else np.concatenate(xs)).astype(dt, copy=False)

        return Phase(name, cat(self.flows, np.int64), cat(self.arcs, np.int64),
                     cat(self.weights, float), cat(self.bytes, float),
                     tuple(self.labels), steps, self.nv_hops, self.net_hops)


def _at(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``values[index]`` as int64, -1 where ``index`` is -1 (a missing arc or NIC)."""
    out = np.full(len(index), -1, dtype=np.int64)
    ok = index >= 0
    out[ok] = values[index[ok]]
    return out


# ----------------------------------------------------------------- rank layout
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


def _ring_orders(grouped: tuple[np.ndarray, np.ndarray, np.ndarray],
                 channels: range | list[int]) -> np.ndarray:
    """`ring_order` for each channel, one row per channel."""
    srt, starts, sizes = grouped
    j = np.repeat(np.arange(len(starts)), sizes)
    base = np.repeat(starts, sizes)
    k = np.arange(len(srt)) - base
    size = np.repeat(sizes, sizes)
    odd = j % 2 == 1
    out = np.empty((len(channels), len(srt)), dtype=srt.dtype)
    for row, c in enumerate(channels):
        shift = c % size
        # Even groups: rolled to start at `c`; odd groups: the same, reversed.
        out[row] = srt[base + np.where(odd, (size - 1 - k + shift) % size, (k + shift) % size)]
    return out


def ring_order(snap: Snapshot, ranks: np.ndarray, channel: int) -> np.ndarray:
    """Rail-aware ring order of ``ranks`` for ``channel``.

    Inside a domain the ring is rotated to start at local position ``channel``; domains
    alternate direction, so the hop from one domain to the next joins GPUs of the same
    rail (domain j ends on the rail where domain j+1 starts): inter-node traffic stays
    on one leaf per rail, as in NCCL's rail-aligned rings.
    """
    return _ring_orders(_grouped(snap, ranks), [channel])[0]


def _channels(groups: list[np.ndarray]) -> int:
    # One channel per rail when crossing domains (every NIC busy); inside one domain the
    # channel count does not change max-min totals, so use the GPU count too.
    return max(1, min(len(g) for g in groups))


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
    grouped = _grouped(snap, ranks)
    c_count = channels or max(1, int(grouped[2].min()))
    fb = _FlowBuilder(router)
    chain = collective in ("broadcast", "reduce")  # pipelined chain: no wrap-around edge
    flows = fb.new_flows(np.full(c_count, _RING_FACTOR[collective](n) * scale / c_count),
                         [f"{name} ch{c}" for c in range(c_count)])
    orders = _ring_orders(grouped, range(c_count))
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
    """SHARP: each GPU sends its 1/g shard up to its edge switch and gets the result back."""
    snap, r = router.snap, router
    gpu = snap.gpus[ranks].astype(np.int64)
    nic = snap.gpu_nic[ranks].astype(np.int64)
    pcie = r.pcie_arcs(gpu, nic)
    edge = _at(r.edge_arcs(), nic)
    if np.any((nic < 0) | (pcie < 0) | (edge < 0)):
        for rank in ranks.tolist():   # the one-by-one checks, for the exact message
            gi, ni = int(snap.gpus[rank]), int(snap.gpu_nic[rank])
            if ni < 0:
                raise SolverError(f"GPU {snap.node_ids[gi]} has no NIC on the fabric")
            r.pcie_arc(gi, ni)
            r.edge_arc(ni)
    fb = _FlowBuilder(r)
    names = [snap.node_ids[i] for i in gpu.tolist()]
    flows = fb.new_flows(np.full(2 * len(ranks), 1.0 / g),
                         [f"sharp {d} {nid}" for nid in names for d in ("up", "down")])
    # Per GPU: flow "up" crosses [pcie, edge], flow "down" [edge reversed, pcie reversed].
    arcs = np.stack([pcie, edge, edge ^ 1, pcie ^ 1], axis=1).reshape(-1)
    fb.flows.append(np.repeat(flows, 2))
    fb.arcs.append(arcs)
    fb.weights.append(np.ones(len(arcs)))
    fb.net_hops = 2
    return fb.phase("SHARP in-network all-reduce", 2)


def _merge(phases: list[Phase], name: str) -> Phase:
    """Run several phases' flows together (e.g. every domain's ring at once)."""
    offset, flows = 0, []
    for p in phases:
        flows.append(p.pair_flow + offset)
        offset += p.n_flows
    return Phase(name, np.concatenate(flows), np.concatenate([p.pair_arc for p in phases]),
                 np.concatenate([p.pair_weight for p in phases]),
                 np.concatenate([p.flow_bytes for p in phases]),
                 tuple(lbl for p in phases for lbl in p.flow_label),
                 max(p.steps for p in phases), max(p.nvlink_hops for p in phases),
                 max(p.net_hops for p in phases))


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
    # Labels "a->b": a million f-strings cost 3x more than joining prebuilt pieces.
    txt = [str(x) for x in ranks_arr.tolist()]
    head = [t + "->" for t in txt]
    labels = [h + t for k, h in enumerate(head) for t in txt[:k] + txt[k + 1:]]
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
