"""All-to-all by classes (`flows.alltoall`, docs/model.md "All-to-all by classes").

The class path and the per-pair reference are both reached through the public switch
`tuned(alltoall_classes=...)`; on small fabrics (leaf-spine with uneven uplinks, rail
clusters with and without oversubscription or a core tier, a three-tier fat tree
whole and degraded), under
adaptive and ECMP routing, with random rank subsets in random order and with every
node renamed, they give the same time, the same per-pair rates and the same load on
every arc to 1e-9.
"""

from __future__ import annotations

import tracemalloc
from dataclasses import replace

import numpy as np
import pytest
from fabrics import small_fabric

from designer.model.templates import build_template
from designer.model.topology import Topology
from designer.solver.memory_estimate import estimate_solve
from designer.solver.pipeline import solve_collective
from designer.solver.snapshot.build import take_snapshot
from designer.solver.tuning import tuned

FABRICS = {
    "leaf-spine, uneven uplinks": lambda: small_fabric(3, leaves=3, spines=3, uplinks=(1, 2, 3)),
    "rail cluster": lambda: build_template("rail-cluster", nodes=6),
    "rail cluster 3:1": lambda: build_template("rail-cluster", nodes=6, oversubscription=3.0),
    "rail cluster, 4 GPUs 2 NICs": lambda: build_template(
        "rail-cluster", nodes=5, gpus_per_node=4, nics_per_node=2
    ),
    "fat tree (k=8)": lambda: build_template("fat-tree", k=8),
    "fat tree, degraded": lambda: _degraded(build_template("fat-tree", k=8)),
    "rail cluster with core": lambda: build_template(
        "rail-cluster", nodes=8, gpus_per_node=2, leaf_radix=8, core="yes"
    ),
}


def _degraded(topo: Topology) -> Topology:
    """A random eighth of the switch-to-switch links failed, another eighth doubled:
    DAGs of one pod no longer alike."""
    kinds = {n.id: n.kind for n in topo.nodes()}
    inner = sorted(
        k.id
        for k in topo.links()
        if kinds[k.a] != "nic" and kinds[k.b] != "nic" and "gpu" not in (kinds[k.a], kinds[k.b])
    )
    pick = np.random.default_rng(5).permutation(len(inner))
    for i in pick[: len(inner) // 8].tolist():
        topo.update_link(inner[i], failed=True)
    for i in pick[len(inner) // 8 : len(inner) // 4].tolist():
        topo.update_link(inner[i], count=2)
    return topo


#: Fabrics where every GPU has a NIC of its own, which the classes need (else per pair).
OWN_NICS = (
    "rail cluster",
    "rail cluster 3:1",
    "fat tree (k=8)",
    "fat tree, degraded",
    "rail cluster with core",
)


def _solve(topo: Topology, routing: str, ranks, classes: bool):
    topo.set_setting("routing", routing)
    with tuned(alltoall_classes=classes):
        return solve_collective(take_snapshot(topo), "alltoall", sizes=[1 << 26], ranks=ranks)


def _pair_rates(res) -> np.ndarray:
    """Every pair's rate, sorted: a class flow stands for as many pairs as its label says."""
    phase = res.phases[0]
    labels = res.plan.phases[0].flow_label
    count = [
        int(labels[f].split()[0]) if " pairs like " in labels[f] else 1
        for f in range(len(phase.rates_GBps))
    ]
    return np.sort(np.repeat(phase.rates_GBps, count))


def _same(a, b) -> None:
    np.testing.assert_allclose(a.time_s, b.time_s, rtol=1e-9)
    np.testing.assert_allclose(_pair_rates(a), _pair_rates(b), rtol=1e-9)
    np.testing.assert_allclose(a.arc_load_GBps, b.arc_load_GBps, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("routing", ["adaptive", "ecmp"])
@pytest.mark.parametrize("fabric", list(FABRICS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_classes_give_the_per_pair_rates(fabric, routing, seed):
    topo = FABRICS[fabric]()
    n = take_snapshot(topo).n_gpus
    rng = np.random.default_rng(seed)
    # Seed 0: every GPU; else a random subset in random order (uneven domains).
    ranks = None if seed == 0 else rng.permutation(n)[: int(rng.integers(n // 2, n))].tolist()
    by_class = _solve(topo, routing, ranks, True)
    _same(by_class, _solve(topo, routing, ranks, False))
    pairs = len(by_class.plan.ranks) * (len(by_class.plan.ranks) - 1)
    if routing == "adaptive" and seed == 0 and fabric in OWN_NICS:
        assert by_class.phases[0].rates_GBps.size < pairs / 2  # classes, not pairs


def test_classes_do_not_depend_on_names_or_order():
    """Every node and link renamed (reverse order of names), ranks listed backwards: the
    same rates and, arc by arc (matched by the renamed links), the same loads."""
    topo = build_template("rail-cluster", nodes=6, oversubscription=2.0)
    ranks = np.random.default_rng(7).permutation(48)[:30].tolist()
    names = sorted(n.id for n in topo.nodes())
    new = {old: f"x{len(names) - i:03d}" for i, old in enumerate(names)}
    renamed = Topology()
    for node in sorted(topo.nodes(), key=lambda n: new[n.id]):
        renamed.add_node(replace(node, id=new[node.id], group=None))
    for link in sorted(topo.links(), key=lambda k: k.id, reverse=True):
        renamed.add_link(replace(link, id=f"r-{link.id}", a=new[link.a], b=new[link.b]))
    snap_a = take_snapshot(topo)
    snap_b = take_snapshot(renamed)
    gpu_of = {g: i for i, g in enumerate(snap_b.node_ids[x] for x in snap_b.gpus)}
    ranks_b = [gpu_of[new[snap_a.node_ids[snap_a.gpus[r]]]] for r in ranks]
    a = _solve(topo, "adaptive", ranks, True)
    b = _solve(renamed, "adaptive", ranks_b[::-1], True)
    np.testing.assert_allclose(_pair_rates(a), _pair_rates(b), rtol=1e-9)
    names_b = {snap_b.arc_name(i): i for i in range(snap_b.n_arcs)}
    for arc in range(snap_a.n_arcs):
        link, ends = snap_a.arc_name(arc).split(" ", 1)
        far = f"r-{link} " + "".join(new.get(w, w) for w in _split_ends(ends))
        assert b.arc_load_GBps[names_b[far]] == pytest.approx(
            a.arc_load_GBps[arc], rel=1e-9, abs=1e-9
        )


def _split_ends(ends: str) -> list[str]:
    """``"(a -> b)"`` as ``["(", "a", " -> ", "b", ")"]``."""
    a, b = ends[1:-1].split(" -> ")
    return ["(", a, " -> ", b, ")"]


def test_memory_estimate_counts_classes():
    """A 4,096-GPU rail cluster's adaptive all-to-all is estimated as classes (MBs of
    flows), not as 16.8 million pairs (GBs); the estimate still bounds a real solve."""
    snap = take_snapshot(build_template("rail-cluster", nodes=512))
    assert estimate_solve(snap, "alltoall").bytes < 1 << 30
    with tuned(alltoall_classes=False):
        assert estimate_solve(snap, "alltoall").bytes > 2 << 30
    small = take_snapshot(build_template("rail-cluster", nodes=128))
    tracemalloc.start()
    try:
        solve_collective(small, "alltoall", sizes=[1 << 30])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= estimate_solve(small, "alltoall").bytes
