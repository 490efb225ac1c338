"""HGX server: 8 GPUs on NVSwitches, one NIC per GPU, a host; the block every
rail-optimised template reuses (`server_block`).

An AMD Instinct node (MI300X, MI325X, MI355X: ``scaleup_topology = "full-mesh"`` in the
catalog) has no switch: its 8 GPUs link pairwise over xGMI, 7 links per GPU, one to each
peer (AMD Instinct platform docs).

The board's NVSwitch count depends on the NVLink generation (A100: 6 second-gen chips,
H100/H200/H800: 4 third-gen, B200: 2 fourth-gen); each GPU's NVLinks are split as evenly
as the chips allow, extras on the outer chips: 18 links over 4 chips = 5/4/4/5 (HGX
H100), 8 over 4 = 2/2/2/2 (H800), 12 over 6 = 2 each (A100), 18 over 2 = 9/9 (B200).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from designer.model.errors import DesignError
from designer.model.templates.lookup import (
    default_nic_gbps,
    fabric_choice,
    nvlink_tech,
    nvswitch_for,
    scaleup_topology,
    tech_between,
)
from designer.model.templates.parts import Parts
from designer.model.topology import Topology

#: NVSwitch chips on an HGX baseboard, by the NVLink generation of its GPUs
#: (NVIDIA HGX A100 / H100 / B200 docs).
HGX_NVSWITCHES: dict[int, int] = {3: 6, 4: 4, 5: 2}

#: GPUs of 8-GPU server boards: NVIDIA HGX (NVSwitch) and AMD Instinct (xGMI full mesh).
HGX_GPUS: tuple[str, ...] = (
    "A100", "H100", "H200", "H800", "B200", "B300", "MI300X", "MI325X", "MI355X",
)  # fmt: skip
#: GPUs a one-GPU endpoint can use.
ALL_GPUS: tuple[str, ...] = (*HGX_GPUS, "GB200", "GB300")
#: Accelerators a torus can be built of: any GPU, and the torus-native TPUs and Trainium.
TORUS_GPUS: tuple[str, ...] = (*ALL_GPUS, "TPU-v5p", "TPU7x", "Trainium2")
HOST_MODEL = "Host-x86"
HOST_SPARE_PORTS = 2  # host PCIe ports kept for the storage and front-end NICs


@dataclass
class Server:
    """Ids of one server's parts, for the fabrics and planes wired to it."""

    group: str
    host: str | None
    gpus: list[str] = field(default_factory=list)
    nics: list[str] = field(default_factory=list)


def nvlink_split(links: int, switches: int) -> list[int]:
    """NVLinks from one GPU to each of ``switches`` chips, extras on the outer chips.

    >>> nvlink_split(18, 4)
    [5, 4, 4, 5]
    """
    base, rem = divmod(links, switches)
    counts = [base] * switches
    outer_first = [
        i for pair in zip(range(switches), reversed(range(switches)), strict=True) for i in pair
    ]
    for i in list(dict.fromkeys(outer_first))[:rem]:
        counts[i] += 1
    return counts


def pcie_ports(parts: Parts, model: str) -> int:
    return sum(g.count for g in parts.catalog.device(model).ports if g.family == "pcie")


def server_block(
    parts: Parts,
    sid: str,
    name: str,
    *,
    gpu: str,
    gpus: int,
    nic: str | None,
    nics: int,
    parent: str | None = None,
    host: bool = True,
) -> Server:
    """Add one HGX-style server as group ``sid`` (kind ``node``) and return its ids.

    GPUs ``{sid}-gpu{i}`` on the board's NVSwitches ``{sid}-nvs{k}`` (none for a single
    GPU), a host ``{sid}-host`` on PCIe to every GPU, and NICs ``{sid}-nic{j}`` (rail
    ``j``) on PCIe to GPU ``j * gpus // nics``, or to the host once that GPU's PCIe ports
    are taken.
    """
    cat = parts.catalog
    gpu_dev = cat.device(gpu)
    if gpu_dev.category != "gpu":
        raise DesignError(f"{gpu!r} is a {gpu_dev.category}, not a GPU")
    # Each GPU keeps one PCIe port for the host; NICs beyond one per free GPU port hang
    # off the host (no PCIe switch is modelled).
    gpu_ports = pcie_ports(parts, gpu) - (1 if host else 0)
    wanted = Counter(j * gpus // nics for j in range(nics))
    on_host = sum(max(0, n - gpu_ports) for n in wanted.values())
    if on_host and not host:
        raise DesignError(
            f"{nics} NICs do not fit {gpus} {gpu} GPUs ({pcie_ports(parts, gpu)} PCIe ports each)"
        )
    if host and gpus + on_host > pcie_ports(parts, HOST_MODEL) - HOST_SPARE_PORTS:
        raise DesignError(
            f"{nics} NICs do not fit a server of {gpus} {gpu}: the "
            f"{HOST_MODEL} host has {pcie_ports(parts, HOST_MODEL)} PCIe ports "
            f"({HOST_SPARE_PORTS} kept for storage and front-end NICs)"
        )
    parts.group(sid, "node", name, parent)
    server = Server(sid, None)
    for i in range(gpus):
        server.gpus.append(parts.node(f"{sid}-gpu{i}", "gpu", gpu, f"GPU {i}", group=sid))
    if gpus >= 2 and scaleup_topology(cat, gpu) == "full-mesh":
        _full_mesh(parts, server.gpus, gpu)
    elif gpus >= 2:
        if scaleup_topology(cat, gpu) != "switched":
            raise DesignError(
                f"GPU {gpu}: its scale-up fabric is a torus; use the torus3d template"
            )
        gen = gpu_dev.specs.get("nvlink_generation")
        if gen not in HGX_NVSWITCHES:
            raise DesignError(f"GPU {gpu}: no HGX board of NVLink generation {gen}")
        model, tech = nvswitch_for(cat, gpu), nvlink_tech(cat, gpu)
        split = nvlink_split(int(gpu_dev.specs["nvlink_links"]), HGX_NVSWITCHES[gen])
        switches = [
            parts.node(f"{sid}-nvs{k}", "nvswitch", model, f"NVSwitch {k}", group=sid)
            for k in range(len(split))
        ]
        for g in server.gpus:
            for s, count in zip(switches, split, strict=True):
                if count:
                    parts.link(g, s, tech, count)
    if host:
        server.host = parts.node(f"{sid}-host", "host", HOST_MODEL, "Host", group=sid)
        pcie = tech_between(cat, HOST_MODEL, gpu, "pcie")
        for g in server.gpus:
            parts.link(server.host, g, pcie)
    used = dict.fromkeys(server.gpus, 0)
    for j in range(nics):
        assert nic is not None
        nid = parts.node(f"{sid}-nic{j}", "nic", nic, f"NIC {j}", group=sid)
        server.nics.append(nid)
        g = server.gpus[j * gpus // nics]
        if used[g] < gpu_ports:
            parts.link(g, nid, tech_between(cat, gpu, nic, "pcie"))
            used[g] += 1
        else:
            assert server.host is not None
            parts.link(server.host, nid, tech_between(cat, HOST_MODEL, nic, "pcie"))
    return server


def _full_mesh(parts: Parts, gpus: list[str], gpu: str) -> None:
    """Link every pair of ``gpus`` by one scale-up link (AMD xGMI: each GPU has one link
    per peer, ``peers - 1`` in all)."""
    cat = parts.catalog
    peers = int(cat.device(gpu).specs.get("peers", len(gpus)))
    if len(gpus) > peers:
        raise DesignError(f"GPU {gpu}: a full-mesh node holds at most {peers} GPUs")
    tech = nvlink_tech(cat, gpu)
    for i, a in enumerate(gpus):
        for b in gpus[i + 1 :]:
            parts.link(a, b, tech)


def platform_name(catalog, gpu: str) -> str:
    """``HGX`` for an NVIDIA board, ``<vendor> 8-GPU`` otherwise (AMD Instinct)."""
    vendor = catalog.device(gpu).vendor
    return "HGX" if vendor == "NVIDIA" else f"{vendor} 8-GPU"


def build_hgx(gpu: str = "H100", gpus: int = 8) -> Topology:
    """One HGX server: ``gpus`` GPUs (1-8) on the board's NVSwitches, a NIC per GPU.

    The NIC is the one an InfiniBand fabric at the GPU's PCIe-limited rate would use
    (ConnectX-6 on A100's PCIe Gen4, ConnectX-7 on Gen5).

    >>> t = build_hgx("H100")
    >>> sorted(lk.count for lk in t.links_of("n01-gpu0") if lk.tech == "nvlink4")
    [4, 4, 5, 5]
    """
    if not 1 <= gpus <= 8:
        raise DesignError(f"hgx: gpus must be 1..8, got {gpus}")
    parts = Parts()
    nic = fabric_choice(parts.catalog, "infiniband", default_nic_gbps(parts.catalog, gpu)).nic
    server_block(parts, "n01", "Node 1", gpu=gpu, gpus=gpus, nic=nic, nics=gpus)
    return parts.build(f"{platform_name(parts.catalog, gpu)} {gpu} ({gpus} GPUs)")
