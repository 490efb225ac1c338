"""Design rule ``plane-shared``: the compute fabric's switches carry no storage or
front-end traffic (planes that must be separate do not share a switch)."""

from __future__ import annotations

from designer.model.rules import CODES, validate
from designer.model.topology import Link, Node, Topology


def add(t: Topology, node_id: str, kind: str, model: str, **kw) -> None:
    t.add_node(Node(node_id, kind, model, node_id, **kw))


def link(t: Topology, link_id: str, a: str, b: str, tech: str, count: int = 1, **kw) -> None:
    t.add_link(Link(link_id, a, b, tech, count=count, **kw))


def roce_server() -> Topology:
    """Two H100s on an NVSwitch, each with its own NIC to one RoCE leaf, a host, a
    storage NIC on the host and a storage server, the storage network on its own
    switch: a clean design."""
    t = Topology(name="roce")
    add(t, "g0", "gpu", "H100")
    add(t, "g1", "gpu", "H100")
    add(t, "nvs", "nvswitch", "NVSwitch-gen3")
    add(t, "host", "host", "Host-x86")
    add(t, "nic0", "nic", "ConnectX-7")
    add(t, "nic1", "nic", "ConnectX-7")
    add(t, "leaf", "leaf", "SN5600")
    link(t, "nv0", "g0", "nvs", "nvlink4", 18)
    link(t, "nv1", "g1", "nvs", "nvlink4", 18)
    link(t, "p0", "g0", "nic0", "pcie5")
    link(t, "p1", "g1", "nic1", "pcie5")
    link(t, "h0", "host", "g0", "pcie5")
    link(t, "h1", "host", "g1", "pcie5")
    link(t, "e0", "nic0", "leaf", "roce-400")
    link(t, "e1", "nic1", "leaf", "roce-400")
    add(t, "stnic", "nic", "BlueField-3", plane="storage")
    add(t, "nas", "storage", "Storage-NVMe", plane="storage")
    add(t, "stleaf", "leaf", "SN5600", plane="storage")
    link(t, "sp", "host", "stnic", "pcie5", plane="storage")
    link(t, "s0", "stnic", "stleaf", "roce-400", plane="storage")
    link(t, "s1", "nas", "stleaf", "roce-400", plane="storage")
    return t


def shared(t: Topology) -> list[tuple[str, str, str]]:
    return [(f.severity, f.code, f.subject) for f in validate(t) if f.code == "plane-shared"]


def test_separate_storage_switch_is_clean():
    assert "plane-shared" in CODES
    assert validate(roce_server()) == []


def test_storage_on_a_compute_leaf_is_flagged_naming_switch_and_planes():
    t = roce_server()
    # the storage NIC and the storage server cabled to the compute leaf instead
    t.remove_link("s0")
    t.remove_link("s1")
    t.remove_node("stleaf")
    link(t, "s0", "stnic", "leaf", "roce-400", plane="storage")
    link(t, "s1", "nas", "leaf", "roce-400", plane="storage")
    found = [f for f in validate(t) if f.code == "plane-shared"]
    assert [(f.severity, f.subject) for f in found] == [("warning", "leaf")]
    assert "leaf (SN5600)" in found[0].message
    assert "compute" in found[0].message and "storage" in found[0].message


def test_storage_switch_taking_a_compute_link_is_flagged():
    t = roce_server()
    link(t, "x", "nic1", "stleaf", "roce-400")  # a compute-plane cable on the storage leaf
    assert shared(t) == [("warning", "plane-shared", "stleaf")]


def test_frontend_on_a_compute_spine_is_flagged_and_converged_storage_frontend_is_not():
    t = roce_server()
    add(t, "fenic", "nic", "BlueField-3", plane="frontend")
    link(t, "fp", "host", "fenic", "pcie5", plane="frontend")
    # storage and front-end converged on one Ethernet switch: a common, accepted design
    link(t, "f0", "fenic", "stleaf", "roce-400", plane="frontend")
    assert shared(t) == []
    add(t, "spine", "spine", "SN5600")
    link(t, "up", "leaf", "spine", "roce-400", 2)
    link(t, "f1", "fenic", "spine", "roce-400", plane="frontend")
    assert shared(t) == [("warning", "plane-shared", "spine")]


def test_failed_storage_link_still_counts_the_cabling_is_shared():
    t = roce_server()
    link(t, "s2", "nas", "leaf", "roce-400", plane="storage", failed=True)
    assert shared(t) == [("warning", "plane-shared", "leaf")]
