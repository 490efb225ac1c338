"""One iteration of a job as a graph of tasks: compute spans and communication.

This is the contract between the traffic generator (which turns a model, a training
configuration and a placement into tasks) and the simulator (which runs the tasks of
every job at once on the fabric).  A task starts when every task it depends on has
finished; compute takes a fixed time, communication takes as long as the fabric lets it,
sharing links with whatever else is in flight.

Symmetry is part of the contract: a :class:`Comm` names *several disjoint groups* that
run the same collective at the same moment (every tensor-parallel group of a pipeline
stage, say), so a 16,384-GPU job is a few thousand tasks, not millions.

Example
-------
>>> fwd = Compute(0, "compute", 1.5e-3, deps=())
>>> ar = Comm(1, "tp", "allreduce", groups=(("g0", "g1"), ("g2", "g3")), nbytes=64 << 20,
...           deps=(0,))
>>> JobTraffic("job-a", (fwd, ar)).validate()
"""

from __future__ import annotations

from dataclasses import dataclass

#: What a task stands for, one timeline lane each ("bubble" is idle time the simulator
#: reports, never a task).
LANES = ("compute", "tp", "pp", "dp", "ep", "cp", "storage", "background")

#: The collectives a Comm may run ("sendrecv": each group is a (sender, receiver) pair).
COMM_KINDS = ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv")


@dataclass(frozen=True)
class Compute:
    """A span of GPU work of known length, identical on every GPU it stands for.

    Attributes
    ----------
    id : int
        Unique within the job.
    lane : str
        The timeline lane, normally ``"compute"``.
    seconds : float
        How long it takes.
    deps : tuple of int
        Tasks that must finish before it starts.
    label : str
        What it is, for the timeline (``"fwd mb3 stage2"``).
    gpus : tuple of str
        The GPUs it keeps busy (every GPU of its pipeline stage), so that the report
        can tell each stage's idle time (its bubble); empty when not said.
    """

    id: int
    lane: str
    seconds: float
    deps: tuple[int, ...] = ()
    label: str = ""
    gpus: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comm:
    """The same collective run at once by each of several disjoint GPU groups.

    Attributes
    ----------
    id : int
        Unique within the job.
    lane : str
        One of :data:`LANES` (``"tp"``, ``"pp"``, ``"dp"``, ...).
    collective : str
        One of :data:`COMM_KINDS`.
    groups : tuple of tuple of str
        GPU node ids, one tuple per group, in rank order; groups are disjoint.
    nbytes : float
        The message size as nccl-tests counts it (the per-rank buffer of the collective;
        for ``sendrecv`` the bytes sent).
    deps : tuple of int
        Tasks that must finish before it starts.
    label : str
        What it is, for the timeline (``"tp fwd layer 3 mb0"``).
    efficiency : float
        Fraction of the link rates its kernels reach (0 < e <= 1): its bandwidth term
        alone is ``1 / e`` of the collective's (`designer.workload.lone.slowed`); 1 for
        NCCL, whose figures already are what it reaches.
    """

    id: int
    lane: str
    collective: str
    groups: tuple[tuple[str, ...], ...]
    nbytes: float
    deps: tuple[int, ...] = ()
    label: str = ""
    efficiency: float = 1.0


@dataclass(frozen=True)
class JobTraffic:
    """Every task of one iteration of one job."""

    job: str
    tasks: tuple[Compute | Comm, ...]

    def validate(self) -> None:
        """Raise ``ValueError`` naming the job and task when the graph is malformed:
        duplicate ids, unknown dependencies, a cycle, unknown lanes or collectives,
        negative sizes or times, overlapping groups."""
        ids = [t.id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise ValueError(f"job {self.job!r}: duplicate task ids")
        known = set(ids)
        stage_ok: dict[int, tuple] = {}  # id -> GPU tuples checked (kept alive here)
        for t in self.tasks:
            where = f"job {self.job!r}, task {t.id}"
            if t.lane not in LANES:
                raise ValueError(f"{where}: unknown lane {t.lane!r}")
            if any(d not in known for d in t.deps):
                raise ValueError(f"{where}: depends on an unknown task")
            if isinstance(t, Compute):
                if not t.seconds >= 0:
                    raise ValueError(f"{where}: compute time must be >= 0")
                if id(t.gpus) not in stage_ok:  # stages share one tuple: check it once
                    if len(set(t.gpus)) != len(t.gpus):
                        raise ValueError(f"{where}: a GPU named twice")
                    stage_ok[id(t.gpus)] = t.gpus
                continue
            if t.collective not in COMM_KINDS:
                raise ValueError(f"{where}: unknown collective {t.collective!r}")
            if not t.nbytes >= 0:
                raise ValueError(f"{where}: nbytes must be >= 0")
            if not 0 < t.efficiency <= 1:
                raise ValueError(f"{where}: efficiency must be in (0, 1]")
            if id(t.groups) in stage_ok:  # tasks share their groups' tuple: check once
                continue
            seen: set[str] = set()
            for g in t.groups:
                if len(g) < 2 or seen.intersection(g) or len(set(g)) != len(g):
                    raise ValueError(f"{where}: groups must be disjoint, 2+ distinct GPUs")
                seen.update(g)
            stage_ok[id(t.groups)] = t.groups
        order = {t.id: t.deps for t in self.tasks}
        state: dict[int, int] = {}
        for start in order:  # iterative DFS: 1 = on the stack, 2 = done
            stack = [(start, iter(order[start]))]
            if state.get(start):
                continue
            state[start] = 1
            while stack:
                node, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    state[node] = 2
                    stack.pop()
                elif state.get(nxt) == 1:
                    raise ValueError(f"job {self.job!r}: a dependency cycle through task {nxt}")
                elif not state.get(nxt):
                    state[nxt] = 1
                    stack.append((nxt, iter(order[nxt])))
