"""Immutable array snapshot of a `Topology`: what the solver sees instead of the model.

Each live link bundle gives two directed arcs (full duplex): arc ``2k`` runs a->b and arc
``2k + 1`` runs b->a for the ``k``-th live link.  Capacities are in GB/s per direction:
``count x rate x efficiency`` (the catalog's achievable fraction, which already accounts
for headers).  Failed links, and every link at a failed node, are left out.

The snapshot is taken on the GUI thread and handed to a worker, so it holds only numpy
arrays and tuples, and the topology's ``generation`` so a stale result can be dropped.

Example
-------
>>> from designer.model.templates import build_template
>>> snap = take_snapshot(build_template("hgx", gpu="H100"))
>>> snap.n_gpus, len(set(snap.gpu_domain.tolist()))
(8, 1)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from designer.model.catalog import FAMILIES
from designer.model.topology import Topology

NVLINK, PCIE = FAMILIES.index("nvlink"), FAMILIES.index("pcie")
SWITCH_KINDS = frozenset({"leaf", "spine", "core", "switch", "nvswitch", "nvlink-switch-tray"})
_NUM = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple:
    """Sort key that orders ``gpu-2`` before ``gpu-10``."""
    return tuple(int(p) if p.isdigit() else p for p in _NUM.split(text))


@dataclass(frozen=True, eq=False)
class Snapshot:
    """Arrays describing one generation of a design (see module docstring).

    Node arrays are indexed by node index, arc arrays by arc index, GPU arrays by rank
    (GPUs in natural id order).
    """

    generation: int
    routing: str
    node_ids: tuple[str, ...]
    node_kind: tuple[str, ...]
    node_model: tuple[str, ...]
    link_ids: tuple[str, ...]          # live links; arcs 2k, 2k+1 belong to link_ids[k]
    arc_src: np.ndarray
    arc_dst: np.ndarray
    arc_cap: np.ndarray                # GB/s per direction, after efficiency
    arc_line: np.ndarray               # GB/s per direction, line rate
    arc_latency_s: np.ndarray          # link latency + latency of the device entered
    arc_jitter_s: np.ndarray
    arc_family: np.ndarray             # index into FAMILIES
    arc_plane: tuple[str, ...]
    gpus: np.ndarray                   # node index of each rank
    gpu_domain: np.ndarray             # NVLink domain id of each rank (0..D-1)
    gpu_local: np.ndarray              # position of the rank inside its domain
    gpu_nic: np.ndarray                # node index of the rank's rail NIC, -1 if none
    domain_nvls: np.ndarray            # bool per domain: in-switch reduction available
    net_sharp: bool                    # every compute-fabric switch does in-network reduction
    net_lossless: bool

    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def n_arcs(self) -> int:
        return len(self.arc_src)

    @property
    def n_gpus(self) -> int:
        return len(self.gpus)

    @property
    def n_domains(self) -> int:
        return int(self.gpu_domain.max()) + 1 if self.n_gpus else 0

    def arc_name(self, arc: int) -> str:
        """``link-id (a -> b)`` for messages and tooltips."""
        return (f"{self.link_ids[arc // 2]} ({self.node_ids[self.arc_src[arc]]} -> "
                f"{self.node_ids[self.arc_dst[arc]]})")


def _components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Connected-component label per node for the undirected edges (src, dst)."""
    label = np.arange(n)
    # Pointer jumping over edges: converges in O(log n) sweeps on these graphs.
    while True:
        lo = np.minimum(label[src], label[dst])
        new = label.copy()
        np.minimum.at(new, src, lo)
        np.minimum.at(new, dst, lo)
        new = new[new]
        if np.array_equal(new, label):
            return label
        label = new


def take_snapshot(topology: Topology) -> Snapshot:
    """Freeze ``topology`` into arrays for the solver.

    Parameters
    ----------
    topology : Topology

    Returns
    -------
    Snapshot
    """
    cat = topology.catalog
    g = topology.graph
    node_ids = tuple(g.nodes)
    index = {nid: i for i, nid in enumerate(node_ids)}
    attrs = [g.nodes[n] for n in node_ids]
    kinds = tuple(a["kind"] for a in attrs)
    models = tuple(a["model"] for a in attrs)
    failed_node = np.fromiter((a["failed"] for a in attrs), bool, len(attrs))
    dev_latency = {m: cat.device(m).specs.get("latency_ns", 0.0) * 1e-9 for m in set(models)}
    node_latency = np.fromiter((dev_latency[m] for m in models), float, len(models))

    link_ids, ends, caps, lines, lats, jits, fams, planes = [], [], [], [], [], [], [], []
    tech_cache = {}
    for _u, _v, key, d in g.edges(keys=True, data=True):
        if d["failed"]:
            continue
        a, b = index[d["a"]], index[d["b"]]
        if failed_node[a] or failed_node[b]:
            continue
        t = tech_cache.get(d["tech"]) or tech_cache.setdefault(d["tech"], cat.tech(d["tech"]))
        link_ids.append(key)
        ends.append((a, b))
        line = d["count"] * t.GBps
        caps.append(line * t.efficiency)
        lines.append(line)
        lats.append(t.latency_ns * 1e-9)
        jits.append(t.jitter_ns * 1e-9)
        fams.append(FAMILIES.index(t.family))
        planes.append(d["plane"])
    ends_arr = np.array(ends, dtype=np.int32).reshape(-1, 2)
    arc_src = ends_arr.reshape(-1)  # a, b, a, b ... -> arcs a->b then b->a
    arc_dst = ends_arr[:, ::-1].reshape(-1)
    rep = lambda xs, dt: np.repeat(np.asarray(xs, dtype=dt), 2)  # noqa: E731
    arc_latency = rep(lats, float) + node_latency[arc_dst] if len(arc_dst) else rep(lats, float)

    # GPUs in natural id order; NVLink domains = components over NVLink arcs.
    gpus = np.array(sorted((i for i, k in enumerate(kinds) if k == "gpu" and not failed_node[i]),
                           key=lambda i: natural_key(node_ids[i])), dtype=np.int32)
    fam = rep(fams, np.int8)
    nv = fam == NVLINK
    comp = _components(len(node_ids), arc_src[nv], arc_dst[nv]) if len(node_ids) else \
        np.zeros(0, int)
    _, gpu_domain = np.unique(comp[gpus], return_inverse=True) if len(gpus) else (None, gpus)
    gpu_domain = np.asarray(gpu_domain, dtype=np.int32)
    gpu_local = np.zeros(len(gpus), dtype=np.int32)
    seen: dict[int, int] = {}
    for r, dom in enumerate(gpu_domain.tolist()):
        gpu_local[r] = seen.get(dom, 0)
        seen[dom] = gpu_local[r] + 1

    # Rail NIC: a NIC joined to the GPU by PCIe that has a compute-plane network link.
    net_nodes = {int(s) for s, f, p in zip(arc_src, fam, rep(planes, object), strict=True)
                 if f not in (NVLINK, PCIE) and p == "compute"}
    gpu_nic = np.full(len(gpus), -1, dtype=np.int32)
    pcie = np.flatnonzero(fam == PCIE)
    nic_of = {}
    for arc in pcie:
        s, t = int(arc_src[arc]), int(arc_dst[arc])
        if kinds[s] == "gpu" and kinds[t] == "nic" and t in net_nodes:
            nic_of.setdefault(s, t)
    for r, gi in enumerate(gpus.tolist()):
        gpu_nic[r] = nic_of.get(gi, -1)

    # In-switch reduction: every NVLink switch of the domain and every GPU support NVLS.
    n_dom = int(gpu_domain.max()) + 1 if len(gpus) else 0
    domain_nvls = np.zeros(n_dom, dtype=bool)
    specs = {m: cat.device(m).specs for m in set(models)}
    for dom in range(n_dom):
        members = set(np.flatnonzero(comp == comp[gpus[gpu_domain == dom][0]]).tolist())
        switches = [i for i in members if kinds[i] in ("nvswitch", "nvlink-switch-tray")]
        gpus_in = [i for i in members if kinds[i] == "gpu"]
        domain_nvls[dom] = bool(switches) and len(gpus_in) > 1 and all(
            specs[models[i]].get("nvls", False) for i in switches + gpus_in)
    fabric_switches = [i for i in net_nodes if kinds[i] in ("leaf", "spine", "core", "switch")]
    net_sharp = bool(fabric_switches) and all(specs[models[i]].get("sharp", False)
                                              for i in fabric_switches)
    net_techs = [t for t in tech_cache.values() if t.family not in ("nvlink", "pcie")]
    return Snapshot(
        generation=topology.generation,
        routing=topology.settings["routing"],
        node_ids=node_ids, node_kind=kinds, node_model=models,
        link_ids=tuple(link_ids),
        arc_src=arc_src.astype(np.int32), arc_dst=arc_dst.astype(np.int32),
        arc_cap=rep(caps, float), arc_line=rep(lines, float),
        arc_latency_s=arc_latency, arc_jitter_s=rep(jits, float),
        arc_family=fam, arc_plane=tuple(p for p in planes for _ in (0, 1)),
        gpus=gpus, gpu_domain=gpu_domain, gpu_local=gpu_local, gpu_nic=gpu_nic,
        domain_nvls=domain_nvls, net_sharp=net_sharp,
        net_lossless=all(t.lossless for t in net_techs),
    )
