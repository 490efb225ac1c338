"""Fit the shared parameters of the NCCL time model on measured NCCL results.

Builds a `CollectiveShape` for every measured row from first principles (ceilings from
catalog link rates and efficiencies, never from the measurement), predicts each row with
the model, fits the `FITTED` parameters by a bounded coordinate search (numpy only) and
prints a table ``case | size | measured | predicted | error%`` before and after.  Nothing
is written unless ``--write`` is given; then the fitted values replace the ones in
``resources/solver/nccl_model.toml`` (comments and sources stay).

Usage::

    python benchmarks/calibrate_nccl.py            # fit, show before/after (~15 s)
    python benchmarks/calibrate_nccl.py --write    # ... and store the fitted values
    python benchmarks/calibrate_nccl.py --check    # only the table of the current values

Goals (issue 3): median |error| <= 5 % on sizes >= 1 GiB, <= 15 % over the whole A100
curve from 32 KiB.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from designer.model.catalog import default_catalog
from designer.solver.timing import (
    DEFAULT_PARAMS_PATH,
    FITTED,
    CollectiveShape,
    ModelParams,
    choose,
    load_params,
    nvls_bus_ceiling,
)

# The accuracy table's cases module beside this file (also when imported by path).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy_cases import _fmt_size, parse_size

REFERENCE = Path(__file__).resolve().parents[1] / "resources/reference/measured-allreduce.json"
GiB = 1 << 30

#: Search bounds of the fitted parameters (physical limits where there is one: LL
#: carries at most half the wire, LL128 at most 120/128 of it).
BOUNDS: dict[str, tuple[float, float]] = {
    "launch_eager_us": (0.0, 10.0),
    "ll_fraction": (0.05, 0.5),
    "ll128_fraction": (0.5, 120.0 / 128.0),
    "simple_efficiency": (0.8, 1.0),
    "nvls_efficiency": (0.5, 1.0),
    "nvls_step_us": (0.2, 15.0),
    "channel_GBps": (2.0, 80.0),
}

#: Published figures used when the catalog lacks a technology (GB/s per link per
#: direction, efficiency); the catalog wins when it has the entry.
_FALLBACK_TECH = {
    "nvlink3": (25.0, 0.80, "NCCL src/graph/topo.h: 20 GB/s per NVLink3 link"),
    "nvlink4": (25.0, 0.824, "NCCL src/graph/topo.h: 20.6 GB/s per NVLink4 link"),
    "nvlink5": (50.0, 0.802, "NCCL src/graph/topo.h: 40.1 GB/s per NVLink5 link"),
    "ib-hdr": (25.0, 0.96, "NVIDIA/nccl-tests#119, #290: ~24 GB/s effective per HDR NIC"),
    "ib-ndr": (50.0, 0.94, "NVIDIA/nccl-tests#119, #290: ~47 GB/s effective per NDR NIC"),
}


# --------------------------------------------------------------------------- ceilings


def link_rate(key: str, notes: list[str] | None = None) -> tuple[float, float]:
    """(GB/s per link per direction, efficiency) of a link technology, from the catalog."""
    cat = default_catalog()
    if key in cat.techs:
        tech = cat.tech(key)
        return tech.GBps, tech.efficiency
    gbps, eff, source = _FALLBACK_TECH[key]
    if notes is not None:
        notes.append(f"catalog has no tech {key!r}: using {gbps:g} GB/s x {eff:g} ({source})")
    return gbps, eff


def gpu_nvlink_GBps(device: str, notes: list[str] | None = None) -> float:
    """Per-GPU, per-direction effective NVLink rate: links x link rate x efficiency."""
    specs = default_catalog().device(device).specs
    gbps, eff = link_rate(f"nvlink{specs['nvlink_generation']}", notes)
    return specs["nvlink_links"] * gbps * eff


def chain_tree_bus_ceiling(per_gpu_GBps: float, n_ranks: int) -> float:
    """Bus ceiling of NCCL's intra-node tree (a chain) behind one NVSwitch plane.

    The reduction climbs the chain while the result comes back down, so each GPU's link
    carries ``2S`` per direction: algbw ``B/2``, busbw ``B (n-1)/n``.
    """
    return per_gpu_GBps * (n_ranks - 1) / n_ranks


def node_tree_bus_ceiling(node_net_GBps: float, n_ranks: int) -> float:
    """Bus ceiling of NCCL's double binary tree across nodes.

    Each node is inner in one tree and a leaf in the other, each tree carrying ``S/2``:
    ``2S`` per direction through the node's NICs, algbw ``N/2`` for node bandwidth ``N``.
    """
    return node_net_GBps / 2.0 * 2.0 * (n_ranks - 1) / n_ranks


# --------------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Point:
    """One measured figure and how to predict it."""

    case: str
    nbytes: int
    measured: float
    metric: str  # "busbw" (GB/s) or "time_us"
    shapes: tuple[CollectiveShape, ...]
    launch: str = "eager"
    gpus_per_thread: int = 1  # nccl-tests -g: GPUs one host thread launches
    validation: bool = False  # printed, never fitted


def _size_range(text: str) -> list[int]:
    lo, hi = (parse_size(t) for t in text.split("-"))
    out = [lo]
    while out[-1] < hi:
        out.append(out[-1] * 2)
    return out


def _intra(algo: str, n: int, ceiling: float) -> CollectiveShape:
    return CollectiveShape("allreduce", algo, n, 1, ceiling, nvlink_hops=1, net_hops=0)


def build_points(reference: dict, notes: list[str]) -> list[Point]:
    """The calibration rows of the reference file, as predictable points."""
    cases = {c["id"]: c for c in reference["cases"]}
    a100 = gpu_nvlink_GBps("A100", notes)
    h100 = gpu_nvlink_GBps("H100", notes)
    points: list[Point] = []

    c = cases["a100-8gpu-curve"]
    n = int(c["gpus"])
    auto = (_intra("ring", n, a100), _intra("tree", n, chain_tree_bus_ceiling(a100, n)))
    for size, busbw in c["curve_bytes_busbw"]:
        # `all_reduce_perf -g 8`: one thread drives the 8 GPUs, eager launches
        points.append(Point(c["id"], parse_size(size), float(busbw), "busbw", auto, "eager", n))

    c = cases["h100-8gpu-ring"]
    n = int(c["gpus"])
    for size in _size_range(c["bytes"]):
        ring = (_intra("ring", n, h100),)
        points.append(Point(c["id"], size, float(c["busbw"]), "busbw", ring, "eager", n))

    c = cases["h100-nvls-ramp"]
    for gpus, busbw in c["by_gpus"].items():
        n = int(gpus)
        nvls = (_intra("nvls", n, nvls_bus_ceiling(h100, n)),)
        for size in _size_range(c["bytes"]):
            points.append(Point(f"{c['id']}:{n}", size, float(busbw), "busbw", nvls, "eager", n))

    c = cases["dgx-a100-multinode-hdr"]
    nic_gbps, nic_eff = link_rate("ib-hdr", notes)
    node_net = 8 * nic_gbps * nic_eff  # 8 HDR NICs per DGX A100, one per GPU (rail-optimised)
    for nodes in (2, 4):
        n = 8 * nodes
        # same-rail traffic crosses one leaf; its latency is tiny next to a 4 GiB transfer
        kw = dict(nvlink_hops=1, net_hops=1, net_latency_us=0.3)
        # every rail busy at once: each ring channel leaves and enters each node through
        # its own NIC, so the ring's bus ceiling is the node's whole NIC bandwidth
        auto = (
            CollectiveShape("allreduce", "ring", n, nodes, node_net, **kw),
            CollectiveShape(
                "allreduce", "tree", n, nodes, node_tree_bus_ceiling(node_net, n), **kw
            ),
        )
        points.append(Point(f"{c['id']}:{n}", 4 * GiB, float(c["busbw"]), "busbw", auto))

    c = cases["h100-small-latency"]
    n = int(c["gpus"])
    # NCCL runs NVLS-tree only across nodes: on one node the row's "nvlstree" is NVLS
    shape = (_intra("nvls", n, nvls_bus_ceiling(h100, n)),)
    for size in _size_range(c["bytes"]):
        points.append(Point(c["id"], size, float(c["time_us"]), "time_us", shape, "graph", n))

    points.extend(_validation_points(notes))
    return points


def _validation_points(notes: list[str]) -> list[Point]:
    """Published figures outside the reference file: predicted, never fitted."""
    a100 = gpu_nvlink_GBps("A100", notes)
    h100 = gpu_nvlink_GBps("H100", notes)
    h800 = gpu_nvlink_GBps("H800", notes)
    out = []
    # NVIDIA/nccl#1455: ring busbw 365-370 GB/s for 2..8 H100 GPUs at 2-4 GiB
    for n in (2, 4, 6):
        out.append(
            Point(
                f"val:h100-ring:{n}",
                2 * GiB,
                367.0,
                "busbw",
                (_intra("ring", n, h100),),
                validation=True,
            )
        )
    # NVIDIA/nccl-tests#123: DGX A100, NCCL_ALGO=Ring, 8 bytes, eager `-g N` (one thread)
    for n, t_us in ((2, 10.0), (4, 16.88), (6, 25.2), (8, 33.7)):
        out.append(
            Point(
                f"val:a100-ring-8B:{n}",
                8,
                t_us,
                "time_us",
                (_intra("ring", n, a100),),
                "eager",
                n,
                validation=True,
            )
        )
    # NVIDIA/nccl#1374: 8x H800 (8 NVLinks per GPU) NVLS all-reduce ~215 GB/s busbw
    out.append(
        Point(
            "val:h800-nvls:8",
            4 * GiB,
            215.0,
            "busbw",
            (_intra("nvls", 8, nvls_bus_ceiling(h800, 8)),),
            validation=True,
        )
    )
    return out


# --------------------------------------------------------------------------- scoring


def predict_point(point: Point, params: ModelParams) -> float:
    """Model value of a point in its metric (busbw GB/s or time in us)."""
    best, preds = choose(
        list(point.shapes),
        point.nbytes,
        params,
        launch=point.launch,
        gpus_per_thread=point.gpus_per_thread,
    )
    pred = preds[int(best[0])]
    if point.metric == "time_us":
        return float(pred.time_s[0] * 1e6)
    return float(pred.busbw_GBps[0])


def errors(points: Sequence[Point], params: ModelParams) -> np.ndarray:
    """Signed relative error (predicted - measured) / measured of each point."""
    return np.array([predict_point(p, params) / p.measured - 1.0 for p in points])


def goal_medians(points: Sequence[Point], errs: np.ndarray) -> dict[str, float]:
    """Median |error| on the issue's two goals and per case (fitted rows only)."""
    fitted = [i for i, p in enumerate(points) if not p.validation]
    big = [i for i in fitted if points[i].metric == "busbw" and points[i].nbytes >= GiB]
    curve = [i for i in fitted if points[i].case == "a100-8gpu-curve"]
    out = {
        ">= 1 GiB": float(np.median(np.abs(errs[big]))),
        "a100 whole curve": float(np.median(np.abs(errs[curve]))),
    }
    for case in dict.fromkeys(p.case for p in points):
        idx = [i for i, p in enumerate(points) if p.case == case]
        out[case] = float(np.median(np.abs(errs[idx])))
    return out


def objective(points: Sequence[Point], params: ModelParams) -> float:
    """Mean |log(predicted / measured)|, each case weighing as much as any other."""
    by_case: dict[str, list[float]] = {}
    for p in points:
        if p.validation:
            continue
        by_case.setdefault(p.case.split(":")[0], []).append(
            abs(math.log(predict_point(p, params) / p.measured))
        )
    return float(np.mean([np.mean(v) for v in by_case.values()]))


def fit(points: Sequence[Point], params: ModelParams, sweeps: int = 6) -> ModelParams:
    """Bounded coordinate search over the `FITTED` parameters (grid, then narrower)."""
    best = objective(points, params)
    span = 1.0
    for _ in range(sweeps):
        for name in FITTED:
            lo, hi = BOUNDS[name]
            cur = getattr(params, name)
            half = span * (hi - lo) / 2.0
            for value in np.linspace(max(lo, cur - half), min(hi, cur + half), 25):
                trial = dataclasses.replace(params, **{name: float(value)})
                score = objective(points, trial)
                if score < best - 1e-12:
                    best, params = score, trial
        span *= 0.4
    return params


# --------------------------------------------------------------------------- output


def print_table(points: Sequence[Point], params: ModelParams, title: str) -> np.ndarray:
    errs = errors(points, params)
    print(f"\n== {title}")
    print(f"{'case':28s} | {'size':>6s} | {'measured':>9s} | {'predicted':>9s} | {'error%':>7s}")
    for p, e in zip(points, errs, strict=True):
        unit = "us" if p.metric == "time_us" else ""
        print(
            f"{p.case:28s} | {_fmt_size(p.nbytes):>6s} | {p.measured:8.2f}{unit:1s} | "
            f"{predict_point(p, params):8.2f}{unit:1s} | {100 * e:+7.1f}"
        )
    print("median |error|:")
    for key, value in goal_medians(points, errs).items():
        print(f"  {key:28s} {100 * value:5.1f} %")
    return errs


def write_params(path: Path, params: ModelParams) -> None:
    """Replace the fitted values in the TOML text, keeping every comment and source."""
    text = path.read_text(encoding="utf-8")
    for name, (table, key) in FITTED.items():
        header = re.escape("[" + ".".join(table) + "]")
        pattern = re.compile(
            rf"(^{header}[ \t]*\n(?:(?!\[).*\n)*?{re.escape(key)}[ \t]*=[ \t]*)"
            r"[-+0-9.eE]+",
            re.MULTILINE,
        )
        value = f"{getattr(params, name):.4g}"
        text, count = pattern.subn(lambda m, v=value: m.group(1) + v, text, count=1)
        if count != 1:
            raise SystemExit(f"{path}: cannot find {key!r} in [{'.'.join(table)}]")
    path.write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", type=Path, default=REFERENCE, help="measured json")
    ap.add_argument("--params", type=Path, default=DEFAULT_PARAMS_PATH, help="model TOML")
    ap.add_argument("--check", action="store_true", help="no fit: current table only")
    ap.add_argument("--write", action="store_true", help="store fitted values in --params")
    args = ap.parse_args(argv)

    reference = json.loads(args.reference.read_text(encoding="utf-8"))
    notes: list[str] = []
    points = build_points(reference, notes)
    for note in dict.fromkeys(notes):
        print("note:", note)
    params = load_params(args.params)
    print_table(points, params, f"current parameters ({args.params.name})")
    if args.check:
        return 0
    fitted = fit(points, params)
    print_table(points, fitted, "fitted parameters")
    print("\nfitted values:")
    for name in FITTED:
        print(f"  {name:18s} {getattr(params, name):9.4g} -> {getattr(fitted, name):9.4g}")
    if args.write:
        write_params(args.params, fitted)
        print(f"wrote {args.params}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
