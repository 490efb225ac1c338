"""Folded-Clos tiers above a row of leaves: how many spines and cores (`plan_clos`), and
their cables (`wire_clos`).  The fat-tree, leaf-spine and rail templates and the extra
planes (storage, front-end) all size their switches with it.

`plan_clos` sizes the tiers from the leaves' uplinks and the switch radix:

* **two tiers** when every leaf can reach every spine: ``spines = ceil(uplinks / radix)``
  and no leaf has fewer uplinks than there are spines (so at most ``radix`` leaves);
* **three tiers** beyond: pods of ``radix / 2`` leaves, each pod with just enough
  non-blocking spines (half their ports down, half up) for its leaves' uplinks, and
  ``ceil(spine uplinks / radix)`` cores on top.

`wire_clos` builds the plan: uplinks are dealt round-robin (`parts.spread`), so each
switch ends with an even share and no port group is over-subscribed.  With 64-port
switches and 32 uplinks per leaf this reproduces the DGX SuperPOD sizes: 32 leaves under
16 spines, 128 leaves under 128 spines and 64 cores, 512 / 512 / 256.

Example
-------
>>> p = plan_clos([32] * 128, radix=64)
>>> (p.tiers, p.spines, p.cores, len(p.pods))
(3, 128, 64, 4)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from designer.model.errors import DesignError
from designer.model.templates.parts import Parts, spread

__all__ = ["CORE_CHOICES", "ClosPlan", "plan_clos", "wire_clos"]

CORE_CHOICES: tuple[str, ...] = ("auto", "yes", "no")


@dataclass(frozen=True)
class ClosPlan:
    """Sizes of the tiers above a row of leaves.

    ``tiers`` is 1 (leaves only), 2 (leaf-spine) or 3 (leaf-spine-core in pods);
    ``leaf_up`` the uplinks each leaf uses; ``pods`` the leaf indices of each pod (one pod
    below three tiers) and ``pod_spines`` its spine count.
    """

    tiers: int
    leaf_up: tuple[int, ...]
    pods: tuple[tuple[int, ...], ...]
    pod_spines: tuple[int, ...]
    cores: int

    @property
    def spines(self) -> int:
        return sum(self.pod_spines)


def _reach_all(
    up: list[int], caps: Sequence[int], per_port: int, fixed: int | None
) -> tuple[list[int], int]:
    """Raise small leaves' uplinks (within ``caps``) until each reaches every spine."""
    while True:
        spines = fixed or max(1, math.ceil(sum(up) / per_port))
        more = [max(u, min(spines, c)) for u, c in zip(up, caps, strict=True)]
        if more == up:
            return up, spines
        up = more


def plan_clos(
    uplinks: Sequence[int],
    radix: int,
    *,
    max_up: Sequence[int] | None = None,
    spines: int | None = None,
    core: str = "auto",
) -> ClosPlan:
    """Plan the tiers above leaves with ``uplinks[i]`` uplinks each.

    Parameters
    ----------
    uplinks : sequence of int
        Uplinks each leaf needs (its bandwidth share).
    radix : int
        Ports of a spine or core switch.
    max_up : sequence of int, optional
        Free ports of each leaf: a leaf with few uplinks gets more (up to this) so that it
        reaches every spine.  Default: exactly ``uplinks``.
    spines : int, optional
        Fixed spine count (two tiers); default sized from the uplinks.
    core : {"auto", "yes", "no"}
        Whether to add a core tier: when needed, always, or never (then too many leaves
        is an error).

    Examples
    --------
    >>> p = plan_clos([32] * 32, radix=64)
    >>> (p.tiers, p.spines, p.cores)
    (2, 16, 0)
    """
    if core not in CORE_CHOICES:
        raise DesignError(f"core must be one of {', '.join(CORE_CHOICES)}, got {core!r}")
    if radix < 2:
        raise DesignError(f"switch radix must be at least 2, got {radix}")
    up = [int(u) for u in uplinks]
    caps = list(max_up) if max_up is not None else list(up)
    n = len(up)
    everyone = (tuple(range(n)),)
    if core != "yes":
        if spines is None and n <= 1:
            return ClosPlan(1, tuple(up), everyone, (0,), 0)
        up2, s = _reach_all(up, caps, radix, spines)
        if min(up2) >= s and sum(up2) <= s * radix:
            return ClosPlan(2, tuple(up2), everyone, (s,), 0)
        if spines is not None:
            raise DesignError(
                f"{spines} spines cannot take {sum(up2)} uplinks from {n} leaves "
                f"({radix} ports each)"
            )
        if core == "no":
            raise DesignError(
                f"{n} leaves need a core tier (one spine reaches at most {radix} "
                f"leaves); set core=auto"
            )
    half = radix // 2
    pods, pod_spines, final = [], [], list(up)
    for start in range(0, n, half):
        idx = list(range(start, min(n, start + half)))
        pod_up, s = _reach_all([up[i] for i in idx], [caps[i] for i in idx], half, None)
        if min(pod_up) < s:
            raise DesignError(
                f"leaves {idx[0]}..{idx[-1]} have too few uplinks for a pod of {s} spines"
            )
        for i, u in zip(idx, pod_up, strict=True):
            final[i] = u
        pods.append(tuple(idx))
        pod_spines.append(s)
    cores = max(1, math.ceil(sum(final) / radix))
    return ClosPlan(3, tuple(final), tuple(pods), tuple(pod_spines), cores)


def wire_clos(
    parts: Parts,
    plan: ClosPlan,
    leaves: Sequence[str],
    *,
    model: str,
    tech: str,
    plane: str = "compute",
    prefix: str = "",
    label: str = "",
) -> tuple[list[str], list[str]]:
    """Add the spines (``{prefix}spine-N``) and cores (``{prefix}core-N``) of ``plan``
    above ``leaves`` and wire them; with three tiers each pod becomes a group of kind
    ``pod`` (``{prefix}pod1``...) holding its spines and its leaves (or their groups).

    Returns the spine and core ids.
    """
    spine_ids: list[str] = []
    core_ids: list[str] = []
    if plan.tiers < 2:
        return spine_ids, core_ids
    down: dict[str, int] = {}
    for p, (pod, n_spines) in enumerate(zip(plan.pods, plan.pod_spines, strict=True)):
        gid = None
        if plan.tiers == 3:
            gid = parts.group(f"{prefix}pod{p + 1}", "pod", f"{label} Pod {p + 1}".strip())
            for i in pod:
                own = parts.nodes[leaves[i]].group
                if own is None:
                    parts.set_group(leaves[i], gid)
                elif parts.groups[own].parent is None:
                    parts.set_parent(own, gid)
        ids = []
        for _ in range(n_spines):
            k = len(spine_ids) + len(ids)
            ids.append(
                parts.node(
                    f"{prefix}spine-{k}",
                    "spine",
                    model,
                    f"{label} Spine {k}".strip(),
                    group=gid,
                    plane=plane,
                )
            )
        for a, b, c in spread([(leaves[i], plan.leaf_up[i]) for i in pod], ids):
            parts.link(a, b, tech, c, plane)
            down[b] = down.get(b, 0) + c
        spine_ids += ids
    if plan.tiers == 3:
        core_ids = [
            parts.node(f"{prefix}core-{c}", "core", model, f"{label} Core {c}".strip(), plane=plane)
            for c in range(plan.cores)
        ]
        # Non-blocking spines: as many links up as down.
        for a, b, c in spread([(s, down[s]) for s in spine_ids], core_ids):
            parts.link(a, b, tech, c, plane)
    return spine_ids, core_ids
