"""Ranks grouped by NVLink domain, and rail-aware ring orders over them (`ring_order`):
the layout every ring channel of `collectives` follows; its planners build on it.
Pure numpy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from designer.solver.snapshot.build import Snapshot

__all__ = [
    "RingLayout", "by_domain", "first_ranks", "grouped", "ring_layout", "ring_order", "ring_orders",
]


def grouped(snap: Snapshot, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`by_domain` as arrays: the ranks in order, and each domain group's start and size."""
    ranks = np.asarray(ranks)
    if ranks.size == 0:
        return ranks, np.zeros(0, np.int64), np.zeros(0, np.int64)
    dom = snap.gpu_domain[ranks].astype(np.int64)
    key = dom * (int(snap.gpu_local.max(initial=0)) + 1) + snap.gpu_local[ranks]
    # Usually the ranks are in order already (no sort); (domain, local) keys are distinct.
    in_order = bool(np.all(key[1:] > key[:-1]))
    order = np.arange(len(ranks)) if in_order else np.argsort(key, kind="stable")
    dom = dom[order]
    starts = np.flatnonzero(np.r_[True, dom[1:] != dom[:-1]])
    return ranks[order], starts, np.diff(np.r_[starts, len(ranks)])


def first_ranks(snap: Snapshot, n: int) -> list[int]:
    """The first ``n`` ranks in structural order (whole NVLink domains, in their order,
    each in rail order), as sorted rank indices: what "the first N GPUs" of a scenario
    means.  Taken from GPU ids instead, renaming GPUs would pick other GPUs (half of
    two servers instead of one whole server, say) and change the answer."""
    srt = grouped(snap, np.arange(snap.n_gpus))[0]
    return sorted(srt[:n].tolist())


def by_domain(snap: Snapshot, ranks: np.ndarray) -> list[np.ndarray]:
    """Ranks grouped by NVLink domain (domains in order), each sorted by local index."""
    srt, starts, sizes = grouped(snap, ranks)
    return [srt[i:i + n] for i, n in zip(starts.tolist(), sizes.tolist(), strict=True)]


@dataclass(frozen=True, eq=False)
class RingLayout:
    """Ranks of a ring, grouped by domain (``srt``, ``starts``, ``sizes`` as `grouped`),
    and ``heads``: the position in its domain where each channel starts."""

    srt: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    heads: np.ndarray


def ring_layout(snap: Snapshot, ranks: np.ndarray) -> RingLayout:
    """Domain order for rings, and one channel per NIC when the ring leaves its domain.

    Inside one domain: local order, a channel per GPU.  Across domains, GPUs that share a
    NIC (PXN, see `rail_nics.assign_nics`) are put next to each other (by the first local
    index of their NIC's GPUs, then local index; the identity when every GPU has its own
    NIC) and channel ``c`` starts at the ``c``-th NIC's first GPU of the domain with the
    fewest NICs, so every NIC sends one channel and receives one (NCCL opens channels per
    NIC: 4 NICs give 4 x the NIC rate, not 8 channels on 4 NICs).
    """
    srt, starts, sizes = grouped(snap, ranks)
    if len(starts) <= 1:
        return RingLayout(srt, starts, sizes, np.arange(int(sizes[0]) if len(sizes) else 1))
    n_dom = len(starts)
    nic = snap.gpu_nic[srt].astype(np.int64)
    if nic.min() >= 0 and np.all(np.bincount(nic, minlength=snap.n_nodes)[nic] == 1):
        # Every rank on its own NIC (the common case): local order, a channel per rail.
        return RingLayout(srt, starts, sizes, np.arange(int(sizes.min())))
    dom = np.repeat(np.arange(n_dom), sizes)
    pos = np.arange(len(srt)) - np.repeat(starts, sizes)
    width = snap.n_nodes + int(sizes.max())
    # A rank without a NIC is a group of its own (the route will say what is missing).
    key = dom * width + np.where(nic >= 0, nic, snap.n_nodes + pos)
    uniq, inverse = np.unique(key, return_inverse=True)
    first = np.full(len(uniq), len(srt), dtype=np.int64)
    np.minimum.at(first, inverse.reshape(-1), pos)
    head_of = first[inverse.reshape(-1)]
    order = np.lexsort((pos, head_of, dom))
    srt, head_of = srt[order], head_of[order]
    new_group = np.r_[True, head_of[1:] != head_of[:-1]] | (pos == 0)
    groups = np.bincount(dom, weights=new_group, minlength=n_dom).astype(np.int64)
    poorest = int(np.argmin(groups))
    sl = slice(int(starts[poorest]), int(starts[poorest] + sizes[poorest]))
    heads = np.flatnonzero(new_group[sl])
    return RingLayout(srt, starts, sizes, heads)


def ring_orders(layout: RingLayout, channels: range | list[int]) -> np.ndarray:
    """`ring_order` for each channel, one row per channel."""
    n_dom = len(layout.starts)
    if n_dom % 2 == 0 and n_dom and int(layout.sizes.min()) == int(layout.sizes.max()):
        return _even_orders(layout, channels)
    return _any_orders(layout, channels)


def _any_orders(layout: RingLayout, channels: range | list[int]) -> np.ndarray:
    """`ring_orders` of any layout."""
    srt, starts, sizes = layout.srt, layout.starts, layout.sizes
    n_dom = len(starts)
    j = np.repeat(np.arange(n_dom), sizes)
    base = np.repeat(starts, sizes)
    k = np.arange(len(srt)) - base
    size = np.repeat(sizes, sizes)
    odd = j % 2 == 1
    # With an odd number of domains the alternation would end where it started (one hop
    # between two rails): the last domain starts one position further on instead, and
    # the one before it swaps its last two GPUs to end there.
    fix = n_dom % 2 == 1 and n_dom >= 3 and bool(np.all(sizes[-2:] >= 3))
    last = j == n_dom - 1 if fix else np.zeros(len(srt), dtype=bool)
    swap = (j == n_dom - 2) & (k >= size - 2) if fix else np.zeros(len(srt), dtype=bool)
    # Rank ids as int32 (as `FlowBuilder.transfers` keeps them): no copy of the rings.
    out = np.empty((len(channels), len(srt)), dtype=np.int32 if len(srt) < 2**31 else np.int64)
    # Even groups: rolled to start at the channel's head; odd groups: the same, reversed
    # (start one before the head, end on it).  Positions before the roll are in [0, size)
    # and a roll is in [0, size], so a roll wraps by one subtraction, not a division per
    # rank (eight channels of 131,072 ranks: 4 million of them).
    turned = np.where(odd, size - 1 - k, k)
    smallest = int(sizes.min(initial=1))
    for row, c in enumerate(channels):
        head = int(layout.heads[c % len(layout.heads)])
        shift = (head if head < smallest else head % size) + last
        at = _wrapped(turned + shift, size)
        if fix:
            at = np.where(swap, _wrapped(k - (size - 2) + shift, size), at)
        at += base
        out[row] = srt[at]
    return out


def _even_orders(layout: RingLayout, channels: range | list[int]) -> np.ndarray:
    """`ring_orders` of an even number of domains of one size (a cluster of identical
    boards): every even domain is rolled alike and every odd one reversed alike, so a
    channel's row is two gathers through one pattern of positions each."""
    size = int(layout.sizes[0])
    pairs = layout.srt.reshape(-1, 2, size)   # [domain pair, even / odd, position]
    k = np.arange(size)
    out = np.empty((len(channels), layout.srt.size),
                   dtype=np.int32 if layout.srt.size < 2**31 else np.int64)
    for row, c in enumerate(channels):
        head = int(layout.heads[c % len(layout.heads)])
        mine = out[row].reshape(-1, 2, size)
        mine[:, 0] = pairs[:, 0, (k + head) % size]
        mine[:, 1] = pairs[:, 1, (size - 1 - k + head) % size]
    return out


def _wrapped(at: np.ndarray, size: np.ndarray) -> np.ndarray:
    """``at % size`` for ``0 <= at < 2 * size`` (in place)."""
    at -= size * (at >= size)
    return at


def ring_order(snap: Snapshot, ranks: np.ndarray, channel: int) -> np.ndarray:
    """Rail-aware ring order of ``ranks`` for ``channel``.

    Inside a domain the ring is rotated to start at the channel's head (local position
    ``channel`` when every GPU has its own NIC; see `ring_layout`).  Domains alternate
    direction, so the hop from one domain to the next joins GPUs of the same rail
    (domain j ends on the rail where domain j+1 starts) and inter-node traffic stays on
    one leaf per rail.  With an odd number of domains the last one enters on a third rail
    (the one before it ends there), so the wrap-around hop is rail-aligned too; only
    domains of 2 GPUs cannot do that.  NCCL gets the same by entering and leaving a node
    through one NIC (the last GPU sends through PXN); here no hop needs the relay.

    >>> from designer.model.templates import build_template
    >>> from designer.solver.snapshot.build import take_snapshot
    >>> snap = take_snapshot(build_template("rail-cluster", nodes=3))
    >>> order = ring_order(snap, np.arange(snap.n_gpus), 0)
    >>> [(int(snap.gpu_local[a]), int(snap.gpu_local[b])) for a, b in
    ...  zip(order, np.roll(order, -1)) if snap.gpu_domain[a] != snap.gpu_domain[b]]
    [(7, 7), (1, 1), (0, 0)]
    """
    return ring_orders(ring_layout(snap, ranks), [channel])[0]
