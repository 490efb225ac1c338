"""NCCL-grade time model for one collective: latency, protocols, channels, auto choice.

The flow solver routes an algorithm's traffic over the design and hands this module a
**bandwidth ceiling**: the bus bandwidth (nccl-tests ``busbw`` units) the algorithm
reaches at very large sizes on that topology, with the link efficiencies of the catalog
already applied.  This module owns everything that makes a real NCCL run differ from
``bytes / ceiling``:

* the three NCCL protocols (LL, LL128, Simple): a bandwidth fraction and a latency each;
* a launch cost (eager kernel launch or CUDA graph), a base latency per algorithm and
  protocol, and a per-step latency for NVLink, PCIe and network steps (the structure and
  the constants of NCCL's own tuner, ``src/graph/tuning.cc``, v2.30);
* the channel ramp: NCCL gives a collective one channel (one thread block) per
  ``threshold`` bytes, so a small message runs on few channels and cannot fill the links;
* per-algorithm large-size efficiencies (tree, NVLS, PAT);
* the automatic choice: the algorithm and protocol with the lowest predicted time, as
  NCCL's tuner picks them.

The time of one protocol is::

    t = launch + base + n_intra * step_intra + n_inter * (step_net + net_latency_us)
        + bus_factor * nbytes / min(ceiling * eff * fraction, channels(nbytes) * rate)

Ceilings, in bus-bandwidth units, for a per-GPU per-direction rate ``B`` (what the
calibration uses; the flow solve generalises them): ring over one NVSwitch plane ``B``;
NCCL's intra-node tree (a chain, ``2S`` per direction per GPU) ``B (n-1)/n``; NVLS
`nvls_bus_ceiling`; across nodes, a ring or hierarchical scheme with every rail busy
reaches the node's whole NIC rate ``N``, a double binary tree ``N/2 * 2(n-1)/n``.

Every figure lives in ``resources/solver/nccl_model.toml`` with its source; the fitted
ones come from ``benchmarks/calibrate_nccl.py``.  Time is in seconds, bandwidths in GB/s
(10^9 bytes/s), latency constants in microseconds.

Example
-------
>>> shape = CollectiveShape("allreduce", "ring", n_ranks=8, n_nodes=1,
...                         ceiling_GBps=370.8, nvlink_hops=1, net_hops=0)
>>> p = predict(shape, 4 << 30)
>>> 350 < float(p.busbw_GBps[0]) < 371
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from designer.model.errors import DesignError
from designer.model.scenario import LAUNCH_MODES as SCENARIO_LAUNCH_MODES
from designer.solver.timing.nccl_params import PROTOCOLS, ModelParams, _default_params
from designer.solver.timing.nccl_steps import (
    ALGORITHMS,
    COLLECTIVES,
    VALID_ALGORITHMS,
    bus_factor,
    nvls_bus_ceiling,
    step_split,
    steps,
)

# The step counts and the collective/algorithm matrix live in `nccl_steps`; the rest of
# the solver reads them from here, with the timing.
__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "COLLNET_NOTE",
    "LAUNCH_MODES",
    "NVLS_ALGORITHMS",
    "VALID_ALGORITHMS",
    "CollectiveShape",
    "Prediction",
    "bus_factor",
    "caveats",
    "choose",
    "nvls_bus_ceiling",
    "predict",
    "protocol_times",
    "steps",
]

LAUNCH_MODES: tuple[str, ...] = SCENARIO_LAUNCH_MODES

#: The in-switch reduction algorithms (NVLink SHARP), costed with the NVLS efficiency.
NVLS_ALGORITHMS: tuple[str, ...] = ("nvls", "nvlstree")

#: Protocols each algorithm can use (NVLS, CollNet and PAT are Simple-only in NCCL;
#: point-to-point has no LL128 path).
_ALGO_PROTOCOLS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "ring": PROTOCOLS,
        "tree": PROTOCOLS,
        "hierarchical": PROTOCOLS,
        "nvls": ("Simple",),
        "nvlstree": ("Simple",),
        "collnet": ("Simple",),
        "pat": ("Simple",),
        "p2p": ("LL", "Simple"),
        "direct": ("LL", "Simple"),
    }
)

#: What the collnet figures assume (`caveats`): the flow model reduces up an aggregation
#: tree of the fabric's SHARP switches (`flows.sharp`) at line rate and loads its links;
#: each tree level adds a switch hop up and one down to the network step (``net_hops``,
#: whose hops past the NIC cables ``net_latency_us`` charges).  The switches' SHARP
#: resources are not modelled.
COLLNET_NOTE = (
    "collnet (SHARP) is modelled as a reduction up an aggregation tree of the fabric's "
    "SHARP switches at line rate, loading the tree's links; the switches' SHARP resources "
    "(aggregation nodes, concurrent trees) are not modelled, so read the collnet figures "
    "as an upper bound"
)

#: Algorithms whose channel count NCCL fixes (no ramp with the message size).
_FIXED_CHANNELS = frozenset({"nvls", "nvlstree", "collnet"})



# --------------------------------------------------------------------------- shapes


@dataclass(frozen=True)
class CollectiveShape:
    """One collective on one topology, as the flow solver sees it.

    Parameters
    ----------
    collective : str
        One of `COLLECTIVES`.
    algorithm : str
        One of `VALID_ALGORITHMS` [collective].
    n_ranks : int
        GPUs taking part.
    n_nodes : int
        NVLink domains spanned (1 = every rank in one NVLink domain).
    ceiling_GBps : float
        Bus bandwidth (nccl-tests busbw units) the algorithm reaches at very large sizes
        on this topology, link efficiencies included.  For NVLS see `nvls_bus_ceiling`.
    nvlink_hops : int
        NVLink paths a step's data crosses in series: 1 for peers on one NVSwitch plane
        (GPU -> switch -> GPU, as on HGX boards and NVL72) or directly linked; 2 when it
        is relayed through an intermediate GPU or a second NVLink switch tier; 0 when
        the ranks of a node share no NVLink (PCIe steps).  NCCL's per-step NVLink
        constant is charged once per path.
    net_hops : int
        Switches crossed by an inter-node step (1 on the same leaf or rail, 3 through a
        spine...; collnet: the two NIC cables plus a hop up and a hop down per level of
        its SHARP tree); must be >= 1 when ``n_nodes > 1`` and 0 otherwise.  Its physical cost
        comes in through ``net_latency_us``; NCCL's per-step network constant is charged
        once per step.
    net_latency_us : float
        Extra per-step fabric latency from the topology (switch latencies x hops, cable
        delay), added to NCCL's per-step network constant on every inter-node step.
    tuner_ceiling_GBps : float, optional
        What NCCL's tuner *rates* the algorithm at, where that differs from what it
        reaches (``ceiling_GBps``): NCCL picks the algorithm and protocol with its own
        cost model (`choose`), and the pick then runs at its real speed.  A double binary
        tree across more than two nodes is rated at half the node's NIC bandwidth (an
        interior node sends about ``2S``; ``tuning.cc`` rates trees by ``bwInter`` and
        the 0.5 algorithm-bandwidth ratio).  None: rated at ``ceiling_GBps``.
    step_counts : (int, int), optional
        (intra-node, inter-node) latency steps where the plan is not NCCL's (a torus's
        rings per dimension, `flows.torus`); None: `step_split`'s.
    nvls_efficiency : float, optional
        For NVLS and NVLS-tree: NCCL's NVLS bandwidth factor for the generation of the
        NVLink switches that reduce (the catalog's ``nvls_efficiency``: 0.85 Hopper, 0.74
        Blackwell).  The fitted NVLS efficiency is scaled by its ratio to the model's
        ``reference_efficiency`` (Hopper, which it was fitted on); None: no scaling.
    """

    collective: str
    algorithm: str
    n_ranks: int
    n_nodes: int
    ceiling_GBps: float
    nvlink_hops: int
    net_hops: int
    net_latency_us: float = 0.0
    nvls_efficiency: float | None = None
    tuner_ceiling_GBps: float | None = None
    step_counts: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.collective not in VALID_ALGORITHMS:
            raise DesignError(f"unknown collective {self.collective!r}")
        if self.algorithm not in VALID_ALGORITHMS[self.collective]:
            raise DesignError(
                f"algorithm {self.algorithm!r} does not run {self.collective!r}"
                f" (one of {sorted(VALID_ALGORITHMS[self.collective])})"
            )
        if self.n_ranks < 1 or self.n_nodes < 1 or self.n_nodes > self.n_ranks:
            raise DesignError(
                f"{self.collective}: need 1 <= n_nodes <= n_ranks"
                f" (n_ranks={self.n_ranks}, n_nodes={self.n_nodes})"
            )
        if not self.ceiling_GBps > 0.0:
            raise DesignError(f"{self.collective}/{self.algorithm}: ceiling_GBps must be > 0")
        if self.tuner_ceiling_GBps is not None and not self.tuner_ceiling_GBps > 0.0:
            raise DesignError(f"{self.collective}/{self.algorithm}: tuner_ceiling_GBps "
                              "must be > 0")
        if self.nvls_efficiency is not None and not 0.0 < self.nvls_efficiency <= 1.0:
            raise DesignError(f"{self.collective}: nvls_efficiency must be in (0, 1], "
                              f"not {self.nvls_efficiency}")
        if self.nvlink_hops < 0 or self.net_hops < 0 or self.net_latency_us < 0:
            raise DesignError(f"{self.collective}: hop counts and net_latency_us must be >= 0")
        if (self.n_nodes > 1) != (self.net_hops > 0):
            raise DesignError(
                f"{self.collective}: net_hops={self.net_hops} does not fit"
                f" n_nodes={self.n_nodes} (>= 1 across nodes, 0 within one)"
            )
        if self.algorithm == "pat" and self.n_nodes != self.n_ranks:
            raise DesignError("pat: NCCL runs PAT with one GPU per node only")

    @property
    def ranks_per_node(self) -> int:
        """GPUs per NVLink domain (rounded up when the split is uneven)."""
        return -(-self.n_ranks // self.n_nodes)

    def as_rated(self) -> CollectiveShape:
        """This shape as NCCL's tuner sees it (its `tuner_ceiling_GBps` as the ceiling)."""
        if self.tuner_ceiling_GBps is None:
            return self
        return replace(self, ceiling_GBps=self.tuner_ceiling_GBps, tuner_ceiling_GBps=None)


@dataclass(frozen=True)
class Prediction:
    """Predicted timing of one collective over a range of message sizes.

    ``protocol`` holds, per size, the NCCL protocol with the lowest time; ``steps`` is
    the number of latency-bearing steps (see `steps`).
    """

    nbytes: np.ndarray
    time_s: np.ndarray
    algbw_GBps: np.ndarray
    busbw_GBps: np.ndarray
    protocol: np.ndarray
    steps: int


# --------------------------------------------------------------------------- timing


def _family(algorithm: str) -> str:
    """The NCCL constant family an algorithm is costed with."""
    return {"hierarchical": "ring", "p2p": "ring", "direct": "ring"}.get(algorithm, algorithm)


def _efficiency(algorithm: str, params: ModelParams, nvls: float | None = None) -> float:
    """Large-size share of the ceiling ``algorithm`` reaches (``nvls``: the switches'
    `CollectiveShape.nvls_efficiency`)."""
    if algorithm in NVLS_ALGORITHMS:
        if nvls is None:
            return params.nvls_efficiency
        return params.nvls_efficiency * nvls / params.nvls_reference
    eff = params.simple_efficiency
    if algorithm in ("tree", "pat", "collnet"):
        eff *= params.efficiency[algorithm]
    return eff


def _launch_us(params: ModelParams, launch: str, gpus_per_thread: int) -> float:
    if launch not in LAUNCH_MODES:
        raise DesignError(f"launch must be one of {LAUNCH_MODES}, not {launch!r}")
    if gpus_per_thread < 1:
        raise DesignError(f"gpus_per_thread must be >= 1, not {gpus_per_thread}")
    if launch == "graph":
        return params.launch_graph_us
    # one host thread launches one kernel per GPU it drives, one after the other, and
    # the collective cannot finish before the last kernel has started
    return params.launch_eager_us * gpus_per_thread


def _latency_us(
    shape: CollectiveShape, protocol: str, params: ModelParams, launch_us: float
) -> float:
    algo = "p2p" if shape.collective in ("alltoall", "sendrecv") else shape.algorithm
    fam = _family(algo)
    intra, inter = shape.step_counts or step_split(shape.collective, algo, shape.n_ranks,
                                                   shape.n_nodes)
    lat = launch_us + params.base_us[fam][protocol]
    if fam in NVLS_ALGORITHMS:
        step_intra = params.nvls_step_us
    elif shape.nvlink_hops > 0:
        step_intra = params.step_us["nvlink"][fam][protocol] * shape.nvlink_hops
    else:
        step_intra = params.step_us["pcie"][fam][protocol]
    # NCCL charges a ring that has a single GPU per node with the tree's network step
    # (no intra-node stage left to hide the network behind).
    net_fam = "tree" if fam == "ring" and shape.ranks_per_node == 1 else fam
    step_inter = params.step_us["net"][net_fam][protocol] + shape.net_latency_us
    return lat + intra * step_intra + inter * step_inter


def _bandwidth_GBps(
    shape: CollectiveShape, protocol: str, nbytes: np.ndarray, params: ModelParams,
    rated: bool = False,
) -> np.ndarray:
    """Bus bandwidth of one protocol at each size: the ceiling, or the channel ramp
    (``rated``: as NCCL's tuner rates it, with its medium-size tree correction)."""
    algo = "p2p" if shape.collective in ("alltoall", "sendrecv") else shape.algorithm
    frac = params.fraction(protocol)
    full = shape.ceiling_GBps * _efficiency(algo, params, shape.nvls_efficiency) * frac
    if rated and algo == "tree" and shape.collective == "allreduce":
        full = full * tree_correction(params, protocol, nbytes)
    if algo in _FIXED_CHANNELS:
        return np.full(nbytes.shape, full)
    # NCCL drops channels while nbytes < channels * threads * threshold; each channel
    # (one thread block) moves at most `channel_GBps` (bus units).  Below one channel
    # NCCL also sheds threads, but each thread then has a line or two per step and the
    # step latency, already counted, is what it waits for: the floor is one channel.
    per_thread = params.thread_threshold[protocol]
    if params.threshold_per_rank[protocol] and algo in ("ring", "hierarchical"):
        per_thread *= shape.n_ranks  # a ring step moves nbytes / n_ranks per channel
    per_channel_bytes = per_thread * params.max_threads[protocol]
    channels = np.maximum(nbytes / per_channel_bytes, 1.0)
    return np.minimum(full, channels * params.channel_GBps * frac)


def tree_correction(params: ModelParams, protocol: str, nbytes: np.ndarray) -> np.ndarray:
    """NCCL's medium-size factor on a tree all-reduce's bandwidth (``tuning.cc``
    ``treeCorrectionFactor``), by protocol and ``log2(nbytes / 64)``; 1 beyond its table.

    >>> tree_correction(_default_params(), "Simple", np.array([1 << 20, 1 << 34])).tolist()
    [0.5, 1.0]
    """
    table = np.asarray(params.tree_correction[protocol])
    log = np.floor(np.log2(np.maximum(nbytes / 64.0, 1.0))).astype(np.int64)
    return np.where(log < len(table), table[np.minimum(log, len(table) - 1)], 1.0)


def _ring_plateau(shape: CollectiveShape, protocol: str, nbytes: np.ndarray,
                  params: ModelParams) -> np.ndarray:
    """NCCL's latency factor on a multi-node Simple ring all-reduce whose per-rank share
    of a channel reaches 64 bytes ("plateau effect of ring"), else 1."""
    if not (shape.algorithm == "ring" and protocol == "Simple" and shape.n_nodes > 1
            and shape.collective == "allreduce"):
        return np.ones(nbytes.shape)
    share = nbytes / (params.ring_plateau_channels * shape.n_ranks)
    return np.where(share >= 64, params.ring_plateau, 1.0)


def _as_sizes(nbytes: Any) -> np.ndarray:
    sizes = np.atleast_1d(np.asarray(nbytes, dtype=float))
    if sizes.ndim != 1 or np.any(~np.isfinite(sizes)) or np.any(sizes <= 0):
        raise DesignError("nbytes: message sizes must be positive and finite")
    return sizes


def protocol_times(
    shape: CollectiveShape,
    nbytes: Any,
    params: ModelParams | None = None,
    *,
    launch: str = "eager",
    gpus_per_thread: int = 1,
    rated: bool = False,
) -> dict[str, np.ndarray]:
    """Predicted time (s) of each protocol the algorithm can use, per size.

    ``rated``: the time NCCL's tuner *expects* instead, which it picks by: at the shape's
    `CollectiveShape.tuner_ceiling_GBps`, with NCCL's medium-size tree correction
    (`tree_correction`).  The correction steers NCCL's choice; whether a tree really runs
    slower at those sizes is not in it (a published 2-node tree curve does not,
    docs/model.md), so the time of the algorithm that runs leaves it out.

    Examples
    --------
    >>> shape = CollectiveShape("allreduce", "nvls", 8, 1, 480.0, 1, 0)
    >>> list(protocol_times(shape, 1 << 20))
    ['Simple']
    """
    params = params or _default_params()
    launch_us = _launch_us(params, launch, gpus_per_thread)
    sizes = _as_sizes(nbytes)
    if rated:
        shape = shape.as_rated()
    algo = "p2p" if shape.collective in ("alltoall", "sendrecv") else shape.algorithm
    factor = bus_factor(shape.collective, shape.n_ranks)
    out = {}
    for proto in _ALGO_PROTOCOLS[algo]:
        bw = _bandwidth_GBps(shape, proto, sizes, params, rated)
        lat_us = launch_us + (_latency_us(shape, proto, params, launch_us) - launch_us) * (
            _ring_plateau(shape, proto, sizes, params))
        # one rank: bus factor 0, nothing crosses a link, only the launch remains
        out[proto] = lat_us * 1e-6 + factor * sizes / (bw * 1e9)
    if algo == "p2p":
        # NCCL's rule, not its tuner: LL for a peer's bytes up to the threshold, Simple
        # above it (the other protocol is simply not run there).
        per_peer = sizes / (max(shape.n_ranks, 1) if shape.collective == "alltoall" else 1)
        small = per_peer <= params.p2p_ll_threshold
        out["LL"] = np.where(small, out["LL"], np.inf)
        out["Simple"] = np.where(small, np.inf, out["Simple"])
    return out


def predict(
    shape: CollectiveShape,
    nbytes: Any,
    params: ModelParams | None = None,
    *,
    launch: str = "eager",
    gpus_per_thread: int = 1,
    rated: bool = False,
) -> Prediction:
    """Predict the time and bandwidths of a collective at each message size.

    Parameters
    ----------
    shape : CollectiveShape
        The collective, its algorithm and the topology figures from the flow solve.
    nbytes : int or array of int
        Message sizes in bytes (the nccl-tests "size").
    params : ModelParams, optional
        Model parameters; default: `load_params` ().
    launch : {"eager", "graph"}
        How the kernel is launched: a host launch per call (nccl-tests' default) or
        a captured CUDA graph (``-G``), which hides the host cost.
    gpus_per_thread : int
        GPUs one host thread drives (nccl-tests ``-g``); eager launches are serial, so
        each adds a launch.  1 for the usual one process per GPU.
    rated : bool
        The times NCCL's tuner expects (see `protocol_times`) rather than the model's.

    Returns
    -------
    Prediction
        Per size: time, algbw, busbw and the protocol NCCL's tuner picks.

    Examples
    --------
    >>> s = CollectiveShape("allreduce", "ring", 8, 1, 240.0, 1, 0)
    >>> p = predict(s, [32 << 10, 16 << 30])
    >>> bool(p.time_s[0] < p.time_s[1]), str(p.protocol[0]), str(p.protocol[1])
    (True, 'LL', 'Simple')
    """
    kw = {"launch": launch, "gpus_per_thread": gpus_per_thread}
    times = protocol_times(shape, nbytes, params, rated=rated, **kw)
    sizes = _as_sizes(nbytes)
    names = list(times)
    stack = np.vstack([times[p] for p in names])
    # NCCL picks the protocol by its own rating of the algorithm; it then runs at the
    # algorithm's real speed.
    r = times if rated else protocol_times(shape, nbytes, params, rated=True, **kw)
    best = np.argmin(np.vstack([r[p] for p in names]), axis=0)
    time_s = stack[best, np.arange(sizes.size)]
    algbw = sizes / time_s / 1e9
    return Prediction(
        nbytes=sizes,
        time_s=time_s,
        algbw_GBps=algbw,
        busbw_GBps=algbw * bus_factor(shape.collective, shape.n_ranks),
        protocol=np.asarray(names, dtype=str)[best],
        steps=(sum(shape.step_counts) if shape.step_counts else
               steps(shape.collective, shape.algorithm, shape.n_ranks, shape.n_nodes)),
    )


#: The most GPUs per NVLink domain that a measured NVLS row covers (the calibration's
#: 8-GPU boards; public 8-GPU Blackwell figures agree within 4 %, docs/model.md).
NVLS_MEASURED_RANKS = 8


def caveats(shape: CollectiveShape) -> tuple[str, ...]:
    """What the model knows to be uncertain about ``shape``'s prediction, one line each.

    >>> caveats(CollectiveShape("allreduce", "nvls", 72, 1, 1404.0, 1, 0))[0][:33]
    'NVLS on 72 GPUs in one NVLink dom'
    >>> caveats(CollectiveShape("allreduce", "nvls", 8, 1, 1122.8, 1, 0))
    ()
    >>> caveats(CollectiveShape("allreduce", "collnet", 16, 2, 376.0, 1, 2))[0][:30]
    'collnet (SHARP) is modelled as'
    """
    if shape.algorithm in NVLS_ALGORITHMS and shape.ranks_per_node > NVLS_MEASURED_RANKS:
        return (f"NVLS on {shape.ranks_per_node} GPUs in one NVLink domain: measured rows "
                f"cover up to {NVLS_MEASURED_RANKS}, and a whole NVL72 rack measures "
                "16-24 % below this model; read the NVLS figures as an upper bound",)
    if shape.algorithm == "collnet":
        return (COLLNET_NOTE,)
    return ()


def choose(
    shapes: Sequence[CollectiveShape],
    nbytes: Any,
    params: ModelParams | None = None,
    *,
    launch: str = "eager",
    gpus_per_thread: int = 1,
) -> tuple[np.ndarray, list[Prediction]]:
    """NCCL's "auto": for each size, the shape (algorithm) NCCL's tuner rates fastest.

    The tuner's rating is `predict` with ``rated=True``: each shape's
    `tuner_ceiling_GBps` where it has one (a tree across more than two nodes) and NCCL's
    medium-size tree correction; the predictions returned are at the shapes' real
    ceilings, so a pick can be slower than NCCL thought, as on the hardware.

    Parameters
    ----------
    shapes : sequence of CollectiveShape
        The candidate algorithms of one collective (the caller decides which are valid
        on the design, e.g. NVLS only where the switches reduce).
    nbytes, params, launch, gpus_per_thread
        As for `predict`.

    Returns
    -------
    best : ndarray of int
        Index into ``shapes`` of the fastest candidate at each size.
    predictions : list of Prediction
        One per shape, in order.

    Examples
    --------
    >>> ring = CollectiveShape("allreduce", "ring", 8, 1, 370.8, 1, 0)
    >>> nvls = CollectiveShape("allreduce", "nvls", 8, 1, nvls_bus_ceiling(370.8, 8), 1, 0)
    >>> best, _ = choose([ring, nvls], [1 << 10, 1 << 32])
    >>> best.tolist()
    [0, 1]
    """
    if not shapes:
        raise DesignError("choose: no candidate algorithms")
    collectives = {s.collective for s in shapes}
    if len(collectives) > 1:
        raise DesignError(f"choose: candidates mix collectives {sorted(collectives)}")
    preds = [
        predict(s, nbytes, params, launch=launch, gpus_per_thread=gpus_per_thread) for s in shapes
    ]
    # The pick is by NCCL's rating of each candidate (`CollectiveShape.tuner_ceiling_GBps`,
    # its medium-size tree correction), the predictions are what the candidates reach.
    rated = [
        predict(s, nbytes, params, launch=launch, gpus_per_thread=gpus_per_thread, rated=True)
        for s in shapes
    ]
    best = np.argmin(np.vstack([p.time_s for p in rated]), axis=0)
    return best, preds
