"""Benchmark of designer.solver.rates.maxmin.max_min_rates on fabric-sized problems.

Run ``python benchmarks/maxmin.py`` (well under a minute).  Each case runs in its own
process so the peak RSS it prints belongs to that case alone:

a. all-to-all between 1,024 hosts of a non-blocking leaf-spine (1,047,552 flows), equal
   capacities, one balanced path per flow.  Goal: <= 1 s.
b. the same traffic sprayed over 1, 2 or 4 spines per flow, with degraded NICs, degraded
   and dead leaf-spine links (unequal capacities, multipath weights).  Goal: <= 3 s.
c. a bidirectional ring all-reduce step over 16,384 GPUs on a leaf-spine.  Goal: a few ms.
d. all-to-all between 1,024 GPUs whose host side is a shared route per GPU and direction
   (GPU -> NIC -> leaf and back, as `SharedRoutes`), each flow hashed onto one spine:
   unequal fabric loads couple every host link to every other, so filling visits some
   2,000 levels (the shape of solver benchmark c with ECMP).  Goal: <= 0.5 s.
e. a ring all-reduce over 16,384 GPUs as the solver states it: 8 flows (ring channels),
   each over every node's NVLink, host routes and two hashed spines, 300k pairs and 33k
   route pairs grouped by flow, three levels (the shape of solver benchmark a).
   Goal: <= 10 ms.

Times are for ``max_min_rates`` alone (validation included, instance generation not),
best of a few runs; "first" is the first, cold run; "cpu" is process time, which a
machine shared with other jobs inflates less than wall time.  Rates are checked against the
max-min certificate (vectorised) after timing.
"""

import multiprocessing
import os
import resource
import sys
import time

import numpy as np

from designer.memory import tune_process
from designer.solver import SharedRoutes, max_min_rates

GBPS_400 = 50.0  # 400 Gb/s in GB/s


def leaf_spine_links(n_leaves, hosts_per_leaf, n_spines):
    """Link-id helpers: host up [0, N), host down [N, 2N), leaf->spine, spine->leaf."""
    n_hosts = n_leaves * hosts_per_leaf
    n_links = 2 * n_hosts + 2 * n_leaves * n_spines

    def leaf_up(leaf, spine):
        return 2 * n_hosts + leaf * n_spines + spine

    def spine_down(spine, leaf):
        return 2 * n_hosts + (n_leaves + leaf) * n_spines + spine

    return n_hosts, n_links, leaf_up, spine_down


def all_to_all_flows(n_hosts):
    src = np.repeat(np.arange(n_hosts, dtype=np.int32), n_hosts - 1)
    offset = np.tile(np.arange(n_hosts - 1, dtype=np.int32), n_hosts)
    dst = offset + (offset >= src)
    return src, dst


def case_all_to_all_equal(rng):
    n_leaves, hosts, spines = 32, 32, 32
    n_hosts, n_links, leaf_up, spine_down = leaf_spine_links(n_leaves, hosts, spines)
    src, dst = all_to_all_flows(n_hosts)
    flows = np.arange(src.size, dtype=np.int32)
    inter = np.flatnonzero(src // hosts != dst // hosts).astype(np.int32)
    spine = (src[inter] % hosts + dst[inter] % hosts) % spines  # balanced single path
    pair_flow = np.concatenate([flows, flows, inter, inter])
    pair_link = np.concatenate(
        [
            src,
            n_hosts + dst,
            leaf_up(src[inter] // hosts, spine),
            spine_down(spine, dst[inter] // hosts),
        ]
    ).astype(np.int32)
    capacity = np.full(n_links, GBPS_400)
    return {"capacity": capacity, "pair_flow": pair_flow, "pair_link": pair_link}


def case_all_to_all_degraded(rng):
    n_leaves, hosts, spines = 32, 32, 32
    n_hosts, n_links, leaf_up, spine_down = leaf_spine_links(n_leaves, hosts, spines)
    src, dst = all_to_all_flows(n_hosts)
    flows = np.arange(src.size, dtype=np.int32)
    inter = np.flatnonzero(src // hosts != dst // hosts).astype(np.int32)
    k = rng.choice(np.array([1, 2, 4], np.int32), size=inter.size, p=[0.3, 0.3, 0.4])
    base = rng.integers(0, spines, inter.size, dtype=np.int32)
    parts_flow, parts_link, parts_weight = [flows, flows], [src, n_hosts + dst], []
    parts_weight = [np.ones(flows.size), np.ones(flows.size)]
    for j in range(4):
        on = k > j
        f = inter[on]
        spine = (base[on] + j * (spines // k[on])) % spines
        a, b = src[f] // hosts, dst[f] // hosts
        w = 1.0 / k[on]
        parts_flow += [f, f]
        parts_link += [leaf_up(a, spine), spine_down(spine, b)]
        parts_weight += [w, w]
    capacity = np.full(n_links, GBPS_400)
    nics = rng.random(2 * n_hosts) < 0.03  # NICs that trained down to 200G
    capacity[: 2 * n_hosts][nics] = GBPS_400 / 2
    fabric = capacity[2 * n_hosts :]
    worn = rng.random(fabric.size) < 0.05  # degraded optics, lanes down
    fabric[worn] = rng.uniform(0.25, 0.75, worn.sum()) * GBPS_400
    fabric[rng.choice(fabric.size, 2, replace=False)] = 0.0  # two dead links
    return {
        "capacity": capacity,
        "pair_flow": np.concatenate(parts_flow),
        "pair_link": np.concatenate(parts_link).astype(np.int32),
        "pair_weight": np.concatenate(parts_weight),
    }


def case_ring(rng):
    n_leaves, hosts, spines = 256, 64, 32  # 16,384 GPUs
    n_hosts, n_links, leaf_up, spine_down = leaf_spine_links(n_leaves, hosts, spines)
    gpu = np.arange(n_hosts, dtype=np.int32)
    src = np.concatenate([gpu, gpu])
    dst = np.concatenate([(gpu + 1) % n_hosts, (gpu - 1) % n_hosts]).astype(np.int32)
    flows = np.arange(src.size, dtype=np.int32)
    inter = np.flatnonzero(src // hosts != dst // hosts).astype(np.int32)
    spine = (src[inter].astype(np.int64) * 2654435761 % 2**32 % spines).astype(np.int32)  # hash
    pair_flow = np.concatenate([flows, flows, inter, inter])
    pair_link = np.concatenate(
        [
            src,
            n_hosts + dst,
            leaf_up(src[inter] // hosts, spine),
            spine_down(spine, dst[inter] // hosts),
        ]
    ).astype(np.int32)
    capacity = np.full(n_links, GBPS_400)
    return {"capacity": capacity, "pair_flow": pair_flow, "pair_link": pair_link}


def case_hashed_all_to_all(rng):
    n_leaves, hosts, spines = 32, 32, 16
    n_hosts = n_leaves * hosts
    # Links: per GPU, GPU->NIC, NIC->leaf, leaf->NIC, NIC->GPU; then leaf->spine and
    # spine->leaf (two 400G links each).
    n_links = 4 * n_hosts + 2 * n_leaves * spines
    capacity = np.concatenate([np.tile([54.81, 47.0, 47.0, 54.81], n_hosts),
                               np.full(2 * n_leaves * spines, 94.0)])
    gpu = 4 * np.arange(n_hosts)
    links = np.concatenate([np.stack([gpu, gpu + 1], 1), np.stack([gpu + 2, gpu + 3], 1)])
    src, dst = all_to_all_flows(n_hosts)
    flows = np.arange(src.size, dtype=np.int32)
    routes = SharedRoutes(
        ptr=np.arange(0, 2 * links.shape[0] + 1, 2),
        link=links.ravel(),
        weight=np.ones(links.size),
        pair_flow=np.concatenate([flows, flows]),
        pair_route=np.concatenate([src, n_hosts + dst]),
    )
    inter = np.flatnonzero(src // hosts != dst // hosts).astype(np.int32)
    spine = rng.integers(0, spines, inter.size)  # a hash of the flow's header
    a, b = src[inter] // hosts, dst[inter] // hosts
    base = 4 * n_hosts
    pair_link = np.concatenate([base + a * spines + spine,
                                base + (n_leaves + b) * spines + spine]).astype(np.int32)
    assert pair_link.max() < n_links
    return {"capacity": capacity, "pair_flow": np.concatenate([inter, inter]),
            "pair_link": pair_link, "n_flows": src.size, "routes": routes}


def case_ring_channels(rng):
    n_nodes, gpus, channels, spines = 2048, 8, 8, 32  # 16,384 GPUs, 8 ring channels
    n_gpus = n_nodes * gpus
    n_leaves = gpus * n_nodes // 32  # rail-optimised: a leaf per rail and 32 nodes
    # Links: per GPU NVLink up/down (to and from the NVSwitch), PCIe up/down, NIC up/down;
    # then leaf->spine and spine->leaf.
    nvl_up, nvl_down, pcie_up, pcie_down, nic_up, nic_down = (
        k * n_gpus for k in range(6))
    fabric = 6 * n_gpus
    n_links = fabric + 2 * n_leaves * spines
    capacity = np.concatenate([np.full(2 * n_gpus, 360.9), np.full(2 * n_gpus, 54.81),
                               np.full(2 * n_gpus, 47.0), np.full(2 * n_leaves * spines, 94.0)])
    gpu = np.arange(n_gpus)
    # Host routes, one per GPU and direction: GPU -> NIC -> leaf, and back.
    routes_links = np.concatenate([np.stack([pcie_up + gpu, nic_up + gpu], 1),
                                   np.stack([nic_down + gpu, pcie_down + gpu], 1)])
    node = np.arange(n_nodes)
    parts_flow, parts_link, route_flow, route_id = [], [], [], []
    for c in range(channels):
        # Channel c enters each node at GPU c, visits all 8 over NVLink and leaves from GPU
        # c - 1 to the next node's GPU c, over two spines (half the rate each).
        order = (c + np.arange(gpus)) % gpus
        src = (node[:, None] * gpus + order[None, :-1]).ravel()
        dst = (node[:, None] * gpus + order[None, 1:]).ravel()
        out = node * gpus + order[-1]
        into = ((node + 1) % n_nodes) * gpus + order[0]
        leaf_a = (out % gpus) * (n_nodes // 32) + node // 32
        leaf_b = (into % gpus) * (n_nodes // 32) + (into // gpus) // 32
        s1 = rng.integers(0, spines, n_nodes)
        s2 = (s1 + spines // 2) % spines
        links = np.concatenate([nvl_up + src, nvl_down + dst,
                                fabric + leaf_a * spines + s1, fabric + leaf_a * spines + s2,
                                fabric + (n_leaves + leaf_b) * spines + s1,
                                fabric + (n_leaves + leaf_b) * spines + s2])
        parts_link.append(links)
        parts_flow.append(np.full(links.size, c))
        route_flow.append(np.full(2 * n_nodes, c))
        route_id.append(np.concatenate([out, n_gpus + into]))
    pair_link = np.concatenate(parts_link).astype(np.int32)
    weight = np.where(pair_link >= fabric, 0.5, 1.0)  # two spines, half the rate each
    assert pair_link.max() < n_links
    routes = SharedRoutes(ptr=np.arange(0, routes_links.size + 1, 2), link=routes_links.ravel(),
                          weight=np.ones(routes_links.size),
                          pair_flow=np.concatenate(route_flow).astype(np.int32),
                          pair_route=np.concatenate(route_id).astype(np.int32))
    return {"capacity": capacity, "pair_flow": np.concatenate(parts_flow).astype(np.int32),
            "pair_link": pair_link, "pair_weight": weight, "n_flows": channels,
            "routes": routes}


CASES = {
    "a": ("all-to-all 1024 hosts, equal caps", case_all_to_all_equal, 3, 1.0),
    "b": ("all-to-all sprayed, degraded links", case_all_to_all_degraded, 2, 3.0),
    "c": ("ring 16,384 GPUs, bidirectional", case_ring, 20, 0.005),
    "d": ("all-to-all, shared host routes, hashed", case_hashed_all_to_all, 2, 0.5),
    "e": ("ring channels, 16,384 GPUs, 8 flows", case_ring_channels, 20, 0.01),
}


def certificate_violation(problem, result):
    """Worst relative violation of feasibility or of the bottleneck certificate."""
    cap = problem["capacity"]
    pf, pl = problem["pair_flow"], problem["pair_link"]
    pw = problem.get("pair_weight")
    pw = np.ones(pf.size) if pw is None else pw
    if problem.get("routes") is not None:
        ef, el, ew = problem["routes"].expand()
        pf, pl, pw = np.concatenate([pf, ef]), np.concatenate([pl, el]), np.concatenate([pw, ew])
    rates = result.rates
    load = np.bincount(pl, weights=pw * rates[pf], minlength=cap.size)
    scale = cap.max()
    over = np.max((load - cap) / scale, initial=0.0)
    top = np.zeros(cap.size)
    np.maximum.at(top, pl, rates[pf])
    b = result.bottleneck
    assert np.all(b >= 0), "no demands in these cases"
    slack = np.max((cap[b] - load[b]) / scale, initial=0.0)
    not_top = np.max((top[b] - rates) / scale, initial=0.0)
    return max(over, slack, not_top)


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # ru_maxrss is KiB


def run_case(key):
    tune_process()  # (in the spawned child: its own process)
    title, build, repeats, goal = CASES[key]
    problem = build(np.random.default_rng(2024))
    before = rss_mib()
    times, cpu_times = [], []
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        result = max_min_rates(**problem)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    return {
        "case": key,
        "title": title,
        "flows": result.rates.size,
        "pairs": problem["pair_flow"].size + (
            0 if problem.get("routes") is None else problem["routes"].expand()[0].size),
        "rounds": result.rounds,
        "first": times[0],
        "best": min(times),
        "cpu": min(cpu_times),
        "goal": goal,
        "rss_input": before,
        "rss_peak": rss_mib(),
        "starved": result.starved.size,
        "violation": certificate_violation(problem, result),
    }


# glibc hands big temporaries back to the kernel on free, so every large numpy array
# is fresh memory that page-faults on first touch: expensive in VMs.  Raising these two
# thresholds keeps freed memory in the process.  The app's entry points do so
# (32 MB and 512 MB, `designer.memory.tune_process`); the "default" rows ask it not
# to (glibc's own thresholds), the "tuned" ones set these through glibc's variables.
DEFAULT_MALLOC = {"FABRIC_DESIGNER_MALLOC": "glibc"}
TUNED_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(1 << 25), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}


def run_in_child(key, env):
    """Run one case in a fresh spawned process with ``env`` added to its environment."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            return pool.apply(run_case, (key,))
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main(keys):
    tune_process()  # numpy and the allocator as the app sets them
    print(
        f"{'case':<40} {'malloc':<7} {'flows':>10} {'pairs':>11} {'rounds':>6} "
        f"{'first s':>8} {'best s':>8} {'cpu s':>8} {'goal s':>6} {'RSS in':>7} {'RSS pk':>7} "
        f"{'cert':>8}"
    )
    for key in keys:
        for malloc, env in (("default", DEFAULT_MALLOC), ("tuned", TUNED_MALLOC)):
            row = run_in_child(key, env)
            print(
                f"{row['case'] + '. ' + row['title']:<40} {malloc:<7} {row['flows']:>10,} "
                f"{row['pairs']:>11,} {row['rounds']:>6} {row['first']:>8.4f} "
                f"{row['best']:>8.4f} {row['cpu']:>8.4f} {row['goal']:>6} "
                f"{row['rss_input']:>6.0f}M {row['rss_peak']:>6.0f}M {row['violation']:>8.1e}"
            )
    print("first: cold run; best: best wall time; cpu: best CPU time (robust to a busy machine).")
    print(f"malloc tuned: {' '.join(f'{k}={v}' for k, v in TUNED_MALLOC.items())}")
    print("RSS in: peak before the solve (instance built); RSS pk: peak after it.")
    print("cert: worst violation of capacity / bottleneck certificate, relative to max cap.")


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
