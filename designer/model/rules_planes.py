"""Design rule ``plane-shared``: planes that must be separate do not share a switch.

The compute fabric carries the collectives, whose step time is set by their slowest
flow; storage reads, checkpoints and front-end traffic on the same switches queue with
them (and, on lossless RoCE, share its pause frames).  Reference designs (NVIDIA DGX
SuperPOD) keep the compute fabric on switches of its own and let storage and front-end
share theirs, so that is what the rule asks: a switch that carries compute-plane links
carries no storage or front-end links.  Management is `rules.validate`'s own
``management-shared`` rule (a compute switch's single out-of-band port is allowed there).

The rule reads the cabling as drawn, failed parts included: a failed link is still a
cable on that switch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: Planes that must not share a switch with the compute fabric (management has its own rule).
DATA_PLANES: tuple[str, ...] = ("storage", "frontend")

_PLANE_NAMES = {"storage": "storage", "frontend": "front-end"}


def plane_shared_findings(
    nodes: Mapping[str, Mapping],
    edges: Iterable[tuple[str, str, str, Mapping]],
    switch_kinds: frozenset[str],
    label,
) -> list[tuple[str, str, str, str]]:
    """Switches that carry the compute fabric and a storage or front-end network.

    Parameters
    ----------
    nodes : mapping
        Node id to its attributes (``kind``, ``plane``).
    edges : iterable of (a, b, link id, attributes)
        Every link, with its ``plane``.
    switch_kinds : frozenset of str
        Node kinds that are packet switches.
    label : callable
        ``label(node_id)``: how a message names a node (``"leaf (SN5600)"``).

    Returns
    -------
    list of (severity, code, subject, message)
        One warning per such switch.

    Examples
    --------
    >>> nodes = {"s": {"kind": "leaf", "plane": "compute"},
    ...          "n": {"kind": "nic", "plane": "compute"},
    ...          "t": {"kind": "nic", "plane": "storage"}}
    >>> edges = [("n", "s", "l0", {"plane": "compute"}), ("t", "s", "l1", {"plane": "storage"})]
    >>> [f[:3] for f in plane_shared_findings(nodes, edges, frozenset({"leaf"}), str)]
    [('warning', 'plane-shared', 's')]
    """
    planes: dict[str, set[str]] = {}
    for a, b, _, d in edges:
        for end in (a, b):
            if nodes[end]["kind"] in switch_kinds:
                planes.setdefault(end, set()).add(d["plane"])
    out = []
    for switch, seen in planes.items():
        # A switch placed in a data plane counts as that plane's even before it has
        # links of it (a storage leaf that was given a compute cable).
        own = nodes[switch].get("plane", "compute")
        seen = seen | ({own} if own in DATA_PLANES else set())
        others = [p for p in DATA_PLANES if p in seen]
        if "compute" not in seen or not others:
            continue
        names = " and ".join(_PLANE_NAMES[p] for p in others)
        out.append(
            (
                "warning",
                "plane-shared",
                switch,
                f"switch {label(switch)} carries both the compute fabric and the {names} "
                f"network: {names} traffic would queue with the collectives; keep the "
                "compute fabric on its own switches",
            )
        )
    return out
