"""Run a study's tasks: in this process (``workers=0``, the reference the tests compare
against) or on Dask distributed, a LocalCluster of worker processes sized to this
machine's cores by default or an existing cluster named by its scheduler's address.

The shared input (the base design) is scattered to every worker once
(``broadcast=True``); tasks are batches of elements sized so each runs about
`TARGET_TASK_S` (Dask spends 0.2-1 ms on each task, so a task of one 20 ms solve would be
mostly overhead); results come back as they complete, in whatever order, and the
callers key them by element index, so the outcome does not depend on that order.
Dask is imported only when a cluster is used: ``import designer`` stays light.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TARGET_TASK_S", "EngineStats", "batches", "run_tasks"]

#: The work one task carries, seconds: well above Dask's per-task overhead.
TARGET_TASK_S = 1.0
#: Modules the LocalCluster's fork server imports once for all its workers.
PRELOAD = (
    "distributed",
    "designer.studies.work",
    "designer.studies.sweep",
    "designer.solver.pipeline",
    "designer.io.fabric_json",
)
#: How long to wait for the first worker of a cluster, seconds.
CONNECT_TIMEOUT_S = 10.0


@dataclass
class EngineStats:
    """What a run cost: tasks, the seconds the tasks spent working (summed over
    workers), the wall-clock seconds, the workers used and where."""

    tasks: int = 0
    work_s: float = 0.0
    wall_s: float = 0.0
    workers: int = 0
    where: str = "serial"
    extra: dict = field(default_factory=dict)


def batches(
    items: Sequence, seconds_each: float, workers: int, target_s: float = TARGET_TASK_S
) -> list[list]:
    """``items`` cut into consecutive batches of about ``target_s`` of work each, yet at
    least one per worker when there are that many items (idle workers cost more than a
    short task)."""
    n = len(items)
    if n == 0:
        return []
    size = max(1, math.ceil(target_s / max(seconds_each, 1e-6)))
    if math.ceil(n / size) < workers:
        size = max(1, math.ceil(n / min(workers, n)))
    return [list(items[i : i + size]) for i in range(0, n, size)]


def default_workers() -> int:
    """Worker processes of the default LocalCluster: this machine's usable cores."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # (not on every platform)
        return max(1, os.cpu_count() or 1)


def run_tasks(
    func: Callable,
    shared: Any,
    tasks: Sequence,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    on_result: Callable[[Any], None] | None = None,
    client: Any = None,
) -> EngineStats:
    """Run ``func(shared, task)`` for every task; ``on_result`` receives each return
    value as it completes.

    Parameters
    ----------
    func : callable
        ``func(shared, task) -> (value, seconds of work)``; importable by the workers.
    shared : object
        Sent to every worker once.
    tasks : sequence
    workers : int, optional
        0: run here, one task after another.  None: a LocalCluster with a process per
        core (`default_workers`); N: a LocalCluster of N processes.  Ignored with
        ``scheduler``.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:8786``).
    client : distributed.Client, optional
        A client to use as it is (a caller that runs several stages keeps one).

    Raises
    ------
    KeyboardInterrupt
        Passed on after the outstanding tasks are cancelled and the cluster stopped.
    """
    stats = EngineStats(tasks=len(tasks))
    t0 = time.perf_counter()
    if client is None and scheduler is None and workers == 0:
        stats.workers = 1
        for task in tasks:
            value, work = func(shared, task)
            stats.work_s += work
            if on_result is not None:
                on_result(value)
        stats.wall_s = time.perf_counter() - t0
        return stats
    with Cluster(workers=workers, scheduler=scheduler, client=client) as cl:
        stats.workers, stats.where = cl.n_workers(), cl.where
        run_on(cl.client, func, shared, tasks, on_result, stats)
    stats.wall_s = time.perf_counter() - t0
    return stats


def run_on(
    client: Any,
    func: Callable,
    shared: Any,
    tasks: Sequence,
    on_result: Callable[[Any], None] | None,
    stats: EngineStats,
) -> None:
    """`run_tasks` on a connected Dask client."""
    from distributed import Future, as_completed

    if not tasks:
        return
    own = not isinstance(shared, Future)
    shared_f = client.scatter(shared, broadcast=True, hash=False) if own else shared
    futures = [client.submit(func, shared_f, task, pure=False) for task in tasks]
    try:
        for fut in as_completed(futures):
            value, work = fut.result()
            stats.work_s += work
            fut.release()
            if on_result is not None:
                on_result(value)
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        if own:
            client.cancel([shared_f])


@contextlib.contextmanager
def _sigint_ignored():
    """SIGINT ignored while processes are started (they inherit it), where this is the
    main thread; restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


class Cluster:
    """A Dask client for a study: on an existing scheduler, or on a LocalCluster of
    worker processes started here (and stopped on exit, also after Ctrl+C)."""

    def __init__(
        self, workers: int | None = None, scheduler: str | None = None, client: Any = None
    ):
        self.workers, self.scheduler = workers, scheduler
        self.client, self._own_client = client, client is None
        self._cluster = None
        self._warm: list = []
        self.where = "client" if client is not None else ""

    def __enter__(self) -> Cluster:
        if self.client is not None:
            return self
        from distributed import Client, LocalCluster

        if self.scheduler is not None:
            # How long to try: Dask's own setting (distributed.comm.timeouts.connect,
            # DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT in the environment).
            self.client = Client(self.scheduler)
            self.where = self.scheduler
            return self
        import dask

        n = self.workers or default_workers()
        # Worker processes come from a fork server that imported Dask and the solver
        # once: two start in ~3 s on a busy 2-core machine where spawning them (each
        # importing everything afresh) takes ~13 s.  (Forking this process itself would
        # be faster still, but it has threads, whose locks a fork can copy held.)
        # Each worker solves on one thread (`designer.studies.work`).  The workers
        # ignore Ctrl+C, which reaches the terminal's whole process group: this process
        # cancels their tasks and stops them, without their tracebacks.  Their logs
        # stay quiet below errors; no dashboard, and the HTTP server takes a free port
        # (8787 may be another cluster's).
        with (
            _sigint_ignored(),
            dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}),
        ):
            from distributed.utils import get_mp_context

            get_mp_context().set_forkserver_preload(list(PRELOAD))
            self._cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                silence_logs=logging.ERROR,
            )
        self.client = Client(self._cluster)
        self.where = f"LocalCluster of {n} process(es)"
        return self

    def share(self, shared: Any, warm: Callable | None = None) -> Any:
        """Send ``shared`` to every worker once (a future to pass as `run_tasks`'s
        ``shared``), and start ``warm(shared)`` on each worker without waiting: a
        worker then prepares (parses the design) while this process does its own part."""
        shared_f = self.client.scatter(shared, broadcast=True, hash=False)
        if warm is not None:
            self._warm = [
                self.client.submit(
                    warm, shared_f, workers=[w], pure=False, allow_other_workers=False
                )
                for w in self.client.nthreads()
            ]
        return shared_f

    def n_workers(self) -> int:
        """Workers the scheduler has now (waits up to 10 s for the first)."""
        deadline = time.monotonic() + CONNECT_TIMEOUT_S
        while True:
            n = len(self.client.nthreads())
            if n or time.monotonic() > deadline:
                return n
            time.sleep(0.1)

    def __exit__(self, *exc) -> None:
        if self._warm and self.client is not None:
            self.client.cancel(self._warm)
            self._warm = []
        if self._own_client and self.client is not None:
            self.client.close()
            self.client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
