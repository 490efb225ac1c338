"""What NCCL's collectives are made of, before any timing: which algorithms run which
collective, how many latency-bearing steps each takes inside and across nodes, the
nccl-tests factor from algorithm to bus bandwidth, and the NVLS (in-switch reduction)
bandwidth ceiling.  `designer.solver.timing.nccl_model` times them; the rest of the solver
imports these names from there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from designer.model.errors import DesignError

COLLECTIVES: tuple[str, ...] = (
    "allreduce",
    "allgather",
    "reducescatter",
    "broadcast",
    "reduce",
    "alltoall",
    "sendrecv",
)
ALGORITHMS: tuple[str, ...] = (
    "ring",
    "tree",
    "nvls",
    "nvlstree",
    "collnet",
    "hierarchical",
    "pat",
    "p2p",
    "direct",
)
#: Which algorithms run which collective (NCCL's matrix, plus "hierarchical" for the
#: flow solver's reduce-inside-the-node scheme; all-to-all and send/recv are NCCL
#: point-to-point, "ring" is accepted there as a synonym of "p2p"; "direct" is RCCL's
#: one-hop exchange with every peer on a switchless full mesh, `flows.mesh`).
VALID_ALGORITHMS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "allreduce": frozenset({"ring", "tree", "nvls", "nvlstree", "collnet", "hierarchical",
                                "direct"}),
        "allgather": frozenset({"ring", "nvls", "collnet", "pat", "hierarchical", "direct"}),
        "reducescatter": frozenset({"ring", "nvls", "collnet", "pat", "hierarchical",
                                    "direct"}),
        "broadcast": frozenset({"ring"}),
        "reduce": frozenset({"ring"}),
        "alltoall": frozenset({"p2p", "ring"}),
        "sendrecv": frozenset({"p2p", "ring"}),
    }
)



def bus_factor(collective: str, n_ranks: int) -> float:
    """The nccl-tests factor from algorithm bandwidth to bus bandwidth.

    ``2(n-1)/n`` for all-reduce, ``(n-1)/n`` for all-gather, reduce-scatter and
    all-to-all, 1 for broadcast, reduce and send/recv.

    Examples
    --------
    >>> bus_factor("allreduce", 8)
    1.75
    """
    if collective not in VALID_ALGORITHMS:
        raise DesignError(f"unknown collective {collective!r}")
    n = max(int(n_ranks), 1)
    if collective == "allreduce":
        return 2.0 * (n - 1) / n
    if collective in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def _log2_ceil(n: int) -> int:
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0


#: Peers one round of NCCL point-to-point work reaches at once: its p2p channels (32 on
#: the NVSwitch systems of the calibration; ``paths.cc`` ``p2pnChannels``) times the
#: sends a channel batches (``device.h`` ``NCCL_MAX_DEV_WORK_P2P_PER_BATCH`` = 8).  Since
#: NCCL 2.2x fits every peer of a multi-node all-to-all in as few rounds as that allows
#: (``ncclTopoComputeP2pChannels``), an all-to-all pays a step latency per round, not
#: per peer.
P2P_PEERS_PER_ROUND = 32 * 8


def _nvls_handshakes(ppn: int) -> int:
    """Handshakes of NVLS's intra-node stage: one per local peer each way (the fitted
    per-handshake latency, ``[nvls] step_us``).  Not capped at NCCL's 32 NVLS heads
    (``NCCL_MAX_NVLS_ARITY``): a whole NVL72 rack's measured curve (coreweave/nccl-tests#43)
    has ~0.6 ms of fixed cost at 72 GPUs, nearer 2 x 71 handshakes (0.42 ms) than
    2 x 31 (0.19 ms)."""
    return 2 * (ppn - 1)


def _rounds(peers: int) -> int:
    return -(-max(int(peers), 0) // P2P_PEERS_PER_ROUND)


def step_split(collective: str, algorithm: str, n_ranks: int, n_nodes: int) -> tuple[int, int]:
    """(intra-node steps, inter-node steps) on the latency critical path."""
    n, nodes = int(n_ranks), int(n_nodes)
    ppn = -(-n // nodes)
    if n <= 1:
        return 0, 0
    two = 2 if collective == "allreduce" else 1  # all-reduce = reduce-scatter + all-gather
    if algorithm in ("p2p", "ring") and collective in ("alltoall", "sendrecv"):
        if collective == "sendrecv":
            return (0, 1) if nodes > 1 else (1, 0)
        # the local peers and the remote ones, each in rounds of P2P_PEERS_PER_ROUND
        return _rounds(ppn - 1), _rounds(n - ppn)
    if algorithm == "direct":
        # direct (`flows.mesh`): every peer at once, a reduce-scatter then an all-gather
        return two * _rounds(ppn - 1), two * _rounds(n - ppn)
    if algorithm == "ring":
        total = two * (n - 1)
        inter = two * (nodes - 1)
        return total - inter, inter
    if algorithm == "hierarchical":
        # reduce-scatter inside the node, ring across nodes on each rail, all-gather back
        return two * (ppn - 1), two * (nodes - 1)
    if algorithm == "tree":
        # NCCL: a chain inside each node, a double binary tree across nodes, up and down
        return 2 * (ppn - 1), 2 * _log2_ceil(nodes)
    if algorithm == "nvls":
        # NCCL's NVLS scatters each buffer to every local head and gathers the reduced
        # shards back, one Simple-style handshake per head each way; the in-switch
        # reduction itself adds no step.  Across nodes, one trip through the network.
        return _nvls_handshakes(ppn), (1 if nodes > 1 else 0)
    if algorithm == "nvlstree":
        # NCCL tuning.cc charges NVLS-tree the same intra-node NVLS latency as NVLS (the
        # same scatter/reduce/gather with the same heads; the multicast back overlaps the
        # tree), then up and down the tree across nodes
        return _nvls_handshakes(ppn), 2 * _log2_ceil(nodes)
    if algorithm == "collnet":
        # gather to the node's NIC heads, one trip through the switch reduction tree, back
        return (2 if ppn > 1 else 0), 1
    if algorithm == "pat":
        return 0, _log2_ceil(n)
    raise DesignError(f"algorithm {algorithm!r} does not run {collective!r}")


def steps(collective: str, algorithm: str, n_ranks: int, n_nodes: int) -> int:
    """Number of latency-bearing steps of one collective.

    Ring all-reduce ``2(n-1)``; ring all-gather, reduce-scatter, broadcast, reduce
    ``n-1``; tree all-reduce ``2((n/nodes - 1) + ceil(log2 nodes))`` (a chain inside the
    node, a binary tree across nodes, as NCCL builds it); NVLS ``2(n/nodes - 1)``
    handshakes with the local peers (+1 network step across nodes); NVLS-tree
    ``2(n/nodes - 1) + 2 ceil(log2 nodes)``; CollNet 2 + 1; hierarchical
    ``2(n/nodes - 1) + 2(nodes - 1)``; PAT ``ceil(log2 n)``; all-to-all ``n-1``
    exchanges; send/recv 1.

    Examples
    --------
    >>> steps("allreduce", "ring", 8, 1), steps("allgather", "ring", 8, 1)
    (14, 7)
    >>> steps("allreduce", "tree", 64, 8)
    20
    """
    if collective not in VALID_ALGORITHMS:
        raise DesignError(f"unknown collective {collective!r}")
    if algorithm not in VALID_ALGORITHMS[collective]:
        raise DesignError(f"algorithm {algorithm!r} does not run {collective!r}")
    intra, inter = step_split(collective, algorithm, n_ranks, n_nodes)
    return intra + inter


def nvls_bus_ceiling(per_gpu_GBps: float, n_ranks: int) -> float:
    """Bus-bandwidth ceiling of an NVLS (in-switch) all-reduce inside one NVLink domain.

    With in-switch reduction each GPU pushes every byte of its buffer to the switch once
    (the switch reads each shard from every GPU: ``S`` up) and pushes its reduced shard
    back for multicast (``S/n`` up); downstream it receives its reduced shard (``S/n``)
    and every multicast shard (``S``).  So each direction of a GPU's NVLink carries
    ``S (1 + 1/n)``: the algorithm bandwidth is ``B / (1 + 1/n)`` for a per-GPU,
    per-direction NVLink rate ``B``, and the bus bandwidth (factor ``2(n-1)/n``)
    is ``B * 2(n-1)/(n+1)``: 1.556 B for 8 GPUs (a ring reaches B).  NCCL's measured
    NVLS figures sit a constant fraction below this (``nvls_efficiency``).

    Examples
    --------
    >>> round(nvls_bus_ceiling(18 * 25 * 0.824, 8), 1)
    576.8
    """
    n = int(n_ranks)
    if n < 2:
        return float(per_gpu_GBps)
    return float(per_gpu_GBps) * 2.0 * (n - 1) / (n + 1)
