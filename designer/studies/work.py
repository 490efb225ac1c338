"""What one task of a study does, in whichever process runs it (this one, a LocalCluster
worker or a remote Dask worker): fail a few elements of the base design, solve, restore.

The base design travels as `StudyBase` (its ``.fabric.json`` text and the scenario),
scattered to every worker once; each process parses it the first time a task of that
study arrives and keeps the design, its intact solve and a `RouteMemo` for the study's
later tasks, so a failure is solved as the GUI solves a what-if: a model command on the
design, a new snapshot, routes patched from the last one (``designer.solver``).
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from designer.model.commands import SetLinkProps, SetNodeProps
from designer.model.scenario import Scenario, TrainingSpec

__all__ = ["Outcome", "StudyBase", "evaluate", "intact_link_loads", "run_batch"]

#: A failure: ``(("link", id), ("node", id), ...)``, all failed at once.
Failure = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class StudyBase:
    """Everything a task needs besides its failures; pickles small and plain.

    Attributes
    ----------
    design : str
        The base design as the text of a ``.fabric.json`` file.
    scenario : Scenario
        The collective whose time each failure changes.
    training : TrainingSpec or None
        When given, the figure is the training step time (its gradient all-reduce over
        the data-parallel GPUs) instead of the scenario's collective time.
    """

    design: str
    scenario: Scenario
    training: TrainingSpec | None = None
    key: str = field(init=False)

    def __post_init__(self) -> None:
        text = f"{self.design}\0{self.scenario!r}\0{self.training!r}"
        object.__setattr__(self, "key", hashlib.sha256(text.encode()).hexdigest())


@dataclass(frozen=True)
class Outcome:
    """One failure's figure: ``time_s`` None when the design no longer connects the
    ranks (``connected`` False, ``error`` says why)."""

    time_s: float | None
    connected: bool
    error: str = ""


class _Base:
    """A process's copy of a study's base design, its intact outcome and route memo."""

    def __init__(self, base: StudyBase):
        from designer.io.fabric_json import loads
        from designer.solver import RouteMemo

        self.base = base
        self.topo = loads(base.design, source="<study>")
        self.memo = RouteMemo()
        self.lock = threading.Lock()
        self.intact = self.solve(())
        self.n_ranks = self._n_ranks
        self.intact_result = self.last

    def solve(self, failure: Failure) -> Outcome:
        """Fail ``failure`` on the design, solve, and restore it (also on error)."""
        from designer.solver import SolverError, take_snapshot

        links = [i for k, i in failure if k == "link"]
        nodes = [i for k, i in failure if k == "node"]
        done = []
        with self.lock:
            try:
                for cmd in (
                    SetLinkProps(links, failed=True) if links else None,
                    SetNodeProps(nodes, failed=True) if nodes else None,
                ):
                    if cmd is not None:
                        cmd.do(self.topo)
                        done.append(cmd)
                snap = take_snapshot(self.topo)
                return self._figure(snap)
            except SolverError as exc:
                return Outcome(None, False, str(exc))
            finally:
                for cmd in reversed(done):
                    cmd.undo(self.topo)

    def _figure(self, snap) -> Outcome:
        from designer.solver import (
            TrainingWorkload,
            resolve_ranks,
            solve_collective,
            training_report,
        )

        sc, tr = self.base.scenario, self.base.training
        if tr is not None:
            dp = tr.dp_size or snap.n_gpus
            wl = TrainingWorkload(
                params=tr.params,
                grad_dtype=tr.grad_dtype,
                dp_size=dp,
                compute_s=tr.compute_s,
                overlap=tr.overlap,
            )
            rep = training_report(
                snap, wl, compute_cv=tr.compute_cv, n_steps=64, cache={"memo": self.memo}
            )
            self._n_ranks, self.last = rep.allreduce.n_ranks, rep.allreduce
            return _checked(rep.estimate.step_s, rep.allreduce.n_ranks, self)
        ranks = resolve_ranks(snap, sc.ranks)
        res = solve_collective(
            snap,
            sc.collective,
            sizes=[sc.bytes],
            algorithm=sc.algorithm,
            ranks=ranks,
            launch=sc.launch,
            memo=self.memo,
        )
        self._n_ranks, self.last = res.n_ranks, res
        return _checked(float(res.time_s[0]), res.n_ranks, self)


def _checked(seconds: float, n_ranks: int, state: _Base) -> Outcome:
    """The outcome of a solve: disconnected when it lost ranks or has no finite time."""
    expected = getattr(state, "n_ranks", n_ranks)
    if n_ranks < expected:
        return Outcome(None, False, f"{expected - n_ranks} rank(s) lost")
    if not math.isfinite(seconds):
        return Outcome(None, False, "no finite time")
    return Outcome(seconds, True)


_STATES: OrderedDict[str, _Base] = OrderedDict()
_STATES_LOCK = threading.Lock()


def _in_dask_worker() -> bool:
    """Whether this call runs in a Dask worker (without importing Dask otherwise)."""
    distributed = sys.modules.get("distributed")
    if distributed is None:
        return False
    try:
        distributed.get_worker()
    except ValueError:
        return False
    return True


def _state(base: StudyBase) -> _Base:
    """This process's `_Base` of ``base``, made on first use (two studies kept).

    In a Dask worker the solver keeps to one thread (``FABRIC_DESIGNER_THREADS=1``,
    `designer.solver`'s switch): the cluster already runs a worker per core.
    """
    if _in_dask_worker():
        os.environ["FABRIC_DESIGNER_THREADS"] = "1"
    with _STATES_LOCK:
        state = _STATES.get(base.key)
        if state is None:
            state = _STATES[base.key] = _Base(base)
            while len(_STATES) > 2:
                _STATES.popitem(last=False)
        _STATES.move_to_end(base.key)
        return state


def evaluate(base: StudyBase, failure: Failure = ()) -> Outcome:
    """The outcome of ``failure`` (``()``: the intact design) on ``base``."""
    state = _state(base)
    return state.intact if not failure else state.solve(failure)


def intact_link_loads(base: StudyBase) -> dict[str, tuple[str, str]]:
    """Per link id, the loads of its two directions in the intact solve (GB/s to nine
    significant digits, the smaller first: which end is ``a`` is the file's choice)."""
    state = _state(base)
    load = state.intact_result.arc_load_GBps
    ids = [lk.id for lk in state.topo.links()]
    from designer.solver import take_snapshot

    pos = take_snapshot(state.topo).link_positions()
    out = {}
    for lid in ids:
        k = pos[lid]
        out[lid] = tuple(sorted((f"{load[2 * k]:.9g}", f"{load[2 * k + 1]:.9g}")))
    return out


def run_batch(base: StudyBase, items: list[tuple[int, Failure]]) -> tuple[list, float]:
    """Solve a batch of failures: ``([(index, Outcome), ...], seconds spent solving)``.

    The task a study submits (`designer.studies.engine`); ``seconds`` excludes the
    first parse of the design, so the engine can tell overhead from work.
    """
    state = _state(base)
    t0 = time.perf_counter()
    out = [(index, state.solve(failure)) for index, failure in items]
    return out, time.perf_counter() - t0
