"""Small hand-built fabrics shared by the solver tests, and helpers to read routes by
node name."""

from collections import defaultdict

from designer.model.topology import Link, Node, Topology


def small_fabric(
    hosts_per_leaf: int = 2,
    leaves: int = 2,
    spines: int = 2,
    uplinks: tuple[int, ...] | None = None,
) -> Topology:
    """One-GPU hosts (GPU -PCIe- NIC -NDR- leaf); leaf i has ``uplinks[j]`` links to spine j."""
    uplinks = uplinks or (1,) * spines
    t = Topology()
    k = 0
    for li in range(leaves):
        t.add_node(Node(f"L{li}", "leaf", "QM9700", f"leaf {li}"))
        for _ in range(hosts_per_leaf):
            t.add_node(Node(f"g{k}", "gpu", "H100", f"gpu {k}"))
            t.add_node(Node(f"c{k}", "nic", "ConnectX-7", f"nic {k}"))
            t.add_link(Link(f"g{k}-c{k}", f"g{k}", f"c{k}", "pcie5"))
            t.add_link(Link(f"c{k}-L{li}", f"c{k}", f"L{li}", "ib-ndr"))
            k += 1
    for si in range(spines):
        t.add_node(Node(f"S{si}", "spine", "QM9700", f"spine {si}"))
        for li in range(leaves):
            t.add_link(Link(f"L{li}-S{si}", f"L{li}", f"S{si}", "ib-ndr", count=uplinks[si]))
    return t


def host_nic_fabric(hosts: int = 2, gpus_per_host: int = 2, nics_per_host: int = 2) -> Topology:
    """Servers whose GPUs (no NVLink) and NICs all hang off the host's PCIe (no GPU-NIC
    link): host ``h{i}``, GPUs ``g{i}{k}``, NICs ``c{i}{j}``, every NIC on leaf ``L0``."""
    t = Topology()
    t.add_node(Node("L0", "leaf", "QM9700", "leaf"))
    for i in range(hosts):
        t.add_node(Node(f"h{i}", "host", "Host-x86", f"host {i}"))
        for k in range(gpus_per_host):
            t.add_node(Node(f"g{i}{k}", "gpu", "H100", f"gpu {i}.{k}"))
            t.add_link(Link(f"h{i}-g{i}{k}", f"h{i}", f"g{i}{k}", "pcie5"))
        for j in range(nics_per_host):
            t.add_node(Node(f"c{i}{j}", "nic", "ConnectX-7", f"nic {i}.{j}"))
            t.add_link(Link(f"h{i}-c{i}{j}", f"h{i}", f"c{i}{j}", "pcie5"))
            t.add_link(Link(f"c{i}{j}-L0", f"c{i}{j}", "L0", "ib-ndr"))
    return t


def named(snap, route) -> dict[tuple[str, str], float]:
    """A route as {(from, to): weight}, parallel arcs summed."""
    out: dict[tuple[str, str], float] = defaultdict(float)
    for arc, w in zip(*route, strict=True):
        out[(snap.node_ids[snap.arc_src[arc]], snap.node_ids[snap.arc_dst[arc]])] += float(w)
    return dict(out)


def idx(snap, node_id: str) -> int:
    return snap.node_ids.index(node_id)
