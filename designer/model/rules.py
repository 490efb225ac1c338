"""Design rules: what is wrong (errors) or doubtful (warnings) in a design.

`validate` checks a `Topology` and returns `Finding` values, errors first.  Each finding
names the node or link it is about and says why in one line, so the CLI can print it as
is and the GUI can select its subject.

Codes and severities
--------------------
``port-budget`` (error)
    A device has more links of a port family than it has ports.
``incompatible-tech`` (error)
    No port group of an end accepts the link's technology (wrong family, or an NVLink
    generation the device does not speak).
``speed-mismatch``
    *error* when a port that takes the link cannot run at the link's rate at all (faster
    than the port, or slower than its slowest negotiated rate); *warning* when both ends
    run the rate but their native port rates differ and the link runs below the faster
    end's native rate on a port that cannot break out (bandwidth paid for and unused).
    A slower link on a breakout port (an 800G port as 2 x 400G) is normal and not flagged.
``isolated-gpu`` (error)
    A GPU that cannot reach any other GPU over working (not failed), non-management links
    and nodes, in a design with more than one GPU.
``gpus-unreachable`` (error)
    The working GPUs fall into two or more groups of several GPUs each that cannot reach
    each other over working, non-management links and nodes (a SuperPOD whose spines
    have all failed): one finding with the group sizes and a GPU of each of the two
    largest groups.
``nvlink-lanes`` (warning)
    A GPU with some NVLink lanes cabled, but fewer than its model has (the catalog's
    ``nvlink_links``: 18 for an H100; ``scaleup_links`` for xGMI, ICI, NeuronLink and
    UALink parts: 7 for an MI300X): its scale-up bandwidth is that fraction of the
    board's.  A GPU with no NVLink at all (a PCIe GPU in a one-GPU host) is not flagged.
``gpu-no-nic`` (warning)
    A working GPU whose server (working NVLink and PCIe links: its own PCIe link, its
    host, or NVLink to a sibling GPU and its PCIe, as NCCL's PXN does) holds no working
    compute-plane NIC, in a design that has compute NICs (a design without any is a
    scale-up-only sketch and is not flagged).
``nic-no-fabric`` (warning)
    A working NIC with no working InfiniBand or Ethernet cable to a switch or another
    NIC, in a design that has fabric switches on the NIC's plane (an HGX board or NVL72
    rack drawn alone keeps NICs for a fabric that is not drawn).
``disconnected`` (warning)
    The drawing falls into more than one connected part (failures ignored): one finding
    with the part sizes and an example node of every part but the largest.
``management-shared`` (warning)
    Zero-trust separation: a compute-fabric switch (one with compute-plane links) also
    switches management traffic (it is placed in the management plane, or has
    management-plane links to two or more neighbours; its own single out-of-band port is
    fine), or a management-plane link joins two compute-fabric switches.  A policy, so a
    warning: small clusters do share switches on purpose.
``plane-shared`` (warning)
    Planes that must be separate share a switch: a switch carries compute-plane links
    and storage or front-end links (`rules_planes`).  Storage and front-end sharing
    their own switches is a common converged design and is not flagged.
``job-memory`` (error)
    A training job saved in the design does not fit in its GPUs' memory (checked by
    `designer.workload.checks.validate_design`, which adds the job rules to these).
``job-invalid`` (error)
    A job saved in the design cannot be read (a field missing or out of range); also
    `designer.workload.checks`.
``adaptive-unsupported`` (warning)
    The design's routing setting is ``adaptive``, but compute-fabric switches cannot
    route adaptively (their catalog ``adaptive_routing`` is false: a generic ECMP
    switch) and not every compute NIC sprays packets itself (``packet_spraying``: AWS
    SRD, Ultra Ethernet, Spectrum-X SuperNICs multipath over plain ECMP switches).
    Such a fabric hashes each flow onto one path; one finding, about the first such
    switch, naming the models.
``no-gpus`` (warning)
    The design has no GPU.

Example
-------
>>> from designer.model.topology import Topology, Node
>>> t = Topology()
>>> [f.code for f in validate(t)]
['no-gpus']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from designer.model.catalog import DeviceModel, LinkTech, PortGroup
from designer.model.report import natural_key
from designer.model.rules_planes import plane_shared_findings
from designer.model.rules_reach import ReachArrays, reach_findings
from designer.model.topology import Topology

SEVERITIES: tuple[str, ...] = ("error", "warning")
CODES: tuple[str, ...] = (
    "port-budget",
    "incompatible-tech",
    "speed-mismatch",
    "isolated-gpu",
    "gpus-unreachable",
    "nvlink-lanes",
    "gpu-no-nic",
    "nic-no-fabric",
    "disconnected",
    "management-shared",
    "plane-shared",
    "job-memory",
    "job-invalid",
    "adaptive-unsupported",
    "no-gpus",
)

#: Node kinds that are packet switches of a scale-out fabric (management-plane check).
SWITCH_KINDS: frozenset[str] = frozenset({"core", "spine", "leaf", "switch"})

_FAMILY_NAMES = {
    "nvlink": "NVLink",
    "pcie": "PCIe",
    "infiniband": "InfiniBand",
    "ethernet": "Ethernet",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found in a design.

    Parameters
    ----------
    severity : str
        ``"error"`` (the design cannot work as drawn) or ``"warning"`` (it works, but
        probably not as intended).
    code : str
        Which rule fired, one of `CODES`.
    subject : str
        Id of the node or link the finding is about; ``""`` for design-wide findings.
    message : str
        One line naming the node or link and saying why.
    items : tuple of str
        Further node or link ids the finding is about, besides ``subject`` (a job's
        GPUs): what a view selects to show it.
    """

    severity: str
    code: str
    subject: str
    message: str
    items: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.severity}: {self.message} [{self.code}]"


def validate(
    topology: Topology, progress: Callable[[str, int, int], Any] | None = None
) -> list[Finding]:
    """Check a design against every rule.

    Parameters
    ----------
    topology : Topology
        The design.
    progress : callable, optional
        ``progress("validating", done, total)`` after each rule (a caller on another
        thread may pause or stop there).

    Returns
    -------
    list of Finding
        Errors first, then warnings; within a severity by code, then subject (natural
        order, so ``leaf-2`` comes before ``leaf-10``).

    Examples
    --------
    >>> from designer.model.topology import Topology, Node
    >>> t = Topology()
    >>> _ = t.add_node(Node("g0", "gpu", "H100", "GPU 0"))
    >>> _ = t.add_node(Node("g1", "gpu", "H100", "GPU 1"))
    >>> [(f.code, f.subject) for f in validate(t)]
    [('isolated-gpu', 'g0'), ('isolated-gpu', 'g1'), ('disconnected', '')]
    """
    design = _Snapshot(topology)

    def reach(d: _Snapshot) -> list[Finding]:
        arrays = ReachArrays(d.nodes, d.edges, {k: t.family for k, t in d.catalog.techs.items()})
        return [Finding(*raw) for raw in reach_findings(arrays, d.label)]

    def planes(d: _Snapshot) -> list[Finding]:
        return [Finding(*raw)
                for raw in plane_shared_findings(d.nodes, d.edges, SWITCH_KINDS, d.label)]

    rules = (_link_ports, _gpu_presence, _nvlink_lanes, reach, _disconnected,
             _management_shared, planes, _adaptive_unsupported)
    findings: list[Finding] = []
    for done, rule in enumerate(rules):
        if progress is not None:
            progress("validating", done, len(rules))
        findings += rule(design)
    return sort_findings(findings)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` errors first, then by code, subject (natural order) and message."""
    return sorted(
        findings,
        key=lambda f: (SEVERITIES.index(f.severity), f.code, natural_key(f.subject), f.message),
    )


def errors(findings: Iterable[Finding]) -> list[Finding]:
    """Only the errors of ``findings``."""
    return [f for f in findings if f.severity == "error"]


# --------------------------------------------------------------------------- helpers


class _Snapshot:
    """Plain dicts and lists of a design, read once: the rules loop over them several
    times, and networkx views or `Link` values per loop cost seconds on a SuperPOD."""

    def __init__(self, topology: Topology):
        self.catalog = topology.catalog
        self.routing = topology.settings.get("routing", "adaptive")
        self.nodes: dict[str, dict] = dict(topology.graph.nodes(data=True))
        # A comprehension, not list(): list() first asks the edge view for its length,
        # which walks every edge once more.
        self.edges: list[tuple[str, str, str, dict]] = [
            e for e in topology.graph.edges(keys=True, data=True)
        ]
        # Port-group choice depends only on (model, tech): look it up once per pair.
        self._groups: dict[tuple[str, str], tuple[int, PortGroup] | None] = {}

    def label(self, node_id: str) -> str:
        return f"{node_id} ({self.nodes[node_id]['model']})"

    def port_group(self, node_id: str, tech: LinkTech) -> tuple[int, PortGroup] | None:
        """``(index, group)`` of the port group a link of ``tech`` uses at ``node_id``
        (the same choice as `Topology.port_usage`), or None when none accepts it."""
        key = (self.nodes[node_id]["model"], tech.key)
        if key not in self._groups:
            model = self.catalog.device(key[0])
            group = model.port_group_for(tech)
            self._groups[key] = None if group is None else (model.ports.index(group), group)
        return self._groups[key]


def _family(family: str) -> str:
    return _FAMILY_NAMES.get(family, family)


def _gbps(value: float) -> str:
    return f"{value:g} Gb/s"


# --------------------------------------------------------------------------- rules


def _link_ports(design: _Snapshot) -> list[Finding]:
    """Port budget, technology and speed checks, in one pass over the links.

    Port use is counted exactly as `Topology.over_subscribed_ports` does (``count`` ports
    per end, a fraction on a breakout port; links no group accepts are not counted).  The
    verdict for a link depends only on (model at a, model at b, tech), so it is worked out
    once per such triple: a SuperPOD has 25k links but a handful of triples.
    """
    techs = design.catalog.techs
    verdicts: dict[tuple[str, str, str], _Verdict] = {}
    used: dict[tuple[str, int], float] = {}
    out: list[Finding] = []
    for a, b, link_id, d in design.edges:
        key = (design.nodes[a]["model"], design.nodes[b]["model"], d["tech"])
        verdict = verdicts.get(key)
        if verdict is None:
            verdict = verdicts[key] = _link_verdict(design, techs[d["tech"]], a, b)
        for end, (index, per_link) in zip((a, b), verdict.ports, strict=True):
            if index is not None:
                used[end, index] = used.get((end, index), 0.0) + per_link * d["count"]
        for severity, code, message in verdict.problems:
            out.append(
                Finding(
                    severity,
                    code,
                    link_id,
                    message.format(link=link_id, a=design.label(a), b=design.label(b)),
                )
            )
    for (node_id, index), n_used in used.items():
        group = design.catalog.device(design.nodes[node_id]["model"]).ports[index]
        if n_used > group.count + 1e-9:
            out.append(
                Finding(
                    "error",
                    "port-budget",
                    node_id,
                    f"{design.label(node_id)} uses {n_used:g} {_family(group.family)} ports "
                    f"but has only {group.count}",
                )
            )
    return out


@dataclass(frozen=True, slots=True)
class _Verdict:
    """What a link of one tech between two models does: per end ``(port group index or
    None, ports used per link)``, and problems as ``(severity, code, message)`` with
    ``{link}``, ``{a}``, ``{b}`` left to fill in."""

    ports: tuple[tuple[int | None, float], tuple[int | None, float]]
    problems: tuple[tuple[str, str, str], ...]


def _link_verdict(design: _Snapshot, tech: LinkTech, a: str, b: str) -> _Verdict:
    family = _family(tech.family)
    head = f"link {{link}} ({tech.key})"
    ports = []
    problems = []
    ends = []
    for end, slot in ((a, "{a}"), (b, "{b}")):
        found = design.port_group(end, tech)
        if found is None:
            model = design.catalog.device(design.nodes[end]["model"])
            ports.append((None, 0.0))
            problems.append(
                (
                    "error",
                    "incompatible-tech",
                    f"{head} cannot plug into {slot}: {_why_incompatible(model, tech)}",
                )
            )
            continue
        index, group = found
        ports.append((index, group.ports_used(tech, 1)))
        if group.speed_ok(tech):
            ends.append((slot, group))
        else:
            if tech.gbps > group.gbps:
                why = f"faster than its {_gbps(group.gbps)} {family} ports"
            else:
                why = f"slower than the {_gbps(group.min_gbps)} its {family} ports go down to"
            problems.append(
                ("error", "speed-mismatch", f"{head} runs at {_gbps(tech.gbps)} at {slot}: {why}")
            )
    if len(ends) == 2:
        (sa, ga), (sb, gb) = ends
        if ga.gbps != gb.gbps:
            fast_slot, fast = (sa, ga) if ga.gbps > gb.gbps else (sb, gb)
            if tech.gbps < fast.gbps - 1e-9 and not fast.breakout:
                problems.append(
                    (
                        "warning",
                        "speed-mismatch",
                        f"{head} runs at {_gbps(tech.gbps)}, below the native "
                        f"{_gbps(fast.gbps)} of {fast_slot}'s {family} port",
                    )
                )
    return _Verdict((ports[0], ports[1]), tuple(problems))


def _why_incompatible(model: DeviceModel, tech: LinkTech) -> str:
    family = _family(tech.family)
    same = [g for g in model.ports if g.family == tech.family]
    if not same:
        return f"it has no {family} ports"
    gens = "/".join(str(g) for g in sorted({g.generation for g in same if g.generation}))
    return f"its {family} ports are generation {gens}, the link is generation {tech.generation}"


def _gpu_presence(design: _Snapshot) -> list[Finding]:
    if any(d["kind"] == "gpu" for d in design.nodes.values()):
        return []
    return [Finding("warning", "no-gpus", "", "the design has no GPUs")]


def _nvlink_lanes(design: _Snapshot) -> list[Finding]:
    """GPUs with fewer NVLink lanes cabled than their model has (none cabled: a PCIe
    GPU, not flagged).  Every lane drawn counts, failed or not: this is about the
    drawing; what failures cut off is for the reachability rules."""
    nodes, techs = design.nodes, design.catalog.techs
    lanes: dict[str, int] = {}
    for a, b, _, d in design.edges:
        if techs[d["tech"]].family != "nvlink":
            continue
        for end in (a, b):
            if nodes[end]["kind"] == "gpu":
                lanes[end] = lanes.get(end, 0) + d["count"]
    out = []
    for gpu, n in lanes.items():
        model = design.catalog.device(nodes[gpu]["model"])
        # NVLink GPUs give nvlink_*; xGMI, ICI, NeuronLink and UALink parts scaleup_*.
        nvlink = "nvlink_links" in model.specs
        prefix = "nvlink" if nvlink else "scaleup"
        fabric = "NVLink" if nvlink else "scale-up"
        full = model.specs.get(f"{prefix}_links")
        if full and n < full:
            per_link = model.specs.get(f"{prefix}_GBps_per_link")
            bw = f" ({n * per_link:g} of {full * per_link:g} GB/s)" if per_link else ""
            out.append(
                Finding(
                    "warning",
                    "nvlink-lanes",
                    gpu,
                    f"GPU {design.label(gpu)} has {n} of its {full} {fabric} lanes cabled"
                    f"{bw}: below the {model.key} board's {fabric} bandwidth",
                )
            )
    return out


def _disconnected(design: _Snapshot) -> list[Finding]:
    g = nx.Graph()
    g.add_nodes_from(design.nodes)
    g.add_edges_from((a, b) for a, b, _, _ in design.edges)
    parts = sorted(nx.connected_components(g), key=len, reverse=True)
    if len(parts) <= 1:
        return []
    # Largest first; ties and examples in natural id order (sort only the small parts).
    examples = [min(c, key=natural_key) for c in parts]
    order = sorted(range(len(parts)), key=lambda i: (-len(parts[i]), natural_key(examples[i])))
    sizes = ", ".join(str(len(parts[i])) for i in order)
    smaller = ", ".join(examples[i] for i in order[1:])
    return [
        Finding(
            "warning",
            "disconnected",
            "",
            f"the design falls into {len(parts)} separate parts of {sizes} nodes; "
            f"the smaller parts contain {smaller}",
        )
    ]


def _management_shared(design: _Snapshot) -> list[Finding]:
    nodes = design.nodes
    switches = {n for n, d in nodes.items() if d["kind"] in SWITCH_KINDS}
    compute: set[str] = set()  # switches with compute-plane links: the compute fabric
    mgmt_peers: dict[str, set[str]] = {}
    for a, b, _, d in design.edges:
        for end, other in ((a, b), (b, a)):
            if end not in switches:
                continue
            if d["plane"] == "compute":
                compute.add(end)
            elif d["plane"] == "management":
                mgmt_peers.setdefault(end, set()).add(other)
    out = []
    for node_id in compute:
        # A switch's own out-of-band port (one management neighbour) is how it should be
        # managed; two or more management neighbours means it switches management traffic.
        if nodes[node_id]["plane"] == "management" or len(mgmt_peers.get(node_id, ())) > 1:
            out.append(
                Finding(
                    "warning",
                    "management-shared",
                    node_id,
                    f"switch {design.label(node_id)} carries both management "
                    "and compute traffic; keep the management plane on its own "
                    "switches",
                )
            )
    for a, b, key, d in design.edges:
        if d["plane"] == "management" and a in compute and b in compute:
            out.append(
                Finding(
                    "warning",
                    "management-shared",
                    key,
                    f"management link {key} joins compute-fabric switches "
                    f"{design.label(a)} and {design.label(b)}",
                )
            )
    return out


def _adaptive_unsupported(design: _Snapshot) -> list[Finding]:
    """Adaptive routing asked of a fabric whose switches cannot do it and whose NICs do
    not spray packets (see the module docstring)."""
    if design.routing != "adaptive":
        return []
    nodes, cat = design.nodes, design.catalog
    fabric_families = ("infiniband", "ethernet")
    switches: set[str] = set()
    nics: set[str] = set()
    for a, b, _, d in design.edges:
        if d["plane"] != "compute" or cat.tech(d["tech"]).family not in fabric_families:
            continue
        for end in (a, b):
            kind = nodes[end]["kind"]
            if kind in SWITCH_KINDS:
                switches.add(end)
            elif kind == "nic":
                nics.add(end)

    def spec(node_id: str, name: str) -> bool:
        return bool(cat.device(nodes[node_id]["model"]).specs.get(name, False))

    lacking = sorted((s for s in switches if not spec(s, "adaptive_routing")), key=natural_key)
    if not lacking or (nics and all(spec(n, "packet_spraying") for n in nics)):
        return []
    models = sorted({nodes[s]["model"] for s in lacking})
    return [
        Finding(
            "warning",
            "adaptive-unsupported",
            lacking[0],
            f"routing is adaptive, but {len(lacking)} compute switch(es) "
            f"({', '.join(models)}) cannot route adaptively and the NICs do not spray "
            "packets: each flow will hash onto one path; set routing to ecmp to model "
            "that, or use switches with adaptive routing or spraying NICs",
        )
    ]
