"""NVL72 racks: 72 GPUs in one NVLink domain, and many such racks on a rail fabric.

Per rack (NVIDIA GB200 NVL72 reference architecture, DGX GB200 user guide): 18 compute
trays of 4 GPUs, 2 CPUs and 4 NICs (one per GPU), and 9 NVLink switch trays.  Every GPU
runs its 18 NVLinks to the switch trays, 2 to each: 9 trays x 144 ports = 1,296 = 72 GPUs
x 18.  The CPU links to its two GPUs by PCIe here for simplicity (really NVLink-C2C).

``racks`` > 1 joins the racks with a rail-optimised scale-out fabric sized as
`rail-cluster` sizes it (`rail_fabric`): each compute tray is a server with 4 rails.
GB300 and Vera Rubin racks share the shape with their own GPU, CPU, switch tray and NIC
(`NVL72_REFERENCE`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from designer.model.errors import DesignError
from designer.model.templates.hgx import Server
from designer.model.templates.lookup import (
    fabric_choice,
    nvlink_tech,
    nvswitch_for,
    tech_between,
)
from designer.model.templates.parts import Parts, pad
from designer.model.templates.planes import PlaneOptions, add_planes
from designer.model.templates.rail_fabric import plan_rails, wire_rails
from designer.model.topology import Topology

COMPUTE_TRAYS = 18
SWITCH_TRAYS = 9
GPUS_PER_TRAY = 4
CPUS_PER_TRAY = 2
RACK_GPUS = COMPUTE_TRAYS * GPUS_PER_TRAY


@dataclass(frozen=True)
class RackReference:
    """What one NVL72 rack of a GPU is built of: the CPU, the NIC its compute trays ship
    with and that NIC's rate (Gb/s)."""

    cpu: str
    nic: str
    nic_gbps: int
    source: str


NVL72_REFERENCE: dict[str, RackReference] = {
    "GB200": RackReference(
        "Grace",
        "ConnectX-7",
        400,
        "NVIDIA DGX GB200 user guide: 4 ConnectX-7 400G per compute tray, one per GPU",
    ),
    "GB300": RackReference(
        "Grace",
        "ConnectX-8",
        800,
        "NVIDIA GB300 NVL72: 72 ConnectX-8 800G SuperNICs, one per GPU",
    ),
    "Rubin": RackReference(
        "Vera",
        "ConnectX-9",
        800,
        "NVIDIA Rubin platform blog: ConnectX-9 SuperNICs (one 800G NIC per GPU modelled; "
        "the platform gives each GPU 1.6 Tb/s over two)",
    ),
}


def build_nvl72(
    gpus: int = 72,
    racks: int = 1,
    gpu: str = "GB200",
    nic_gbps: int = 0,
    fabric: str = "infiniband",
    oversubscription: float = 1.0,
    core: str = "auto",
    leaf_radix: int = 64,
    planes: int = 1,
    storage: bool = False,
    frontend: bool = False,
    management: bool = False,
) -> Topology:
    """NVL72 racks of ``gpu`` (GB200, GB300 or Rubin).

    One rack may be a partition: ``gpus`` (a multiple of 4, 4..72) fill ``gpus / 4``
    compute trays; the 9 switch trays are always there.  ``racks`` > 1 builds whole racks
    and a scale-out fabric (``fabric``, ``nic_gbps``, ``oversubscription``, ``core``,
    ``leaf_radix``, ``planes`` as in `rail-cluster`); ``nic_gbps = 0`` takes the rate
    the rack ships with (400 for GB200, 800 for GB300 and Rubin).

    >>> t = build_nvl72()
    >>> sum(lk.count for lk in t.links_of("t01-gpu0") if lk.tech == "nvlink5")
    18
    >>> t = build_nvl72(racks=2)
    >>> [sum(1 for _ in t.nodes(kind)) for kind in ("gpu", "nvlink-switch-tray", "nic")]
    [144, 18, 144]
    """
    if gpu not in NVL72_REFERENCE:
        raise DesignError(f"nvl72: gpu must be one of {', '.join(NVL72_REFERENCE)}, got {gpu!r}")
    if racks < 1:
        raise DesignError(f"nvl72: racks must be >= 1, got {racks}")
    if gpus % GPUS_PER_TRAY or not GPUS_PER_TRAY <= gpus <= RACK_GPUS:
        raise DesignError(
            f"nvl72: gpus must be a multiple of {GPUS_PER_TRAY} in "
            f"{GPUS_PER_TRAY}..{RACK_GPUS}, got {gpus}"
        )
    if racks > 1 and gpus != RACK_GPUS:
        raise DesignError("nvl72: a partition (gpus < 72) is a single rack; use racks=1")
    ref = NVL72_REFERENCE[gpu]
    parts = Parts()
    cat = parts.catalog
    rate = nic_gbps or ref.nic_gbps
    trays = gpus // GPUS_PER_TRAY
    plan = None
    nic = ref.nic
    if racks > 1:
        plan = plan_rails(
            parts,
            "nvl72",
            servers=racks * COMPUTE_TRAYS,
            rails=GPUS_PER_TRAY,
            fabric=fabric,
            nic_gbps=rate,
            leaf_radix=leaf_radix,
            oversubscription=oversubscription,
            core=core,
            planes=planes,
            unit="racks",
            per_unit=COMPUTE_TRAYS,
        )
        # The rack's own NIC when it runs the fabric's links, else the fabric's choice.
        own = cat.device(ref.nic).port_group_for(cat.tech(plan.nic.tech))
        if own is not None and own.gbps == cat.tech(plan.nic.tech).gbps:
            plan = replace(plan, nic=replace(plan.nic, nic=ref.nic))
        nic = plan.nic.nic
    elif nic_gbps and nic_gbps != ref.nic_gbps:
        nic = fabric_choice(cat, fabric, nic_gbps).nic
    servers: list[Server] = []
    domains = []
    for r in range(1, racks + 1):
        prefix = f"r{pad(r, racks)}-" if racks > 1 else ""
        title = f"NVL72 rack {r}" if racks > 1 else "NVL72 rack"
        rack_servers, rack_nodes = _rack(parts, prefix, title, gpu, ref.cpu, nic, trays)
        servers += rack_servers
        domains.append((f"{prefix}rack".strip("-"), f"{prefix}rack", rack_nodes))
    if plan is not None:
        wire_rails(parts, plan, servers, GPUS_PER_TRAY)
    add_planes(parts, servers, PlaneOptions(storage, frontend, management), domains)
    if racks > 1:
        name = f"{racks} x {gpu} NVL72: {racks * RACK_GPUS:,} GPUs, {fabric} {rate}G"
        if planes > 1:
            name += f" x {planes} planes"
    elif gpus == RACK_GPUS:
        name = f"{gpu} NVL72"
    else:
        name = f"{gpu} NVL72 partition ({gpus} GPUs)"
    return parts.build(name)


def _rack(
    parts: Parts, prefix: str, title: str, gpu: str, cpu: str, nic: str, trays: int
) -> tuple[list[Server], list[str]]:
    """One rack as group ``{prefix}rack``: its switch trays and ``trays`` compute trays.

    Returns the compute trays as servers (host: the tray's first CPU; rails: its NICs)
    and the ids with a management port (CPUs and switch trays).
    """
    cat = parts.catalog
    nvlink = nvlink_tech(cat, gpu)
    tray_model = nvswitch_for(cat, gpu, "nvlink-switch-tray")
    per_tray = int(cat.device(gpu).specs["nvlink_links"]) // SWITCH_TRAYS
    gpu_nic = tech_between(cat, gpu, nic, "pcie")
    cpu_gpu = tech_between(cat, cpu, gpu, "pcie")
    rack = parts.group(f"{prefix}rack", "rack", title)
    switches = [
        parts.node(
            f"{prefix}nvsw{k}",
            "nvlink-switch-tray",
            tray_model,
            f"NVLink switch tray {k}",
            group=rack,
        )
        for k in range(SWITCH_TRAYS)
    ]
    servers = []
    managed = list(switches)
    for t in range(1, trays + 1):
        tid = parts.group(f"{prefix}t{pad(t, COMPUTE_TRAYS)}", "tray", f"Compute tray {t}", rack)
        srv = Server(tid, None)
        for j in range(GPUS_PER_TRAY):
            g = parts.node(f"{tid}-gpu{j}", "gpu", gpu, f"GPU {j}", group=tid)
            srv.gpus.append(g)
            for s in switches:
                parts.link(g, s, nvlink, per_tray)
        for j, g in enumerate(srv.gpus):
            n = parts.node(f"{tid}-nic{j}", "nic", nic, f"NIC {j}", group=tid)
            parts.link(g, n, gpu_nic)
            srv.nics.append(n)
        per_cpu = GPUS_PER_TRAY // CPUS_PER_TRAY
        for c in range(CPUS_PER_TRAY):
            host = parts.node(f"{tid}-cpu{c}", "host", cpu, f"{cpu} {c}", group=tid)
            managed.append(host)
            srv.host = srv.host or host
            for g in srv.gpus[c * per_cpu : (c + 1) * per_cpu]:
                parts.link(host, g, cpu_gpu)
        servers.append(srv)
    return servers, managed
