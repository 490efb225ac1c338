"""Tests of each GPU's rail NIC in a snapshot (`rail_nics.assign_nics`): its own, a
sibling's over NVLink (PXN), one on its host; failures; the arc to its own NIC."""

from __future__ import annotations

import numpy as np
from fabrics import host_nic_fabric, small_fabric

from designer.model.templates import build_template
from designer.model.topology import Link
from designer.solver.snapshot.build import PCIE, take_snapshot


def test_failed_nic_link_leaves_the_gpu_without_a_nic():
    topo = small_fabric()
    topo.update_link("c2-L1", failed=True)
    snap = take_snapshot(topo)
    assert snap.gpu_nic.tolist()[2] == -1
    assert [snap.node_ids[n] for n in snap.gpu_nic[[0, 1, 3]]] == ["c0", "c1", "c3"]


def _nic_names(snap, ranks):
    return [snap.node_ids[snap.gpu_nic[r]] for r in ranks]


def _via_names(snap, ranks):
    return [snap.node_ids[v] if v >= 0 else "-" for v in snap.gpu_nic_via[ranks].tolist()]


def test_gpus_without_a_nic_use_a_siblings_nic_through_nvlink():
    # nics_per_node=4: NIC j hangs off GPU 2j; GPU 2j + 1 reaches it through GPU 2j (PXN).
    snap = take_snapshot(build_template("rail-cluster", nodes=2, nics_per_node=4))
    assert _nic_names(snap, range(8)) == [f"n01-nic{j}" for j in range(4) for _ in range(2)]
    assert _via_names(snap, range(8)) == ["-", "n01-gpu0", "-", "n01-gpu2", "-", "n01-gpu4",
                                          "-", "n01-gpu6"]
    assert _nic_names(snap, range(8, 16)) == [f"n02-nic{j}" for j in range(4) for _ in range(2)]


def test_gpus_without_a_nic_are_split_evenly_over_the_domains_nics():
    # NICs 4-7 of server 1 fail: GPUs 4-7 take the NICs of GPUs 3, 0, 1, 2 in turn
    # (starting after the GPU just before the first of them), two GPUs per NIC.
    topo = build_template("rail-cluster", nodes=2)
    for j in range(4, 8):
        topo.update_node(f"n01-nic{j}", failed=True)
    snap = take_snapshot(topo)
    assert _nic_names(snap, range(8)) == [f"n01-nic{j}" for j in (0, 1, 2, 3, 3, 0, 1, 2)]
    assert _via_names(snap, range(4, 8)) == ["n01-gpu3", "n01-gpu0", "n01-gpu1", "n01-gpu2"]
    assert _nic_names(snap, range(8, 16)) == [f"n02-nic{j}" for j in range(8)]  # untouched


def test_a_failed_nic_cable_moves_its_gpu_to_the_previous_gpus_nic():
    topo = build_template("rail-cluster", nodes=2)
    (cable,) = [lk for lk in topo.links_of("n01-nic3") if "leaf" in (lk.a + lk.b)]
    topo.update_link(cable.id, failed=True)
    snap = take_snapshot(topo)
    assert _nic_names(snap, [2, 3, 4]) == ["n01-nic2", "n01-nic2", "n01-nic4"]
    assert _via_names(snap, [2, 3, 4]) == ["-", "n01-gpu2", "-"]


def test_nics_on_the_host_serve_its_gpus_in_turn():
    # No GPU-NIC link and no NVLink: each GPU reaches a NIC through its host's PCIe.
    snap = take_snapshot(host_nic_fabric(hosts=2, gpus_per_host=3, nics_per_host=2))
    assert [snap.node_ids[g] for g in snap.gpus] == ["g00", "g01", "g02", "g10", "g11", "g12"]
    assert _nic_names(snap, range(6)) == ["c00", "c01", "c00", "c10", "c11", "c10"]
    assert _via_names(snap, range(6)) == ["h0"] * 3 + ["h1"] * 3


def test_a_sibling_nic_beats_one_behind_the_host():
    # NCCL ranks PXN (NVLink + the sibling's PCIe) above a path through the CPU: GPUs of
    # an HGX board whose NIC is missing use a sibling's even when the host has NICs.
    topo = build_template("rail-cluster", nodes=2, nics_per_node=12)  # NICs 8-11 on host
    topo.update_node("n01-nic0", failed=True)
    snap = take_snapshot(topo)
    assert snap.node_ids[snap.gpu_nic_via[0]] == "n01-gpu7"   # the GPU before it, cyclically
    assert snap.node_ids[snap.gpu_nic[0]] == snap.node_ids[snap.gpu_nic[7]]


def test_a_gpus_own_nic_arc_is_its_lowest_pcie_arc_to_the_nic():
    # Two PCIe links between n01-gpu0 and its NIC: the lower-numbered one's arc; GPUs that
    # reach a NIC through a sibling (PXN) or the host have none of their own (-1).
    topo = build_template("rail-cluster", nodes=2, nics_per_node=4)
    (first,) = [lk for lk in topo.links_of("n01-nic0") if "gpu" in (lk.a + lk.b)]
    topo.add_link(Link(id="extra-pcie", a="n01-gpu0", b="n01-nic0", tech=first.tech))
    topo.update_node("n02-nic1", failed=True)
    snap = take_snapshot(topo)
    pcie = np.flatnonzero(snap.arc_family == PCIE)
    for r in range(snap.n_gpus):
        g, nic, via, arc = (int(v[r]) for v in (snap.gpus, snap.gpu_nic, snap.gpu_nic_via,
                                                snap.gpu_nic_arc))
        if via >= 0 or nic < 0:
            assert arc == -1
        else:
            to_nic = pcie[(snap.arc_src[pcie] == g) & (snap.arc_dst[pcie] == nic)]
            assert arc == to_nic.min()
    assert snap.link_ids[int(snap.gpu_nic_arc[0]) // 2] == first.id
    assert (snap.gpu_nic_via[[1, 3, 10, 11]] >= 0).all()   # PXN ranks, -1 checked above


def test_rail_nic_of_every_gpu():
    snap = take_snapshot(build_template("rail-cluster", nodes=2))
    for r, g in enumerate(snap.gpus.tolist()):
        gid = snap.node_ids[g]
        assert snap.node_ids[snap.gpu_nic[r]] == gid.replace("gpu", "nic")
        # joined by a PCIe arc
        assert np.any(
            (snap.arc_src == g) & (snap.arc_dst == snap.gpu_nic[r]) & (snap.arc_family == PCIE)
        )


def test_nics_not_on_the_compute_fabric_are_no_rail_nics():
    # A lone HGX board: NICs hang off the GPUs but no switch is cabled to them.
    snap = take_snapshot(build_template("hgx"))
    assert snap.gpu_nic.tolist() == [-1] * 8
