"""The collectives a simulation needs alone, each solved once per snapshot (see
`LoneCache`): what `designer.workload.simulate` replays in time."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from designer.solver import SolverError
from designer.workload.domains import DomainMaps, ServerMaps, moved
from designer.workload.lone import LoneCollective, lone_collective, merged, slowed
from designer.workload.pairs import lone_pairs
from designer.workload.tasks import Comm, JobTraffic

__all__ = ["LoneCache"]


class LoneCache:
    """Each distinct (collective, group, size) of the jobs' tasks solved alone once, per
    snapshot, as `simulate` asks for them (``cache(job_index, comm)``: the task's
    groups joined by `lone.merged`): a group inside one NVLink domain is moved from an
    alike domain (`domains.DomainMaps`), one spanning servers from twin servers
    (`domains.ServerMaps`), the pairs of a send task timed by class
    (`pairs.lone_pairs`); a memo hands on what an edit left valid (`still`, `revive`,
    `plan`)."""

    def __init__(self, snap, jobs: Sequence[JobTraffic], launch: str, batch: bool):
        self.snap, self.jobs, self.launch, self.batch = snap, jobs, launch, batch
        self.rank_of = {snap.node_ids[g]: r for r, g in enumerate(snap.gpus.tolist())}
        self.solver_cache: dict = {}
        self.known: dict[tuple, LoneCollective] = {}
        self.maps: DomainMaps | None = None
        self.servers: ServerMaps | None = None
        #: (collective, size, twin classes, local positions, server pattern)
        #: -> (the domains of the group solved, its result): see `_across`.
        self.twins: dict[tuple, tuple[list[int], LoneCollective]] = {}
        self.alike: dict[tuple, tuple[int, LoneCollective]] = {}
        #: (collective, id(groups), size, efficiency) -> the task's joined results.
        self.tasks: dict[tuple, list[LoneCollective]] = {}
        self.joined: dict[tuple, list[LoneCollective]] = {}
        #: (ids of a task's lone results, efficiency) -> the joined results slowed
        #: (`lone.slowed`), like `joined` handed on by a memo.
        self.slowed: dict[tuple, list[LoneCollective]] = {}
        self.used: list[set[int]] = [set() for _ in jobs]
        self.counts = {"solved": 0, "revived": 0, "unchanged": 0}
        #: ``revive(key, lone)``: the result to use for a lone solved again (a memo's:
        #: the one it dropped, when the same).
        self.revive = None
        #: ``still(snap, key)``: a dropped result the edit left as it was, or None
        #: (a memo's), asked before solving again.
        self.still = None
        #: ``plan(snap, key)``: a memo's route memo plans a group whose result was
        #: moved, not solved (its plans are what `still` checks after an edit).
        self.plan = None

    def known_ids(self) -> set[int]:
        """The ids of the lone results in use (what was built on them holds)."""
        return {id(v) for v in self.known.values()}

    def __call__(self, jx: int, comm: Comm) -> list[LoneCollective]:
        if not comm.nbytes > 0:
            return []
        # Tasks share their groups' tuple: keyed by identity (a tuple's hash is not
        # kept, and hashing every GPU name at every task start costs more than the rest
        # of the call); another tuple of the same groups only misses this dict.
        key = (comm.collective, id(comm.groups), float(comm.nbytes), comm.efficiency)
        got = self.tasks.get(key)
        if got is None:
            each = self._each(jx, comm)
            # Keyed by the lone results themselves, so that a memo can hand the same
            # joined phases (and their cached rates) to the next snapshot.
            ids = tuple(id(lone) for lone in each)
            self.used[jx].update(ids)
            got = self.joined.get(ids)
            if got is None:
                got = self.joined[ids] = merged(each)
            if comm.efficiency != 1.0:
                slow = (ids, comm.efficiency)
                if slow not in self.slowed:
                    self.slowed[slow] = [slowed(lone, comm.efficiency) for lone in got]
                got = self.slowed[slow]
            self.tasks[key] = got
        return got

    def _each(self, jx: int, comm: Comm) -> list[LoneCollective]:
        job = self.jobs[jx].job
        where = f"job {job!r}, task {comm.id} ({comm.label or comm.lane})"
        try:
            groups = [tuple(self.rank_of[g] for g in group) for group in comm.groups]
        except KeyError as exc:
            raise SolverError(f"{where}: {exc.args[0]!r} is not a GPU of this design") from None
        size = float(comm.nbytes)
        if self.batch and comm.collective == "sendrecv" and len(groups) > 1:
            todo = [g for g in dict.fromkeys(groups) if ("sendrecv", g, size) not in self.known]
            try:
                found = (
                    lone_pairs(
                        self.snap,
                        todo,
                        size,
                        cache=self.solver_cache,
                        launch=self.launch,
                        counts=self.counts,
                    )
                    if todo
                    else []
                )
            except SolverError as exc:
                raise SolverError(f"{where}: {exc}") from exc
            for g, lone in zip(todo, found, strict=True):
                self.known[("sendrecv", g, size)] = self._revived(("sendrecv", g, size), lone)
        out = []
        for group, ranks in zip(comm.groups, groups, strict=True):
            key = (comm.collective, ranks, size)
            lone = self.known.get(key)
            if lone is None and self.still is not None:
                lone = self.still(self.snap, key)
                if lone is not None:
                    self.known[key] = lone
                    self.counts["unchanged"] += 1
            if lone is None:
                try:
                    lone = self._alone(comm.collective, ranks, size)
                except SolverError as exc:
                    raise SolverError(f"{where}, group {', '.join(group)}: {exc}") from exc
                lone = self.known[key] = self._revived(key, lone)
            out.append(lone)
        return out

    def _revived(self, key: tuple, lone: LoneCollective) -> LoneCollective:
        if self.revive is None:
            return lone
        got = self.revive(key, lone)
        if got is not lone:
            self.counts["revived"] += 1
        return got

    def _solve(self, collective: str, ranks: tuple[int, ...], size: float) -> LoneCollective:
        self.counts["solved"] += 1
        return lone_collective(
            self.snap, collective, ranks, size, cache=self.solver_cache, launch=self.launch
        )

    def _alone(self, collective: str, ranks: tuple[int, ...], size: float) -> LoneCollective:
        """One group alone: solved, or translated from an alike NVLink domain or from
        the group at the same positions in twin servers."""
        snap = self.snap
        dom = snap.gpu_domain[list(ranks)]
        if not self.batch:
            return self._solve(collective, ranks, size)
        if np.any(dom != dom[0]):
            return self._across(collective, ranks, size, dom)
        if self.maps is None:
            self.maps = DomainMaps(snap)
        d = int(dom[0])
        key = (
            collective,
            size,
            int(self.maps.kind[d]),
            tuple(snap.gpu_local[list(ranks)].tolist()),
        )
        seen = self.alike.get(key)
        if seen is not None:
            return moved(seen[1], self.maps, seen[0], d)
        lone = self._solve(collective, ranks, size)
        if all(self.maps.inside(p.pair_arc, d) for p in lone.phases):
            self.alike[key] = (d, lone)
        return lone

    def _across(self, collective: str, ranks: tuple[int, ...], size: float,
                dom: np.ndarray) -> LoneCollective:
        """A group spanning NVLink domains: translated from the group at the same local
        positions in twin servers, listed in the same order (`domains.ServerMaps`),
        when the routing reads only the structure; else solved."""
        snap = self.snap
        if snap.routing != "adaptive":
            return self._solve(collective, ranks, size)
        if self.maps is None:
            self.maps = DomainMaps(snap)
        if self.servers is None:
            self.servers = ServerMaps(snap, self.maps)
        twin = self.servers.twin_class[dom]
        if np.any(twin < 0):
            return self._solve(collective, ranks, size)
        local = snap.gpu_local[list(ranks)]
        # Each rank's server by its place among the group's servers: which ranks share
        # one, and the servers' order (that ring layouts follow).
        pattern = np.unique(dom, return_inverse=True)[1]
        key = (collective, size, tuple(twin.tolist()), tuple(local.tolist()),
               tuple(pattern.tolist()))
        seen = self.twins.get(key)
        if seen is not None:
            lone = self.servers.moved(seen[1], seen[0], dom.tolist())
            if lone is not None:
                if self.plan is not None:
                    self.plan(snap, (collective, ranks, size))
                return lone
        lone = self._solve(collective, ranks, size)
        self.twins.setdefault(key, (dom.tolist(), lone))
        return lone
