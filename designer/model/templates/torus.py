"""3D torus: GPUs linked straight to their six neighbours, with wrap-around (the TPU-pod
shape).  Each neighbour bundle carries a sixth of the GPU's scale-up links.

Torus-native accelerators come with their own links and sizes from the catalog: a TPU
v5p or Ironwood has 6 ICI links (one per neighbour, 100 GB/s per direction each) and
pods of 8,960 / 9,216 chips; a Trainium2 instance is a 4 x 4 2D torus of NeuronLink-v3
(``torus_dims = 2``: 4 links, one per neighbour, ``z`` must be 1).  A torus larger than
the accelerator's pod (``pod_chips``) is refused: the vendor does not build it.

With any plane on, every 4 GPUs along x share a host (PCIe to each), so the storage,
front-end and management planes have somewhere to attach.
"""

from __future__ import annotations

import itertools
import math

from designer.model.errors import DesignError
from designer.model.templates.hgx import HOST_MODEL, Server
from designer.model.templates.lookup import nvlink_tech, scaleup_links, tech_between
from designer.model.templates.parts import Parts
from designer.model.templates.planes import PlaneOptions, add_planes
from designer.model.topology import Topology

GPUS_PER_HOST = 4  # only with planes (TPU v4 hosts carry 4 chips)


def build_torus3d(
    x: int = 4,
    y: int = 4,
    z: int = 4,
    gpu: str = "H100",
    storage: bool = False,
    frontend: bool = False,
    management: bool = False,
) -> Topology:
    """An ``x`` by ``y`` by ``z`` torus of ``gpu``.

    A dimension of 1 has no links; of 2, the two GPUs share one bundle of twice the
    count (direct and wrap-around cable); of 3 or more, a ring.

    >>> t = build_torus3d(4, 4, 4)
    >>> sorted(lk.count for lk in t.links_of("gpu-0-0-0"))
    [3, 3, 3, 3, 3, 3]
    """
    dims = (x, y, z)
    for pname, value in zip("xyz", dims, strict=True):
        if value < 1:
            raise DesignError(f"torus3d: {pname} must be >= 1, got {value}")
    if x * y * z < 2:
        raise DesignError("torus3d: needs at least 2 GPUs")
    parts = Parts()
    cat = parts.catalog
    dev = cat.device(gpu)
    if dev.category != "gpu":
        raise DesignError(f"torus3d: {gpu!r} is a {dev.category}, not a GPU")
    tech = nvlink_tech(cat, gpu)
    torus_dims = int(dev.specs.get("torus_dims", 3))
    if torus_dims == 2 and z != 1:
        raise DesignError(f"torus3d: {gpu} is wired as a 2D torus; z must be 1, got {z}")
    pod = dev.specs.get("pod_chips")
    if pod is not None and x * y * z > pod:
        raise DesignError(
            f"torus3d: {x}x{y}x{z} = {x * y * z:,} {gpu} chips is more than its pod of {pod:,}"
        )
    per = scaleup_links(cat, gpu) // (2 * torus_dims)
    if per < 1:
        raise DesignError(f"torus3d: {gpu} has fewer than {2 * torus_dims} scale-up links")
    opts = PlaneOptions(storage, frontend, management)

    def gid(i: int, j: int, k: int) -> str:
        return f"gpu-{i}-{j}-{k}"

    hosts_per_row = math.ceil(x / GPUS_PER_HOST)
    servers: list[Server] = []
    for k, j in itertools.product(range(z), range(y)):
        for c in range(hosts_per_row if opts.any else 1):
            group = None
            if opts.any:
                group = parts.group(f"srv-{j}-{k}-{c}", "node", f"Server ({j},{k}) {c}")
                servers.append(Server(group, None))
            span = (
                range(c * GPUS_PER_HOST, min(x, (c + 1) * GPUS_PER_HOST)) if opts.any else range(x)
            )
            for i in span:
                parts.node(gid(i, j, k), "gpu", gpu, f"GPU ({i},{j},{k})", group=group)
                if servers:
                    servers[-1].gpus.append(gid(i, j, k))
    for i, j, k in itertools.product(range(x), range(y), range(z)):
        here = (i, j, k)
        for d in range(3):
            size = dims[d]
            if size == 1 or (size == 2 and here[d] == 1):
                continue
            there = list(here)
            there[d] = (here[d] + 1) % size
            parts.link(gid(*here), gid(*there), tech, per * (2 if size == 2 else 1))
    if opts.any:
        pcie = tech_between(cat, HOST_MODEL, gpu, "pcie")
        for srv in servers:
            srv.host = parts.node(f"{srv.group}-host", "host", HOST_MODEL, "Host", group=srv.group)
            for g in srv.gpus:
                parts.link(srv.host, g, pcie)
        add_planes(parts, servers, opts)
    wrap = hosts_per_row if opts.any else x
    return parts.build(f"3D torus {x}x{y}x{z}: {x * y * z} x {gpu}", wrap=wrap)
