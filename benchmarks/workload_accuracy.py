"""The workload simulation against published figures (issue 32, "Check against
published figures").

Two tables, each row with its source (``resources/reference/published-workloads.json``):

* **Megatron-LM weak scaling** (Narayanan et al. 2021, Table 1): GPT models of 1.7B to
  1T parameters on 32 to 3,072 A100s with the paper's tensor/pipeline/data-parallel
  sizes and batches, one iteration each simulated on a rail-optimised DGX A100 cluster
  (8 x HDR 200 Gb/s per server) with activation recompute; the achieved TFLOP/s per GPU
  is the paper's FLOP count (its equation 3) over the simulated iteration.  Every row
  uses ONE compute efficiency (``EFFICIENCY``: the fraction of the A100's 312 TFLOP/s
  its matrix multiplications reach), fitted once with ``--fit`` and stated here, so the
  differences between rows are the simulation's communication, bubble and overlap, and
  the memory-bound share of each layer's compute (its activation bytes at the A100's
  HBM bandwidth; no fitted figure: see `designer.workload.traffic`).  The paper's
  kernels are 2021's: attention not fused.
* **DeepEP** dispatch/combine (its README's normal-kernel table): the all-to-all of the
  DeepSeek-V3 setting (4,096 tokens, hidden 7,168, top-8; FP8 dispatch, BF16 combine)
  over EP 8 (one H800 server, NVLink) and EP 16/32/64 (2-8 servers, one 400 Gb/s
  ConnectX-7 per GPU, RDMA), simulated alone; the simulated bandwidth is the bytes each
  GPU pushed through its bottleneck links (NVLink ports intra-node, its NIC inter-node),
  read from the simulation's link statistics, over the simulated time.

Goal (the issue): every row within 15 %.  Printed per row: published, simulated, error;
for Megatron also the memory-bound share of the compute, and the bubble and exposed
communication as shares of the iteration.

Usage::

    python benchmarks/workload_accuracy.py            # both tables (minutes: 1T is big)
    python benchmarks/workload_accuracy.py --table deepep
    python benchmarks/workload_accuracy.py --upto 76B # Megatron rows up to that model
    python benchmarks/workload_accuracy.py --fit      # refit EFFICIENCY (2 runs a row)
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
#: The published figures, each table with its source.
REFERENCE = REPO / "resources/reference/published-workloads.json"
#: The issue's bound on every row's |error|.
GOAL = 0.15
#: A100 dense FP16/BF16 peak, TFLOP/s (the paper's percentages are of it).
A100_PEAK = 312.0
#: The one compute efficiency of every Megatron row: what ``--fit`` printed on
#: 2026-11-29 (it minimises the largest |error| over the ten rows).
EFFICIENCY = 0.589


def load_reference(path: Path = REFERENCE) -> dict:
    """The reference file, its tables' rows as dicts (column name -> value)."""
    data = json.loads(path.read_text())
    for key in ("megatron_weak_scaling", "deepep_normal_kernels"):
        table = data[key]
        table["rows"] = [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]
    return data


def paper_flops(row: dict, seq: int = 2048, vocab: int = 51200) -> float:
    """FLOPs of one iteration as the paper counts them (equation 3, with recompute):
    ``96 B s l h^2 (1 + s / 6h + V / 16 l h)``."""
    b, n, h = row["batch"], row["layers"], row["hidden"]
    return 96 * b * seq * n * h * h * (1 + seq / (6 * h) + vocab / (16 * n * h))


def megatron_job(row: dict, efficiency: float):
    """The row's job: GPT at the paper's sizes, its TP/PP/DP and batch."""
    from designer.workload.job import Job, Parallelism, TrainingConfig
    from designer.workload.model import ModelSpec

    h = row["hidden"]
    model = ModelSpec(
        layers=row["layers"],
        hidden=h,
        ffn=4 * h,
        heads=h // 128,
        kv_heads=h // 128,
        vocab=51200,
        seq_len=2048,
        gated_mlp=False,
        tied_embeddings=True,
        learned_positions=True,
    )
    tp, pp = row["tp"], row["pp"]
    par = Parallelism(tp=tp, pp=pp, dp=row["gpus"] // (tp * pp))
    cfg = TrainingConfig(
        global_batch=row["batch"],
        micro_batch=1,
        dtype="fp16",
        grad_dtype="fp16",
        sequence_parallel=False,
        recompute="full",
        flash_attention=False,
    )
    return Job(row["model"], model, cfg, par, mfu=efficiency, tflops=A100_PEAK)


def megatron_design(gpus: int):
    """DGX A100 servers on a rail-optimised HDR InfiniBand fabric (one 200 Gb/s NIC per
    GPU), as Selene's compute fabric."""
    from designer.model.templates import build_template
    from designer.solver import take_snapshot

    topo = build_template(
        "rail-cluster", nodes=gpus // 8, gpu="A100", nic_gbps=200, fabric="infiniband"
    )
    return take_snapshot(topo)


def simulate_megatron(row: dict, efficiency: float, snap=None) -> dict:
    """One iteration of the row's job: its time and achieved TFLOP/s per GPU."""
    from designer.workload.placement import place
    from designer.workload.simulate import simulate
    from designer.workload.traffic import gpu_hbm_gbps, iteration_traffic

    snap = snap if snap is not None else megatron_design(row["gpus"])
    job = megatron_job(row, efficiency)
    t0 = time.process_time()
    placement = place(job, snap)
    traffic = iteration_traffic(job, placement, hbm_gbps=gpu_hbm_gbps(snap, placement))
    res = simulate(snap, [traffic]).jobs[0]
    gemm = iteration_traffic(job, placement)  # the same spans without memory-bound work
    return {
        "memory": 1 - _compute_s(gemm) / _compute_s(traffic),
        "iteration_s": res.iteration_s,
        "tflops": paper_flops(row) / res.iteration_s / row["gpus"] / 1e12,
        "bubble": res.breakdown["bubble"] / res.iteration_s,
        "exposed": res.breakdown["exposed_comm"] / res.iteration_s,
        "cpu_s": time.process_time() - t0,
    }


def _compute_s(traffic) -> float:
    from designer.workload.tasks import Compute

    return sum(t.seconds for t in traffic.tasks if isinstance(t, Compute))


def fit_efficiency(rows: list[dict]) -> float:
    """The one efficiency that minimises the largest |error| over ``rows``.

    Each row is simulated at two efficiencies; its iteration is then modelled as
    ``A / e + X`` (compute and the bubbles scale with 1 / e, exposed communication
    does not), which the final table checks by simulating at the chosen ``e``.
    """
    models = []
    for row in rows:
        snap = megatron_design(row["gpus"])
        t1 = simulate_megatron(row, 1.0, snap)["iteration_s"]
        t2 = simulate_megatron(row, 0.5, snap)["iteration_s"]
        a = t2 - t1  # A / 0.5 - A / 1
        models.append((row, a, t1 - a))
    grid = np.linspace(0.3, 1.0, 1401)
    worst = []
    for e in grid:
        errs = [
            abs(paper_flops(r) / (a / e + x) / r["gpus"] / 1e12 / r["tflops_per_gpu"] - 1)
            for r, a, x in models
        ]
        worst.append(max(errs))
    return float(grid[int(np.argmin(worst))])


def deepep_bytes(tokens: int = 4096, hidden: int = 7168, top_k: int = 8) -> dict[str, float]:
    """Per-GPU all-to-all buffers of the DeepEP setting: FP8 dispatch (one byte per
    element plus a 4-byte scale per 128), BF16 combine."""
    n = tokens * top_k * hidden
    return {"dispatch": n * (1 + 4 / 128), "combine": n * 2.0}


def simulate_deepep(row: dict) -> dict[str, float]:
    """Simulated per-GPU bottleneck bandwidth (GB/s) of dispatch and combine."""
    from designer.model.templates import build_template
    from designer.solver import take_snapshot
    from designer.workload.simulate import simulate
    from designer.workload.tasks import Comm, JobTraffic

    ep = row["ep"]
    if row["link"] == "nvlink":
        topo = build_template("hgx", gpu="H800")
    else:
        topo = build_template("rail-cluster", nodes=ep // 8, gpu="H800", nic_gbps=400)
    snap = take_snapshot(topo)
    kinds = {n.id: n.kind for n in topo.nodes()}
    gpus = tuple(snap.node_ids[g] for g in snap.gpus[:ep].tolist())
    out = {}
    for name, size in deepep_bytes().items():
        job = JobTraffic("ep", (Comm(0, "ep", "alltoall", (gpus,), size),))
        res = simulate(snap, [job])
        t = res.jobs[0].iteration_s
        moved = 0.0
        for link in res.links.to_json():
            ends = {kinds.get(x, "") for x in _ends(topo, link["id"])}
            if ends == _BOTTLENECK[row["link"]]:
                moved += link["bytes"]
        # Link bytes count both directions: each GPU sends and receives its share.
        out[name] = moved / 2 / ep / t / 1e9
    return out


#: The links whose bytes make each DeepEP bandwidth: a GPU's NVLink ports (to the
#: NVSwitches) intra-node, its NIC's link to the leaf inter-node.
_BOTTLENECK = {"nvlink": {"gpu", "nvswitch"}, "rdma": {"nic", "leaf"}}


def _ends(topo, link_id: str) -> tuple[str, str]:
    link = topo.link(link_id)
    return link.a, link.b


def _err(sim: float, pub: float) -> float:
    return sim / pub - 1


def megatron_table(data: dict, efficiency: float, upto: str | None) -> list[dict]:
    table = data["megatron_weak_scaling"]
    rows = table["rows"]
    if upto:
        rows = rows[: [r["model"] for r in rows].index(upto) + 1]
    print(f"Megatron-LM weak scaling: {table['source']}")
    print(
        f"one compute efficiency for every row: {efficiency:.3f} of {A100_PEAK:.0f} TFLOP/s "
        f"(goal: every row within {GOAL:.0%})"
    )
    print(
        f"{'model':>6} {'TPxPPxDP':>10} {'GPUs':>5} {'batch':>5} {'published':>9} "
        f"{'simulated':>9} {'error':>7} {'memory':>6} {'bubble':>6} {'exposed':>7} "
        f"{'CPU':>6}  goal"
    )
    out = []
    for row in rows:
        sim = simulate_megatron(row, efficiency)
        err = _err(sim["tflops"], row["tflops_per_gpu"])
        dp = row["gpus"] // (row["tp"] * row["pp"])
        print(
            f"{row['model']:>6} {row['tp']:>3}x{row['pp']:>2}x{dp:<3} {row['gpus']:>5} "
            f"{row['batch']:>5} {row['tflops_per_gpu']:>7.0f} T {sim['tflops']:>7.1f} T "
            f"{err:>+7.1%} {sim['memory']:>6.1%} {sim['bubble']:>6.1%} {sim['exposed']:>7.1%} "
            f"{sim['cpu_s']:>5.1f}s  {'ok' if abs(err) <= GOAL else 'MISS'}",
            flush=True,
        )
        out.append({"row": row, **sim, "error": err})
    return out


def deepep_table(data: dict) -> list[dict]:
    table = data["deepep_normal_kernels"]
    print(f"DeepEP dispatch/combine: {table['source']}")
    print(
        f"{'case':>9} {'EP':>3} {'link':>6} {'dispatch pub/sim':>18} {'error':>7} "
        f"{'combine pub/sim':>17} {'error':>7}  goal"
    )
    out = []
    for row in table["rows"]:
        sim = simulate_deepep(row)
        ed = _err(sim["dispatch"], row["dispatch_GBps"])
        ec = _err(sim["combine"], row["combine_GBps"])
        ok = max(abs(ed), abs(ec)) <= GOAL
        print(
            f"{row['case']:>9} {row['ep']:>3} {row['link']:>6} "
            f"{row['dispatch_GBps']:>6.0f} / {sim['dispatch']:>5.1f} GB/s {ed:>+7.1%} "
            f"{row['combine_GBps']:>5.0f} / {sim['combine']:>5.1f} GB/s {ec:>+7.1%}  "
            f"{'ok' if ok else 'MISS'}",
            flush=True,
        )
        out.append({"row": row, **sim, "dispatch_error": ed, "combine_error": ec})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=("megatron", "deepep"), action="append")
    parser.add_argument("--upto", help="last Megatron row (model name, e.g. 76B)")
    parser.add_argument("--fit", action="store_true", help="fit the efficiency first")
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    args = parser.parse_args(argv)
    data = load_reference(args.reference)
    tables = args.table or ["megatron", "deepep"]
    efficiency = EFFICIENCY
    if "megatron" in tables:
        if args.fit:
            rows = data["megatron_weak_scaling"]["rows"]
            if args.upto:
                rows = rows[: [r["model"] for r in rows].index(args.upto) + 1]
            efficiency = fit_efficiency(rows)
            print(f"fitted efficiency: {efficiency:.3f}")
        megatron_table(data, efficiency, args.upto)
    if "deepep" in tables:
        if "megatron" in tables:
            print()
        deepep_table(data)


if __name__ == "__main__":
    main()
