"""The cases of the accuracy table (`accuracy.py`): each measured figure of
``resources/reference/measured-allreduce.json`` as a design built from a template and the
``fabric-designer solve`` options that reproduce its measurement.  Split from
``accuracy.py``.

How each reference row maps to a design and a solve (the nccl-tests command behind it):

* ``a100-8gpu-curve``: ``hgx gpu=A100``, auto, 32 KiB..16 GiB, ``--gpus-per-thread 8``
  (measured with ``all_reduce_perf -g 8``: one thread launches the 8 kernels).
* ``h100-8gpu-ring``: ``hgx gpu=H100``, ``--ranks 8 --algorithm ring``, 2..4 GiB.
* ``h100-nvls-ramp``: ``hgx gpu=H100``, ``--ranks N --algorithm nvls`` for N = 5..8.
* ``dgx-a100-multinode-hdr``: ``rail-cluster gpu=A100 nic_gbps=200 fabric=infiniband``,
  2 and 4 nodes (16 and 32 GPUs), 4 GiB ("large"), ring when the row's ``algo`` says so
  (NVIDIA's scale-out figure; on two nodes NCCL's auto runs a tree, which exceeds it).
* ``per-nic-effective``: a 2-node ``rail-cluster`` with one GPU and one NIC per node,
  ``--collective sendrecv`` at 4 GiB; its busbw is the NIC's effective rate.  Generation
  names (NDR, HDR...) mean InfiniBand; a bare rate tries InfiniBand, then RoCE.
* ``h100-small-latency``: ``hgx gpu=H100``, ``--ranks 2 --launch graph --algorithm nvls``
  (the row's ``nvlstree``), 128 B..64 KiB, time in microseconds.
* ``single-node-ring-rule``: the note's "GPU busbw/link-rate" pairs (A100 235/300,
  H100/H200 367/450) as forced-ring 4 GiB rows on ``hgx gpu=...``.
* Rows that name their own design (``template``, ``params``, ``options``, as in
  ``resources/reference/unseen-blackwell.json`` and ``unseen-new-hardware.json``): that
  design and those options, at ``bytes`` (``busbw``) or along ``curve_bytes_busbw``
  (``mi300x-8gpu-rccl``: ``hgx gpu=MI300X``, auto, the ROCm blog's rccl-tests curve;
  ``gb200-nvl72-20rack``: ``nvl72 racks=20``, auto, CoreWeave's 1,440-rank run).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

GiB = 1 << 30
LARGE = 4 * GiB  # the size used for rows that only say "large" or give no size


@dataclass(frozen=True)
class Design:
    """A template and its ``--set`` parameters, as given to ``fabric-designer new``."""

    template: str
    params: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        sets = " ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.template} {sets}".strip()

    @property
    def filename(self) -> str:
        stem = re.sub(r"[^A-Za-z0-9]+", "_", self.label).strip("_")
        return f"{stem}.fabric.json"


def design(template: str, **params: object) -> Design:
    """``design("hgx", gpu="A100")`` -> Design("hgx", (("gpu", "A100"),))."""
    return Design(template, tuple((k, str(v)) for k, v in params.items()))


@dataclass(frozen=True)
class Case:
    """One solve and the measured figures it must reproduce.

    ``designs`` are alternatives tried in order; the first the CLI can build is used
    (e.g. a 100 Gb/s NIC on InfiniBand, else on RoCE).  ``measured`` pairs a message
    size in bytes with a busbw (GB/s) or a time (us), as ``metric`` says.
    """

    case: str
    row: str
    designs: tuple[Design, ...]
    options: tuple[str, ...]
    measured: tuple[tuple[int, float], ...]
    metric: str = "busbw"  # "busbw" (GB/s) or "time_us"


def parse_size(text: str) -> int:
    """``"32KiB"`` -> 32768; ``"128B"`` -> 128."""
    m = re.fullmatch(r"\s*(\d+)\s*(B|KiB|MiB|GiB)\s*", text)
    if not m:
        raise ValueError(f"unreadable size {text!r}")
    return int(m.group(1)) << {"B": 0, "KiB": 10, "MiB": 20, "GiB": 30}[m.group(2)]


def size_range(text: str) -> list[int]:
    """``"2GiB-4GiB"`` -> [2 GiB, 4 GiB] (powers of two); ``"large"`` -> [LARGE]."""
    if "-" not in text:
        return [LARGE] if text.strip() == "large" else [parse_size(text)]
    lo, hi = (parse_size(t) for t in text.split("-"))
    out = [lo]
    while out[-1] < hi:
        out.append(out[-1] * 2)
    return out


def _fmt_size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def _curve(c: dict) -> list[Case]:
    n = int(c["gpus"])
    pts = tuple((parse_size(s), float(v)) for s, v in c["curve_bytes_busbw"])
    # `all_reduce_perf -g 8`: one thread launches all 8 kernels (eager launch cost x 8)
    opts = ("--gpus-per-thread", str(n))
    return [Case(c["id"], c["id"], (design("hgx", gpu="A100"),), opts, pts)]


def _h100_ring(c: dict) -> list[Case]:
    n = int(c["gpus"])
    pts = tuple((s, float(c["busbw"])) for s in size_range(c["bytes"]))
    opts = ("--ranks", str(n), "--algorithm", "ring", "--gpus-per-thread", str(n))
    return [Case(c["id"], c["id"], (design("hgx", gpu="H100"),), opts, pts)]


def _nvls_ramp(c: dict) -> list[Case]:
    out = []
    for gpus, busbw in c["by_gpus"].items():
        n = int(gpus)
        pts = tuple((s, float(busbw)) for s in size_range(c["bytes"]))
        opts = ("--ranks", str(n), "--algorithm", "nvls", "--gpus-per-thread", str(n))
        out.append(Case(f"{c['id']}:{n}", c["id"], (design("hgx", gpu="H100"),), opts, pts))
    return out


def _multinode(c: dict) -> list[Case]:
    out = []
    for nodes in (2, 4):  # 16 and 32 GPUs ("16+")
        d = design("rail-cluster", nodes=nodes, gpu="A100", nic_gbps=200, fabric="infiniband")
        pts = tuple((s, float(c["busbw"])) for s in size_range(c["bytes"]))
        # NVIDIA's scale-out ring figure (see the row's "algo"): forced ring, as measured
        opts = ("--algorithm", "ring") if c.get("algo", "").startswith("ring") else ()
        out.append(Case(f"{c['id']}:{8 * nodes}", c["id"], (d,), opts, pts))
    return out


#: InfiniBand generation names and their per-port rates (IBTA).
_IB_GENERATIONS = {"EDR": 100, "HDR": 200, "NDR": 400, "XDR": 800}


def _per_nic(c: dict) -> list[Case]:
    out = []
    for name, rate in c["effective_GBps_per_nic"].items():
        m = re.search(r"(\d+)\s*G", name)
        gen = next((g for g in _IB_GENERATIONS if g in name.upper()), None)
        gbps = int(m.group(1)) if m else _IB_GENERATIONS.get(gen or "", 0)
        fabrics = ("infiniband",) if gen else ("infiniband", "roce")
        # H100 hosts: PCIe Gen5 x16 behind the NIC.  An A100's Gen4 x16 (~27 GB/s
        # effective) would cap an NDR NIC below the 47 GB/s GPUDirect measurement.
        designs = tuple(
            design("rail-cluster", nodes=2, gpus_per_node=1, gpu="H100", nic_gbps=gbps, fabric=f)
            for f in fabrics
        )
        opts = ("--collective", "sendrecv")
        tag = name.replace(" ", "-")
        out.append(Case(f"{c['id']}:{tag}", c["id"], designs, opts, ((LARGE, float(rate)),)))
    return out


def _small_latency(c: dict) -> list[Case]:
    n = int(c["gpus"])
    algo = {"nvlstree": "nvls"}.get(c["algo"], c["algo"])  # NVLS-tree is NVLS in one node
    pts = tuple((s, float(c["time_us"])) for s in size_range(c["bytes"]))
    opts = (
        "--ranks",
        str(n),
        "--launch",
        "graph",
        "--algorithm",
        algo,
        "--gpus-per-thread",
        str(n),
    )
    return [Case(c["id"], c["id"], (design("hgx", gpu="H100"),), opts, pts, "time_us")]


def _ring_rule(c: dict) -> list[Case]:
    # "A100 235/300, H100/H200 367/450": measured ring busbw / per-GPU NVLink rate
    out = []
    for gpus, busbw, _rate in re.findall(r"\b([A-Z]\d+(?:/[A-Z]\d+)*) (\d+)/(\d+)", c["note"]):
        for gpu in gpus.split("/"):
            pts = ((LARGE, float(busbw)),)
            opts = ("--algorithm", "ring")
            out.append(Case(f"{c['id']}:{gpu}", c["id"], (design("hgx", gpu=gpu),), opts, pts))
    return out


def _explicit(c: dict) -> list[Case]:
    """A row that names its design and solve options (see resources/reference/)."""
    d = design(c["template"], **c.get("params", {}))
    if "curve_bytes_busbw" in c:
        pts = tuple((parse_size(s), float(v)) for s, v in c["curve_bytes_busbw"])
    else:
        pts = tuple((s, float(c["busbw"])) for s in size_range(c["bytes"]))
    return [Case(c["id"], c["id"], (d,), tuple(c.get("options", ())), pts)]


#: Reference row id -> its cases.  A row not listed here is reported, never dropped.
ROW_BUILDERS: dict[str, Callable[[dict], list[Case]]] = {
    "a100-8gpu-curve": _curve,
    "h100-8gpu-ring": _h100_ring,
    "h100-nvls-ramp": _nvls_ramp,
    "dgx-a100-multinode-hdr": _multinode,
    "per-nic-effective": _per_nic,
    "h100-small-latency": _small_latency,
    "single-node-ring-rule": _ring_rule,
}

_FIGURE_KEYS = ("curve_bytes_busbw", "busbw", "by_gpus", "effective_GBps_per_nic", "time_us")


def build_cases(reference: dict) -> tuple[list[Case], list[tuple[str, str]]]:
    """The cases of every reference row with a measurable figure.

    Returns
    -------
    cases : list of Case
    unmapped : list of (row id, reason)
        Rows that carry a figure but have no mapping here (so a new row is noticed).

    Examples
    --------
    >>> ref = {"cases": [{"id": "h100-8gpu-ring", "gpus": 8, "bytes": "2GiB-4GiB",
    ...                   "busbw": 367}]}
    >>> cases, unmapped = build_cases(ref)
    >>> [(c.case, len(c.measured)) for c in cases], unmapped
    ([('h100-8gpu-ring', 2)], [])
    """
    cases: list[Case] = []
    unmapped: list[tuple[str, str]] = []
    for row in reference["cases"]:
        builder = ROW_BUILDERS.get(row["id"], _explicit if "template" in row else None)
        if builder is not None:
            built = builder(row)
            if not built:
                unmapped.append((row["id"], "no measurable figure could be read from the row"))
            cases.extend(built)
        elif any(k in row for k in _FIGURE_KEYS):
            unmapped.append((row["id"], "no template/solve mapping for this row yet"))
    return cases, unmapped
