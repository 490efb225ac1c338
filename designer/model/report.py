"""Design summary: counts, NVLink domains, oversubscription per tier, bisection bandwidth.

`info` returns a plain, JSON-serialisable dict (the CLI prints it with `format_info` or as
JSON; the GUI shows it in a panel).  What counts as what:

- ``counts`` describe what is built, failed parts included.
- Every performance figure (NVLink domains, oversubscription, bisection) uses only
  working parts: failed nodes and links are left out, so a what-if failure shows up.
- Oversubscription and bisection are figures of the compute fabric: only compute-plane
  links count (storage, front-end and management networks do not carry collectives).

Bandwidths are GB/s per direction (10^9 bytes/s): a bundle of ``count`` links of a
technology with rate ``gbps`` carries ``count * gbps / 8`` GB/s each way.

Example
-------
>>> from designer.model.topology import Topology, Node
>>> t = Topology(name="empty")
>>> info(t)["gpus"]
0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from designer.model.bisection import CUTS, worst_bisection
from designer.model.catalog import NODE_KINDS
from designer.model.design_arrays import DesignArrays, components
from designer.model.naming import natural_key
from designer.model.topology import Topology

#: Switch tiers whose oversubscription is reported, bottom up, with their rank.
TIERS: dict[str, int] = {"leaf": 1, "spine": 2, "core": 3}

#: Node kinds that make up an NVLink (scale-up) domain.
NVLINK_KINDS: frozenset[str] = frozenset({"gpu", "nvswitch", "nvlink-switch-tray"})


# --------------------------------------------------------------------------- info


def info(
    topology: Topology, progress: Callable[[str, int, int], Any] | None = None
) -> dict[str, Any]:
    """Summarise a design.

    Parameters
    ----------
    topology : Topology
        The design.
    progress : callable, optional
        ``progress("summarising", done, total)`` after each step (a long summary's
        percentage, for a caller that shows it).

    Returns
    -------
    dict
        JSON-serialisable, with keys ``name``; ``counts`` (nodes per kind, every kind
        of `NODE_KINDS` present, plus ``links`` = bundles and ``cables`` = physical
        links); ``gpus``; ``nvlink_domains`` (GPUs per NVLink domain, largest first; a GPU
        with no NVLink is a domain of one) and ``nvlink_summary`` (``domains``,
        ``largest``, ``smallest``); ``oversubscription`` (per tier of `TIERS`: ``switches``,
        ``down_GBps``, ``up_GBps``, ``ratio`` = down / up over the tier, ``worst`` and
        ``worst_switch`` = the highest single-switch ratio, ``ratio`` None without
        uplinks); ``bisection_GBps``, ``bisection_per_gpu_GBps`` (per GPU of the first
        half) and ``bisection_split`` (see `bisection`).

    Examples
    --------
    >>> from designer.model.topology import Topology, Node, Link
    >>> t = Topology(name="pair")
    >>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0"))
    >>> _ = t.add_node(Node("g1", "gpu", "H100", "GPU 1"))
    >>> _ = t.add_link(Link("l0", "g0", "g1", "nvlink4", count=18))
    >>> d = info(t)
    >>> d["nvlink_domains"], d["bisection_GBps"]
    ([2], 450.0)
    """
    steps = 3 + len(CUTS)  # arrays, domains, oversubscription, each cut

    def step(done: int) -> None:
        if progress is not None:
            progress("summarising", min(done, steps), steps)

    step(0)
    design = DesignArrays(topology)
    step(1)
    counts: dict[str, int] = dict.fromkeys(NODE_KINDS, 0)
    for kind, n in design.kind_counts().items():
        counts[kind] += n
    counts["links"] = len(design.a)
    counts["cables"] = int(design.count.sum())
    domains = _nvlink_domains(design)
    step(2)
    over = _oversubscription(design)
    step(3)
    split = worst_bisection(design, cut_done=lambda k: step(3 + k))
    step(steps)
    return {
        "name": topology.name,
        "counts": counts,
        "gpus": counts["gpu"],
        "nvlink_domains": domains,
        "nvlink_summary": {
            "domains": len(domains),
            "largest": domains[0] if domains else 0,
            "smallest": domains[-1] if domains else 0,
        },
        "oversubscription": over,
        "bisection_GBps": split["GBps"],
        "bisection_per_gpu_GBps": split["per_gpu_GBps"],
        "bisection_split": {k: v for k, v in split.items() if k not in ("GBps", "per_gpu_GBps")},
    }


def nvlink_domains(topology: Topology) -> list[int]:
    """GPUs per NVLink domain, largest first.

    A domain is a connected component over working NVLink-family links among GPUs,
    NVSwitches and NVLink switch trays; a working GPU without NVLink is a domain of one.
    Failed GPUs belong to no domain.

    Examples
    --------
    >>> from designer.model.topology import Topology, Node
    >>> t = Topology()
    >>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0"))
    >>> nvlink_domains(t)
    [1]
    """
    return _nvlink_domains(DesignArrays(topology))


def _nvlink_domains(design: DesignArrays) -> list[int]:
    a, b = design.a, design.b
    in_domain = design.is_kind(*NVLINK_KINDS)
    use = design.live() & (design.family == "nvlink") & in_domain[a] & in_domain[b]
    labels = components(len(design), a[use], b[use])
    gpus = (design.kind == "gpu") & ~design.node_failed
    sizes = np.bincount(labels[gpus], minlength=len(design))
    return sorted(sizes[sizes > 0].tolist(), reverse=True)


def oversubscription(topology: Topology, plane: str = "compute") -> dict[str, dict[str, Any]]:
    """Downlink over uplink bandwidth per switch tier (leaf, spine, core) of one plane.

    Only working links of ``plane`` count, and only switches placed in that plane or with
    such links (the compute fabric by default: a storage or front-end network on its own
    leaves is not part of it).  For a switch of tier *t*, links to nodes of a higher tier
    are uplinks and links to nodes that are not of a higher or equal tier (GPUs, NICs,
    hosts, lower switches) are downlinks; links within the tier count as neither.  A
    tier's ``ratio`` is its summed downlink over summed uplink bandwidth (None when it has
    no uplinks, as the top tier); ``worst`` is the highest ratio of a single switch with
    uplinks.  2.0 means 2:1.

    Examples
    --------
    >>> from designer.model.topology import Topology
    >>> oversubscription(Topology())["leaf"]["ratio"] is None
    True
    """
    return _oversubscription(DesignArrays(topology), plane)


def _oversubscription(design: DesignArrays, plane: str = "compute") -> dict[str, dict[str, Any]]:
    n = len(design)
    rank = np.zeros(n, dtype=np.int64)
    for tier, r in TIERS.items():
        rank[design.kind == tier] = r
    # The switches that count: working tier switches of the plane, and any node a link
    # of the plane reaches as its upper end (or as a lower end that is a switch).
    member = (rank > 0) & ~design.node_failed & (design.node_plane == plane)
    live = design.live(plane)
    a, b, bw = design.a[live], design.b[live], design.gbps[live]
    ra, rb = rank[a], rank[b]
    keep = ra != rb
    a, b, bw, ra, rb = a[keep], b[keep], bw[keep], ra[keep], rb[keep]
    low = np.where(ra < rb, a, b)
    high = np.where(ra < rb, b, a)
    both = (ra > 0) & (rb > 0)
    up = np.bincount(low[both], weights=bw[both], minlength=n)
    down = np.bincount(high, weights=bw, minlength=n)
    member[high] = True
    member[low[both]] = True
    out: dict[str, dict[str, Any]] = {}
    for tier in TIERS:
        rows = np.flatnonzero(member & (design.kind == tier))
        # (An empty tier sums to the integer 0, as Python's sum says it.)
        d_sum = float(down[rows].sum()) if len(rows) else 0
        u_sum = float(up[rows].sum()) if len(rows) else 0
        with_up = rows[up[rows] > 0]
        worst = None
        if len(with_up):
            ratios = down[with_up] / up[with_up]
            top = float(ratios.max())
            tied = [design.ids[i] for i in with_up[ratios == top]]
            worst = (top, min(tied, key=natural_key))
        out[tier] = {
            "switches": len(rows),
            "down_GBps": round(d_sum, 6),
            "up_GBps": round(u_sum, 6),
            "ratio": round(d_sum / u_sum, 6) if u_sum > 0 else None,
            "worst": round(worst[0], 6) if worst else None,
            "worst_switch": worst[1] if worst else None,
        }
    return out


# --------------------------------------------------------------------------- bisection


def bisection(
    topology: Topology,
    flow_func: Callable | None = None,
    reduce: bool = True,
    plane: str = "compute",
) -> dict[str, Any]:
    """Bisection bandwidth: the worst of the balanced cuts of `bisection.CUTS`.

    Each candidate cut splits the working GPUs into two halves as evenly as its
    granularity allows (whole servers, or GPUs by edge switch); its bandwidth is the max
    flow from one half to the other, every working link bundle of ``plane`` being an
    undirected edge of capacity ``count * gbps / 8`` GB/s each way (a super source
    feeds half A, a super sink drains half B).  A server split by a cut does not count
    its own NVLink and host PCIe links across it.  The worst cut, per GPU of the smaller
    half, is reported: see `designer.model.bisection` for the method and its limits.

    Parameters
    ----------
    topology : Topology
        The design.
    flow_func : callable, optional
        A networkx max-flow function (``nx.algorithms.flow.boykov_kolmogorov``...); the
        networkx default (preflow-push) if None.
    reduce : bool
        Shrink the network first with the exact reductions of
        `bisection.reduce_network` (same answer, faster on big designs).
    plane : str
        The network whose links count: the compute fabric by default (storage and
        front-end networks do not carry the collectives).

    Returns
    -------
    dict
        ``GBps`` (None with fewer than two GPUs), ``per_gpu_GBps`` (per GPU of the
        smaller half), ``cut`` and ``method`` (which cut is the worst), ``a`` and ``b``
        (each ``count``, ``first``, ``last`` GPU id) and ``candidates`` (every cut
        tried, with its figures).

    Examples
    --------
    >>> from designer.model.topology import Topology, Node, Link
    >>> t = Topology()
    >>> for i in range(3):
    ...     _ = t.add_node(Node(f"g{i}", "gpu", "H100", f"GPU {i}"))
    >>> _ = t.add_link(Link("l0", "g0", "g1", "nvlink4", count=2))
    >>> _ = t.add_link(Link("l1", "g1", "g2", "nvlink4", count=4))
    >>> bisection(t)["GBps"]   # A = {g0}, B = {g1, g2}: 2 x 25 GB/s
    50.0
    """
    return worst_bisection(DesignArrays(topology), flow_func, reduce, plane)


# --------------------------------------------------------------------------- text


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def format_info(data: dict[str, Any]) -> str:
    """A short human-readable text table of an `info` dict (for the CLI).

    Examples
    --------
    >>> from designer.model.topology import Topology
    >>> print(format_info(info(Topology(name="empty"))).splitlines()[0])
    Design: empty
    """
    counts = data["counts"]
    lines = [f"Design: {data['name']}"]
    kinds = ", ".join(f"{k} {counts[k]:,}" for k in NODE_KINDS if counts.get(k))
    lines.append(f"Nodes: {kinds or 'none'}")
    lines.append(f"Links: {counts['links']:,} bundles, {counts['cables']:,} cables")
    summary = data["nvlink_summary"]
    lines.append(
        f"GPUs: {data['gpus']:,} in {summary['domains']:,} NVLink domain(s), "
        f"largest {summary['largest']:,}"
    )
    tiers = [(t, v) for t, v in data["oversubscription"].items() if v["switches"]]
    if tiers:
        lines.append("Oversubscription (downlink : uplink bandwidth, GB/s):")
        lines.append(
            f"  {'tier':<6}{'switches':>9}{'down':>13}{'up':>13}{'ratio':>8}"
            f"{'worst':>8}  worst switch"
        )
        for tier, v in tiers:
            ratio = "-" if v["ratio"] is None else f"{v['ratio']:.2f}"
            worst = "-" if v["worst"] is None else f"{v['worst']:.2f}"
            lines.append(
                f"  {tier:<6}{v['switches']:>9,}{_num(v['down_GBps']):>13}"
                f"{_num(v['up_GBps']):>13}{ratio:>8}{worst:>8}  "
                f"{v['worst_switch'] or '-'}"
            )
    if data["bisection_GBps"] is None:
        lines.append("Bisection: - (fewer than two working GPUs)")
    else:
        split = data["bisection_split"]
        a, b = split["a"], split["b"]
        lines.append(
            f"Bisection: {_num(data['bisection_GBps'])} GB/s "
            f"({_num(data['bisection_per_gpu_GBps'])} GB/s per GPU of the smaller half), "
            f"worst of {len(split['candidates'])} balanced cut(s): {split['method']}; "
            f"{a['count']:,} GPUs {a['first']}..{a['last']} vs "
            f"{b['count']:,} GPUs {b['first']}..{b['last']}"
        )
    return "\n".join(lines)
