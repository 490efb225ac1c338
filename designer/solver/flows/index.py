"""Which flows of a solved collective use a link, and which links carry a GPU's traffic:
for link tooltips and for the path outline of a selected GPU.

A solved `Phase` keeps ``(flow, arc, weight)`` pairs and, under adaptive routing, fabric
routes shared by many flows (``Phase.routes``, when the solver has them); its pairs do
not say which rank-to-rank *transfer* of a flow (one hop of a ring channel, say) they
belong to.  The link tooltips rest on what any layout keeps:

- the arcs themselves: an arc that leaves or enters a GPU, or a rail NIC, names that
  GPU (for a NIC, the GPU whose rail NIC it is, when it is the only one);
- an NVLink route is listed as one run of pairs (it is one spray over the NVSwitches),
  beginning with the arcs out of its source GPU, so the NVLink *transfers* of a flow,
  with their two end GPUs, can be read back exactly;
- shared fabric routes say which flows take them.

**The paths of a GPU's flows** (`FlowIndex.gpu_arcs`) are every transfer it sends or
receives, whole: the NVLink transfers (with the peers' NVLinks), every arc at the GPU
itself, and each transfer across domains from end to end: the sender's way to its NIC
(a host relay or a sibling GPU included), its NIC's cable, the fabric route between the
two edge switches (the class DAG under adaptive routing, the transfer's own path under
ECMP or static routing) and the receiver's way in.  The transfers' ends and fabric
routes come from the phase's recipe (`designer.solver.flows.recipe.phase_transfers`).
Where a recipe does not name them (NICs cabled back to back), the outline falls back to
the GPU's access to the fabric and its edge switch's hops into it, as the flows through
the GPU use them.

Nothing is computed for every link or every result: the index is built on first use (a
hover, a selection) and answers one link or one GPU with array searches, fast on the
~800,000 pairs of a 16,384-GPU design.

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver.snapshot.build import take_snapshot
>>> from designer.solver.pipeline import solve_collective
>>> snap = take_snapshot(build_template("hgx", gpu="H100"))
>>> res = solve_collective(snap, sizes=[1 << 30], algorithm="ring")
>>> index = FlowIndex(snap, res.plan)
>>> gpu0 = snap.node_ids.index("n01-gpu0")
>>> arcs = index.gpu_arcs([gpu0])
>>> rows, total = index.link_flows(int(arcs[0]) // 2)
>>> total >= 1 and any(gpu0 in (r.src, r.dst) for r in rows)
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from designer.solver.arrays.ragged import ragged_arange
from designer.solver.flows.collectives import Phase, Plan
from designer.solver.flows.recipe import phase_transfers
from designer.solver.snapshot.build import DEAD, NVLINK, PCIE, Snapshot


@dataclass(frozen=True)
class FlowRow:
    """A flow on a link: its label and, where the link tells, the GPUs at the ends of
    its transfer there (node indices, -1 where unknown); ``phase`` indexes the plan's
    phases."""

    phase: int
    flow: int
    label: str
    src: int
    dst: int


@dataclass(frozen=True, eq=False)
class NvlinkRuns:
    """A phase's NVLink transfers: the runs of pairs of one NVLink route each."""

    pairs: np.ndarray  # positions (into the phase's pair arrays) of its NVLink pairs
    run: np.ndarray    # run of each of those pairs
    ptr: np.ndarray    # run r is pairs[ptr[r]:ptr[r + 1]]
    src: np.ndarray    # per run: source GPU node (-1: a switch, as NVLS receives)
    dst: np.ndarray    # per run: destination GPU node (-1: none, as NVLS sends)


def nvlink_runs(snap: Snapshot, phase: Phase, is_gpu: np.ndarray) -> NvlinkRuns:
    """Split a phase's NVLink pairs into transfers.

    A run starts at a flow's NVLink pair that does not follow another NVLink pair of the
    same flow, or at an arc out of a GPU that does not continue the fan-out of the pair
    before it (the first hop of a spray leaves its source over several arcs in a row).
    In designs where GPUs forward NVLink traffic (a torus), a multi-hop route reads as
    one run per GPU hop.
    """
    pos = np.flatnonzero(snap.arc_family[phase.pair_arc] == NVLINK)
    arc = phase.pair_arc[pos]
    flow = phase.pair_flow[pos]
    src = snap.arc_src[arc].astype(np.int64)
    dst = snap.arc_dst[arc].astype(np.int64)
    n = len(pos)
    if n == 0:
        e = np.zeros(0, dtype=np.int64)
        return NvlinkRuns(e, e, np.zeros(1, dtype=np.int64), e, e)
    start = np.ones(n, dtype=bool)
    start[1:] = ((flow[1:] != flow[:-1]) | (pos[1:] != pos[:-1] + 1)
                 | (is_gpu[src[1:]] & (src[1:] != src[:-1])))
    first = np.flatnonzero(start)
    run = np.cumsum(start) - 1
    r_src = np.where(is_gpu[src[first]], src[first], -1)
    r_dst = np.full(len(first), -1, dtype=np.int64)
    enters = np.flatnonzero(is_gpu[dst] & (dst != r_src[run]))
    r_dst[run[enters]] = dst[enters]
    return NvlinkRuns(pos, run, np.append(first, n), r_src, r_dst)


class FlowIndex:
    """Queries on one solved plan (see the module docstring); built per result, each
    phase's NVLink runs split on first use."""

    def __init__(self, snap: Snapshot, plan: Plan):
        self.snap = snap
        self.transfers = [phase_transfers(p) for p in plan.phases]
        # Endpoint routes expanded (their arcs name the GPU they serve); fabric routes
        # stay shared.
        self.plan = replace(plan, phases=tuple(p.local_view() for p in plan.phases))
        n = snap.n_nodes
        self.is_gpu = np.zeros(n, dtype=bool)
        self.is_gpu[snap.gpus] = True
        nics = snap.gpu_nic[snap.gpu_nic >= 0].astype(np.int64)
        self.is_nic = np.zeros(n, dtype=bool)
        self.is_nic[nics] = True
        # The GPU behind each rail NIC when only one uses it (-1 otherwise).
        self.nic_gpu = np.full(n, -1, dtype=np.int64)
        uniq, first, count = np.unique(snap.gpu_nic, return_index=True, return_counts=True)
        alone = (uniq >= 0) & (count == 1)
        self.nic_gpu[uniq[alone]] = snap.gpus[first[alone]]
        fam = snap.arc_family
        self.fabric = (fam != NVLINK) & (fam != PCIE) & (fam != DEAD)  # per arc: a network cable
        self._runs: list[NvlinkRuns | None] = [None] * len(plan.phases)

    def runs(self, i: int) -> NvlinkRuns:
        """NVLink transfers of phase ``i`` (split on first use)."""
        r = self._runs[i]
        if r is None:
            r = self._runs[i] = nvlink_runs(self.snap, self.plan.phases[i], self.is_gpu)
        return r

    # ------------------------------------------------------------------ links
    def link_flows(self, link: int, limit: int | None = None) -> tuple[list[FlowRow], int]:
        """Flows using link ``link`` (arcs ``2 link`` and ``2 link + 1``): the first
        ``limit`` rows (all by default) and how many there are.  Each flow appears once
        per transfer end the link tells apart (an NVLink transfer by its two GPUs, a
        NIC or PCIe cable by the GPU it serves), in phase and flow order."""
        s = self.snap
        keys: list[np.ndarray] = []
        n_nodes = s.n_nodes + 1  # ends shift by one: -1 (unknown) becomes 0
        for i, phase in enumerate(self.plan.phases):
            hit = np.flatnonzero((phase.pair_arc >> 1) == link)
            flows = phase.pair_flow[hit].astype(np.int64)
            arc = phase.pair_arc[hit]
            a, b = s.arc_src[arc].astype(np.int64), s.arc_dst[arc].astype(np.int64)
            # A GPU end names the GPU; a NIC's cable names the GPU whose rail NIC it is.
            cable = self.fabric[arc]
            src = np.where(self.is_gpu[a], a,
                           np.where(self.is_nic[a] & cable, self.nic_gpu[a], -1))
            dst = np.where(self.is_gpu[b], b,
                           np.where(self.is_nic[b] & cable, self.nic_gpu[b], -1))
            nv = s.arc_family[arc] == NVLINK
            if nv.any():
                runs = self.runs(i)
                at = np.searchsorted(runs.pairs, hit[nv])
                src[nv], dst[nv] = runs.src[runs.run[at]], runs.dst[runs.run[at]]
            shared = _shared_flows(phase, link)
            flows = np.concatenate([flows, shared])
            src = np.concatenate([src, np.full(len(shared), -1)])
            dst = np.concatenate([dst, np.full(len(shared), -1)])
            keys.append((flows * n_nodes + src + 1) * n_nodes + dst + 1)
        rows: list[FlowRow] = []
        total = 0
        for i, k in enumerate(keys):
            k = np.unique(k)
            total += len(k)
            take = k if limit is None else k[:max(limit - len(rows), 0)]
            phase = self.plan.phases[i]
            for key in take.tolist():
                rest, dst = divmod(key, n_nodes)
                rest, src = divmod(rest, n_nodes)
                rows.append(FlowRow(i, rest, phase.flow_label[rest], src - 1, dst - 1))
        return rows, total

    # ------------------------------------------------------------------ GPUs
    def gpu_arcs(self, nodes) -> np.ndarray:
        """Arcs that carry the traffic of the GPU ``nodes`` (node indices), sorted: see
        the module docstring for what is and is not included."""
        s = self.snap
        nodes = np.asarray(nodes, dtype=np.int64)
        ranks = np.flatnonzero(np.isin(s.gpus, nodes))
        nics = s.gpu_nic[ranks].astype(np.int64)
        nics = nics[nics >= 0]
        access = nics
        via = getattr(s, "gpu_nic_via", None)  # a host relay between GPU and NIC
        if via is not None:
            relay = via[ranks].astype(np.int64)
            relay = relay[relay >= 0]
            access = np.concatenate([access, relay[~self.is_gpu[relay]]])
        # Arc masks from node masks, then one lookup per pair for all of them: what keeps
        # the ~2.5 million pairs of a 16k-GPU ring fast.
        src, dst = s.arc_src, s.arc_dst
        is_node, is_access, is_own_nic = (self._mask(x) for x in (nodes, access, nics))
        TOUCH, ACCESS, NIC_CABLE = 1, 2, 4
        code = (TOUCH * (is_node[src] | is_node[dst])
                + ACCESS * (is_access[src] | is_access[dst])
                + NIC_CABLE * (self.fabric & (is_own_nic[src] | is_own_nic[dst]))
                ).astype(np.uint8)
        out: list[np.ndarray] = []
        for i, phase in enumerate(self.plan.phases):
            pa = phase.pair_arc
            c = code[pa]
            touch = (c & TOUCH) > 0
            if not touch.any():
                continue
            flow_mask = np.zeros(phase.n_flows, dtype=bool)
            flow_mask[phase.pair_flow[touch]] = True
            out.append(pa[touch])
            runs = self.runs(i)
            own = np.flatnonzero(self._mask_or_none(runs.src, is_node)
                                 | self._mask_or_none(runs.dst, is_node))
            at = ragged_arange(runs.ptr[own], runs.ptr[own + 1] - runs.ptr[own])
            out.append(pa[runs.pairs[at]])
            if self.transfers[i] is not None:  # the transfers' routes are known: whole
                out.extend(self.transfers[i].arcs_of(ranks))
                continue
            # The flows' access to the fabric and their NICs' cables ...
            near = np.flatnonzero(c & (ACCESS | NIC_CABLE))
            near = near[flow_mask[phase.pair_flow[near]]]
            out.append(pa[near[(c[near] & ACCESS) > 0]])
            cables = pa[near[(c[near] & NIC_CABLE) > 0]]
            # ... and, at the edge switches those cables reach, their hop into the fabric
            # (NIC cables excluded: other GPUs' access).
            edges = np.unique(np.where(is_own_nic[src[cables]], dst[cables], src[cables]))
            if edges.size:
                is_edge = self._mask(edges)
                hop = (self.fabric & ~self.is_nic[src] & ~self.is_nic[dst]
                       & (is_edge[src] | is_edge[dst]))
                at = np.flatnonzero(hop[pa])
                out.append(pa[at[flow_mask[phase.pair_flow[at]]]])
                out.append(_shared_arcs_at(phase, np.flatnonzero(flow_mask), edges, s))
        if not out:
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(out)).astype(np.int64)

    @staticmethod
    def _mask_or_none(nodes: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``mask[nodes]``, False where a node is -1."""
        return mask[np.maximum(nodes, 0)] & (nodes >= 0)

    def _mask(self, nodes: np.ndarray) -> np.ndarray:
        m = np.zeros(self.snap.n_nodes, dtype=bool)
        m[nodes] = True
        return m


def _shared_flows(phase: Phase, link: int) -> np.ndarray:
    """Flows whose shared fabric routes (``Phase.routes``) cross ``link``."""
    routes = getattr(phase, "routes", None)
    if routes is None:
        return np.zeros(0, dtype=np.int64)
    entries = np.flatnonzero((np.asarray(routes.link) >> 1) == link)
    if entries.size == 0:
        return np.zeros(0, dtype=np.int64)
    hit = np.unique(np.searchsorted(routes.ptr, entries, side="right") - 1)
    return np.asarray(routes.pair_flow)[np.isin(routes.pair_route, hit)].astype(np.int64)


def _shared_arcs_at(phase: Phase, flows: np.ndarray, nodes: np.ndarray,
                    snap: Snapshot) -> np.ndarray:
    """Arcs at ``nodes`` of the shared fabric routes that ``flows`` take."""
    routes = getattr(phase, "routes", None)
    if routes is None:
        return np.zeros(0, dtype=np.int64)
    taken = np.unique(np.asarray(routes.pair_route)[np.isin(routes.pair_flow, flows)])
    if taken.size == 0:
        return np.zeros(0, dtype=np.int64)
    entries = ragged_arange(np.asarray(routes.ptr)[taken], np.diff(routes.ptr)[taken])
    arcs = np.asarray(routes.link)[entries].astype(np.int64)
    at = np.isin(snap.arc_src[arcs], nodes) | np.isin(snap.arc_dst[arcs], nodes)
    return arcs[at]

