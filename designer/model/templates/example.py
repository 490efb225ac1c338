"""The built-in example design the app opens with."""

from __future__ import annotations

from designer.model.templates.rail import build_rail_cluster
from designer.model.topology import Topology

EXAMPLE_NAME = "Example: 4x HGX H100 rail-optimised"


def build_example() -> Topology:
    """Four HGX H100 servers on NDR rail leaves (one per rail), two spines joining the
    rails (explicit, though one spine's ports would do), and one NVMe storage server on
    its own storage plane.

    >>> t = build_example()
    >>> [sum(1 for _ in t.nodes(kind)) for kind in ("gpu", "leaf", "spine", "storage")]
    [32, 9, 2, 1]
    """
    return build_rail_cluster(
        nodes=4,
        gpu="H100",
        gpus_per_node=8,
        nic_gbps=400,
        fabric="infiniband",
        storage=True,
        spines=2,
        name=EXAMPLE_NAME,
    )
