"""Random edits of a design for property tests: every kind of change the columns and
snapshots must follow (fail, count, technology, plane, node model, additions and
removals of nodes and links)."""

from __future__ import annotations

from designer.model.topology import Link, Node


def random_edit(topo, rng, k: int) -> None:
    """Apply one random edit to ``topo`` (``rng``: a numpy Generator; ``k`` names what
    it adds)."""
    links = [lk for lk in topo.links()]
    nodes = [n for n in topo.nodes()]
    kind = rng.integers(9)
    if kind == 0:
        lk = links[rng.integers(len(links))]
        topo.update_link(lk.id, failed=not lk.failed)
    elif kind == 1:
        lk = links[rng.integers(len(links))]
        topo.update_link(lk.id, count=int(rng.integers(1, 5)))
    elif kind == 2:
        lk = next((x for x in links if x.tech.startswith("ib-")), None)
        if lk is not None:
            topo.update_link(lk.id, tech="ib-hdr" if lk.tech == "ib-ndr" else "ib-ndr")
    elif kind == 3:
        lk = links[rng.integers(len(links))]
        topo.update_link(lk.id, plane="storage" if lk.plane == "compute" else "compute")
    elif kind == 4:
        n = nodes[rng.integers(len(nodes))]
        topo.update_node(n.id, failed=not n.failed)
    elif kind == 5:
        gpu = next(n for n in nodes if n.kind == "gpu")
        topo.update_node(gpu.id, model="B200" if gpu.model == "H100" else "H100")
    elif kind == 6:
        topo.add_node(Node(f"extra{k}", "gpu", "H100", f"extra {k}"))
        other = nodes[rng.integers(len(nodes))]
        topo.add_link(Link(f"extra{k}-l", f"extra{k}", other.id, "pcie5"))
    elif kind == 7:
        topo.remove_node(nodes[rng.integers(len(nodes))].id)
    else:
        lk = links[rng.integers(len(links))]
        topo.remove_link(lk.id)
