"""What tells busbw curves apart: the labels of the current curve and the baselines.

A label names the design, its scale-out technology and speed, routing and algorithm,
and the nodes and links that failed in it, so that two curves of one design, say before
and after a what-if failure, never read the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from designer.model.catalog import FAMILIES
from designer.solver import NVLINK, PCIE

__all__ = ["describe", "failures_text", "scale_out_name"]

MAX_LABEL = 48
#: Failed elements a label names before it only counts them.
MAX_FAILED_NAMED = 2
# InfiniBand generations by per-port speed (Gb/s), as architects name them.
_IB_GENERATIONS = {100: "EDR", 200: "HDR", 400: "NDR", 800: "XDR", 1600: "GDR"}


def scale_out_name(result) -> str:
    """The scale-out technology and speed most GPUs reach the fabric with: their NIC's
    fastest compute-fabric link, e.g. ``infiniband NDR 400G``, ``RoCE 400G`` (lossless
    Ethernet), ``ethernet 400G``; ``nvlink only`` without NICs on the fabric."""
    snap = result.snapshot
    compute = np.repeat(snap.compute_links(), 2)
    net = compute & (snap.arc_family != NVLINK) & (snap.arc_family != PCIE)
    nics = snap.gpu_nic[snap.gpu_nic >= 0].astype(np.int64)
    if nics.size == 0 or not net.any():
        return "nvlink only"
    # Each NIC's fastest fabric arc (line rate, Gb/s) and its family.
    arcs = np.flatnonzero(net & np.isin(snap.arc_src, nics))
    if arcs.size == 0:
        return "nvlink only"
    order = arcs[np.lexsort((snap.arc_line[arcs], snap.arc_src[arcs]))]
    last = np.r_[snap.arc_src[order][1:] != snap.arc_src[order][:-1], True]
    best = np.full(snap.n_nodes, -1, dtype=np.int64)
    best[snap.arc_src[order[last]]] = order[last]
    per_gpu = best[nics]
    per_gpu = per_gpu[per_gpu >= 0]
    gbps = np.rint(snap.arc_line[per_gpu] * 8).astype(np.int64)
    keys, counts = np.unique(
        snap.arc_family[per_gpu].astype(np.int64) * 10**6 + gbps, return_counts=True
    )
    key = int(keys[np.argmax(counts)])
    family, speed = FAMILIES[key // 10**6], key % 10**6
    if family == "infiniband":
        gen = _IB_GENERATIONS.get(speed)
        return f"infiniband {gen} {speed}G" if gen else f"infiniband {speed}G"
    if family == "ethernet" and snap.net_lossless:
        return f"RoCE {speed}G"
    return f"{family} {speed}G"


def failures_text(failed: Sequence[str]) -> str:
    """The failed elements of a design as a label names them: every id up to
    `MAX_FAILED_NAMED`, then how many more.

    >>> failures_text(["n01-gpu0:n01-nvs0"])
    'failed n01-gpu0:n01-nvs0'
    >>> failures_text(["a", "b", "c", "d"])
    'failed a, b +2 more'
    """
    named = ", ".join(failed[:MAX_FAILED_NAMED])
    more = len(failed) - MAX_FAILED_NAMED
    return f"failed {named}" + (f" +{more} more" if more > 0 else "")


def describe(result, design: str) -> str:
    """What tells two busbw curves apart: ``design · technology · routing · algorithm``,
    the design being its file name without ``.fabric.json``; an algorithm that the
    tuner picked (at the scenario's size) is marked ``(auto)``; the design's failed
    nodes and links follow (`failures_text`), so a what-if failure and its restore read
    differently.

    The result is an `AnalysisResult`.
    """
    design = design.removesuffix(".fabric.json")
    if len(design) > MAX_LABEL:
        design = design[: MAX_LABEL - 1] + "…"
    algorithm = result.scenario.algorithm
    if algorithm == "auto":
        algorithm = f"{result.focus.algorithm_by_size[0]} (auto)"
    text = f"{design} · {scale_out_name(result)} · {result.snapshot.routing} · {algorithm}"
    failed = getattr(result, "failed", ())
    return f"{text} · {failures_text(failed)}" if failed else text
