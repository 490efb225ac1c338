"""Each GPU's rail NIC (`assign_nics`), for `designer.solver.snapshot.build`: its own, a
sibling's over NVLink (NCCL's PXN) or one on its host, in NCCL's order of preference.
Pure numpy over the snapshot's arcs."""

from __future__ import annotations

import numpy as np

__all__ = ["assign_nics"]


def assign_nics(arc_src: np.ndarray, arc_dst: np.ndarray, pcie: np.ndarray,
                 is_gpu: np.ndarray, fabric_nic: np.ndarray, gpus: np.ndarray,
                 gpu_domain: np.ndarray, gpu_local: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each rank's rail NIC, the node it is reached through (-1: its own PCIe link) and,
    for a NIC on the rank's own PCIe link, the arc to it (else -1).

    In NCCL's order of preference (its path types PIX/PXB < PXN < PHB):

    1. a NIC on the GPU's own PCIe link (the lowest such arc);
    2. PXN: the NIC of a GPU of the same NVLink domain, reached over NVLink and that
       GPU's PCIe link.  The domain's GPUs without a NIC are split evenly over its NICs,
       in local order, starting with the NIC of the GPU just before the first of them
       (GPU 3 of 8 whose NIC failed uses GPU 2's; with NICs on GPUs 0, 2, 4 and 6, GPU
       2j + 1 uses GPU 2j's);
    3. a NIC on a host the GPU is joined to by PCIe (through the CPU), the GPUs of one
       host taking its NICs in turn.

    Only the GPUs that lack a NIC of their own cost anything beyond step 1.
    """
    n_gpus = len(gpus)
    # Among the PCIe arcs only (a third of a cluster's): gathers over them, not all arcs.
    nic_arcs = np.flatnonzero(pcie)
    nic_arcs = nic_arcs[is_gpu[arc_src[nic_arcs]] & fabric_nic[arc_dst[nic_arcs]]]
    nic_of = np.full(len(is_gpu), -1, dtype=np.int32)
    gpu_with, first_arc = np.unique(arc_src[nic_arcs], return_index=True)  # lowest arc first
    nic_of[gpu_with] = arc_dst[nic_arcs[first_arc]]
    gpu_nic = nic_of[gpus]
    # The arc found is also the lowest from the GPU to that NIC (any lower one would
    # have been found instead): the router's own lookup, made here for free.
    arc_of = np.full(len(is_gpu), -1, dtype=np.int32 if len(arc_src) < 2**31 else np.int64)
    arc_of[gpu_with] = nic_arcs[first_arc]
    nic_arc = arc_of[gpus]
    via = np.full(n_gpus, -1, dtype=np.int32)
    orphans = np.flatnonzero(gpu_nic < 0)
    if orphans.size == 0:
        return gpu_nic, via, nic_arc

    # 2. PXN, domain by domain: orphan k of m goes to owner (base + k p // m) mod p.
    owners = np.flatnonzero(gpu_nic >= 0)
    n_dom = int(gpu_domain.max()) + 1
    span = int(gpu_local.max()) + 1
    owners = owners[np.lexsort((gpu_local[owners], gpu_domain[owners]))]
    o_key = gpu_domain[owners].astype(np.int64) * span + gpu_local[owners]
    o_ptr = np.searchsorted(gpu_domain[owners], np.arange(n_dom + 1))
    orphans = orphans[np.lexsort((gpu_local[orphans], gpu_domain[orphans]))]
    dom = gpu_domain[orphans].astype(np.int64)
    p = np.diff(o_ptr)[dom]
    first = np.searchsorted(dom, dom)                     # the domain's first orphan
    k = np.arange(len(orphans)) - first
    m = np.bincount(dom, minlength=n_dom)[dom]
    before = np.searchsorted(o_key, dom * span + gpu_local[orphans[first]]) - o_ptr[dom]
    pxn = p > 0
    safe_p = np.maximum(p, 1)
    pos = ((before - 1) % safe_p + k * p // m) % safe_p
    if pxn.any():
        owner = owners[np.minimum(o_ptr[dom] + pos, len(owners) - 1)]
        gpu_nic[orphans[pxn]] = gpu_nic[owner[pxn]]
        via[orphans[pxn]] = gpus[owner[pxn]]

    # 3. Through a host: PCIe GPU -> host (lowest arc) where the host has fabric NICs.
    left = orphans[~pxn]
    host_nic = pcie & ~is_gpu[arc_src] & ~fabric_nic[arc_src] & fabric_nic[arc_dst]
    if left.size == 0 or not host_nic.any():
        return gpu_nic, via, nic_arc
    has_nic = np.zeros(len(is_gpu), dtype=bool)
    has_nic[arc_src[host_nic]] = True
    rank_of = np.full(len(is_gpu), -1, dtype=np.int64)
    rank_of[gpus[left]] = left
    up = np.flatnonzero(pcie & (rank_of[arc_src] >= 0) & has_nic[arc_dst])
    ranks, first_arc = np.unique(rank_of[arc_src[up]], return_index=True)  # rank order
    if ranks.size == 0:
        return gpu_nic, via, nic_arc
    host = arc_dst[up[first_arc]].astype(np.int64)
    pairs = np.unique(arc_src[host_nic].astype(np.int64) * len(is_gpu) + arc_dst[host_nic])
    h_of, nic_list = pairs // len(is_gpu), pairs % len(is_gpu)    # NICs of each host
    h_ptr = np.searchsorted(h_of, host)
    q = np.searchsorted(h_of, host, side="right") - h_ptr
    order = np.argsort(host, kind="stable")
    hs = host[order]
    k = np.empty(len(ranks), dtype=np.int64)
    k[order] = np.arange(len(ranks)) - np.searchsorted(hs, hs)  # turn among the host's GPUs
    gpu_nic[ranks] = nic_list[h_ptr + k % q]
    via[ranks] = host
    return gpu_nic, via, nic_arc
