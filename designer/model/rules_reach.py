"""Reachability rules: which GPUs reach each other, a NIC, and which NICs reach a fabric.

`rules.validate` calls `reach_findings`.  These rules look at what is
*live* (failed nodes and links count as absent) and at paths, not single links.  Each
asks one connected-components question of the design's arrays, answered by
`components` in a handful of vectorised passes, so the rules stay fast on 16k-GPU
designs (no search per GPU or per pair).

Findings are plain ``(severity, code, subject, message)`` tuples; `rules` makes them
`rules.Finding` values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from designer.model.naming import natural_key

#: Node kinds that are packet switches of a scale-out fabric.
FABRIC_SWITCH_KINDS: frozenset[str] = frozenset({"core", "spine", "leaf", "switch"})

#: Link families that carry scale-out traffic (a NIC's cable to its fabric).
NETWORK_FAMILIES: frozenset[str] = frozenset({"infiniband", "ethernet"})

#: Link families inside a server: the ways from a GPU to its NIC (PCIe, or NVLink to a
#: sibling GPU and its PCIe, as NCCL's PXN does).
SERVER_FAMILIES: frozenset[str] = frozenset({"nvlink", "pcie"})

Raw = tuple[str, str, str, str]


def components(n: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Connected-component label of each of ``n`` nodes joined by edges ``a[i] - b[i]``.

    Hook-and-compress: every edge hooks the larger of its two roots under the smaller,
    then every label jumps to its root; repeated until no edge joins two roots.  Each
    round is a few array passes over the edges, and a fabric's small diameter needs few
    rounds.  The label of a component is its smallest node index.

    >>> components(5, np.array([0, 3]), np.array([1, 4])).tolist()
    [0, 0, 2, 3, 3]
    """
    label = np.arange(n)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    while True:
        la, lb = label[a], label[b]
        differ = la != lb
        if not differ.any():
            return label
        la, lb = la[differ], lb[differ]
        lo, hi = np.minimum(la, lb), np.maximum(la, lb)
        np.minimum.at(label, hi, lo)  # hook each root under a smaller one
        while True:  # compress: every label to its root
            up = label[label]
            if np.array_equal(up, label):
                break
            label = up


class ReachArrays:
    """A design's nodes and links as arrays: what the reachability rules read.

    Parameters
    ----------
    nodes : mapping
        Node id to its attributes (``kind``, ``model``, ``plane``, ``failed``).
    edges : sequence
        ``(a, b, link id, attributes)`` per link (``tech``, ``count``, ``plane``,
        ``failed``).
    family_of : mapping
        Link technology key to its family.
    """

    def __init__(
        self,
        nodes: Mapping[str, Mapping],
        edges: Sequence[tuple[str, str, str, Mapping]],
        family_of: Mapping[str, str],
    ):
        self.ids = list(nodes)
        index = {n: i for i, n in enumerate(self.ids)}
        attrs = list(nodes.values())
        self.kind = np.array([d["kind"] for d in attrs], dtype=object)
        self.plane = np.array([d["plane"] for d in attrs], dtype=object)
        self.node_live = np.array([not d["failed"] for d in attrs], dtype=bool)
        self.a = np.array([index[e[0]] for e in edges], dtype=np.int64)
        self.b = np.array([index[e[1]] for e in edges], dtype=np.int64)
        self.family = np.array([family_of[e[3]["tech"]] for e in edges], dtype=object)
        self.link_plane = np.array([e[3]["plane"] for e in edges], dtype=object)
        # A link is live when it and both its ends are.
        self.live = (
            np.array([not e[3]["failed"] for e in edges], dtype=bool)
            & self.node_live[self.a]
            & self.node_live[self.b]
        )

    @property
    def n(self) -> int:
        return len(self.ids)

    def labels(self, links: np.ndarray) -> np.ndarray:
        """`components` over the links selected by the mask ``links``."""
        return components(self.n, self.a[links], self.b[links])


def reach_findings(arrays: ReachArrays, label: Callable[[str], str]) -> list[Raw]:
    """Every reachability finding of the design (see `rules` for the codes); an isolated
    GPU is not also reported as having no NIC.

    ``label(node_id)`` gives the ``"id (model)"`` text the messages use.
    """
    # Links that carry data: live, and neither on nor into the management plane (a BMC
    # network joins every host but carries no GPU traffic).
    on_data = arrays.plane != "management"
    data = arrays.live & (arrays.link_plane != "management")
    data &= on_data[arrays.a] & on_data[arrays.b]
    reach = _gpu_reach(arrays, data, label)
    isolated = {raw[2] for raw in reach if raw[1] == "isolated-gpu"}
    return [
        *reach,
        *(raw for raw in _gpu_nic(arrays, label) if raw[2] not in isolated),
        *_nic_fabric(arrays, data, label),
    ]


def _gpu_reach(arrays: ReachArrays, data: np.ndarray, label: Callable[[str], str]) -> list[Raw]:
    """``isolated-gpu`` for a live GPU that reaches no other GPU, and one
    ``gpus-unreachable`` when the live GPUs fall into two or more groups of several
    GPUs that cannot reach each other (management plane and failed parts left out)."""
    gpu = arrays.kind == "gpu"
    if np.count_nonzero(gpu) < 2:
        return []
    live_gpu = np.flatnonzero(gpu & arrays.node_live & (arrays.plane != "management"))
    if live_gpu.size == 0:
        return []
    part = arrays.labels(data)
    _, first, size = np.unique(part[live_gpu], return_index=True, return_counts=True)
    out: list[Raw] = []
    has_links = np.zeros(arrays.n, dtype=bool)
    has_links[arrays.a[data]] = True
    has_links[arrays.b[data]] = True
    for k in np.flatnonzero(size == 1).tolist():
        g = int(live_gpu[first[k]])
        why = "it has no working links"
        if has_links[g]:
            why = "no working path leads to another GPU"
        out.append(
            (
                "error",
                "isolated-gpu",
                arrays.ids[g],
                f"GPU {label(arrays.ids[g])} is isolated: {why}",
            )
        )
    groups = np.flatnonzero(size > 1)
    if groups.size > 1:
        # Each group's example is its first GPU in natural id order; groups largest
        # first, ties by example: the message does not depend on the node order.
        ids = np.array(arrays.ids, dtype=object)
        members = live_gpu[np.isin(part[live_gpu], part[live_gpu[first[groups]]])]
        examples: dict[int, str] = {}
        for g in members.tolist():
            root = int(part[g])
            if root not in examples or natural_key(ids[g]) < natural_key(examples[root]):
                examples[root] = ids[g]
        roots = part[live_gpu[first[groups]]]
        order = sorted(
            range(groups.size),
            key=lambda k: (-size[groups[k]], natural_key(examples[int(roots[k])])),
        )
        sizes = ", ".join(f"{int(size[groups[k]]):,}" for k in order)
        a, b = (examples[int(roots[k])] for k in order[:2])
        out.append(
            (
                "error",
                "gpus-unreachable",
                "",
                f"the GPUs fall into {groups.size} groups that cannot reach each other over "
                f"working links ({sizes} GPUs): e.g. {label(a)} cannot reach {label(b)}",
            )
        )
    return out


def _gpu_nic(arrays: ReachArrays, label: Callable[[str], str]) -> list[Raw]:
    """``gpu-no-nic``: a live GPU whose server (live NVLink and PCIe links: its own PCIe
    link, a sibling GPU's, or its host's) holds no live compute-plane NIC, in a design
    that has a compute NIC at all (a design without one is a scale-up-only sketch)."""
    nic = (arrays.kind == "nic") & (arrays.plane == "compute")
    if not nic.any():
        return []
    server = arrays.live & np.isin(arrays.family, list(SERVER_FAMILIES))
    server &= arrays.link_plane != "management"
    part = arrays.labels(server)
    has_nic = np.zeros(arrays.n, dtype=bool)
    has_nic[part[nic & arrays.node_live]] = True
    gpu = (arrays.kind == "gpu") & arrays.node_live & (arrays.plane != "management")
    out: list[Raw] = []
    for g in np.flatnonzero(gpu & ~has_nic[part]).tolist():
        out.append(
            (
                "warning",
                "gpu-no-nic",
                arrays.ids[g],
                f"GPU {label(arrays.ids[g])} has no working path to a compute-fabric NIC "
                "(over PCIe, its host, or NVLink to a sibling GPU): it cannot reach GPUs "
                "outside its NVLink domain",
            )
        )
    return out


def _nic_fabric(arrays: ReachArrays, data: np.ndarray, label: Callable[[str], str]) -> list[Raw]:
    """``nic-no-fabric``: a live NIC with no live InfiniBand or Ethernet link to a live
    switch or NIC, in a design whose NIC's plane has a fabric switch at all (an NVL72
    rack or an HGX board drawn alone keeps its NICs for a fabric not drawn)."""
    nic = (arrays.kind == "nic") & arrays.node_live
    if not nic.any():
        return []
    switch = np.isin(arrays.kind, list(FABRIC_SWITCH_KINDS))
    planes = set(arrays.plane[switch].tolist())
    cable = data & np.isin(arrays.family, list(NETWORK_FAMILIES))
    far_ok = switch | (arrays.kind == "nic")
    cabled = np.zeros(arrays.n, dtype=bool)
    sel = cable & far_ok[arrays.b]
    cabled[arrays.a[sel]] = True
    sel = cable & far_ok[arrays.a]
    cabled[arrays.b[sel]] = True
    out: list[Raw] = []
    for c in np.flatnonzero(nic & ~cabled).tolist():
        if arrays.plane[c] not in planes:
            continue
        out.append(
            (
                "warning",
                "nic-no-fabric",
                arrays.ids[c],
                f"NIC {label(arrays.ids[c])} has no working cable to a {arrays.plane[c]} "
                "fabric switch: the GPUs behind it cannot use it",
            )
        )
    return out
