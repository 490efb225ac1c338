"""One group's collective solved alone on an idle fabric, as the simulation replays it.

`lone_collective` runs the solver's own path (`designer.solver.solve_collective` at the
one message size), so a collective replayed alone takes exactly today's solve time ``T``
(algorithm choice, protocol, channels, latencies: the NCCL-grade model).  It splits
``T`` into the two parts the simulation treats differently:

* the **bandwidth term** ``B``: the time the chosen plan's phases take at their exact
  max-min rates alone (``size x seconds per byte``, summed over sequential phases, the
  slowest of pipelined ones), the part that stretches when links are shared;
* the **fixed part** ``T - B``: latencies, and what the protocol and the channel count
  leave below the flow ceiling; it does not depend on the traffic around.

For each phase it keeps the flows (flow-arc pairs with split weights) and each flow's
*pace*, the rate it runs at alone (``flow_bytes / seconds_per_byte``: the slowest flow's
max-min rate, the others paced to it), which is also what it asks for when shared.

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver import solve_collective, take_snapshot
>>> snap = take_snapshot(build_template("hgx"))
>>> lone = lone_collective(snap, "allreduce", (0, 1, 2, 3), 1 << 26, cache={})
>>> t = float(solve_collective(snap, sizes=[1 << 26], ranks=[0, 1, 2, 3]).time_s[0])
>>> abs(lone.fixed_s + lone.bandwidth_s - t) < 1e-15, 0 < lone.bandwidth_s < t
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.solver import SolverError, solve_collective

__all__ = ["LoneCollective", "PhaseFlows", "lone_collective", "slowed"]


@dataclass(frozen=True, eq=False)
class PhaseFlows:
    """The flows of one phase of one group's collective.

    Attributes
    ----------
    pair_flow, pair_arc, pair_weight : ndarray
        Flow-arc incidence (flows numbered from 0 within the phase), shared routes
        expanded.
    pace_GBps : ndarray
        Per flow, the rate it runs at alone (its demand when shared).
    seconds : float
        The phase's bandwidth term: how long it runs alone, at its pace.
    arcs : ndarray
        The distinct arcs the phase loads.
    load_GBps : ndarray
        What the phase puts on each of ``arcs`` while it runs alone (its flows at their
        pace); shared, it is scaled by the phase's speed.
    """

    pair_flow: np.ndarray
    pair_arc: np.ndarray
    pair_weight: np.ndarray
    pace_GBps: np.ndarray
    seconds: float
    arcs: np.ndarray
    load_GBps: np.ndarray

    @property
    def n_flows(self) -> int:
        return len(self.pace_GBps)


@dataclass(frozen=True, eq=False)
class LoneCollective:
    """One group's collective alone: its time, split, and the flows of its phases.

    ``pipelined``: the phases run at once (one progress for all of them); otherwise one
    after the other.  ``touched``: the arcs whose edit could change this result (every
    arc of every algorithm weighed for it; any order, repeats allowed); None: unknown.
    """

    collective: str
    algorithm: str
    protocol: str
    time_s: float
    fixed_s: float
    bandwidth_s: float
    phases: tuple[PhaseFlows, ...]
    pipelined: bool
    touched: np.ndarray | None = None


def touched_arcs(arcs, n_arcs: int | None = None) -> np.ndarray:
    """The distinct arcs of ``arcs`` (any iterable of arc arrays), ascending.

    With ``n_arcs`` (the fabric's arc count) they are marked in a mask rather than
    sorted: plans of a 128-rank group list millions of flow-arc pairs.
    """
    parts = [np.asarray(a, dtype=np.int64) for a in arcs]
    if n_arcs is None:
        return np.unique(np.concatenate(parts))
    mask = np.zeros(n_arcs, dtype=bool)
    for a in parts:
        mask[a] = True
    return np.flatnonzero(mask)


def distinct(arc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(arc, return_inverse=True)`` for non-negative ints, by a lookup
    table instead of a sort (the same result)."""
    if not arc.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    top = int(arc.max()) + 1
    if 8 * arc.size < top:  # few arcs of a big fabric: a sort is cheaper than the tables
        arcs, inv = np.unique(arc, return_inverse=True)
        return arcs, inv.reshape(-1)
    seen = np.zeros(top, dtype=bool)
    seen[arc] = True
    arcs = np.flatnonzero(seen)
    where = np.zeros(len(seen), dtype=np.int64)
    where[arcs] = np.arange(len(arcs))
    return arcs, where[arc]


def _weighed(snap, cache: dict, collective: str, ranks: np.ndarray) -> np.ndarray | None:
    """The arcs of every plan the solve weighed for ``ranks`` (kept in its cache), or
    None when the cache does not show them.  The plans then leave the cache: each group
    is solved once, and a 128-rank group's plans hold megabytes of routes."""
    solved = cache.pop(("solved", collective, "auto", ranks.tobytes()), None)
    if not solved:
        return None
    try:
        return touched_arcs(
            [ph.pairs()[1] for plan, _, _ in solved for ph in plan.phases], snap.n_arcs
        )
    except (AttributeError, TypeError, ValueError):
        return None


def lone_collective(
    snap, collective: str, ranks, nbytes: float, *, cache: dict, launch: str = "eager"
) -> LoneCollective:
    """Solve one group's collective alone and split its time (see the module).

    Parameters
    ----------
    snap : Snapshot
    collective : str
        A `designer.workload.tasks.COMM_KINDS` name.
    ranks : sequence of int
        The group's ranks (indices into ``snap.gpus``) in rank order; for ``sendrecv``
        ``(sender, receiver)``.
    nbytes : float
        The message size (nccl-tests size); > 0.
    cache : dict
        `solve_collective`'s cache for this snapshot (routes and plans kept per group).
    launch : {"eager", "graph"}

    Returns
    -------
    LoneCollective

    Raises
    ------
    SolverError
        When the fabric cannot run it (no route between the group's GPUs...).
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    size = max(round(nbytes), 1)
    res = solve_collective(snap, collective, sizes=[size], ranks=ranks, launch=launch, cache=cache)
    total = float(res.time_s[0])
    plan = res.plan
    spb = [p.seconds_per_byte for p in res.phases]
    # The phases at their max-min pace; never more than the whole time (the NCCL model
    # only adds to the flow time, but a ceiling it lowers must not make it negative).
    band = size * (max(spb) if plan.pipelined else sum(spb))
    shrink = min(1.0, total / band) if band > 0 else 1.0
    phases = []
    for solved, planned in zip(res.phases, plan.phases, strict=True):
        if planned.n_flows == 0 or solved.seconds_per_byte <= 0:
            continue
        per_byte = max(spb) if plan.pipelined else solved.seconds_per_byte
        flow, arc, weight = (np.asarray(x) for x in planned.pairs())
        arc = arc.astype(np.int64)
        if getattr(planned, "mirrors", None) is not None:
            flow, arc, weight = _mirrored(flow, arc, np.asarray(weight, float), planned.mirrors)
        if collective == "sendrecv" and not np.any(snap.arc_src[arc] == snap.gpus[ranks[0]]):
            arc = _reversed(snap, arc)  # the plan sends the other way: take the return arcs
        weight = np.asarray(weight, float)
        pace = np.asarray(planned.flow_bytes, float) / (per_byte * 1e9)
        arcs, inv = distinct(arc)
        load = np.bincount(inv, weights=weight * pace[flow], minlength=len(arcs))
        phases.append(
            PhaseFlows(
                flow.astype(np.int64), arc, weight, pace, size * per_byte * shrink, arcs, load
            )
        )
    band = min(band, total) if phases else 0.0
    return LoneCollective(
        collective,
        res.algorithm,
        str(res.protocol[0]),
        total,
        total - band,
        band,
        tuple(phases),
        plan.pipelined,
        _weighed(snap, cache, collective, ranks),
    )


def _mirrored(flow: np.ndarray, arc: np.ndarray, weight: np.ndarray, mirrors) -> tuple:
    """The pairs with a phase's mirrored legs added (`Phase.mirrors`: an all-to-all by
    classes routes one representative rank per class, and the solver copies its load
    onto the other ranks' own arcs).  Each flow crossing a mirror's source arc also
    crosses the mirrored arc, at the source weight times the mirror's factor, so that
    those arcs carry their load in the simulation's link statistics and their sharing
    with other traffic slows the collective."""
    m_arc, m_src, m_fac = (np.asarray(x) for x in mirrors)
    new = ~np.isin(m_arc, arc)  # the representative's own arcs are pairs already
    m_arc, m_src, m_fac = m_arc[new].astype(np.int64), m_src[new], m_fac[new]
    if not m_arc.size:
        return flow, arc, weight
    order = np.argsort(arc, kind="stable")
    by_arc = arc[order]
    lo = np.searchsorted(by_arc, m_src, "left")
    count = np.searchsorted(by_arc, m_src, "right") - lo
    total = int(count.sum())
    pick = order[np.repeat(lo - np.cumsum(count) + count, count) + np.arange(total)]
    return (
        np.concatenate([flow, flow[pick]]),
        np.concatenate([arc, np.repeat(m_arc, count)]),
        np.concatenate([weight, weight[pick] * np.repeat(m_fac, count)]),
    )


def _reversed(snap, arc: np.ndarray) -> np.ndarray:
    """The opposite direction of each arc (a link's two arcs are ``2k`` and ``2k + 1``)."""
    back = arc ^ 1
    if not (
        np.array_equal(snap.arc_src[back], snap.arc_dst[arc])
        and np.array_equal(snap.arc_dst[back], snap.arc_src[arc])
    ):
        raise SolverError("a link's two directions are not paired as the simulation expects")
    return back


def merged(lones: list[LoneCollective]) -> list[LoneCollective]:
    """Groups of one communication task that take the same times alone, each class as
    one collective whose phases hold all its groups' flows (so they advance together,
    at the pace of the most slowed group; see `designer.workload.simulate`)."""
    classes: dict[tuple, list[LoneCollective]] = {}
    for lone in lones:
        key = (
            lone.collective,
            lone.algorithm,
            lone.protocol,
            lone.time_s,
            lone.fixed_s,
            lone.bandwidth_s,
            lone.pipelined,
            tuple(p.seconds for p in lone.phases),
        )
        classes.setdefault(key, []).append(lone)
    out = []
    for same in classes.values():
        if len(same) == 1:
            out.append(same[0])
            continue
        phases = tuple(_joined([g.phases[i] for g in same]) for i in range(len(same[0].phases)))
        first = same[0]
        out.append(
            LoneCollective(
                first.collective,
                first.algorithm,
                first.protocol,
                first.time_s,
                first.fixed_s,
                first.bandwidth_s,
                phases,
                first.pipelined,
            )
        )
    return out


def _joined(parts: list[PhaseFlows]) -> PhaseFlows:
    """One phase holding the flows of ``parts`` (flows renumbered in order)."""
    offsets = np.cumsum([0] + [p.n_flows for p in parts])
    arc = np.concatenate([p.pair_arc for p in parts])
    arcs, inv = distinct(np.concatenate([p.arcs for p in parts]))
    load = np.bincount(
        inv, weights=np.concatenate([p.load_GBps for p in parts]), minlength=len(arcs)
    )
    return PhaseFlows(
        np.concatenate([p.pair_flow + o for p, o in zip(parts, offsets, strict=False)]),
        arc,
        np.concatenate([p.pair_weight for p in parts]),
        np.concatenate([p.pace_GBps for p in parts]),
        parts[0].seconds,
        arcs,
        load,
    )


def slowed(lone: LoneCollective, efficiency: float) -> LoneCollective:
    """``lone`` run by kernels that reach ``efficiency`` of the link rates: the same
    fixed part and flows, every flow at ``efficiency`` of its pace, so the bandwidth
    term (and each phase) takes ``1 / efficiency`` as long and moves the same bytes."""
    if efficiency == 1.0:
        return lone
    phases = tuple(
        PhaseFlows(
            p.pair_flow,
            p.pair_arc,
            p.pair_weight,
            p.pace_GBps * efficiency,
            p.seconds / efficiency,
            p.arcs,
            p.load_GBps * efficiency,
        )
        for p in lone.phases
    )
    bandwidth = lone.bandwidth_s / efficiency
    return LoneCollective(
        lone.collective,
        lone.algorithm,
        lone.protocol,
        lone.fixed_s + bandwidth,
        lone.fixed_s,
        bandwidth,
        phases,
        lone.pipelined,
        lone.touched,
    )
