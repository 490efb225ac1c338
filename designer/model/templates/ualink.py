"""UALink pods: accelerators on one tier of UALink 1.0 switches (AMD Helios-style).

Each accelerator runs its ``p`` UALink x4 ports (MI455X: 18, 3.6 TB/s bidirectional) one
to each of ``p`` switches, so every switch is a plane that reaches every accelerator
once, as NVL72's NVLink switch trays do.  A UALink 1.0 switch of the 102.4 Tb/s class has
128 x4 ports, so one tier holds up to 128 accelerators; the specification allows pods of
1,024 through more switch tiers, whose shape no vendor has published (not built here).
AMD has not published how many switches a Helios rack holds either: one per GPU port is
this template's assumption (docs/hardware.md).  UALink 1.0 has no in-switch reduction,
so the domain runs ring, tree and all-to-all, never NVLS.

Accelerators come in trays of 4 (Helios: 72 GPUs in 18 compute trays), each with a host
when a plane is asked for.
"""

from __future__ import annotations

import math

from designer.model.errors import DesignError
from designer.model.templates.hgx import HOST_MODEL, Server
from designer.model.templates.lookup import nvlink_tech, scaleup_links, tech_between
from designer.model.templates.parts import Parts, pad
from designer.model.templates.planes import PlaneOptions, add_planes
from designer.model.topology import Topology

UALINK_SWITCH = "UALink-Switch"
GPUS_PER_TRAY = 4
#: Accelerators whose scale-up is UALink (the ``ualink`` template's choices).
UALINK_GPUS: tuple[str, ...] = ("MI455X",)


def build_ualink(
    gpus: int = 72,
    gpu: str = "MI455X",
    storage: bool = False,
    frontend: bool = False,
    management: bool = False,
) -> Topology:
    """A UALink pod of ``gpus`` accelerators on one switch per scale-up port.

    >>> t = build_ualink(8)
    >>> sum(1 for n in t.nodes() if n.model == "UALink-Switch")
    18
    """
    parts = Parts()
    cat = parts.catalog
    tech = nvlink_tech(cat, gpu)
    if cat.tech(tech).protocol != "ualink":
        raise DesignError(f"ualink: {gpu} has no UALink scale-up ({tech})")
    radix = int(cat.device(UALINK_SWITCH).specs["radix"])
    if not 2 <= gpus <= radix:
        raise DesignError(
            f"ualink: gpus must be 2-{radix} (one tier of {radix}-port UALink switches), got {gpus}"
        )
    ports = scaleup_links(cat, gpu)
    opts = PlaneOptions(storage, frontend, management)
    switches = [
        parts.node(f"ual-sw{pad(k, ports)}", "nvswitch", UALINK_SWITCH, f"UALink switch {k}")
        for k in range(ports)
    ]
    servers: list[Server] = []
    for t in range(math.ceil(gpus / GPUS_PER_TRAY)):
        tid = parts.group(f"tray{pad(t, gpus // GPUS_PER_TRAY)}", "node", f"Tray {t}")
        server = Server(tid, None)
        for i in range(t * GPUS_PER_TRAY, min(gpus, (t + 1) * GPUS_PER_TRAY)):
            g = parts.node(f"{tid}-gpu{i % GPUS_PER_TRAY}", "gpu", gpu, f"GPU {i}", group=tid)
            server.gpus.append(g)
            for s in switches:
                parts.link(g, s, tech)
        if opts.any:
            server.host = parts.node(f"{tid}-host", "host", HOST_MODEL, "Host", group=tid)
            pcie = tech_between(cat, HOST_MODEL, gpu, "pcie")
            for g in server.gpus:
                parts.link(server.host, g, pcie)
        servers.append(server)
    if opts.any:
        add_planes(parts, servers, opts)
    return parts.build(f"UALink pod: {gpus} x {gpu}, {ports} UALink switches")
