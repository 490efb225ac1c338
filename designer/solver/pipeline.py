"""From flows to time: solve each phase's max-min rates, derive the algorithm's bandwidth
ceiling, and let the NCCL-grade model turn it into time per message size.

``solve_collective`` is the one entry point the CLI and the GUI runner call: snapshot in,
plain result out (tagged with the snapshot's generation so stale results can be dropped).

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver.snapshot.build import take_snapshot
>>> res = solve_collective(take_snapshot(build_template("hgx")), sizes=[8 << 30])
>>> res.algorithm_by_size[0], 450 < float(res.busbw_GBps[0]) < 500  # NVLS on 8x H100
('nvls', True)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from designer.solver.errors import SolverError
from designer.solver.flows.collectives import Plan, candidate_plans
from designer.solver.parallel import fork
from designer.solver.rates.maxmin import max_min_rates
from designer.solver.reuse import RouteMemo
from designer.solver.routing.router import Router
from designer.solver.snapshot.build import Snapshot
from designer.solver.timing import nccl_model
from designer.solver.tuning import current

SWEEP = tuple(1 << k for k in range(15, 35))  # 32 KiB .. 16 GiB, as nccl-tests


@dataclass(frozen=True, eq=False)
class PhaseSolution:
    """One phase's rates and the arcs it loads (at its bandwidth-bound pace)."""

    name: str
    steps: int
    seconds_per_byte: float
    rates_GBps: np.ndarray
    arc_load_GBps: np.ndarray
    bottleneck_arc: int
    bottleneck_flow: str


@dataclass(frozen=True, eq=False)
class TimelineBar:
    phase: str
    group: str
    start_s: float
    end_s: float
    steps: int
    bottleneck: str


@dataclass(frozen=True, eq=False)
class CollectiveResult:
    """Everything one solve produces (see ``fabric-designer solve --json``)."""

    generation: int
    collective: str
    algorithm: str
    routing: str
    n_ranks: int
    n_nodes: int
    sizes: np.ndarray
    time_s: np.ndarray
    algbw_GBps: np.ndarray
    busbw_GBps: np.ndarray
    protocol: np.ndarray
    algorithm_by_size: tuple[str, ...]
    ceiling_busbw_GBps: float
    arc_util: np.ndarray
    arc_load_GBps: np.ndarray
    phases: tuple[PhaseSolution, ...]
    timeline: tuple[TimelineBar, ...]
    timing_ms: dict[str, float] = field(default_factory=dict)
    plan: Plan | None = None  # the chosen plan (its phases' flows and pairs), for views
    notes: tuple[str, ...] = ()
    """The model's caveats on the algorithms chosen (`nccl_model.caveats`)."""

    def bottlenecks(self, snap: Snapshot, top: int = 10) -> list[tuple[str, float]]:
        """The most utilised arcs as ``(arc name, utilisation)``, busiest first; arcs
        whose utilisations differ only by rounding (1e-9) in arc order, so that the
        list does not depend on the order the loads were summed in."""
        key = -np.round(self.arc_util, 9)
        if 0 < top < len(key):  # the top candidates and every tie with the last of them
            (cand,) = np.nonzero(key <= np.partition(key, top - 1)[top - 1])
            order = cand[np.argsort(key[cand], kind="stable")][:top]
        else:
            order = np.argsort(key, kind="stable")[:top]
        return [(snap.arc_name(int(a)), float(self.arc_util[a])) for a in order
                if self.arc_util[a] > 0]


def solve_phase(snap: Snapshot, phase) -> PhaseSolution:
    """Exact max-min rates of a phase's flows; its time per message byte."""
    if phase.n_flows == 0:
        return PhaseSolution(phase.name, phase.steps, 0.0, np.zeros(0), np.zeros(snap.n_arcs),
                             -1, "")
    routes = phase.routes
    mm = max_min_rates(snap.arc_cap, phase.pair_flow, phase.pair_arc, phase.pair_weight,
                       n_flows=phase.n_flows, routes=routes)
    rates = mm.rates
    dead = np.flatnonzero(rates <= 0)
    if dead.size:
        arc = int(mm.bottleneck[dead[0]])
        where = snap.arc_name(arc) if arc >= 0 else "a link"
        raise SolverError(f"zero-capacity path: {phase.flow_label[dead[0]]} crosses {where}")
    # Per-flow arrays are a million long in an all-to-all: computed in place, as each
    # fresh one costs ~2,000 page faults.
    per_byte = np.divide(phase.flow_bytes, rates)
    per_byte /= 1e9
    slowest = int(np.argmax(per_byte))
    t = float(per_byte[slowest])
    # Flows of a synchronous phase progress at the pace of the slowest one: flow f at
    # ``bytes_f / t``, slowed down by ``pace / rate = per_byte / t``.
    slowdown = per_byte
    slowdown /= t
    if np.ptp(slowdown) <= _SAME_PACE * slowdown.max():
        # Every flow slowed by the same factor (a ring's channels; any phase whose flows
        # finish together): the loads are the max-min loads scaled, no pass over pairs
        # (in place: the result is this call's own, and a copy is a page fault per 512
        # arcs).
        load = mm.link_load
        load *= float(slowdown.max())
    else:
        pace = phase.flow_bytes / (t * 1e9)
        load = _pair_load(phase, pace, snap.n_arcs)
        if routes is not None:
            load += routes.link_load(pace, snap.n_arcs)
    if phase.mirrors is not None:
        arc, source, factor = phase.mirrors
        load[arc] = load[source] * factor
    return PhaseSolution(phase.name, phase.steps, t, rates, load,
                         int(mm.bottleneck[slowest]), phase.flow_label[slowest])


def _busiest_load(phases: list[PhaseSolution], n_arcs: int) -> np.ndarray:
    """Each arc's load in its busiest phase (GB/s).  One phase: its own array, made
    read-only as it is now shared (a copy would be a page fault per 512 arcs)."""
    if not phases:
        return np.zeros(n_arcs)
    if len(phases) == 1:
        load = phases[0].arc_load_GBps
        load.flags.writeable = False
        return load
    load = phases[0].arc_load_GBps.copy()
    for p in phases[1:]:
        np.maximum(load, p.arc_load_GBps, out=load)
    return load


_SAME_PACE = 1e-12  # relative spread of the flows' slowdowns read as one common factor


def _pair_load(phase, pace: np.ndarray, n_arcs: int) -> np.ndarray:
    """``sum weight * pace[flow]`` per arc over the phase's pairs, in slices.

    A 131k-GPU ring has 3.7 million pairs: whole-array temporaries (and bincount's int64
    copy of the ids) are ~90 MB of fresh memory whose page faults made this ~170 ms, in
    numpy calls that hold the GIL against the GUI thread; slices reuse small buffers.
    """
    load = np.zeros(n_arcs)
    arc, weight, flow = phase.pair_arc, phase.pair_weight, phase.pair_flow
    step = current().pair_load_slice
    for a in range(0, len(arc), step):
        b = a + step
        np.add.at(load, arc[a:b], weight[a:b] * pace[flow[a:b]])
    return load


def switch_latency(snap: Snapshot) -> float:
    """The median latency of the network arcs (0 without any): a switch hop's, which the
    time model adds per switch-to-switch hop of a route.  One figure for the whole
    design: an edit anywhere (a failed link, a link of another technology) may move it,
    and with it the time of every collective that crosses switches."""
    # (Per link: a link's two arcs share their family.  The latencies of these arcs
    # alone: the per-arc array is made only on demand.)
    net = np.flatnonzero(snap.arc_family[0::2] > 1)
    return (float(np.median(snap.arc_delays.link_latencies(net), overwrite_input=True))
            if net.size else 0.0)


def _shape(plan: Plan, snap: Snapshot, phases: Sequence[PhaseSolution],
           switch_lat: float | None = None) -> nccl_model.CollectiveShape:
    """What the time model needs of a solved plan (``switch_lat``: `switch_latency`,
    found here if not given)."""
    if switch_lat is None:
        switch_lat = switch_latency(snap)
    n = len(plan.ranks)
    per_byte = [p.seconds_per_byte for p in phases]
    total = max(per_byte) if plan.pipelined else sum(per_byte)
    ceiling = nccl_model.bus_factor(plan.collective, n) / total / 1e9
    rated = None
    if plan.algorithm == "tree" and plan.n_nodes > 2:
        # NCCL's tuner rates a tree across more than two nodes at half the node's NIC
        # bandwidth (it chooses by that; the tree then runs at what it moves).
        rated = min(ceiling, _node_nic_GBps(snap, plan.ranks) * (n - 1) / n)
    # Fabric latency beyond NCCL's per-step network constant: switch tiers past the first.
    arc_hops = max(ph.net_hops for ph in plan.phases)
    algorithm = ("p2p" if plan.collective in ("alltoall", "sendrecv")
                 else plan.algorithm)
    return nccl_model.CollectiveShape(
        collective=plan.collective, algorithm=algorithm, n_ranks=n, n_nodes=plan.n_nodes,
        ceiling_GBps=ceiling,
        nvlink_hops=max(ph.nvlink_hops for ph in plan.phases),
        net_hops=arc_hops if plan.n_nodes > 1 else 0,
        net_latency_us=switch_lat * max(arc_hops - 2, 0) * 1e6,
        nvls_efficiency=(_nvls_efficiency(snap, plan)
                         if algorithm in nccl_model.NVLS_ALGORITHMS else None),
        tuner_ceiling_GBps=rated, step_counts=plan.step_counts)


def _notes(shapes) -> tuple[str, ...]:
    """The model's caveats (`nccl_model.caveats`) on the chosen ``shapes``, each once,
    in order."""
    return tuple(dict.fromkeys(n for shape in shapes for n in nccl_model.caveats(shape)))


def _nvls_efficiency(snap: Snapshot, plan: Plan) -> float | None:
    """The catalog's NVLS efficiency of the switches that reduce for ``plan`` (the
    lowest over its ranks' domains), or None where no switch model gives one."""
    doms = np.unique(snap.gpu_domain[np.asarray(plan.ranks, dtype=np.int64)])
    eff = snap.domain_nvls_eff[doms]
    eff = eff[eff > 0]
    return float(eff.min()) if eff.size else None


def _node_nic_GBps(snap: Snapshot, ranks: np.ndarray) -> float:
    """The smallest per-domain sum of the ranks' NIC uplink capacities."""
    ranks = np.asarray(ranks, dtype=np.int64)
    nic = snap.gpu_nic[ranks].astype(np.int64)
    has = nic >= 0
    if not has.any():
        return float("inf")
    # A NIC's uplink: its best network arc (0 when it has none).
    net = snap.arc_family > 1
    best = np.zeros(snap.n_nodes)
    np.maximum.at(best, snap.arc_src[net], snap.arc_cap[net])
    dom = snap.gpu_domain[ranks[has]].astype(np.int64)
    # Each NIC once per domain, however many GPUs share it (PXN); summed per domain in
    # order (bincount adds sequentially, as a running sum would).
    pairs = np.unique(dom * snap.n_nodes + nic[has])
    total = np.bincount(pairs // snap.n_nodes, weights=best[pairs % snap.n_nodes])
    return float(total[np.unique(dom)].min())


def _repeats(ranks: np.ndarray, n: int) -> bool:
    """Whether ``ranks`` (in ``[0, n)``) holds a value twice: a count per rank, not a set
    of 131,072 Python ints on every solve."""
    return bool(np.bincount(ranks, minlength=n).max() > 1)


def solve_collective(snap: Snapshot, collective: str = "allreduce", *,
                     sizes: Sequence[int] = SWEEP, algorithm: str = "auto",
                     ranks: Sequence[int] | None = None,
                     launch: str = "eager", gpus_per_thread: int = 1,
                     cancelled: Callable[[], bool] | None = None,
                     cache: dict | None = None,
                     memo: RouteMemo | None = None) -> CollectiveResult:
    """Route, rate and time a collective on a snapshot.

    Parameters
    ----------
    snap : Snapshot
    collective : str
        allreduce, allgather, reducescatter, broadcast, reduce, alltoall or sendrecv.
    sizes : sequence of int
        Message sizes in bytes (the nccl-tests "size").
    algorithm : str
        ``auto`` (lowest predicted time per size, like NCCL's tuner) or a forced one.
    ranks : sequence of int, optional
        Ranks (indices into ``snap.gpus``); all GPUs by default.
    launch : {"eager", "graph"}
        Kernel launch mode (CUDA graphs launch faster).
    gpus_per_thread : int
        GPUs driven by one thread (nccl-tests ``-g``): eager launches serialise.
    cancelled : callable, optional
        Polled between stages; when it returns True the solve raises `SolverError`.
    cache : dict, optional
        Shared by several calls on ONE snapshot (a focus size, a sweep, a training
        all-reduce): the router and the routed, rated plans are kept in it per
        (collective, algorithm, ranks), so only the first call routes.  Start each
        snapshot with a new dict.
    memo : RouteMemo, optional
        Kept by a caller that solves snapshot after snapshot of ONE design (the GUI
        after each edit): what was routed for the previous snapshot is reused where the
        edit left it valid (`reuse`), with the same result as routing afresh.
        With a ``cache`` too, the memo is kept in it, so later calls with that cache
        (a sweep, a training all-reduce) use it without being given it.

    Returns
    -------
    CollectiveResult
    """
    t0 = time.perf_counter()
    if len(sizes) == 0:
        raise SolverError("no message sizes to time")
    check = cancelled or (lambda: False)
    rank_arr = np.arange(snap.n_gpus) if ranks is None else np.asarray(ranks, dtype=np.int64)
    if rank_arr.size and (rank_arr.min() < 0 or rank_arr.max() >= snap.n_gpus):
        raise SolverError(f"ranks must be between 0 and {snap.n_gpus - 1}")
    if rank_arr.size > 1 and _repeats(rank_arr, snap.n_gpus):
        raise SolverError("ranks must not repeat")
    if cache is not None and cache.setdefault("snapshot", snap) is not snap:
        raise SolverError("a solve cache serves one snapshot: start a new dict")
    if cache is not None:
        memo = cache.setdefault("memo", memo) if memo is not None else cache.get("memo")
    key = ("solved", collective, algorithm, rank_arr.tobytes())
    solved = None if cache is None else cache.get(key)
    t_route = t_rates = time.perf_counter()
    if solved is None:
        if memo is not None:
            plans = memo.plans(snap, rank_arr, collective, algorithm)
        else:
            router = None if cache is None else cache.get("router")
            if router is None:
                router = Router(snap)
                if cache is not None:
                    cache["router"] = router
            plans = candidate_plans(router, rank_arr, collective, algorithm)
            # Let go of the router unless the cache keeps it: its tables (MBs on a big
            # fabric) are freed before the rates are found, whose arrays then reuse
            # that memory rather than take fresh pages (page faults).
            del router
        t_route = time.perf_counter()
        if check():
            raise SolverError("cancelled")
        solved = []
        # A fact of the snapshot the time model wants, found on the helper thread while
        # this one finds the rates.
        switch_lat = fork(switch_latency, snap)
        for plan in plans:
            phases = tuple(solve_phase(snap, ph) for ph in plan.phases)
            solved.append((plan, phases, _shape(plan, snap, phases, switch_lat.join())))
            if check():
                raise SolverError("cancelled")
        t_rates = time.perf_counter()
        if cache is not None:
            cache[key] = solved
    sizes_arr = np.asarray(sizes, dtype=np.int64)
    best, preds = nccl_model.choose([s for _, _, s in solved], sizes_arr, launch=launch,
                                    gpus_per_thread=gpus_per_thread)
    best = np.asarray(best)
    # The result's links and phases come from the plan chosen at the largest size.
    top = int(best[-1])
    plan, phases, shape = solved[top]
    time_s = np.array([preds[b].time_s[i] for i, b in enumerate(best)])
    algbw = sizes_arr / time_s / 1e9
    busbw = algbw * nccl_model.bus_factor(collective, len(rank_arr))
    protocol = np.array([preds[b].protocol[i] for i, b in enumerate(best)])
    load = _busiest_load(phases, snap.n_arcs)
    util = np.divide(load, snap.arc_cap, out=np.zeros_like(load), where=snap.arc_cap > 0)
    timeline = _timeline(plan, phases, float(preds[top].time_s[-1]), snap)
    t_end = time.perf_counter()
    return CollectiveResult(
        generation=snap.generation, collective=collective, algorithm=shape.algorithm,
        routing=snap.routing, n_ranks=len(rank_arr), n_nodes=plan.n_nodes,
        sizes=sizes_arr, time_s=time_s, algbw_GBps=algbw, busbw_GBps=busbw,
        protocol=protocol, algorithm_by_size=tuple(solved[b][2].algorithm for b in best),
        ceiling_busbw_GBps=shape.ceiling_GBps, arc_util=util, arc_load_GBps=load,
        phases=phases, timeline=timeline,
        timing_ms={"route": (t_route - t0) * 1e3, "rates": (t_rates - t_route) * 1e3,
                   "time": (t_end - t_rates) * 1e3, "total": (t_end - t0) * 1e3},
        plan=plan,
        notes=_notes(solved[b][2] for b in best.tolist()),
    )


def _timeline(plan: Plan, phases: Sequence[PhaseSolution], total_s: float,
              snap: Snapshot) -> tuple[TimelineBar, ...]:
    """Phase/step bars for the largest size: sequential phases share the total time in
    proportion to their bandwidth time; a ring all-reduce shows its reduce-scatter and
    all-gather halves, a phase with pipelined stages (`Phase.stages`) one bar per stage,
    each starting a stage's latency after the one before."""
    bars: list[TimelineBar] = []
    weights = [p.seconds_per_byte for p in phases]
    norm = (max(weights) if plan.pipelined else sum(weights)) or 1.0
    start = 0.0
    for p, planned in zip(phases, plan.phases, strict=True):
        dur = total_s * (p.seconds_per_byte / norm if not plan.pipelined else 1.0)
        bottleneck = snap.arc_name(p.bottleneck_arc) if p.bottleneck_arc >= 0 else ""
        if planned.stages:
            # Pipelined stages (SHARP up its tree, then down): stage k starts when the
            # first chunk has crossed the stages before it (a switch latency per step)
            # and ends as much after stage k - 1.
            hop = switch_latency(snap)
            lag = np.cumsum([0.0] + [hop * s for _, s in planned.stages[:-1]])
            lag = np.minimum(lag, dur / 2).tolist()
            for (name, steps), x in zip(planned.stages, lag, strict=True):
                bars.append(TimelineBar(name, "all ranks", start + x,
                                        start + dur - lag[-1] + x, steps, bottleneck))
        elif plan.algorithm == "ring" and plan.collective == "allreduce" and len(phases) == 1:
            half = dur / 2
            bars.append(TimelineBar("reduce-scatter", "all ranks", start, start + half,
                                    p.steps // 2, bottleneck))
            bars.append(TimelineBar("all-gather", "all ranks", start + half, start + dur,
                                    p.steps // 2, bottleneck))
        else:
            bars.append(TimelineBar(p.name, "all ranks", start, start + dur, p.steps, bottleneck))
        if not plan.pipelined:
            start += dur
    return tuple(bars)
