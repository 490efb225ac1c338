"""How fast each active phase runs when every active phase shares the links at once.

The flows of every phase in flight are one max-min problem (the solver's exact
`max_min_rates`), each flow capped at its pace alone (`lone.PhaseFlows.pace_GBps`: a
flow never takes more than its collective can use, so what one collective leaves unused
goes to the others).  A phase's flows advance together, so the phase runs at the pace of
its most slowed flow: its **speed** is ``min_f rate_f / pace_f`` (1 alone, lower when
shared).

Repeated patterns are not solved twice:

* the whole set of active phases is a key (micro-batches repeat the same sets);
* otherwise the set splits into independent components (phases that share no arc
  never affect each other's rates), and each component is keyed by its *shape*: its
  phases' flows with the arcs renamed in order of first use, with their capacities and
  paces.  Identical tensor-parallel groups in identical NVLink domains are then one
  solve, and a change in one component re-solves that component only.  Components not
  yet known are solved together in one `max_min_rates` call (they are disjoint, so the
  joint solve is each one's own).

Example
-------
>>> import numpy as np
>>> from designer.workload.lone import PhaseFlows
>>> one = lambda arc: PhaseFlows(np.array([0]), np.array([arc]), np.array([1.0]),
...                              np.array([10.0]), 1.0, np.array([arc]), np.array([10.0]))
>>> rates = SharedRates(np.array([10.0, 10.0]))
>>> rates.speeds([one(0), one(0), one(1)]).tolist()
[0.5, 0.5, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from designer.solver import SolverError, max_min_rates
from designer.workload.lone import PhaseFlows

__all__ = ["SPEED_RTOL", "SharedRates"]

#: A speed within this of 1 is 1: alone, a capped flow gets its pace back up to the
#: max-min solver's tie tolerance, and the lone time must come back exactly.
SPEED_RTOL = 1e-9


def _first_use(arc: np.ndarray, n_arcs: int) -> np.ndarray:
    """``arc`` (ints below ``n_arcs``) renamed 0, 1, 2... in order of first appearance
    (a lookup table: no sort of the whole array)."""
    if not arc.size:
        return np.zeros(0, dtype=np.int64)
    first = np.full(n_arcs, len(arc), dtype=np.int64)
    np.minimum.at(first, arc, np.arange(len(arc)))
    used = np.flatnonzero(first < len(arc))
    rank = np.empty(n_arcs, dtype=np.int64)
    rank[used[np.argsort(first[used], kind="stable")]] = np.arange(len(used))
    return rank[arc]


class SharedRates:
    """Speeds of sets of active phases on one fabric, with the caches of the module.

    Parameters
    ----------
    capacity : ndarray
        Capacity of each arc (GB/s), the snapshot's ``arc_cap``.
    reuse : bool
        Keep solutions (the whole set, then components by shape); False: the plain
        reference path, one max-min solve of every set asked for, for the tests that
        compare the two.
    """

    def __init__(self, capacity: np.ndarray, *, reuse: bool = True):
        self.capacity = np.asarray(capacity, dtype=float)
        self.reuse = reuse
        self._ids: dict[int, int] = {}  # id(PhaseFlows) -> item number
        self._held: list[PhaseFlows] = []  # keeps the numbered objects alive
        self._shape_of: list[int] = []  # item number -> shape number
        self._shapes: dict[bytes, int] = {}
        self._whole: dict[tuple[int, ...], np.ndarray] = {}
        self._exact: dict[tuple[int, ...], tuple[float, ...]] = {}
        self._parts: dict[tuple, np.ndarray] = {}
        self._overlaps: dict[tuple[int, int], bool] = {}
        self._sharing: dict[tuple[int, ...], bytes] = {}
        self.solves = 0
        """`max_min_rates` calls made (for the benchmark and the cache tests)."""

    def _item(self, phase: PhaseFlows) -> int:
        k = self._ids.get(id(phase))
        if k is None:
            k = self._ids[id(phase)] = len(self._held)
            self._held.append(phase)
            local = _first_use(phase.pair_arc, len(self.capacity))
            first = np.empty(int(local.max(initial=-1)) + 1, dtype=np.int64)
            first[local] = phase.pair_arc  # the arcs in order of first use
            key = b"|".join(
                np.ascontiguousarray(x).tobytes()
                for x in (
                    phase.pair_flow.astype(np.int64),
                    local,
                    phase.pair_weight.astype(float),
                    phase.pace_GBps.astype(float),
                    self.capacity[first],
                )
            )
            self._shape_of.append(self._shapes.setdefault(key, len(self._shapes)))
        return k

    def speeds(self, phases: Sequence[PhaseFlows]) -> np.ndarray:
        """Speed (0, 1] of each of ``phases`` (a phase may appear twice: two
        collectives with the same flows at once), all sharing the links."""
        return np.array(self.speed_tuple(phases), dtype=float)

    def speed_tuple(self, phases: Sequence[PhaseFlows]) -> tuple[float, ...]:
        """`speeds` as a tuple of floats: the event loop's form (nothing to copy)."""
        n = len(phases)
        if n == 0:
            return ()
        if not self.reuse:
            return tuple(self._max_min(list(phases)).tolist())
        # The event loop asks for the same list of phases again and again: keyed by
        # the phases themselves (each held in `_held` once seen, so ids stay theirs).
        exact = tuple(map(id, phases))
        got = self._exact.get(exact)
        if got is not None:
            return got
        items = np.array([self._item(p) for p in phases], dtype=np.int64)
        order = np.argsort(items, kind="stable")
        whole = tuple(items[order].tolist())
        solved = self._whole.get(whole)
        if solved is None:
            solved = self._solve_parts([phases[i] for i in order.tolist()], items[order])
            self._whole[whole] = solved
        out = np.empty(n)
        out[order] = solved
        got = self._exact[exact] = tuple(out.tolist())
        return got

    def _overlap(self, i: int, j: int) -> bool:
        """Whether items ``i`` and ``j`` share an arc (kept: sets of running phases
        change one phase at a time, so the same pairs come back)."""
        key = (i, j) if i < j else (j, i)
        got = self._overlaps.get(key)
        if got is None:
            a, b = self._held[key[0]].arcs, self._held[key[1]].arcs
            got = self._overlaps[key] = bool(np.intersect1d(a, b, assume_unique=True).size)
        return got

    def _parts_of(self, items: np.ndarray) -> list[np.ndarray]:
        """The components of ``items`` (positions), each in position order, components in
        order of their first position."""
        n = len(items)
        root = list(range(n))

        def find(x: int) -> int:
            while root[x] != x:
                root[x] = root[root[x]]
                x = root[x]
            return x

        ids = items.tolist()
        for x in range(n):
            for y in range(x + 1, n):
                if (ids[x] == ids[y] or self._overlap(ids[x], ids[y])) and find(x) != find(y):
                    root[max(find(x), find(y))] = min(find(x), find(y))
        return _groups(np.array([find(x) for x in range(n)], dtype=np.int64))

    def _solve_parts(self, phases: list[PhaseFlows], items: np.ndarray) -> np.ndarray:
        n = len(phases)
        out = np.empty(n)
        todo: list[tuple[tuple, np.ndarray]] = []
        for comp in self._parts_of(items):
            shapes = np.array([self._shape_of[items[i]] for i in comp], dtype=np.int64)
            canon = comp[np.lexsort((items[comp], shapes))]
            key = (tuple(self._shape_of[items[i]] for i in canon),)
            if len(canon) > 1:
                # How the component's phases share arcs, named independently of the
                # arcs (kept per set of phases: it is an array pass over their pairs).
                members = tuple(items[canon].tolist())
                shared = self._sharing.get(members)
                if shared is None:
                    arcs = np.concatenate([phases[i].pair_arc for i in canon])
                    shared = self._sharing[members] = _first_use(arcs, len(self.capacity)).tobytes()
                key += (shared,)
            got = self._parts.get(key)
            if got is None:
                todo.append((key, canon))
            else:
                out[canon] = got
        if todo:
            canon_all = np.concatenate([c for _, c in todo])
            speeds = self._max_min([phases[i] for i in canon_all.tolist()])
            at = 0
            for key, canon in todo:
                part = speeds[at : at + len(canon)]
                self._parts[key] = part
                out[canon] = part
                at += len(canon)
        return out

    def _max_min(self, phases: list[PhaseFlows]) -> np.ndarray:
        """One exact max-min solve of ``phases``' flows together; each phase's speed."""
        offsets = np.cumsum([0] + [p.n_flows for p in phases])
        flow = np.concatenate([p.pair_flow + o for p, o in zip(phases, offsets, strict=False)])
        arc = np.concatenate([p.pair_arc for p in phases])
        weight = np.concatenate([p.pair_weight for p in phases])
        pace = np.concatenate([p.pace_GBps for p in phases])
        mm = max_min_rates(self.capacity, flow, arc, weight, n_flows=int(offsets[-1]), demand=pace)
        self.solves += 1
        ratio = mm.rates / pace
        speed = np.minimum.reduceat(ratio, offsets[:-1])
        speed[speed >= 1.0 - SPEED_RTOL] = 1.0
        if np.any(speed <= 0):
            raise SolverError("a transfer crosses a link with no capacity")
        return speed


def _groups(label: np.ndarray) -> list[np.ndarray]:
    """Indices of each component, components in order of their label."""
    order = np.argsort(label, kind="stable")
    cuts = np.flatnonzero(np.diff(label[order])) + 1
    return np.split(order, cuts)
