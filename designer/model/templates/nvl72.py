"""GB200 NVL72: one rack, one NVLink domain of 72 GPUs.

18 compute trays (4 GB200 GPUs, 2 Grace CPUs, 4 ConnectX-7 400G each) and 9 NVLink
switch trays.  Every GPU runs its 18 NVLink5 links to the switch trays, 2 to each:
9 trays x 144 ports = 1,296 = 72 GPUs x 18 (NVIDIA DGX GB200 user guide).  Grace links to
its two GPUs by PCIe here for simplicity (really NVLink-C2C).
"""

from __future__ import annotations

from designer.model.errors import DesignError
from designer.model.templates.lookup import fabric_choice, nvlink_tech, tech_between
from designer.model.templates.parts import Parts, pad
from designer.model.topology import Topology

GPU_MODEL = "GB200"
CPU_MODEL = "Grace"
SWITCH_TRAY_MODEL = "NVLink-Switch-Tray"
COMPUTE_TRAYS = 18
SWITCH_TRAYS = 9
GPUS_PER_TRAY = 4
CPUS_PER_TRAY = 2
NIC_GBPS = 400  # 4 x ConnectX-7 400G per compute tray


def build_nvl72(gpus: int = 72) -> Topology:
    """A GB200 NVL72 rack, or a partition of it: ``gpus`` (a multiple of 4, 4..72) fill
    ``gpus / 4`` compute trays; the 9 switch trays are always there.

    >>> t = build_nvl72()
    >>> sum(lk.count for lk in t.links_of("t01-gpu0") if lk.tech == "nvlink5")
    18
    """
    if gpus % GPUS_PER_TRAY or not GPUS_PER_TRAY <= gpus <= COMPUTE_TRAYS * GPUS_PER_TRAY:
        raise DesignError(
            f"nvl72: gpus must be a multiple of {GPUS_PER_TRAY} in "
            f"{GPUS_PER_TRAY}..{COMPUTE_TRAYS * GPUS_PER_TRAY}, got {gpus}"
        )
    parts = Parts()
    cat = parts.catalog
    nvlink = nvlink_tech(cat, GPU_MODEL)
    links = int(cat.device(GPU_MODEL).specs["nvlink_links"])
    per_tray = links // SWITCH_TRAYS
    nic = fabric_choice(cat, "infiniband", NIC_GBPS).nic
    gpu_nic = tech_between(cat, GPU_MODEL, nic, "pcie")
    cpu_gpu = tech_between(cat, CPU_MODEL, GPU_MODEL, "pcie")
    rack = parts.group("rack", "rack", "NVL72 rack")
    switches = [
        parts.node(
            f"nvsw{k}",
            "nvlink-switch-tray",
            SWITCH_TRAY_MODEL,
            f"NVLink switch tray {k}",
            group=rack,
        )
        for k in range(SWITCH_TRAYS)
    ]
    for t in range(1, gpus // GPUS_PER_TRAY + 1):
        tid = parts.group(f"t{pad(t, COMPUTE_TRAYS)}", "tray", f"Compute tray {t}", rack)
        tray_gpus = []
        for j in range(GPUS_PER_TRAY):
            g = parts.node(f"{tid}-gpu{j}", "gpu", GPU_MODEL, f"GPU {j}", group=tid)
            tray_gpus.append(g)
            for s in switches:
                parts.link(g, s, nvlink, per_tray)
        for j, g in enumerate(tray_gpus):
            n = parts.node(f"{tid}-nic{j}", "nic", nic, f"NIC {j}", group=tid)
            parts.link(g, n, gpu_nic)
        per_cpu = GPUS_PER_TRAY // CPUS_PER_TRAY
        for c in range(CPUS_PER_TRAY):
            cpu = parts.node(f"{tid}-cpu{c}", "host", CPU_MODEL, f"Grace {c}", group=tid)
            for g in tray_gpus[c * per_cpu : (c + 1) * per_cpu]:
                parts.link(cpu, g, cpu_gpu)
    name = "GB200 NVL72" if gpus == 72 else f"GB200 NVL72 partition ({gpus} GPUs)"
    return parts.build(name)
