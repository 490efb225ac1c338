"""Where a job's ranks run: ranks -> GPUs of a design.

Ranks are numbered in Megatron order, tensor parallelism innermost, then context,
pipeline and data parallelism: ``rank = tp_i + tp (cp_i + cp (pp_i + pp dp_i))``
(`rank_grid`).  A policy picks the GPUs and lays consecutive ranks on them, so that a
tensor-parallel group sits inside one NVLink domain whenever it fits in one:

``packed``
    Domains in structural order, each filled with as many whole TP groups as its free
    GPUs hold, until the job has its GPUs (fewest domains).
``spread``
    The same TP-group slots taken round-robin over the domains (one slot of each domain
    before a second of any): the job spans as many domains as it can.
``rail-aligned``
    Every TP group on the same local positions (rails) of its domain, so that rank
    ``i`` of every TP group uses the same rail NIC and leaf: the widest window of
    aligned blocks that enough domains have free.
``explicit``
    The job's own GPU list, in rank order.

GPUs are ordered by their structural position (NVLink domain, then rail position inside
it, both from `designer.solver.snapshot`), never by their ids or file order, so renaming
or reordering the design's nodes gives the same placement up to the renaming.

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver import take_snapshot
>>> from designer.workload.job import Job
>>> from designer.workload.presets import preset
>>> snap = take_snapshot(build_template("hgx"))
>>> p = place(Job.from_preset("a", preset("tiny")), snap)
>>> len(p.gpus), p.domains
(8, 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from designer.workload.job import Job, Parallelism

__all__ = ["Placement", "place", "rank_grid"]


def rank_grid(par: Parallelism) -> np.ndarray:
    """Rank numbers laid out as ``[dp, pp, cp, tp]`` (Megatron order: TP innermost).

    >>> rank_grid(Parallelism(tp=2, pp=2, dp=2))[1, 0, 0].tolist()
    [4, 5]
    """
    return np.arange(par.gpus).reshape(par.dp, par.pp, par.cp, par.tp)


@dataclass(frozen=True)
class Placement:
    """A job's ranks on GPUs.

    Attributes
    ----------
    job : str
    gpus : tuple of str
        GPU node id of each rank.
    ranks : ndarray
        Snapshot rank (index into ``snap.gpus``) of each job rank.
    domains : int
        NVLink domains the job uses.
    tp_split : int
        TP groups that span more than one NVLink domain.
    warnings : tuple of str
    rank_domain : ndarray
        NVLink domain (server, or rack of an NVL72) of each job rank.
    """

    job: str
    gpus: tuple[str, ...]
    ranks: np.ndarray
    domains: int
    tp_split: int
    warnings: tuple[str, ...]
    rank_domain: np.ndarray

    def summary(self) -> str:
        """One line for the CLI and tooltips."""
        split = (
            f"; {self.tp_split} TP group(s) cross NVLink domains"
            if self.tp_split
            else "; every TP group inside one NVLink domain"
        )
        return f"{len(self.gpus)} GPUs on {self.domains} NVLink domain(s){split}"


def _snapshot(design):
    if hasattr(design, "gpu_domain"):
        return design
    from designer.solver import take_snapshot

    return take_snapshot(design)


def _chunks(free_local: list[np.ndarray], tp: int) -> list[list[np.ndarray]]:
    """Per domain, its free GPUs (snapshot ranks, in local order) cut into whole
    TP-group slots."""
    return [[f[i : i + tp] for i in range(0, len(f) // tp * tp, tp)] for f in free_local]


def _rail_aligned(
    by_dom: list[np.ndarray], local: np.ndarray, free: np.ndarray, tp: int, need: int
) -> list[np.ndarray] | None:
    """Slots at the same aligned local blocks in every domain used (see the module)."""
    size = max((len(d) for d in by_dom), default=0)
    blocks = size // tp
    ok = np.zeros((len(by_dom), blocks), dtype=bool)  # block k of domain d is free
    for d, members in enumerate(by_dom):
        for k in range(blocks):
            sel = members[(local[members] >= k * tp) & (local[members] < (k + 1) * tp)]
            ok[d, k] = len(sel) == tp and free[sel].all()
    for m in range(blocks, 0, -1):
        for a in range(blocks - m + 1):
            doms = np.flatnonzero(ok[:, a : a + m].all(axis=1))
            if len(doms) * m * tp >= need:
                out = []
                for d in doms:
                    members = by_dom[d]
                    for k in range(a, a + m):
                        sel = members[(local[members] >= k * tp) & (local[members] < (k + 1) * tp)]
                        out.append(sel[np.argsort(local[sel], kind="stable")])
                return out
    return None


def place(job: Job, design, taken: Mapping[str, str] | None = None) -> Placement:
    """Place ``job``'s ranks on ``design``'s GPUs.

    Parameters
    ----------
    job : Job
    design : Topology or Snapshot
    taken : mapping, optional
        GPU node id -> name of the job that already holds it.

    Returns
    -------
    Placement

    Raises
    ------
    ValueError
        One line naming the job: more GPUs than the design has, not enough free GPUs in
        whole TP groups, an explicit GPU that is unknown, listed twice or in another job.
    """
    snap = _snapshot(design)
    taken = dict(taken or {})
    name, par, n = job.name, job.parallel, job.n_gpus
    ids = snap.node_ids
    gpu_ids = np.array([ids[g] for g in snap.gpus.tolist()], dtype=object)
    if n > snap.n_gpus:
        raise ValueError(f"job {name!r}: needs {n} GPUs, the design has {snap.n_gpus}")
    domain, local = np.asarray(snap.gpu_domain), np.asarray(snap.gpu_local)
    sizes = np.bincount(domain, minlength=snap.n_domains) if snap.n_gpus else np.zeros(0, int)
    warnings: list[str] = []
    if job.placement == "explicit":
        ranks = _explicit(job, gpu_ids, taken)
    else:
        free = np.array([g not in taken for g in gpu_ids.tolist()], dtype=bool)
        if free.sum() < n:
            raise ValueError(
                f"job {name!r}: needs {n} GPUs, {int(free.sum())} of the design's "
                f"{snap.n_gpus} are free"
            )
        order = np.lexsort((local, domain))
        by_dom = [order[domain[order] == d] for d in range(snap.n_domains)]
        tp = par.tp if par.tp <= int(sizes.max()) else 1
        if par.tp > int(sizes.max()):
            warnings.append(
                f"job {name!r}: tp={par.tp} is larger than the largest NVLink "
                f"domain ({int(sizes.max())} GPUs): tensor parallelism crosses "
                "the network"
            )
        if job.placement == "rail-aligned":
            slots = _rail_aligned(by_dom, local, free, tp, n)
        else:
            per_dom = _chunks([d[free[d]] for d in by_dom], tp)
            if job.placement == "spread":
                deepest = max((len(c) for c in per_dom), default=0)
                slots = [c[r] for r in range(deepest) for c in per_dom if r < len(c)]
            else:
                slots = [s for c in per_dom for s in c]
        if slots is None or sum(len(s) for s in slots) < n:
            raise ValueError(
                f"job {name!r}: {n} GPUs in whole TP groups of {tp} do not fit "
                f"the {int(free.sum())} free GPUs with placement "
                f"{job.placement!r}"
            )
        ranks = np.concatenate(slots)[:n]
    grid = rank_grid(par).reshape(-1, par.tp)
    tp_dom = domain[ranks][grid]
    tp_split = int((tp_dom != tp_dom[:, :1]).any(axis=1).sum())
    if tp_split and not warnings:
        warnings.append(
            f"job {name!r}: {tp_split} TP group(s) span several NVLink domains: "
            "tensor parallelism crosses the network"
        )
    return Placement(
        job=name,
        gpus=tuple(gpu_ids[ranks].tolist()),
        ranks=ranks,
        domains=len(np.unique(domain[ranks])),
        tp_split=tp_split,
        warnings=tuple(warnings),
        rank_domain=domain[ranks],
    )


def _explicit(job: Job, gpu_ids: np.ndarray, taken: Mapping[str, str]) -> np.ndarray:
    where = {g: i for i, g in enumerate(gpu_ids.tolist())}
    seen: set[str] = set()
    out = []
    for g in job.gpus:
        if g not in where:
            raise ValueError(f"job {job.name!r}: gpus: {g!r} is not a GPU of the design")
        if g in seen:
            raise ValueError(f"job {job.name!r}: gpus: {g!r} is listed twice")
        if g in taken:
            raise ValueError(f"job {job.name!r}: gpus: {g!r} is already in job {taken[g]!r}")
        seen.add(g)
        out.append(where[g])
    return np.array(out, dtype=np.int64)
