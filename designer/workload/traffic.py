"""The traffic of one training iteration: a job and its placement -> `JobTraffic`.

Volumes follow the Megatron-LM papers (Shoeybi et al. 2019, arXiv 1909.08053; Narayanan
et al. 2021, arXiv 2104.04473; Korthikanti et al. 2022, arXiv 2205.05198) and ZeRO
(Rajbhandari et al. 2020, arXiv 1910.02054).  With ``b`` the micro-batch, ``s`` the
sequence, ``h`` the hidden size, ``t, c`` the TP and CP sizes and ``a`` bytes per
element, one activation is ``A = b (s / c) h a`` and, per layer and micro-batch:

* **TP** (lane ``tp``): forward 2 all-reduces of ``A``, backward 2 (plus 2 for the
  forward recomputed under full recompute); with sequence parallelism each all-reduce
  becomes a reduce-scatter and an all-gather of ``A`` (nccl-tests size: the whole
  tensor).  The vocabulary-parallel embedding adds one in the first stage's forward and
  the head one in the last stage's backward.
* **PP** (``pp``): per micro-batch and stage boundary, ``A`` forward and its gradient
  backward (``A / t`` with sequence parallelism, the activation being sharded), under
  1F1B (Narayanan et al.: warm-up of ``pp - x - 1`` forwards on stage ``x``) or its
  interleaved form with ``vp`` virtual stages; the bubble comes out of the dependencies.
* **EP** (``ep``): per MoE layer, dispatch and combine all-to-alls of
  ``(b s / c / t_sp) k h a`` (``k`` = top-k) forward, the same backward.
* **CP** (``cp``): per layer, the ring exchange of keys and values, ``c - 1`` steps of
  one chunk: the volume of an all-gather of ``b s w a / t`` (``w`` = `ModelSpec.kv_width`)
  forward, and backward an all-gather of K/V plus a reduce-scatter of their gradients.
  It overlaps with the layer's compute (its task runs beside the compute span).
* **DP** (``dp``): each stage's gradients (``grad_dtype``) in buckets of ``bucket_mb``,
  each bucket's collective released by its share of the last backward of the stage, so
  communication overlaps the backward (PyTorch DDP / Megatron); all-reduce, or ZeRO-1
  reduce-scatter then a parameter all-gather (``dtype``) after the step; ZeRO-3 gathers
  each stage's parameters in every forward and backward (beside the compute) and
  reduce-scatters its gradients after every backward.  The DP group is DP x CP (CP ranks
  hold the same weights); expert weights reduce over the ``dp / ep`` replicas.

Compute spans: a forward is its matrix multiplications, FLOPs ``tokens x (2 active
weights + attention scores)`` per layer (`ModelSpec.layer_flops_per_token`) over ``t c``
GPUs at the GPU's peak x MFU, plus its memory-bound operations (norms, activation
functions, dropout, softmax, residual adds, the fp32 logits): the activation bytes the
layer writes (`Job.layer_activation_bytes`, Korthikanti et al. 2022; the attention
scores only without fused attention; the head's ``4 s b V / t``) at the GPU's HBM
bandwidth (the catalog's ``hbm_GBps``), a roofline with no second efficiency.  The
backward is twice the forward, plus one forward under full recompute, plus attention
under selective; or the user's per-layer times.  The memory-bound share is what makes a
small hidden size use its GPU worse: it falls as ``1 / h`` against the GEMMs' ``h^2``.
Each span names the GPUs of its pipeline stage, so that the report can tell each
stage's bubble.

**Aggregation.**  Megatron's TP and EP collectives block the compute stream, so a
stage's per-layer collectives of one micro-batch run back to back with its compute
either way; they are merged into one task per kind and pass (the summed bytes), which
keeps the graph at a few tasks per micro-batch and stage.  What is lost is each merged
collective's own launch latency (``n - 1`` latencies of microseconds per merge) and the
algorithm choice at the smaller per-layer size.  All TP groups of a stage are one `Comm`
(they run at the same moment); the same for every other kind.

Left out: the optimizer step's time, the gradient-norm all-reduce, tied-embedding
gradient sync between first and last stages, load imbalance between experts.

Example
-------
>>> from designer.model.templates import build_template
>>> from designer.solver import take_snapshot
>>> from designer.workload.job import Job
>>> from designer.workload.placement import place
>>> from designer.workload.presets import preset
>>> snap = take_snapshot(build_template("hgx"))
>>> job = Job.from_preset("a", preset("tiny"))
>>> traffic = iteration_traffic(job, place(job, snap), tflops=989)
>>> traffic.validate()
>>> sorted(lane_volumes(traffic))
['compute', 'dp', 'pp', 'tp']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from designer.workload.experts import DEEPEP_EFFICIENCY, deepep_bytes, dispatch_odds
from designer.workload.job import DTYPE_BYTES, Job
from designer.workload.placement import Placement, rank_grid
from designer.workload.tasks import Comm, Compute, JobTraffic

__all__ = [
    "ep_dispatch",
    "gpu_hbm_gbps",
    "gpu_memory_gb",
    "gpu_models",
    "gpu_tflops",
    "iteration_traffic",
    "job_speeds",
    "lane_volumes",
    "stage_layers",
]


def gpu_models(snap, placement: Placement) -> list[str]:
    """The GPU models the placement uses, sorted."""
    return sorted({str(snap.node_model[snap.gpus[r]]) for r in placement.ranks.tolist()})


def _per_model(snap, placement: Placement, key: str, catalog=None) -> dict[str, float | None]:
    """Each GPU model the placement uses -> its catalog figure ``key`` (None: none);
    ``catalog`` defaults to the shipped one."""
    if catalog is None:
        from designer.model.catalog import default_catalog

        catalog = default_catalog()
    return {m: catalog.device(m).specs.get(key) or None for m in gpu_models(snap, placement)}


def gpu_memory_gb(snap, placement: Placement, catalog=None) -> float:
    """HBM capacity (GB) of the smallest GPU model the placement uses (the catalog's
    ``memory_GB``; 0 when a model has none)."""
    return min(float(v or 0) for v in _per_model(snap, placement, "memory_GB", catalog).values())


def gpu_tflops(snap, placement: Placement, dtype: str = "bf16") -> float:
    """Peak dense TFLOP/s of the slowest GPU model the placement uses, from the design's
    catalog (``fp8_tflops`` for fp8 where the catalog has it, else ``bf16_tflops``).

    Raises
    ------
    ValueError
        When the catalog gives no figure for a GPU model (set the job's ``tflops``).
    """
    fp8 = _per_model(snap, placement, "fp8_tflops") if dtype == "fp8" else {}
    best = []
    for m, value in _per_model(snap, placement, "bf16_tflops").items():
        value = fp8.get(m) or value
        if not value:
            raise ValueError(
                f"job {placement.job!r}: the catalog gives no TFLOP/s for GPU "
                f"model {m!r}; set the job's tflops"
            )
        best.append(float(value))
    return min(best)


def gpu_hbm_gbps(snap, placement: Placement) -> float:
    """Memory bandwidth (GB/s) of the slowest GPU model the placement uses, from the
    catalog's ``hbm_GBps``; 0 when a model has none (the compute spans then leave out
    their memory-bound part)."""
    values = _per_model(snap, placement, "hbm_GBps").values()
    return 0.0 if None in values else float(min(values))


def job_speeds(job: Job, snap, placement: Placement) -> tuple[float, float]:
    """``(peak TFLOP/s, HBM GB/s)`` that ``job`` computes at on ``placement``: the job's
    own ``tflops``, else the catalog's (`gpu_tflops`; none is needed with
    ``layer_times``), and the catalog's memory bandwidth (`gpu_hbm_gbps`)."""
    tflops = job.tflops or (
        0.0 if job.layer_times else gpu_tflops(snap, placement, job.config.dtype)
    )
    return tflops, gpu_hbm_gbps(snap, placement)


def stage_layers(layers: int, stages: int) -> list[range]:
    """Layers of each (virtual) pipeline stage: as even as possible, the first stages
    taking one more when they do not divide."""
    base, extra = divmod(layers, stages)
    out, at = [], 0
    for g in range(stages):
        n = base + (1 if g < extra else 0)
        out.append(range(at, at + n))
        at += n
    return out


@dataclass
class _Graph:
    tasks: list = field(default_factory=list)

    def compute(self, seconds: float, deps, label: str, gpus: tuple = ()) -> int:
        self.tasks.append(Compute(len(self.tasks), "compute", seconds, tuple(deps), label, gpus))
        return len(self.tasks) - 1

    def comm(self, lane: str, kind: str, groups, nbytes: float, deps, label: str,
             efficiency: float = 1.0) -> int:
        self.tasks.append(
            Comm(len(self.tasks), lane, kind, groups, float(nbytes), tuple(deps), label,
                 efficiency)
        )
        return len(self.tasks) - 1


def ep_dispatch(job: Job, placement: Placement, ep_groups: tuple, tokens: float,
             token_bytes: float) -> list[tuple[str, tuple, float]]:
    """One dispatch's all-to-alls under ``job``'s dispatcher, for the EP groups of one
    stage: ``(label, groups, size)`` each (groups of one leg run together).

    ``alltoall``: one of ``tokens x top_k`` rows.  ``deepep``: per group, its GPUs by
    NVLink domain (server); on one server one all-to-all of the tokens each rank
    needs, across servers the RDMA leg (each local index's GPUs) and the NVLink leg
    (each server's GPUs) of `experts.deepep_bytes`.  A group whose servers hold unequal
    shares of it is sent as ``alltoall``.
    """
    model = job.model
    plain = ("a2a", ep_groups, tokens * model.top_k * token_bytes)
    if job.config.ep_dispatcher != "deepep" or not ep_groups:
        return [plain]
    domain_of = dict(zip(placement.gpus, placement.rank_domain.tolist(), strict=True))
    ep = len(ep_groups[0])
    legs: dict[tuple[str, int, int], list] = {}
    odd: list[tuple] = []
    for group in ep_groups:
        servers: dict[int, list[str]] = {}
        for gpu in group:
            servers.setdefault(domain_of[gpu], []).append(gpu)
        rows = list(servers.values())
        n, per = len(rows), len(rows[0])
        if any(len(r) != per for r in rows):
            odd.append(group)
        elif n == 1:
            legs.setdefault(("nvl", 1, per), []).append(group)
        else:
            legs.setdefault(("rdma", n, per), []).extend(
                tuple(r[i] for r in rows) for i in range(per)
            )
            if per > 1:  # one GPU per server: the network delivers to the rank itself
                legs.setdefault(("nvl", n, per), []).extend(tuple(r) for r in rows)
    out = []
    for (leg, n, per), members in legs.items():
        rdma, nvlink = deepep_bytes(tokens, token_bytes, n, per, *dispatch_odds(model, ep, per))
        out.append((f"deepep {leg}", tuple(members), rdma if leg == "rdma" else nvlink))
    if odd:
        out.append(("a2a", tuple(odd), plain[2]))
    return out


def _schedule(pp: int, vp: int, m: int, x: int) -> list[tuple[str, int, int]]:
    """Device ``x``'s operations in order: ``(pass, micro-batch, chunk)``, Megatron's
    1F1B (interleaved when ``vp > 1``)."""
    total = m * vp

    def op(k: int, backward: bool) -> tuple[int, int]:
        group, within = divmod(k, pp * vp)
        chunk = within // pp
        return group * pp + within % pp, (vp - 1 - chunk if backward else chunk)

    warm = min(pp - x - 1 if vp == 1 else (pp - x - 1) * 2 + (vp - 1) * pp, total)
    ops = [("F", *op(k, False)) for k in range(warm)]
    for i in range(total - warm):
        ops += [("F", *op(warm + i, False)), ("B", *op(i, True))]
    ops += [("B", *op(k, True)) for k in range(total - warm, total)]
    return ops


def iteration_traffic(
    job: Job, placement: Placement, tflops: float | None = None, hbm_gbps: float = 0.0
) -> JobTraffic:
    """Every task of one iteration of ``job`` placed by ``placement`` (see the module).

    Parameters
    ----------
    job : Job
    placement : Placement
    tflops : float, optional
        Peak TFLOP/s per GPU; default ``job.tflops`` (required unless the job gives
        ``layer_times``; `gpu_tflops` reads it from the design's catalog).
    hbm_gbps : float
        GPU memory bandwidth, GB/s, for the memory-bound part of the compute
        (`gpu_hbm_gbps`); 0 leaves that part out.

    Returns
    -------
    JobTraffic
    """
    job.check()
    model, cfg, par = job.model, job.config, job.parallel
    t, c, pp, vp, dp, ep = par.tp, par.cp, par.pp, par.vp, par.dp, par.ep
    a = DTYPE_BYTES[cfg.dtype]
    b, s, h = cfg.micro_batch, job.seq_len, model.hidden
    m = cfg.micro_batches(par)
    sp = cfg.sequence_parallel and t > 1
    full = cfg.recompute == "full"
    peak = job.tflops or tflops or 0.0
    if not job.layer_times and not peak > 0:
        raise ValueError(f"job {job.name!r}: no compute speed (tflops or layer_times)")
    speed = peak * 1e12 * job.mfu
    gid = np.array(placement.gpus, dtype=object)
    grid = rank_grid(par)  # [dp, pp, cp, tp]
    act = b * (s / c) * h * a  # one activation, bytes
    tokens = b * s  # per pipeline, per micro-batch
    n_virtual = pp * vp
    chunks = stage_layers(model.layers, n_virtual)

    def groups(sel: np.ndarray) -> tuple:
        """Rows of ``sel`` (ranks) as GPU-id groups; singleton groups dropped."""
        sel = sel.reshape(-1, sel.shape[-1])
        return tuple(tuple(gid[row].tolist()) for row in sel) if sel.shape[-1] > 1 else ()

    # Per device: its GPUs (one tuple shared by its compute spans) and the groups of
    # each kind.
    stage_gpus = [tuple(gid[grid[:, x].reshape(-1)].tolist()) for x in range(pp)]
    tp_groups = [groups(grid[:, x]) for x in range(pp)]
    cp_groups = [groups(np.moveaxis(grid[:, x], 1, -1)) for x in range(pp)]
    ep_grid = [grid[:, x].reshape(dp // ep, ep, c, t) for x in range(pp)]
    ep_groups = [groups(np.moveaxis(g, 1, -1)) for g in ep_grid]
    dp_groups = [
        groups(np.moveaxis(grid[:, x], (0, 1), (-2, -1)).reshape(t, dp * c)) for x in range(pp)
    ]
    edp_groups = [
        groups(np.moveaxis(g, (0, 2), (-2, -1)).reshape(ep * t, (dp // ep) * c)) for g in ep_grid
    ]

    ep_tokens = b * s / c / (t if sp else 1)  # tokens a GPU dispatches per MoE layer
    ep_legs = [ep_dispatch(job, placement, ep_groups[x], ep_tokens, h * a) for x in range(pp)]
    efficiency = DEEPEP_EFFICIENCY if cfg.ep_dispatcher == "deepep" else 1.0
    memory_s = 1 / (hbm_gbps * 1e9) if hbm_gbps > 0 else 0.0  # per byte
    scores = not cfg.flash_attention

    def chunk_info(g: int) -> dict:
        layers = chunks[g]
        moe = sum(model.is_moe_layer(i) for i in layers)
        flops = tokens * sum(model.layer_flops_per_token(model.is_moe_layer(i)) for i in layers)
        attn = tokens * len(layers) * 2 * s * model.heads * 2 * model.d_head
        written = sum(job.layer_activation_bytes(model.is_moe_layer(i), scores) for i in layers)
        score_bytes = written - sum(
            job.layer_activation_bytes(model.is_moe_layer(i), False) for i in layers
        )
        if g == n_virtual - 1:
            flops += tokens * model.head_flops_per_token()
            written += 4 * b * (s / c) * model.vocab / t  # the fp32 logits
        dense, expert = model.stage_params(layers, g == 0, g == n_virtual - 1)
        if job.layer_times:
            fwd, bwd = (x * len(layers) for x in job.layer_times)
        else:
            fwd = flops / (t * c) / speed + written * memory_s
            bwd = (
                2 * fwd
                + (fwd if full else 0.0)
                + (
                    attn / (t * c) / speed + score_bytes * memory_s
                    if cfg.recompute == "selective"
                    else 0.0
                )
            )
        return {
            "n": len(layers),
            "moe": moe,
            "fwd": fwd,
            "bwd": bwd,
            "dense": dense / t,
            "expert": expert / (ep * t),
        }

    info = [chunk_info(g) for g in range(n_virtual)]
    graph = _Graph()
    ends: dict[tuple[str, int, int], int] = {}  # (pass, virtual stage, mb) -> op end
    pp_msgs: dict[tuple[str, int, int], int] = {}  # (pass, receiving stage, mb) -> comm
    grad_a = DTYPE_BYTES[cfg.grad_dtype]
    last_b = {}  # (device, chunk) -> last mb backward
    sched = [_schedule(pp, vp, m, x) for x in range(pp)]
    for x in range(pp):
        for kind, mb, ch in sched[x]:
            if kind == "B":
                last_b[(x, ch)] = max(last_b.get((x, ch), -1), mb)
    dp_tail: dict[int, list[int]] = {x: [] for x in range(pp)}
    pp_bytes = act / t if sp else act

    pair_tuples: dict[tuple[int, int], tuple] = {}

    def pair_cache(src: int, dst: int) -> tuple:
        """The send pairs from device ``src`` to ``dst``: one tuple for every message
        between them (the simulator then looks at it once)."""
        got = pair_tuples.get((src, dst))
        if got is None:
            got = pair_tuples[(src, dst)] = _pairs(gid, grid, src, dst)
        return got

    def emit(x: int, kind: str, mb: int, ch: int, prev: int | None) -> int:
        g = ch * pp + x
        ci = info[g]
        deps = [] if prev is None else [prev]
        if kind == "F" and g > 0:
            deps.append(pp_msgs[("F", g, mb)])
        if kind == "B":
            deps.append(pp_msgs[("B", g, mb)] if g < n_virtual - 1 else ends[("F", g, mb)])
        tag = f"{'fwd' if kind == 'F' else 'bwd'} mb{mb} stage{g}"
        side = list(deps)  # tasks beside the compute (CP exchange, ZeRO-3 gathers)
        overlap = []
        n_pass = ci["n"] * (1 if kind == "F" else (2 if full else 1))
        if cp_groups[x]:
            kv = b * s * model.kv_width / t * a * ci["n"]
            overlap.append(
                graph.comm(
                    "cp",
                    "allgather",
                    cp_groups[x],
                    kv * (1 if kind == "F" else 1 + full),
                    side,
                    f"cp kv {tag}",
                )
            )
            if kind == "B":
                overlap.append(
                    graph.comm("cp", "reducescatter", cp_groups[x], kv, side, f"cp dkv {tag}")
                )
        if cfg.zero == "3" and dp_groups[x]:
            overlap.append(
                graph.comm(
                    "dp", "allgather", dp_groups[x], ci["dense"] * a, side, f"dp param gather {tag}"
                )
            )
        seconds = ci["fwd"] if kind == "F" else ci["bwd"]
        bucketed = kind == "B" and cfg.zero != "3" and last_b[(x, ch)] == mb and dp_groups[x]
        pieces = 1
        if bucketed:
            grad_bytes = ci["dense"] * grad_a
            pieces = max(1, min(ci["n"], math.ceil(grad_bytes / (cfg.bucket_mb * 1e6))))
        mine = stage_gpus[x]
        step = graph.compute(
            seconds / pieces, deps, tag + (f" 1/{pieces}" if pieces > 1 else ""), mine
        )
        piece_ends = [step]
        for k in range(1, pieces):
            step = graph.compute(seconds / pieces, [step], f"{tag} {k + 1}/{pieces}", mine)
            piece_ends.append(step)
        last = [step, *overlap]
        if tp_groups[x]:
            count = 2 * n_pass + (
                1 if (kind == "F" and g == 0) or (kind == "B" and g == n_virtual - 1) else 0
            )
            if sp:
                ag = graph.comm("tp", "allgather", tp_groups[x], count * act, last, f"tp ag {tag}")
                last = [
                    graph.comm(
                        "tp", "reducescatter", tp_groups[x], count * act, [ag], f"tp rs {tag}"
                    )
                ]
            else:
                last = [
                    graph.comm("tp", "allreduce", tp_groups[x], count * act, last, f"tp ar {tag}")
                ]
        if ep_groups[x] and ci["moe"]:
            passes = 2 * ci["moe"] * (1 if kind == "F" else (2 if full else 1))
            last = [
                graph.comm(
                    "ep", "alltoall", groups_, passes * size, last, f"ep {leg} {tag}",
                    efficiency,
                )
                for leg, groups_, size in ep_legs[x]
            ]
        if len(last) > 1:
            last = [graph.compute(0.0, last, f"{tag} end", mine)]
        end = last[0]
        ends[(kind, g, mb)] = end
        # Pipeline messages this op releases.
        if kind == "F" and g < n_virtual - 1 and (g + 1) % pp != g % pp:
            pairs = pair_cache(x, (g + 1) % pp)
            pp_msgs[("F", g + 1, mb)] = graph.comm(
                "pp", "sendrecv", pairs, pp_bytes, [end], f"pp act {tag}"
            )
        elif kind == "F" and g < n_virtual - 1:
            pp_msgs[("F", g + 1, mb)] = end
        if kind == "B" and g > 0 and (g - 1) % pp != x:
            pairs = pair_cache(x, (g - 1) % pp)
            pp_msgs[("B", g - 1, mb)] = graph.comm(
                "pp", "sendrecv", pairs, pp_bytes, [end], f"pp grad {tag}"
            )
        elif kind == "B" and g > 0:
            pp_msgs[("B", g - 1, mb)] = end
        # Gradient reduction.
        if cfg.zero == "3" and dp_groups[x] and kind == "B":
            dp_tail[x].append(
                graph.comm(
                    "dp",
                    "reducescatter",
                    dp_groups[x],
                    ci["dense"] * grad_a,
                    [end],
                    f"dp grad rs {tag}",
                )
            )
        elif bucketed:
            kind_dp = "allreduce" if cfg.zero == "none" else "reducescatter"
            chain = dp_tail[x][-1:] if dp_tail[x] else []
            for k, piece in enumerate(piece_ends):
                chain = [
                    graph.comm(
                        "dp",
                        kind_dp,
                        dp_groups[x],
                        ci["dense"] * grad_a / pieces,
                        [piece, *chain],
                        f"dp grad {k + 1}/{pieces} stage{g}",
                    )
                ]
                dp_tail[x].append(chain[0])
        if kind == "B" and last_b[(x, ch)] == mb and ci["expert"] and edp_groups[x]:
            dp_tail[x].append(
                graph.comm(
                    "dp",
                    "allreduce" if cfg.zero == "none" else "reducescatter",
                    edp_groups[x],
                    ci["expert"] * grad_a,
                    [end],
                    f"dp expert grad stage{g}",
                )
            )
        return end

    # Emit every device's operations in an order that respects the cross-device
    # dependencies (the schedule is deadlock-free, so sweeps always progress).
    at = [0] * pp
    prev: list[int | None] = [None] * pp
    left = sum(len(o) for o in sched)
    while left:
        progressed = False
        for x in range(pp):
            while at[x] < len(sched[x]):
                kind, mb, ch = sched[x][at[x]]
                g = ch * pp + x
                need = (
                    ("F", g, mb)
                    if kind == "F" and g > 0
                    else ("B", g, mb)
                    if kind == "B" and g < n_virtual - 1
                    else None
                )
                if kind == "B" and g == n_virtual - 1 and ("F", g, mb) not in ends:
                    break
                if need is not None and need not in pp_msgs:
                    break
                prev[x] = emit(x, kind, mb, ch, prev[x])
                at[x] += 1
                left -= 1
                progressed = True
        if not progressed:
            raise RuntimeError(f"job {job.name!r}: pipeline schedule deadlocked")
    if cfg.zero == "1":
        for x in range(pp):
            if dp_groups[x]:
                dense = sum(info[ch * pp + x]["dense"] for ch in range(vp))
                graph.comm(
                    "dp",
                    "allgather",
                    dp_groups[x],
                    dense * a,
                    dp_tail[x],
                    f"dp param gather device{x}",
                )
    return JobTraffic(job.name, tuple(graph.tasks))


def _pairs(gid: np.ndarray, grid: np.ndarray, src: int, dst: int) -> tuple:
    """(sender, receiver) GPU pairs from pipeline device ``src`` to ``dst``: every
    (dp, cp, tp) position."""
    a, b = grid[:, src].reshape(-1), grid[:, dst].reshape(-1)
    return tuple((gid[i], gid[j]) for i, j in zip(a.tolist(), b.tolist(), strict=True))


#: Bytes each rank of a group sends per byte of a collective's size (nccl-tests' bus
#: bandwidth factors; a send/recv pair: the sender sends it all, so half per rank).
_SENT = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "sendrecv": lambda n: 0.5,
}


def lane_volumes(traffic: JobTraffic) -> dict[str, dict[str, float]]:
    """Per lane: ``tasks``; ``collectives`` (a Comm counts once per group); ``bytes`` (the
    nccl-tests size summed over every group's collective); ``sent`` (bytes all GPUs
    send, at the bus-bandwidth factor of each collective: ``2 (n - 1) / n`` of the size
    per rank for an all-reduce); for compute ``seconds`` summed over the tasks (each
    stands for all GPUs of one pipeline stage)."""
    out: dict[str, dict[str, float]] = {}
    for task in traffic.tasks:
        row = out.setdefault(
            task.lane, {"tasks": 0, "collectives": 0, "bytes": 0.0, "sent": 0.0, "seconds": 0.0}
        )
        row["tasks"] += 1
        if isinstance(task, Comm):
            row["collectives"] += len(task.groups)
            row["bytes"] += task.nbytes * len(task.groups)
            for g in task.groups:
                row["sent"] += task.nbytes * len(g) * _SENT[task.collective](len(g))
        else:
            row["seconds"] += task.seconds
    return out
