"""Placement of a job's ranks on a design's GPUs."""

import random

import numpy as np
import pytest

from designer.io.fabric_json import from_dict, to_dict
from designer.model.templates import build_template
from designer.solver import take_snapshot
from designer.workload.job import Job, Parallelism
from designer.workload.placement import place, rank_grid
from designer.workload.presets import preset


def job(tp=4, pp=1, dp=4, placement="packed", gpus=(), name="a", **kw):
    return Job.from_preset(name, preset("tiny"), parallel=Parallelism(tp=tp, pp=pp, dp=dp),
                           placement=placement, gpus=tuple(gpus), **kw)


@pytest.fixture(scope="module")
def cluster():
    return take_snapshot(build_template("rail-cluster", nodes=4))


def where(snap, p):
    """(NVLink domain, local position) of each rank."""
    return snap.gpu_domain[p.ranks].tolist(), snap.gpu_local[p.ranks].tolist()


def test_megatron_order_tp_innermost():
    g = rank_grid(Parallelism(tp=2, cp=2, pp=3, dp=2))
    assert g.shape == (2, 3, 2, 2)
    assert g[0, 0, 0].tolist() == [0, 1] and g[0, 0, 1].tolist() == [2, 3]
    assert g[0, 1, 0, 0] == 4 and g[1, 0, 0, 0] == 12


def test_packed_fills_domains_spread_uses_them_all(cluster):
    packed = place(job(), cluster)
    spread = place(job(placement="spread"), cluster)
    assert packed.domains == 2 and spread.domains == 4
    assert packed.tp_split == spread.tp_split == 0
    dom, loc = where(cluster, spread)
    assert dom[:4] == [0] * 4 and dom[4:8] == [1] * 4 and loc[:4] == [0, 1, 2, 3]


def test_rail_aligned_keeps_cross_server_peers_on_one_rail(cluster):
    """Another job holds rails 0-3 of the first server: packed then puts pipeline peers
    of different servers on different rails, rail-aligned does not."""
    first = [cluster.node_ids[cluster.gpus[r]] for r in range(cluster.n_gpus)
             if cluster.gpu_domain[r] == 0 and cluster.gpu_local[r] < 4]
    taken = dict.fromkeys(first, "other")

    def cross_rail(p, par):
        """Pipeline and data-parallel peers on different servers and different rails."""
        dom, loc = (np.array(x) for x in where(cluster, p))
        grid = rank_grid(par)
        bad = 0
        for axis in (0, 1):   # dp, pp
            for peers in np.moveaxis(grid, axis, -1).reshape(-1, grid.shape[axis]):
                bad += sum(dom[i] != dom[j] and loc[i] != loc[j] for i in peers for j in peers)
        return bad

    par = dict(tp=4, pp=2, dp=2)
    assert cross_rail(place(job(**par), cluster, taken), Parallelism(**par)) > 0
    aligned = place(job(placement="rail-aligned", **par), cluster, taken)
    assert cross_rail(aligned, Parallelism(**par)) == 0
    assert not set(aligned.gpus) & set(first)


def shuffled(topology, seed):
    """The same cables, nodes and links listed in another order and renamed."""
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


@pytest.mark.parametrize("policy", ["packed", "spread", "rail-aligned"])
def test_placement_does_not_depend_on_names_or_file_order(policy):
    topo = build_template("rail-cluster", nodes=4)
    a = take_snapshot(topo)
    ref = where(a, place(job(tp=2, dp=5, placement=policy), a))
    for seed in range(3):
        b = take_snapshot(shuffled(topo, seed))
        assert where(b, place(job(tp=2, dp=5, placement=policy), b)) == ref


def test_explicit_list_in_rank_order(cluster):
    ids = [cluster.node_ids[g] for g in cluster.gpus[::-1][:8]]
    p = place(job(tp=2, dp=4, placement="explicit", gpus=ids), cluster)
    assert p.gpus == tuple(ids)


@pytest.mark.parametrize("make,taken,message", [
    (lambda s: job(tp=8, dp=8), {}, "needs 64 GPUs, the design has 32"),
    (lambda s: job(placement="explicit", tp=2, dp=1,
                   gpus=[s.node_ids[s.gpus[0]], "nope"]), {}, "'nope' is not a GPU"),
    (lambda s: job(placement="explicit", tp=2, dp=1,
                   gpus=[s.node_ids[s.gpus[0]]] * 2), {}, "listed twice"),
    (lambda s: job(placement="explicit", tp=2, dp=1,
                   gpus=[s.node_ids[g] for g in s.gpus[:2]]), "first", "already in job 'x'"),
    (lambda s: job(tp=8, dp=4), "first", "28 of the design's 32 are free"),
    (lambda s: job(tp=8, dp=1), "one per server", "in whole TP groups of 8 do not fit"),
])
def test_refused_with_one_line_naming_the_job(cluster, make, taken, message):
    if taken == "first":
        taken = {cluster.node_ids[g]: "x" for g in cluster.gpus[:4]}
    elif taken:
        taken = {cluster.node_ids[cluster.gpus[r]]: "x" for r in range(cluster.n_gpus)
                 if cluster.gpu_local[r] == 3}
    with pytest.raises(ValueError, match=message) as err:
        place(make(cluster), cluster, taken)
    assert str(err.value).startswith("job 'a': ") and "\n" not in str(err.value)


def test_tp_beyond_a_domain_is_allowed_with_a_warning(cluster):
    big = Job.from_preset("a", preset("llama3.1-8b"), parallel=Parallelism(tp=16, dp=1))
    p = place(big, cluster)
    assert p.tp_split == 1 and "crosses the network" in p.warnings[0]
