"""`ReviewRunner`: the design's findings, bill of materials and summary, worked out in
the background after each edit.

The figures are the CLI's: `designer.workload.checks.validate_design` (``validate``),
`designer.model.bom.bom` (``bom``) and `designer.model.report.info` (``info``).  They
read a whole `Topology`, and the live one is edited on the GUI thread, so the runner
copies the design first (`capture`: the frozen link columns, O(1), and a copy of each
node's fields, a C-speed pass) and the worker rebuilds a private `Topology` from it
(`rebuild`, the bulk loader).  Edits are debounced; a result is tagged with the design's
generation and dropped when the design has changed since; one worker at a time, and an
edit during a run asks for another once it ends.  The live link colours come first: a
review waits while the work `defer_while` names runs (the window's solve), up to
`MAX_DEFER_MS`, as both compete for the interpreter.  The three answers come back one by
one, fastest first, so the Problems and BOM docks do not wait for the bisection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal
from superqt.utils import GeneratorWorker

from designer.gui.document import Document
from designer.gui.model_events import ModelSlot
from designer.gui.workers import DEFER_POLL_MS, MAX_DEFER_MS, Deferral, create_worker
from designer.model.topology import Topology

__all__ = ["DesignCopy", "ReviewRunner", "capture", "rebuild"]

#: Quiet time after the last edit before the review runs again (ms).
DEBOUNCE_MS = 400

#: Nodes or links the worker adds to its copy at a time (`rebuild`): one slice's
#: C-speed passes hold the interpreter ~5 ms.
REBUILD_SLICE = 8192


@dataclass(frozen=True)
class DesignCopy:
    """What the worker needs to rebuild a design: nothing here is the live design's."""

    generation: int
    name: str
    catalog: Any
    settings: dict
    overrides: dict
    groups: list
    nodes: tuple[list, list]  # node ids, and each node's fields (copies)
    columns: Any


def capture(topology: Topology) -> DesignCopy:
    """Copy ``topology`` for another thread (on the thread that edits it)."""
    data = topology.node_data()
    # Each node's fields are copied at C speed (edits change them in place); the ids
    # join them on the worker (`rebuild`).
    nodes = (list(data), list(map(dict.copy, data.values())))
    return DesignCopy(
        topology.generation,
        topology.name,
        topology.catalog,
        dict(topology.settings),
        {k: dict(v) for k, v in topology.overrides.items()},
        list(topology.groups()),
        nodes,
        topology.columns(),
    )


def rebuild(copy: DesignCopy, progress: Callable[[int], None] | None = None) -> Topology:
    """A private `Topology` equal to the captured design (any thread), added in slices
    of `REBUILD_SLICE` nodes or links; ``progress(done)`` is called after each slice
    and as `Topology.add_parts` calls it (a pause point: it may raise to stop)."""
    topo = Topology(copy.catalog, name=copy.name)
    for key, value in copy.settings.items():
        if value is not None:
            topo.set_setting(key, value)
    topo.overrides.update(copy.overrides)
    c = copy.columns
    ids = c.node_ids
    techs = c.tech_names
    links = [
        {
            "id": c.keys[i],
            "a": ids[a],
            "b": ids[b],
            "tech": techs[t],
            "count": int(n),
            "plane": c.planes[i] if c.one_plane is None else c.one_plane,
            "failed": bool(f),
        }
        for i, (a, b, t, n, f) in enumerate(
            zip(
                c.a_idx.tolist(),
                c.b_idx.tolist(),
                c.tech_of.tolist(),
                c.counts.tolist(),
                c.link_failed.tolist(),
                strict=True,
            )
        )
    ]
    ids, fields = copy.nodes
    for node_id, d in zip(ids, fields, strict=True):
        d["id"] = node_id
    # In slices: the bulk loader's column passes run at C speed and hold the
    # interpreter for their whole length (~100 ms for the 115,000 links of a 16k-GPU
    # design in one call), which the GUI thread would wait out mid-paint.
    try:
        topo.add_parts(copy.groups, progress=progress)
        for section, items in ((1, fields), (2, links)):
            for start in range(0, len(items), REBUILD_SLICE):
                part = items[start:start + REBUILD_SLICE]
                topo.add_parts(nodes=part if section == 1 else (),
                               links=part if section == 2 else (), progress=progress)
                if progress is not None:
                    progress(start + len(part))
    except BaseException:
        topo.discard()  # freed here, not by the GUI thread's collector
        raise
    return topo


@dataclass
class _Run:
    copy: DesignCopy
    cancel: threading.Event = field(default_factory=threading.Event)
    #: Cleared while the work the review defers to runs: the worker waits at its next
    #: pause point (`_review`).
    go: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.go.set()  # not held until the gate says so


def _review(run: _Run) -> Generator[tuple[int, str, Any], None, None]:
    """Yield ``(generation, what, answer)`` for ``problems``, ``bom``, then ``info``;
    an answer that failed is ``("error", message)``."""
    from designer.model.bom import bom
    from designer.model.report import info
    from designer.workload.checks import validate_design

    run.entered.set()
    gen = run.copy.generation
    topo = None

    def pause(*_) -> None:
        """Between two pieces of work: wait while the review is held, stop when
        cancelled."""
        if not run.go.is_set():
            run.go.wait(MAX_DEFER_MS / 1000)
        if run.cancel.is_set():
            raise _Stopped

    try:
        try:
            topo = rebuild(run.copy, pause)
        except _Stopped:
            return
        except Exception as exc:  # a design the bulk loader refuses: say so in every dock
            for what in ("problems", "bom", "info"):
                yield gen, what, ("error", f"{type(exc).__name__}: {exc}")
            return
        steps = (("problems", lambda: validate_design(topo, pause)), ("bom", lambda: bom(topo)),
                 ("info", lambda: info(topo, pause)))
        for what, answer_of in steps:
            try:
                pause()
                answer = answer_of()
            except _Stopped:
                return
            except Exception as exc:  # shown in the dock, not raised into the event loop
                answer = ("error", f"{type(exc).__name__}: {exc}")
            yield gen, what, answer
    finally:
        if topo is not None:
            topo.discard()  # the copy is freed on this thread (see `Topology.discard`)
        run.done.set()


class _Stopped(Exception):
    """The review was cancelled at a pause point."""


class ReviewRunner(QObject):
    """Keeps the review of one `Document`'s design up to date.

    Signals
    -------
    started(int)
        A review of that generation began.
    answer(str, object)
        ``("problems", list of Finding)``, ``("bom", Bom)`` or ``("info", dict)`` of
        the design as it is now; an answer that failed is ``("error", message)``.
    """

    started = Signal(int)
    answer = Signal(str, object)

    def __init__(
        self, document: Document, parent: QObject | None = None, debounce_ms: int = DEBOUNCE_MS
    ):
        super().__init__(parent)
        self.document = document
        self.latest: dict[str, Any] = {}
        self.generation = -1  # of the answers in `latest`
        self._worker: GeneratorWorker | None = None
        self._run: _Run | None = None
        self._wanted = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._debounce_ms = debounce_ms
        self._timer.timeout.connect(self._start)
        self._defer = Deferral(MAX_DEFER_MS)
        # While a review runs: holds it at its pause points when the deferred-to work
        # starts again (an edit's solve while the last edit's review runs).
        self._gate = QTimer(self)
        self._gate.setInterval(DEFER_POLL_MS)
        self._gate.timeout.connect(self._on_gate_timeout)
        self._follow = ModelSlot(self, self._on_topology_changed)
        self._follow.watch(document.topology.events.changed)
        document.topology_replaced.connect(self._on_document_topology_replaced)

    @property
    def busy(self) -> bool:
        """A worker is running."""
        return self._worker is not None

    @property
    def pending(self) -> bool:
        """A review is asked for and not started yet."""
        return self._wanted

    @property
    def current(self) -> bool:
        """Every answer in `latest` is of the design as it is now."""
        return (
            self.generation == self.document.topology.generation
            and len(self.latest) == 3
            and not self._wanted
        )

    def defer_while(self, busy: Callable[[], bool] | None) -> None:
        """Hold a due review while ``busy()`` is true (checked every `DEFER_POLL_MS`,
        for `MAX_DEFER_MS` at most): the window passes its solve's state, so that an
        edit's new link colours do not share the interpreter with the review."""
        self._defer.wait_for(busy)

    def schedule(self) -> None:
        """Review the design once edits pause for the debounce interval."""
        self._wanted = True
        if self._run is not None:
            self._run.cancel.set()
            self._run.go.set()
        self._timer.start(self._debounce_ms)

    def _on_topology_changed(self, _edit) -> None:
        self.schedule()

    def _on_document_topology_replaced(self, topo: Topology) -> None:
        self._follow.watch(topo.events.changed)
        self.latest = {}
        self.generation = -1
        self.schedule()

    def _start(self) -> None:
        if not self._wanted:
            return
        if self.busy:
            return  # `_on_finished` starts the next one
        if self._deferring():
            self._timer.start(DEFER_POLL_MS)
            return
        self._wanted = False
        topo = self.document.topology
        if self.generation == topo.generation and len(self.latest) == 3:
            return  # an event that changed nothing the answers read: they stand
        run = _Run(capture(topo))
        self._run = run
        self.started.emit(run.copy.generation)
        worker = create_worker(
            _review,
            run,
            _start_thread=False,
            _connect={"yielded": self._on_yielded, "finished": self._on_finished},
        )
        self._worker = worker
        worker.start()
        if self._defer.active:
            self._gate.start()

    def _on_gate_timeout(self) -> None:
        run = self._run
        if run is None:
            self._gate.stop()
        elif self._deferring():
            run.go.clear()
        else:
            run.go.set()

    def _deferring(self) -> bool:
        """Whether a due review waits for the work `defer_while` names."""
        return self._defer.holding()

    def _on_yielded(self, item: tuple[int, str, Any]) -> None:
        generation, what, value = item
        if generation != self.document.topology.generation or self._wanted:
            return  # stale: the design changed while it ran
        if generation != self.generation:
            self.latest = {}
            self.generation = generation
        self.latest[what] = value
        self.answer.emit(what, value)

    def _on_finished(self) -> None:
        self._gate.stop()
        self._worker = None
        self._run = None
        if self._wanted and not self._timer.isActive():
            self._timer.start(self._debounce_ms)

    def shutdown(self, timeout_s: float = 10.0) -> None:
        """Stop for good (window close): cancel and wait for the worker to end."""
        self._timer.stop()
        self._gate.stop()
        self._wanted = False
        run = self._run
        if run is not None:
            run.cancel.set()
            run.go.set()
            if run.entered.is_set():
                run.done.wait(timeout_s)
        self._worker = None
        self._run = None
