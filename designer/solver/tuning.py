"""Every size, threshold and switch that steers the solver's fast paths, in one place.

None of them changes an answer: each picks between two ways of computing the same
thing (a batched path and a general one, a slice size, a table size, when the max-min
solver switches strategy), and the tests run both sides of each switch through
`tuned`, checking that they agree.  The nanosecond figures are costs measured on the
project's 2-core development VM (see docs/performance.md); on another machine they only
move the crossover points, not the results.

Reading a value: ``current().first_k``.  Changing values for a block of code (tests,
experiments)::

    with tuned(first_k=1, few_flows=0):
        rates = max_min_rates(...)

`tuned` changes the process's settings (the solver's helper thread reads them too), so
it is not for two solves running at once with different settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Tuning", "current", "tuned"]


@dataclass(frozen=True)
class Tuning:
    """The solver's tuning constants (module docstring).

    Max-min strategy (`maxmin`, `rates.steps`, `rates.levels`):

    first_k : int
        Links in the first batch of global steps.
    few_flows : int
        From this many unfrozen flows down, the ``auto`` strategy fills level by level:
        with F flows there are at most F levels, each a few passes at a few ns a pair,
        and even the worst case (one flow a level, about F / 2 passes) stays near the
        price of one or two local rounds at 32 flows.
    local_ns_per_pair : float
        Measured cost of a local round per unfrozen (flow, link) pair, in ns.
    level_ns : float
        Measured cost of one level in a batch of global steps, all told, in ns.
    worth_another : float
        A local round that freezes this fraction of the flows is worth another.
    cheap_round_ns : float
        A first local round this cheap goes before any batch.
    level_slice : int
        Entries per slice of the level filler's long arrays.

    Tables and slices (`rates.checks`, `rates.tables`, `shared_routes`):

    input_slice : int
        Pair ids per slice where the max-min input is checked.
    bincount_slice : int
        Ids per slice of the sliced bincount (and the routes from which
        `SharedRoutes.link_load` stops slicing pairs).
    table_rows : int
        Most rows of a flow -> routes table.
    max_blocks : int
        Most blocks of sorted pairs read without sorting them.
    most_overflow : float
        Most of the pairs that may overflow a table built from blocks.
    run_probe : int
        Pairs read to find a block's run length.
    route_load_slice : int
        Route entries per slice of `SharedRoutes.link_load`.
    pair_load_slice : int
        Pairs per slice when a phase's arc loads are summed (`timing`).
    arc_slice : int
        Links per slice when arc latencies are read (`arc_delays`).

    Routing (`arrays.ragged`, `routing.nvlink`, `routing.fabric`):

    grouped_table, grouped_min : int
        Most and fewest entries of `first_occurrence_grouped`'s table.
    long_block : int
        Entries from which `PendingRows.write` copies a piece as a slice.
    nvlink_max_table : int
        Distance-table entries per breadth-first search of NVLink routes.
    row_block : int
        Signature entries made at a time when NVLink domains are compared.
    downhill_slice : int
        (state, arc) entries the fabric's downhill test reads at a time.
    dense_downhill : bool
        Let the fabric's downhill test serve the states of a group with one pass over a
        row of the distance table when they hold most of its switches (the cores of a
        three-tier fabric towards every pod), instead of testing each state's own arcs
        (the general way, which it falls back to anyway where the states are sparse).
    bfs_batch : int
        Breadth-first searches of the fabric run together, one bit each in a word per
        switch: at most 64.  Fewer make more passes over the arcs, same distances.
    arc_search : bool
        Find a switch's arcs into another (the last hop) by binary search over the
        switch arcs where every switch lists them in order of their far ends (the
        templates' designs), instead of sorting them (what arcs in any order need).
    walk_chunk : int
        Flows an ECMP or static walk takes at a time: the temporaries stay small and in
        cache.
    keep_middles : bool
        Adaptive phases keep each middle that classes' DAGs share once
        (`routing.middles`) instead of writing every class's DAG whole: the same load on
        every arc from far fewer stored entries in an all-to-all, whose classes cross
        each middle many times.
    alltoall_classes : bool
        Solve an all-to-all under adaptive routing as classes of pairs that provably
        get equal rates (`flows.alltoall`, docs/model.md), one flow each, instead of
        one flow per pair (the reference): hundreds of thousands of flows instead of
        hundreds of millions at 16,384 GPUs.
    keyed_dense : int
        Largest key space `KeyedRows` looks keys up in with a dense table (beyond it, by
        binary search).
    """

    first_k: int = 64
    few_flows: int = 32
    local_ns_per_pair: float = 35.0
    level_ns: float = 150_000.0
    worth_another: float = 0.25
    cheap_round_ns: float = 7.5e6
    level_slice: int = 1 << 15
    input_slice: int = 1 << 16
    bincount_slice: int = 1 << 16
    table_rows: int = 4
    max_blocks: int = 64
    most_overflow: float = 0.25
    run_probe: int = 64
    route_load_slice: int = 1 << 18
    pair_load_slice: int = 1 << 16
    arc_slice: int = 1 << 15
    grouped_table: int = 1 << 20
    grouped_min: int = 1 << 16
    long_block: int = 256
    nvlink_max_table: int = 1 << 22
    row_block: int = 1 << 20
    downhill_slice: int = 1 << 17
    dense_downhill: bool = True
    bfs_batch: int = 64
    arc_search: bool = True
    walk_chunk: int = 1 << 16
    keep_middles: bool = True
    keyed_dense: int = 1 << 22
    alltoall_classes: bool = True


_current = Tuning()


def current() -> Tuning:
    """The settings in force."""
    return _current


@contextmanager
def tuned(**changes) -> Iterator[Tuning]:
    """Run a block with some settings changed (unknown names raise `TypeError`), and
    restore the previous ones after it."""
    global _current
    before = _current
    _current = dataclasses.replace(before, **changes)
    try:
        yield _current
    finally:
        _current = before
