"""Speed of the workload simulation (`designer.workload.simulate`).

Run ``python benchmarks/workload.py`` (a minute or so) or ``--case a``.  Each case runs
in a fresh process, so the peak RSS printed is the case's own (``peak``: the process's
peak resident memory, the built design included; ``design``: once the design is built).

Cases a and b build their jobs here by hand (`hand_job`), case c with the traffic
generator.  A hand-built job is a tensor x pipeline x data-parallel job, TP innermost
on a server, then DP, then PP; per micro-batch and stage a forward span, its TP
all-reduce, the activations sent to the next stage; then the backward pass the other
way (GPipe order); then each stage's DP gradient all-reduce.

Columns: wall-clock and CPU time of the simulation; the peak RSS once the design is built
(``design``) and at the end (``peak``); tasks; event steps of the shared run; max-min
solves; collectives solved alone through the solver (the rest are moved from an alike
NVLink domain, timed by class, or carried by the memo); the longest iteration; the
largest slowdown (shared / alone).

Cases (issue 32, "Speed"):

a. one job on the "1,024-GPU" SuperPOD template (4 SUs: 127 servers, 1,016 H100):
   TP8 x PP8 x DP15 on 960 GPUs, 16 micro-batches (64 DP groups of 15 GPUs, 120 TP
   groups).  No goal of its own.
b. four jobs of 224 GPUs (TP8 x PP4 x DP7, 8 micro-batches each) side by side on the
   same SuperPOD (job k on every fourth server from server k), each also alone: the
   first simulation of the design (``cold``), then again after a one-link edit (a
   leaf-spine bundle gains a link; new snapshot, simulated with the `SimulationMemo`
   of the first: ``edit``).  The issue's goal: <= 400 ms after an edit.
c. the same with four jobs from the traffic generator (`iteration_traffic`): Llama 3.1
   70B (TP8 PP4 DP7), Llama 3.1 8B (TP8 DP28), Llama 3.1 70B (TP8 PP2 DP14), Mixtral
   8x7B (TP8 PP2 DP14 EP2), 224 GPUs each, 989 TFLOP/s per GPU.
d. (only with ``--case d``: minutes, gigabytes) one iteration of Llama 3.1 405B in the
   Llama 3 paper's layout (TP8 PP16 DP128) on a 16,384-GPU rail-optimised cluster
   (2,048 HGX H100 servers), from the traffic generator.  The issue's goal: <= 2 s.
e. DeepSeek-V3 (671B, 256 routed experts, top-8) with its experts spread over 256 GPUs
   (TP1 PP1 DP256 EP256, ZeRO-3, 8 micro-batches) on a 32-server rail-optimised
   cluster, from the traffic generator.  The issue's goal: <= 2 s.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time

from designer.memory import tune_process
from designer.model.templates import build_template
from designer.solver import take_snapshot
from designer.workload.memo import SimulationMemo
from designer.workload.simulate import simulate
from designer.workload.tasks import Comm, Compute, JobTraffic


def hand_job(
    name: str,
    gpus: list[str],
    tp: int,
    pp: int,
    dp: int,
    micro: int,
    *,
    fwd_s: float = 20e-3,
    tp_bytes: float = 64 << 20,
    pp_bytes: float = 8 << 20,
    grad_bytes: float = 2e9,
) -> JobTraffic:
    """A TP x PP x DP job over ``gpus`` (TP innermost, then DP, then PP), GPipe order."""
    if len(gpus) != tp * pp * dp:
        raise ValueError(f"{name}: {len(gpus)} GPUs for tp {tp} x pp {pp} x dp {dp}")

    def gpu(t, d, p):
        return gpus[t + tp * (d + dp * p)]

    tp_groups = [
        tuple(tuple(gpu(t, d, p) for t in range(tp)) for d in range(dp)) for p in range(pp)
    ]
    dp_groups = [
        tuple(tuple(gpu(t, d, p) for d in range(dp)) for t in range(tp)) for p in range(pp)
    ]

    def pairs(p, q):
        return tuple((gpu(t, d, p), gpu(t, d, q)) for d in range(dp) for t in range(tp))

    tasks: list = []
    last = [()] * pp  # the stage's last op (its GPUs run one op at a time)
    sent: dict = {}

    def add(kind, *args, deps=(), label=""):
        tid = len(tasks)
        tasks.append(kind(tid, *args, deps=tuple(deps), label=label))
        return tid

    for direction, stages, secs in (
        ("fwd", range(pp), fwd_s),
        ("bwd", range(pp - 1, -1, -1), 2 * fwd_s),
    ):
        step = 1 if direction == "fwd" else -1
        for m in range(micro):
            for p in stages:
                deps = list(last[p]) + (
                    [sent[(direction, m, p - step)]] if (direction, m, p - step) in sent else []
                )
                c = add(Compute, "compute", secs, deps=deps, label=f"{direction} mb{m} s{p}")
                a = add(
                    Comm,
                    "tp",
                    "allreduce",
                    tp_groups[p],
                    tp_bytes,
                    deps=[c],
                    label=f"tp {direction} mb{m} s{p}",
                )
                last[p] = (a,)
                if 0 <= p + step < pp:
                    sent[(direction, m, p)] = add(
                        Comm,
                        "pp",
                        "sendrecv",
                        pairs(p, p + step),
                        pp_bytes,
                        deps=[a],
                        label=f"pp {direction} mb{m} s{p}",
                    )
    for p in range(pp):
        add(Comm, "dp", "allreduce", dp_groups[p], grad_bytes, deps=last[p], label=f"dp grads s{p}")
    return JobTraffic(name, tuple(tasks))


def _nudge(topology) -> None:
    """A what-if edit: the first leaf-spine bundle gains a link (or loses one)."""
    for link in topology.links():
        if {topology.node(link.a).kind, topology.node(link.b).kind} == {"leaf", "spine"}:
            topology.update_link(
                link.id, count=link.count + 1 if link.count % 2 else link.count - 1
            )
            return


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(fn):
    """``fn()``, its wall-clock and CPU time (s): on a shared machine the wall clock
    also counts the time spent waiting for a core."""
    w, c = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - w, time.process_time() - c


def _row(case, what, res, wall, cpu, goal, design, tasks) -> tuple:
    slowdown = max((j.slowdown or 1.0) for j in res.jobs)
    return (
        case,
        what,
        wall,
        cpu,
        goal,
        design,
        _rss_mib(),
        res.stats,
        tasks,
        max(j.iteration_s for j in res.jobs),
        slowdown,
    )


def case_a(out) -> None:
    topo = build_template("superpod", sus=4)
    snap = take_snapshot(topo)
    gpus = [snap.node_ids[g] for g in snap.gpus.tolist()]
    job = hand_job("a", gpus[:960], 8, 8, 15, 16)
    design = _rss_mib()
    res, wall, cpu = _timed(lambda: simulate(snap, [job]))
    out.put(
        _row("a", "TP8 PP8 DP15 x 16 mb, 960 GPUs", res, wall, cpu, None, design, len(job.tasks))
    )


def _interleaved(gpus: list[str], k: int, n: int, per_server: int = 8) -> list[str]:
    """Job ``k`` of ``n``: every ``n``-th server from server ``k`` (jobs side by side in
    every scalable unit, so that their traffic meets on the spines)."""
    servers = [gpus[i : i + per_server] for i in range(0, len(gpus), per_server)]
    return [g for s in servers[k::n] for g in s]


def _edit_case(out, label: str, topo, snap, jobs) -> None:
    design = _rss_mib()
    memo = SimulationMemo()
    tasks = sum(len(j.tasks) for j in jobs)
    cold, wall, cpu = _timed(lambda: simulate(snap, jobs, memo=memo))
    out.put(
        _row(
            f"{label} cold", "4 jobs together and each alone", cold, wall, cpu, None, design, tasks
        )
    )
    _nudge(topo)
    after = take_snapshot(topo)
    edited, wall, cpu = _timed(lambda: simulate(after, jobs, memo=memo))
    out.put(
        _row(
            f"{label} edit",
            f"after a one-link edit ({memo.last['dropped']} redone)",
            edited,
            wall,
            cpu,
            0.4,
            design,
            tasks,
        )
    )


def case_b(out) -> None:
    topo = build_template("superpod", sus=4)
    snap = take_snapshot(topo)
    gpus = [snap.node_ids[g] for g in snap.gpus.tolist()]
    jobs = [hand_job(f"job{k}", _interleaved(gpus, k, 4)[:224], 8, 4, 7, 8) for k in range(4)]
    _edit_case(out, "b", topo, snap, jobs)


def case_c(out) -> None:
    import dataclasses

    from designer.workload.job import Job, Parallelism
    from designer.workload.placement import place
    from designer.workload.presets import preset
    from designer.workload.traffic import iteration_traffic

    topo = build_template("superpod", sus=4)
    snap = take_snapshot(topo)
    gpus = [snap.node_ids[g] for g in snap.gpus.tolist()]
    specs = [
        ("llama3.1-70b", dict(tp=8, pp=4, dp=7), 56),
        ("llama3.1-8b", dict(tp=8, pp=1, dp=28), 112),
        ("llama3.1-70b", dict(tp=8, pp=2, dp=14), 56),
        ("mixtral-8x7b", dict(tp=8, pp=2, dp=14, ep=2), 56),
    ]
    jobs = []
    for k, (name, par, batch) in enumerate(specs):
        job = Job.from_preset(f"{name}#{k}", preset(name))
        job = dataclasses.replace(
            job,
            parallel=Parallelism(**par),
            placement="explicit",
            gpus=tuple(_interleaved(gpus, k, 4)[:224]),
            config=dataclasses.replace(job.config, global_batch=batch),
        )
        jobs.append(iteration_traffic(job, place(job, snap), tflops=989.0))
    _edit_case(out, "c", topo, snap, jobs)


def case_d(out) -> None:
    from designer.workload.job import Job
    from designer.workload.placement import place
    from designer.workload.presets import preset
    from designer.workload.traffic import iteration_traffic

    topo = build_template("rail-cluster", nodes=2048)
    snap = take_snapshot(topo)
    job = Job.from_preset("405b", preset("llama3.1-405b"))
    traffic = iteration_traffic(job, place(job, snap), tflops=989.0)
    design = _rss_mib()
    res, wall, cpu = _timed(lambda: simulate(snap, [traffic]))
    out.put(
        _row("d", "Llama 3.1 405B, 16,384 GPUs", res, wall, cpu, 2.0, design, len(traffic.tasks))
    )


def case_e(out) -> None:
    import dataclasses

    from designer.workload.job import Job
    from designer.workload.placement import place
    from designer.workload.presets import preset
    from designer.workload.traffic import iteration_traffic

    topo = build_template("rail-cluster", nodes=32)
    snap = take_snapshot(topo)
    job = Job.from_preset("dsv3", preset("deepseek-v3"))
    job = dataclasses.replace(
        job,
        parallel=dataclasses.replace(job.parallel, tp=1, pp=1, dp=256, ep=256, vp=1),
        config=dataclasses.replace(job.config, zero="3", global_batch=2048),
    )
    traffic = iteration_traffic(job, place(job, snap), tflops=989.0)
    design = _rss_mib()
    res, wall, cpu = _timed(lambda: simulate(snap, [traffic]))
    out.put(
        _row("e", "DeepSeek-V3, EP 256 on 256 GPUs", res, wall, cpu, 2.0, design,
             len(traffic.tasks))
    )


CASES = {"a": case_a, "b": case_b, "c": case_c, "d": case_d, "e": case_e}
#: Run only when asked for (``--case d``): minutes, and gigabytes.
OPT_IN = ("d",)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    print(
        f"{'case':7s} {'what':34s} {'wall':>7s} {'CPU':>7s} {'goal':>7s} {'design':>7s} "
        f"{'peak':>7s} {'tasks':>5s} {'events':>6s} {'max-min':>7s} {'alone':>5s}  "
        "iteration  slowdown  goal (CPU time)"
    )
    for name in args.case or [c for c in sorted(CASES) if c not in OPT_IN]:
        out = ctx.Queue()
        proc = ctx.Process(target=_run, args=(name, out))
        proc.start()
        proc.join()
        while not out.empty():
            case, what, wall, cpu, goal, design, peak, stats, tasks, it, slow = out.get()
            goal_txt = "" if goal is None else f"<={goal * 1e3:.0f}ms"
            verdict = "" if goal is None else ("met" if cpu <= goal else "MISSED")
            print(
                f"{case:7s} {what:34s} {wall * 1e3:5.0f}ms {cpu * 1e3:5.0f}ms {goal_txt:>7s} "
                f"{design:5.0f}MB {peak:5.0f}MB {tasks:5d} {stats['events']:6d} "
                f"{stats['maxmin_solves']:7d} {stats['solved_alone']:5d}  {it:8.3f}s  "
                f"{slow:7.3f}  {verdict}"
            )


def _run(name: str, out) -> None:
    tune_process()
    CASES[name](out)


if __name__ == "__main__":
    main()
