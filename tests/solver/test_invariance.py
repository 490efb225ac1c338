"""Results depend on a design's structure, not on how its file lists it (issue 28).

Each design is rebuilt with its nodes and links in a random order and every node and
link under a random new id (seeded); nothing is re-cabled.  Under adaptive and static
routing the solver must then give the same times, bandwidths and algorithm choices
(to rounding: sums over arcs run in another order).  NVLink domains, the ranks inside
them, rings and channels, static routing's destination digits and the order of
equal-cost next hops all follow the design's structure (`snapshot`, `structure`).

ECMP hashes each flow onto one path with a seeded hash of its structural position (its
channel and place in the ring or tree), over next hops in structural order, so it is
invariant wherever the structure is symmetric, which every template here is.  Where
structurally different choices tie (WL colour refinement cannot tell two switches
apart though no symmetry maps one onto the other), the tie falls back to file order,
and ECMP, which reads the order of every tie, may then move: the test allows ECMP a
band of ``ECMP_BAND`` (relative) rather than exact equality, so that a design whose
ties are not symmetric does not break it; the templates stay well inside it.
"""

from __future__ import annotations

import random

import pytest

from designer.io.fabric_json import from_dict, to_dict
from designer.model.templates import build_template
from designer.solver.flows.ring_layout import first_ranks
from designer.solver.pipeline import solve_collective
from designer.solver.snapshot.build import take_snapshot

SIZES = [1 << 20, 1 << 30]
ECMP_BAND = 0.02


def dual_homed():
    """The 2:1 leaf-spine with every NIC cabled to a second leaf as well (the next one,
    cyclically): each NIC has two equal uplinks, and the solver must pick one by
    structure, not by which cable the file lists first."""
    data = to_dict(build_template("leaf-spine"))
    leaves = sorted(n["id"] for n in data["nodes"] if n["kind"] == "leaf")
    extra = []
    for link in data["links"]:
        if link["b"] in leaves and link["a"].endswith("nic0"):
            nxt = leaves[(leaves.index(link["b"]) + 1) % len(leaves)]
            extra.append({**link, "id": link["id"] + "-2", "b": nxt})
    data["links"] += extra
    return from_dict(data)


DESIGNS = {
    "leaf-spine 2:1": lambda: build_template("leaf-spine"),
    "leaf-spine dual-homed": dual_homed,
    "rail 8 nodes 2:1": lambda: build_template("rail-cluster", nodes=8, oversubscription=2.0),
    "superpod small": lambda: build_template("superpod", sus=1),
    "fat tree": lambda: build_template("fat-tree"),
    "torus 4x4x4": lambda: build_template("torus3d"),
    "torus 2x3x4": lambda: build_template("torus3d", x=2, y=3, z=4),
}
CASES = [
    ("allreduce", "ring"),
    ("allreduce", "tree"),
    ("allreduce", "auto"),
    ("allgather", "ring"),
    ("allgather", "auto"),
    ("broadcast", "ring"),
    ("alltoall", "auto"),
    ("sendrecv", "auto"),
]


def shuffled(topology, seed: int):
    """``topology`` with its nodes and links listed in a random order and every node
    and link renamed at random: the same cables."""
    rng = random.Random(seed)
    data = to_dict(topology)
    rng.shuffle(data["nodes"])
    rng.shuffle(data["links"])
    new = {}
    for node in data["nodes"]:
        new[node["id"]] = node["id"] = f"v{rng.randrange(10**9):09d}-{len(new)}"
    for k, link in enumerate(data["links"]):
        link["id"] = f"e{rng.randrange(10**9):09d}-{k}"
        link["a"], link["b"] = new[link["a"]], new[link["b"]]
    return from_dict(data)


def results(topology, routing: str, first: int | None = None) -> dict:
    """Times, bandwidths and choices of every case in `CASES`, on all GPUs or on the
    ``first`` N of them (as a scenario's ``ranks: N`` picks them)."""
    topology.set_setting("routing", routing)
    snap = take_snapshot(topology)
    ranks = None if first is None else first_ranks(snap, first)
    out = {}
    for collective, algorithm in CASES:
        res = solve_collective(snap, collective, sizes=SIZES, algorithm=algorithm, ranks=ranks)
        out[collective, algorithm] = (
            list(res.time_s),
            list(res.busbw_GBps),
            list(res.algorithm_by_size),
            list(res.protocol),
        )
    return out


@pytest.fixture(scope="module", params=list(DESIGNS))
def design(request):
    return request.param


@pytest.mark.parametrize("routing", ["adaptive", "static", "ecmp"])
def test_results_do_not_depend_on_node_order_or_names(design, routing):
    base = results(DESIGNS[design](), routing)
    for seed in (1, 2, 3):
        other = results(shuffled(DESIGNS[design](), seed), routing)
        for case, (time_s, busbw, algorithms, protocols) in base.items():
            o_time, o_busbw, o_algorithms, o_protocols = other[case]
            where = f"{design}, {routing}, {case}, seed {seed}"
            if routing == "ecmp":
                assert o_busbw == pytest.approx(busbw, rel=ECMP_BAND), where
            else:
                assert o_time == pytest.approx(time_s, rel=1e-12, abs=0), where
                assert o_busbw == pytest.approx(busbw, rel=1e-12, abs=0), where
                assert (o_algorithms, o_protocols) == (algorithms, protocols), where


@pytest.mark.parametrize("first", [3, 12])
@pytest.mark.parametrize("design", [d for d in DESIGNS if not d.startswith("torus")])
def test_the_first_n_gpus_do_not_depend_on_names(design, first):
    """``ranks: N`` takes whole NVLink domains in structural order: under new names
    the same GPUs (up to the design's symmetry) take part, with the same results.

    Not on a torus: its one domain is ordered along whichever ring of neighbours the
    search finds (`domain_walk`), and N GPUs along one ring need not be shaped like N
    along another (a row and a bend), so a part of a torus may differ by name.
    """
    base = results(DESIGNS[design](), "adaptive", first)
    for seed in (1, 2):
        other = results(shuffled(DESIGNS[design](), seed), "adaptive", first)
        for case, (time_s, _, algorithms, _) in base.items():
            where = f"{design}, first {first}, {case}, seed {seed}"
            assert other[case][0] == pytest.approx(time_s, rel=1e-12, abs=0), where
            assert other[case][2] == algorithms, where
