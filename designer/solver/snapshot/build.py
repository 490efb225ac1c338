"""Immutable array snapshot of a `Topology`: what the solver sees instead of the model.

Every GPU gets a rail NIC where the design lets it reach one: its own, a sibling's over
NVLink (NCCL's PXN) or one on its host (`rail_nics.assign_nics`).

Each link bundle gives two directed arcs (full duplex): arc ``2k`` runs a->b and arc
``2k + 1`` runs b->a for the ``k``-th link of the design.  Capacities are in GB/s per
direction: ``count x rate x efficiency`` (the catalog's achievable fraction, which
already accounts for headers).  A failed link, and every link at a failed node, is dead:
its arcs keep their ids, so that a fail or restore renumbers nothing and the routes it
leaves alone stay valid as they are (`designer.solver.reuse`), but they have no
capacity and belong to no family (`DEAD`), so no route takes them.

A snapshot is handed to a worker thread, so it holds only numpy arrays, tuples and
frozen objects of arrays (`ArcDelays`: per-arc facts made on first use), and
the topology's ``generation`` so a stale result can be dropped.  It comes in two steps:
`capture_design` on the thread that edits the design (O(1): the columns the topology
keeps as it is edited are shared copy-on-write, see `designer.model.columns`), then
`build_snapshot`, array work that may run on the worker.  `take_snapshot` does both.

Example
-------
>>> from designer.model.templates import build_template
>>> snap = take_snapshot(build_template("hgx", gpu="H100"))
>>> snap.n_gpus, len(set(snap.gpu_domain.tolist()))
(8, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from designer.model.catalog import FAMILIES
from designer.model.columns import FrozenColumns
from designer.model.topology import Topology
from designer.solver.arrays.ragged import mix64, run_heads
from designer.solver.snapshot.arc_delays import ArcDelays, read_only
from designer.solver.snapshot.columns import ColumnCache, LinkPositions, NameSource, cache_of
from designer.solver.snapshot.domain_walk import domain_walks
from designer.solver.snapshot.rail_nics import assign_nics
from designer.solver.snapshot.structure import components, name_hashes, structural_order

NVLINK, PCIE = FAMILIES.index("nvlink"), FAMILIES.index("pcie")
DEAD = -1
"""`Snapshot.arc_family` of a failed link's arcs (and of every link at a failed node)."""
_NO_RAIL = np.iinfo(np.int64).max
"""The rail of a GPU with no NIC of its own (`_gpu_rails`)."""
SWITCH_KINDS = frozenset({"leaf", "spine", "core", "switch", "nvswitch", "nvlink-switch-tray"})


@dataclass(frozen=True, eq=False)
class Snapshot:
    """Arrays describing one generation of a design (see module docstring).

    Node arrays are indexed by node index, arc arrays by arc index, GPU arrays by rank
    (GPUs in natural id order).
    """

    generation: int
    routing: str
    node_ids: tuple[str, ...]
    node_switch: np.ndarray            # bool per node: its kind is in SWITCH_KINDS
    # Every link; arcs 2k, 2k+1 belong to link_ids[k].  The design columns' own list,
    # which nobody writes once frozen (`FrozenColumns`): not copied, not to be written.
    link_ids: Sequence[str]
    arc_src: np.ndarray
    arc_dst: np.ndarray
    arc_cap: np.ndarray                # GB/s per direction, after efficiency (0: dead)
    link_line: np.ndarray              # GB/s per direction per link, line rate
    arc_delays: ArcDelays              # latency and jitter (`arc_latency_s`, `arc_jitter_s`)
    arc_family: np.ndarray             # index into FAMILIES, DEAD for a dead link's arcs
    gpus: np.ndarray                   # node index of each rank
    gpu_domain: np.ndarray             # NVLink domain id of each rank (0..D-1)
    gpu_local: np.ndarray              # position of the rank inside its domain
    node_pos: np.ndarray               # structural position of each node (`structure`)
    gpu_nic: np.ndarray                # node index of the rank's rail NIC, -1 if none
    gpu_nic_via: np.ndarray            # node the NIC is reached through, -1: own PCIe link
    domain_nvls: np.ndarray            # bool per domain: in-switch reduction available
    domain_nvls_eff: np.ndarray        # per domain: its NVLink switches' catalog
                                       # `nvls_efficiency` (the lowest; 0: none given)
    net_sharp: bool                    # every compute-fabric switch does in-network reduction
    net_lossless: bool
    link_live: np.ndarray | None = None      # bool per link: neither it nor an end failed
    link_compute: np.ndarray | None = None   # bool per link: live, on the compute plane
    # Per rank: the lowest PCIe arc from its GPU to its NIC where the NIC is on its own
    # PCIe link, else -1 (PXN, through a host, no NIC); None: not given (the router
    # then looks the arcs up in its PCIe subgraph).
    gpu_nic_arc: np.ndarray | None = None
    # Per node: the NVLink domain of its component of live NVLink links (-1: no GPU in
    # it); None: not given (the router then finds it by a breadth-first search).
    node_domain: np.ndarray | None = None
    links: LinkPositions | None = None       # link id -> index in ``link_ids``
    # Where the names come from (`node_kind`, `node_model`, `arc_plane`): the design's
    # columns, through their cache, so snapshots of one design share the arrays.
    names: NameSource | None = None
    # Per node: its device model does in-network reduction (the catalog's ``sharp``),
    # for the SHARP aggregation tree (`flows.sharp`); None: not given (then every
    # switch does where `net_sharp` says so).
    node_sharp: np.ndarray | None = None

    def link_positions(self) -> LinkPositions:
        """``{link id: index in link_ids}``, as a read-only mapping.

        Shared with the snapshots taken before it while no link is added or removed, so
        that a view looking up a few links after every edit does not build a dict of
        100,000 ids each time.
        """
        if self.links is None:
            object.__setattr__(self, "links", LinkPositions(
                dict(zip(self.link_ids, range(len(self.link_ids)), strict=True))))
        return self.links

    # Names a solve reads rarely (error messages, PXN relays), made on first use: object
    # arrays of 40,192 nodes and 229,376 arcs at 16,384 GPUs, ~0.8 ms a cold snapshot
    # paid for.
    @cached_property
    def node_kind(self) -> np.ndarray:
        """Object (str) per node: its kind, read-only."""
        return self.names.node_names()[0]

    @cached_property
    def node_model(self) -> np.ndarray:
        """Object (str) per node: its device model, read-only."""
        return self.names.node_names()[1]

    @cached_property
    def arc_plane(self) -> np.ndarray:
        """Object (str) per arc: its link's plane, read-only."""
        return self.names.arc_plane()

    # Per-arc facts a solve does not need, made on first use: at 131,072 GPUs each is
    # 14 MB of fresh memory (3,600 page faults) that every cold snapshot paid for.
    @cached_property
    def arc_line(self) -> np.ndarray:
        """GB/s per direction, line rate (before efficiency)."""
        return read_only(np.repeat(self.link_line, 2))

    @property
    def arc_latency_s(self) -> np.ndarray:
        """Per arc: its link's latency plus that of the device it enters, seconds."""
        return self.arc_delays.latency

    @property
    def arc_jitter_s(self) -> np.ndarray:
        """Per arc: its technology's latency jitter (std-dev), seconds."""
        return self.arc_delays.jitter

    def live_links(self) -> np.ndarray:
        """Bool per link: whether it is live (neither it nor an end failed)."""
        if self.link_live is None:
            object.__setattr__(self, "link_live", self.arc_family[0::2] != DEAD)
        return self.link_live

    def compute_links(self) -> np.ndarray:
        """Bool per link: whether it is live and on the compute plane."""
        if self.link_compute is None:
            planes = self.arc_plane[0::2]
            object.__setattr__(self, "link_compute", np.fromiter(
                map("compute".__eq__, planes), bool, len(planes)))
        return self.link_compute

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


def _codes_used(codes: np.ndarray, n: int) -> np.ndarray:
    """Whether each code ``0..n-1`` occurs in ``codes``: a scatter of flags (a bincount
    would first copy int8 / int16 codes to int64)."""
    used = np.zeros(n, dtype=bool)
    used[codes] = True
    return used


def _domains(label: np.ndarray, unit: np.ndarray, rail: np.ndarray,
             walk: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Domain number (0..D-1) of each rank from its component ``label``, and the rank's
    position inside its domain, both in structural order (`designer.solver.snapshot.structure`).

    Domains are numbered by their server's structural position ``unit``, then by the
    smallest ``rail`` of their ranks (the structural position of the switch its own NIC
    is cabled to; a large number where it has none).  Inside a domain the ranks with a
    NIC come in rail order, so that local position ``i`` is the same rail in every
    server, and the ranks without one are spread evenly among them (after the ``k``-th
    of ``p`` ranks with a NIC come the orphans ``j`` with ``j p // m == k``, of ``m``;
    NIC j on GPU 2j gives GPU 2j, its orphan, GPU 2j + 2, ...).  Ties (equal rails, the
    orphans among themselves) follow ``walk`` where it is set (the ring over a domain's
    direct GPU links, `domain_walk`), else rank.
    """
    n = len(label)
    if n == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int32)
    place = np.arange(n)
    order = np.lexsort((place, rail, unit))
    # Domains in order of their first rank along ``order``.
    uniq, first, inverse = np.unique(label[order], return_index=True, return_inverse=True)
    dom_of = np.empty(len(uniq), np.int64)
    dom_of[np.argsort(first, kind="stable")] = np.arange(len(uniq))
    domain = np.empty(n, np.int64)
    domain[order] = dom_of[inverse.reshape(-1)]
    # Inside each domain: (rail, rank), then orphans spread among the ranks with a NIC.
    none = rail >= _NO_RAIL
    tie = place if walk is None else np.where(walk >= 0, walk, place)
    by = np.lexsort((tie, none, rail, domain))
    dom = domain[by]
    head = np.where(run_heads(dom), place, 0)
    np.maximum.accumulate(head, out=head)
    k = place - head                                       # index in the domain
    owners = np.bincount(dom[~none[by]], minlength=len(uniq))[dom]
    orphans = np.bincount(dom[none[by]], minlength=len(uniq))[dom]
    j = k - owners                                         # index among the orphans
    major = np.where(none[by], j * owners // np.maximum(orphans, 1), k)
    final = by[np.lexsort((k, none[by], major, dom))]
    local = np.empty(n, dtype=np.int32)
    local[final] = k
    return domain.astype(np.int32), local


def _direct_walks(n: int, comp: np.ndarray, gpus: np.ndarray, a: np.ndarray, b: np.ndarray,
                  is_gpu: np.ndarray) -> np.ndarray | None:
    """Per rank: its place on its domain's ring of direct GPU-to-GPU NVLink cables
    ``(a, b)`` (`domain_walk.domain_walks`; -1 where there is none), or None where no
    two GPUs are cabled to each other (every server with NVSwitches: no work)."""
    direct = is_gpu[a] & is_gpu[b]
    if not direct.any():
        return None
    rank = np.full(n, -1, np.int64)
    rank[gpus] = np.arange(len(gpus))
    a, b = rank[a[direct]], rank[b[direct]]
    ok = (a >= 0) & (b >= 0)   # (a failed GPU is no rank)
    return domain_walks(comp[gpus], a[ok], b[ok])


def _node_domains(comp: np.ndarray, gpus: np.ndarray, gpu_domain: np.ndarray) -> np.ndarray:
    """NVLink domain of every node from its component ``comp`` (-1 where no rank is in
    it): two gathers, where the router walked the NVLink arcs from every GPU.  int64:
    the router multiplies domains by arc counts."""
    of_label = np.full(len(comp), -1, dtype=np.int64)
    of_label[comp[gpus]] = gpu_domain
    return of_label[comp]


@dataclass(frozen=True, eq=False)
class DesignCapture:
    """What a snapshot needs from a topology, captured on the thread that edits it.

    Cheap to take (the columns are shared copy-on-write, see `designer.model.columns`)
    and immutable, so `build_snapshot` may turn it into
    arrays on a worker thread while the design goes on changing.
    """

    generation: int
    routing: str
    catalog: object
    columns: FrozenColumns
    cache: ColumnCache


def capture_design(topology: Topology) -> DesignCapture:
    """Capture ``topology`` for `build_snapshot`: O(1), unless nodes or links were
    removed since the last capture (`Topology.columns` then drops their rows first).
    """
    return DesignCapture(generation=topology.generation,
                         routing=topology.settings["routing"],
                         catalog=topology.catalog, columns=topology.columns(),
                         cache=cache_of(topology))


def take_snapshot(topology: Topology) -> Snapshot:
    """Freeze ``topology`` into arrays for the solver: `build_snapshot` of
    `capture_design`.

    Values derived from the design's columns that an edit left as they were are
    reused from the topology's previous snapshot (`designer.solver.snapshot.columns`).

    Parameters
    ----------
    topology : Topology

    Returns
    -------
    Snapshot
    """
    return build_snapshot(capture_design(topology))


def build_snapshot(capture: DesignCapture) -> Snapshot:
    """The solver's arrays for a captured design (any thread; see `capture_design`).

    Raises
    ------
    DesignError
        When a node or link names a device model or technology the catalog lacks.
    """
    c, cache = capture.columns, capture.cache
    # Three tiers, each reused while its inputs are the very arrays it came from: the
    # arcs and what the catalog says of them (until links or nodes are added, removed or
    # changed in kind, ends or technology); which links are live and what follows from
    # it (until a link or node fails or comes back); the capacities (every snapshot: a
    # count what-if costs a multiply over the links).
    arcs = cache.derived("arcs", (
        c.node_ids, c.kind_of, c.model_of, c.keys, c.link_pos, c.a_idx, c.b_idx, c.tech_of,
        c.planes, capture.catalog), lambda: _arcs(capture))
    fields, rate = cache.derived("liveness", (arcs, c.node_failed, c.link_failed),
                                 lambda: _liveness(capture, arcs))
    line = c.counts * rate
    # Each link's capacity written straight into both of its arcs (no per-link array
    # first: fresh memory is page faults, 7 MB of them at 131,072 GPUs).
    arc_cap = np.empty(2 * len(line))
    np.multiply(line, arcs.eff, out=arc_cap[0::2])
    arc_cap[1::2] = arc_cap[0::2]
    # (The names' source is the snapshot's own: kept in the cache's values, it would
    # make a reference cycle through the cache, freed only by the cyclic collector.)
    return Snapshot(generation=capture.generation, routing=capture.routing,
                    arc_cap=arc_cap, link_line=read_only(line), names=NameSource(cache, c),
                    **fields)


@dataclass(frozen=True, eq=False)
class _Arcs:
    """What `build_snapshot` derives from the design's nodes and links, failed or not."""

    fields: dict            # Snapshot fields that do not depend on failures
    family: np.ndarray      # per arc, the technology's family, failed or not
    link_family: np.ndarray  # the same per link
    compute: np.ndarray     # per link: on the compute plane
    rate: np.ndarray        # per link: GB/s per lane
    eff: np.ndarray         # per link: efficiency
    tech: dict              # tech code -> catalog entry, for the codes in use
    node: dict              # bool per node: "gpu", "nic", "nv_switch" (NVSwitch or tray),
                            # "fabric" (leaf, spine, core, switch), "nvls" and "sharp"
                            # (its model does in-switch / in-network reduction)
    rails: np.ndarray       # per node: a GPU's rail (`_gpu_rails`)


def _arcs(capture: DesignCapture) -> _Arcs:
    """The arcs of every link of ``capture`` and the catalog's facts about them."""
    cat = capture.catalog
    c, cache = capture.columns, capture.cache
    # Per-model and per-tech facts are looked up once per distinct value, then indexed;
    # names no node or link uses any more are skipped (they may be stale).
    model_of = c.model_of
    present = _codes_used(model_of, len(c.model_names))
    specs = [cat.device(m).specs if present[i] else {} for i, m in enumerate(c.model_names)]
    node_latency = np.array([s.get("latency_ns", 0.0) * 1e-9 for s in specs],
                            dtype=float)[model_of]
    tech_of = c.tech_of
    tech = {i: cat.tech(c.tech_names[i])
            for i in np.flatnonzero(_codes_used(tech_of, len(c.tech_names))).tolist()}
    fact = lambda f, dt=float: np.array(  # noqa: E731  one value per tech code
        [f(tech[i]) if i in tech else 0 for i in range(len(c.tech_names))], dtype=dt)
    t_GBps, t_eff = fact(lambda t: t.GBps), fact(lambda t: t.efficiency)
    t_lat, t_jit = fact(lambda t: t.latency_ns * 1e-9), fact(lambda t: t.jitter_ns * 1e-9)
    t_fam = fact(lambda t: FAMILIES.index(t.family), np.int8)
    compute = cache.link_compute(c)

    # Arcs a->b then b->a for every link: arc_src = a, b, a, b ...
    arc_src = np.empty(2 * len(c.a_idx), dtype=np.int32)
    arc_dst = np.empty_like(arc_src)
    arc_src[0::2] = arc_dst[1::2] = c.a_idx
    arc_src[1::2] = arc_dst[0::2] = c.b_idx
    fields = dict(
        node_ids=c.node_ids, link_ids=c.keys,
        arc_src=arc_src, arc_dst=arc_dst,
        arc_delays=ArcDelays(tech_of, t_lat, t_jit, node_latency, arc_dst),
        links=LinkPositions(c.link_pos),
    )
    # Node facts that failures leave alone, so that a fail does not recompute them.
    kind = lambda *ks: np.array(  # noqa: E731  one gather per mask
        [k in ks for k in c.kind_names], dtype=bool).reshape(-1)[c.kind_of]
    model_flag = lambda f: np.array(  # noqa: E731
        [bool(s.get(f, False)) for s in specs], dtype=bool)[model_of]
    model_value = lambda f: np.array(  # noqa: E731  NaN where a model does not say
        [float(s.get(f, np.nan)) for s in specs], dtype=float)[model_of]
    fields["node_switch"] = kind(*SWITCH_KINDS)
    node = dict(gpu=kind("gpu"), nic=kind("nic"),
                nv_switch=kind("nvswitch", "nvlink-switch-tray"),
                fabric=kind("leaf", "spine", "core", "switch"),
                nvls=model_flag("nvls"), sharp=model_flag("sharp"),
                nvls_eff=model_value("nvls_efficiency"))
    fields["node_sharp"] = node["sharp"]
    link_family = t_fam[tech_of]
    # Structural positions, from every link, failed or not (`structure`).
    inside = (link_family == NVLINK) | (link_family == PCIE)
    network = compute & ~inside
    colour = name_hashes(c.kind_names)[c.kind_of] ^ mix64(name_hashes(c.model_names), 1)[model_of]
    struct = structural_order(len(c.node_ids), c.a_idx, c.b_idx, inside, network, colour,
                              name_hashes(c.tech_names)[tech_of], node["gpu"])
    node_pos = struct.node_pos()
    fields["node_pos"] = node_pos
    rails = _gpu_rails(len(c.node_ids), c.a_idx, c.b_idx, link_family == PCIE, network,
                       node["gpu"], node["nic"], node_pos)
    for v in [*fields.values(), compute, *node.values(), rails]:
        if isinstance(v, np.ndarray):
            v.setflags(write=False)  # shared by the snapshots that reuse them
    return _Arcs(fields=fields, family=np.repeat(link_family, 2), link_family=link_family,
                 compute=compute, rate=t_GBps[tech_of], eff=t_eff[tech_of], tech=tech,
                 node=node, rails=rails)


def _gpu_rails(n: int, a: np.ndarray, b: np.ndarray, pcie: np.ndarray, network: np.ndarray,
               is_gpu: np.ndarray, is_nic: np.ndarray, node_pos: np.ndarray) -> np.ndarray:
    """Per node: for a GPU, the structural position of the switch (or node) its own NIC
    is cabled to (the smallest, over its NICs and their cables), failed or not;
    `_NO_RAIL` for a GPU without a NIC on its PCIe and for any other node."""
    nic_rail = np.full(n, _NO_RAIL, np.int64)
    for x, y in ((a, b), (b, a)):
        sel = network & is_nic[x]
        np.minimum.at(nic_rail, x[sel], node_pos[y[sel]])
    rail = np.full(n, _NO_RAIL, np.int64)
    for x, y in ((a, b), (b, a)):
        sel = pcie & is_gpu[x] & is_nic[y]
        np.minimum.at(rail, x[sel], nic_rail[y[sel]])
    return rail


def _liveness(capture: DesignCapture, arcs: _Arcs) -> tuple[dict, np.ndarray]:
    """The fields of `build_snapshot` that depend on which links and nodes failed, and
    each link's rate per lane (0 for a dead link: no capacity)."""
    c, cache = capture.columns, capture.cache
    n = len(c.node_ids)
    failed_node = c.node_failed
    node = arcs.node
    a_idx, b_idx = c.a_idx, c.b_idx
    node_fails = bool(failed_node.any())
    if node_fails or c.link_failed.any():
        live = ~c.link_failed & ~failed_node[a_idx] & ~failed_node[b_idx]
        all_live = bool(live.all())
    else:  # the usual case: two scans of flags instead of two gathers over the links
        live, all_live = np.ones(len(a_idx), dtype=bool), True
    # A dead arc keeps its id (routes through other arcs stay valid across a fail) but
    # belongs to no family, so no subgraph, mask or planner selects it.  With every link
    # live, the families are the arcs' own (int8 already), not a copy.
    fam = (arcs.family if all_live else
           np.where(np.repeat(live, 2), arcs.family, DEAD).astype(np.int8))
    compute_link = arcs.compute & live
    arc_src, arc_dst = arcs.fields["arc_src"], arcs.fields["arc_dst"]

    # GPUs in natural id order; NVLink domains = components over NVLink arcs.
    gpu_nodes = np.flatnonzero(node["gpu"] & ~failed_node if node_fails else node["gpu"])
    gpus = cache.gpus_in_order(c, gpu_nodes)
    # The NVLink domains change only with the NVLink links: a what-if on the network
    # reuses them (`ColumnCache.nvlink_components`).
    nv_link = live & (arcs.link_family == NVLINK)
    comp = cache.nvlink_components(c, nv_link,
                                   lambda: components(n, a_idx[nv_link], b_idx[nv_link]))
    gpu_domain, gpu_local = cache.derived("domains", (comp, gpus, arcs), lambda: _domains(
        comp[gpus], arcs.fields["node_pos"][gpus], arcs.rails[gpus],
        _direct_walks(n, comp, gpus, a_idx[nv_link], b_idx[nv_link], node["gpu"])))
    node_domain = cache.derived("node domains", (comp, gpus, gpu_domain),
                                lambda: _node_domains(comp, gpus, gpu_domain))

    # Rail NICs: NICs with a compute-plane network link, reached from every GPU that can
    # (its own PCIe link, a sibling's over NVLink, or through the host; see `rail_nics`).
    # (Per link: each network link makes both of its ends network nodes.)
    net_link = (arcs.link_family != NVLINK) & (arcs.link_family != PCIE) & compute_link
    net_node = np.zeros(n, dtype=bool)
    net_node[a_idx[net_link]] = True
    net_node[b_idx[net_link]] = True
    gpu_nic, gpu_nic_via, gpu_nic_arc = assign_nics(
        arc_src, arc_dst, fam == PCIE, node["gpu"], node["nic"] & net_node, gpus,
        gpu_domain, gpu_local)

    # In-switch reduction: every NVLink switch of the domain and every GPU support NVLS.
    nv_switch, is_gpu = node["nv_switch"], node["gpu"]
    count = lambda mask: np.bincount(comp[mask], minlength=n)  # noqa: E731  per component
    n_switch, n_gpu = count(nv_switch), count(is_gpu)
    n_without = count((nv_switch | is_gpu) & ~node["nvls"])
    dom_comp = np.zeros(int(gpu_domain.max()) + 1 if len(gpus) else 0, dtype=np.int64)
    dom_comp[gpu_domain] = comp[gpus]
    domain_nvls = (n_switch[dom_comp] > 0) & (n_gpu[dom_comp] > 1) & (n_without[dom_comp] == 0)
    # The NVLS bandwidth factor of a domain's switch generation, for the time model (the
    # lowest where generations mix; fmin skips the switches whose model gives none).
    comp_eff = np.full(n, np.nan)
    np.fmin.at(comp_eff, comp[nv_switch], node["nvls_eff"][nv_switch])
    domain_nvls_eff = comp_eff[dom_comp]
    domain_nvls_eff[~domain_nvls | np.isnan(domain_nvls_eff)] = 0.0
    fabric_switches = np.flatnonzero(net_node & node["fabric"])
    net_sharp = bool(fabric_switches.size) and bool(node["sharp"][fabric_switches].all())
    live_techs = (arcs.tech if all_live else  # every tech in use has a live link then
                  np.flatnonzero(_codes_used(c.tech_of[live], len(c.tech_names))).tolist())
    net_techs = [t for t in map(arcs.tech.__getitem__, live_techs)
                 if t.family not in ("nvlink", "pcie")]
    fields = dict(
        arcs.fields,
        arc_family=fam, link_live=live,
        gpus=gpus, gpu_domain=gpu_domain, gpu_local=gpu_local, gpu_nic=gpu_nic,
        gpu_nic_via=gpu_nic_via, gpu_nic_arc=gpu_nic_arc, node_domain=node_domain,
        domain_nvls=domain_nvls, domain_nvls_eff=domain_nvls_eff, net_sharp=net_sharp,
        net_lossless=all(t.lossless for t in net_techs),
        link_compute=compute_link,
    )
    for v in fields.values():
        if isinstance(v, np.ndarray):
            v.setflags(write=False)  # shared by the snapshots that reuse them
    # Every link live (the usual case): the rates as they are, not a copy.
    return fields, arcs.rate if all_live else np.where(live, arcs.rate, 0.0)
