"""The design's values: `Node` (a device), `Link` (a bundle of identical links) and
`Group` (a server node, rack, SU...).  They are frozen, so a command can keep the old
value for undo and an event can carry the new one; `designer.model.topology` stores
them (and is where the rest of the code imports them from).

>>> n = Node("g0", "gpu", "H100", "GPU 0")
>>> n.plane, n.failed
('compute', False)
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class Node:
    """A device placed in the design.

    Parameters
    ----------
    id : str
        Stable identifier (letters, digits, ``_.:/-``).
    kind : str
        Role: one of `NODE_KINDS` (gpu, nvswitch, leaf, spine, core, nic, host...).
    model : str
        Catalog device key (``H100``, ``QM9700``...).
    name : str
        Label shown to the user.
    x, y : float
        Canvas position (scene units).
    group : str or None
        Id of the innermost `Group` (server node, rack, SU...) it belongs to.
    plane : str
        Network plane: compute, storage, frontend or management.
    failed : bool
        What-if: the device is down.
    """

    id: str
    kind: str
    model: str
    name: str
    x: float = 0.0
    y: float = 0.0
    group: str | None = None
    plane: str = "compute"
    failed: bool = False


@dataclass(frozen=True, slots=True)
class Link:
    """A bundle of ``count`` identical links between nodes ``a`` and ``b``.

    ``tech`` is a catalog link technology; the bundle is full duplex (rates in the
    catalog are per direction).  Parallel bundles between the same nodes are allowed.
    """

    id: str
    a: str
    b: str
    tech: str
    count: int = 1
    plane: str = "compute"
    failed: bool = False


@dataclass(frozen=True, slots=True)
class Group:
    """A container: a server node, tray, rack, pod or scalable unit (SU)."""

    id: str
    kind: str
    name: str
    parent: str | None = None


NODE_FIELDS = tuple(f.name for f in fields(Node))
LINK_FIELDS = tuple(f.name for f in fields(Link))
GROUP_FIELDS = tuple(f.name for f in fields(Group))
