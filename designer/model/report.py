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

from collections.abc import Callable, Iterator
from typing import Any

import networkx as nx

from designer.model.bisection import worst_bisection
from designer.model.catalog import NODE_KINDS
from designer.model.naming import natural_key
from designer.model.topology import Topology

#: Switch tiers whose oversubscription is reported, bottom up, with their rank.
TIERS: dict[str, int] = {"leaf": 1, "spine": 2, "core": 3}

#: Node kinds that make up an NVLink (scale-up) domain.
NVLINK_KINDS: frozenset[str] = frozenset({"gpu", "nvswitch", "nvlink-switch-tray"})


# --------------------------------------------------------------------------- info


def info(topology: Topology) -> dict[str, Any]:
    """Summarise a design.

    Parameters
    ----------
    topology : Topology
        The design.

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
    design = _Design(topology)
    counts: dict[str, int] = dict.fromkeys(NODE_KINDS, 0)
    for d in design.nodes.values():
        counts[d["kind"]] += 1
    counts["links"] = len(design.edges)
    counts["cables"] = sum(d["count"] for _, _, d in design.edges)
    domains = _nvlink_domains(design)
    split = worst_bisection(design)
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
        "oversubscription": _oversubscription(design),
        "bisection_GBps": split["GBps"],
        "bisection_per_gpu_GBps": split["per_gpu_GBps"],
        "bisection_split": {k: v for k, v in split.items() if k not in ("GBps", "per_gpu_GBps")},
    }


class _Design:
    """A design read once into plain dicts: the figures below loop over the links several
    times, and going through networkx views each time costs seconds on a SuperPOD."""

    def __init__(self, topology: Topology):
        self.techs = topology.catalog.techs
        self.nodes: dict[str, dict] = dict(topology.graph.nodes(data=True))
        # A comprehension, not list(): list() first asks the view for its length, which
        # walks every edge once more.
        self.edges: list[tuple[str, str, dict]] = [e for e in topology.graph.edges(data=True)]

    def bundle_GBps(self, data: dict) -> float:
        """Per-direction bandwidth of a link bundle, GB/s."""
        return data["count"] * self.techs[data["tech"]].gbps / 8.0

    def family(self, data: dict) -> str:
        """Link family of a link bundle (``nvlink``, ``pcie``...)."""
        return self.techs[data["tech"]].family

    def live_edges(self, plane: str | None = None) -> Iterator[tuple[str, str, dict]]:
        """``(a, b, data)`` of working links between working nodes; only links of
        ``plane`` (and not at a management-plane node) if given."""
        nodes = self.nodes
        for a, b, d in self.edges:
            na, nb = nodes[a], nodes[b]
            if d["failed"] or na["failed"] or nb["failed"]:
                continue
            if plane is not None and (
                d["plane"] != plane or na["plane"] == "management" or nb["plane"] == "management"
            ):
                continue
            yield a, b, d


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
    return _nvlink_domains(_Design(topology))


def _nvlink_domains(design: _Design) -> list[int]:
    nodes = design.nodes
    g = nx.Graph()
    g.add_nodes_from(n for n, d in nodes.items() if d["kind"] == "gpu" and not d["failed"])
    g.add_edges_from(
        (a, b)
        for a, b, d in design.live_edges()
        if design.techs[d["tech"]].family == "nvlink"
        and nodes[a]["kind"] in NVLINK_KINDS
        and nodes[b]["kind"] in NVLINK_KINDS
    )
    sizes = []
    for part in nx.connected_components(g):
        n_gpus = sum(1 for n in part if nodes[n]["kind"] == "gpu")
        if n_gpus:
            sizes.append(n_gpus)
    return sorted(sizes, reverse=True)


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
    return _oversubscription(_Design(topology), plane)


def _oversubscription(design: _Design, plane: str = "compute") -> dict[str, dict[str, Any]]:
    nodes = design.nodes
    down: dict[str, float] = {}
    up: dict[str, float] = {}
    for n, d in nodes.items():
        if d["kind"] in TIERS and not d["failed"] and d["plane"] == plane:
            down[n] = up[n] = 0.0
    for a, b, d in design.live_edges(plane):
        ra, rb = TIERS.get(nodes[a]["kind"], 0), TIERS.get(nodes[b]["kind"], 0)
        if ra == rb:
            continue
        bw = design.bundle_GBps(d)
        low, high = (a, b) if ra < rb else (b, a)
        if ra and rb:
            up[low] = up.get(low, 0.0) + bw
            down.setdefault(low, 0.0)
        down[high] = down.get(high, 0.0) + bw
        up.setdefault(high, 0.0)
    out: dict[str, dict[str, Any]] = {}
    for tier in TIERS:
        members = [n for n in down if nodes[n]["kind"] == tier]
        d_sum = sum(down[n] for n in members)
        u_sum = sum(up[n] for n in members)
        ratios = [(down[n] / up[n], n) for n in members if up[n] > 0]
        worst = None
        if ratios:
            top = max(r for r, _ in ratios)
            worst = (top, min((n for r, n in ratios if r == top), key=natural_key))
        out[tier] = {
            "switches": len(members),
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
    return worst_bisection(_Design(topology), flow_func, reduce, plane)


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
