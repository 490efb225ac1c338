"""The rail-optimised scale-out fabric both `rail-cluster` and multi-rack `nvl72` use.

`plan_rails` sizes it before anything is built (leaves per rail, spines, cores, as
`clos_plan.plan_clos` plans them), `wire_rails` adds it: NIC ``i`` of every server cables
to a leaf of rail ``i``; leaves take ``radix * r / (1 + r)`` servers for an
oversubscription ``r`` and send the rest of their ports up.

Planes
------
With ``planes = P`` (2 or 4), every NIC's port is split into ``P`` links of
``nic_gbps / P``, one into each of ``P`` identical, separate fabrics (``p0-``, ``p1-``...
ids): the ConnectX-8 "planarised" topology and Spectrum-X multiplane fabrics.  A plane's
switches run at the plane rate, so a 800G NIC on 2 planes uses 400G switches with twice
the radix, and one tier fewer can join the same cluster.  Only a NIC whose catalog entry
says ``multiplane = true`` can do it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from designer.model.errors import DesignError
from designer.model.templates.clos_plan import ClosPlan, plan_clos, wire_clos
from designer.model.templates.hgx import Server
from designer.model.templates.lookup import FabricChoice, fabric_choice, port_capacity
from designer.model.templates.parts import Parts

#: Plane counts a multiplane NIC supports (its port as 2 x 400G or 4 x 200G).
PLANE_CHOICES: tuple[int, ...] = (1, 2, 4)


@dataclass(frozen=True)
class RailPlan:
    """How a rail fabric is built: the NIC's fabric (``nic``), the fabric of one plane
    (``plane``: tech and switch at ``nic_gbps / planes``), switch radix, servers per
    leaf, and the Clos plan of one plane."""

    nic: FabricChoice
    plane: FabricChoice
    planes: int
    radix: int
    down: int
    clos: ClosPlan


def leaf_uplinks(
    nodes: int, down: int, rails: int, radix: int, r: float
) -> tuple[list[int], list[int]]:
    """Uplinks each leaf needs and the free ports it has (positionally ``plan_clos``'s
    ``uplinks`` and ``max_up``): blocks of ``down`` servers, one leaf per rail each."""
    ups, caps = [], []
    for b in range(math.ceil(nodes / down)):
        members = min(down, nodes - b * down)
        free = radix - members
        ups += [min(free, math.ceil(members / r - 1e-9))] * rails
        caps += [free] * rails
    return ups, caps


def cores_join_pods(plan: ClosPlan) -> bool:
    """Whether a three-tier ``plan``, cabled as `wire_clos` does, is a folded Clos: its
    fullest pods reach every core (always true below three tiers).

    `wire_clos` deals the spines' uplinks over the cores round-robin, pod after pod, so
    a pod reaches as many cores as it has uplinks.  Once a full pod has fewer uplinks
    than there are cores (with ``radix``-port cores: past ``radix`` full pods), two pods
    can share no core and the fabric falls apart or hangs together through a few: a
    fourth tier would be needed.

    >>> from designer.model.templates.clos_plan import plan_clos
    >>> cores_join_pods(plan_clos([32] * 2048, radix=64))   # 64 pods of 32 leaves
    True
    >>> cores_join_pods(plan_clos([32] * 4096, radix=64))   # 128 pods: two halves
    False
    """
    if plan.tiers < 3:
        return True
    fullest = max(sum(plan.leaf_up[i] for i in pod) for pod in plan.pods)
    return fullest >= plan.cores


def largest(too_many: int, ok) -> int:
    """The largest ``n < too_many`` with ``ok(n)`` (``ok`` holds up to some size, then
    fails), by bisection."""
    lo, hi = 1, too_many  # ok(lo) assumed, ok(hi) false
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            good = ok(mid)
        except DesignError:
            good = False
        lo, hi = (mid, hi) if good else (lo, mid)
    return lo


def plan_rails(
    parts: Parts,
    who: str,
    *,
    servers: int,
    rails: int,
    fabric: str,
    nic_gbps: float,
    leaf_radix: int,
    oversubscription: float,
    core: str,
    planes: int = 1,
    spines: int | None = None,
    unit: str = "nodes",
    per_unit: int = 1,
) -> RailPlan:
    """Size a rail fabric of ``servers`` servers with ``rails`` NICs each; ``who`` (the
    template's name) starts every error message, which counts ``unit`` (``per_unit``
    servers each: an NVL72 rack is 18 compute trays).

    Raises
    ------
    DesignError
        Bad plane count, a NIC that cannot split across planes, or a cluster three
        tiers cannot join (the message gives the largest that fits).
    """
    cat = parts.catalog
    if planes not in PLANE_CHOICES:
        raise DesignError(f"{who}: planes must be one of 1, 2, 4, got {planes}")
    nic = fabric_choice(cat, fabric, nic_gbps)
    plane = nic
    if planes > 1:
        if not cat.device(nic.nic).specs.get("multiplane", False):
            raise DesignError(
                f"{who}: planes={planes} needs a NIC that splits its port across planes "
                f"(ConnectX-8 or later); {nic.nic} at {nic_gbps:g} Gb/s does not"
            )
        plane = fabric_choice(cat, fabric, nic_gbps / planes)
    radix = min(leaf_radix, port_capacity(cat, plane.switch, plane.tech))
    r = oversubscription
    down = max(1, min(radix - 1, math.floor(radix * r / (1 + r) + 1e-9)))

    def size(n: int) -> ClosPlan:
        ups, caps = leaf_uplinks(n, down, rails, radix, r)
        return plan_clos(ups, radix, max_up=caps, spines=spines, core=core)

    clos = size(servers)
    if not cores_join_pods(clos):
        most = largest(servers, lambda n: cores_join_pods(size(n))) // per_unit
        raise DesignError(
            f"{who}: {unit}={servers // per_unit} is too many: three tiers of {radix}-port "
            f"{plane.switch} switches join at most {most} {unit} at oversubscription {r:g}"
        )
    return RailPlan(nic, plane, planes, radix, down, clos)


def wire_rails(parts: Parts, plan: RailPlan, servers: Sequence[Server], rails: int) -> list[str]:
    """Leaves (per plane, per rail, per block of ``plan.down`` servers), spines and
    cores of ``plan`` over ``servers``' NICs; returns the leaf ids.

    One plane keeps the ids ``leaf-r{rail}-{block}``, ``spine-N``; several prefix them
    with ``p{plane}-``.
    """
    blocks = math.ceil(len(servers) / plan.down)
    all_leaves: list[str] = []
    for p in range(plan.planes):
        prefix = f"p{p}-" if plan.planes > 1 else ""
        label = f"Plane {p} " if plan.planes > 1 else ""
        leaves = []
        for b in range(blocks):
            members = servers[b * plan.down : (b + 1) * plan.down]
            for rail in range(rails):
                name = f"{label}Leaf rail {rail}" + (f" block {b}" if blocks > 1 else "")
                leaf = parts.node(f"{prefix}leaf-r{rail}-{b}", "leaf", plan.plane.switch, name)
                for srv in members:
                    parts.link(srv.nics[rail], leaf, plan.plane.tech)
                leaves.append(leaf)
        wire_clos(
            parts,
            plan.clos,
            leaves,
            model=plan.plane.switch,
            tech=plan.plane.tech,
            prefix=prefix,
            label=label.strip(),
        )
        all_leaves += leaves
    return all_leaves
