"""The event simulation of jobs sharing a fabric: a collective alone keeps today's solve
time, shared ones slow down as a hand max-min says, in time; errors name job and task."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.solver import Cancelled, SolverError, solve_collective, take_snapshot
from designer.workload.lone import lone_collective
from designer.workload.memo import SimulationMemo
from designer.workload.simulate import simulate
from designer.workload.tasks import Comm, Compute, JobTraffic


@pytest.fixture(scope="module")
def rail():
    return take_snapshot(build_template("rail-cluster", nodes=2))


@pytest.fixture(scope="module")
def hgx():
    return take_snapshot(build_template("hgx"))


@pytest.fixture(scope="module")
def leafspine():
    """2 leaves of 4 one-GPU hosts, 2 uplinks per leaf to one spine: 2:1."""
    return take_snapshot(
        build_template("leaf-spine", leaves=2, spines=1, hosts_per_leaf=4, uplinks=2)
    )


def _gpus(snap, ranks):
    return tuple(snap.node_ids[g] for g in snap.gpus[list(ranks)].tolist())


def _alone_job(snap, collective, ranks, nbytes):
    return JobTraffic("j", (Comm(0, "dp", collective, (_gpus(snap, ranks),), nbytes),))


@pytest.mark.parametrize(
    ("which", "collective", "ranks", "nbytes"),
    [
        ("hgx", "allreduce", range(4), 64 << 20),
        ("hgx", "allreduce", range(8), 1 << 30),
        ("hgx", "allgather", range(8), 32 << 10),
        ("rail", "allreduce", range(16), 1 << 30),
        ("rail", "allreduce", range(16), 256 << 10),
        ("rail", "reducescatter", range(16), 96 << 20),
        ("rail", "alltoall", range(16), 64 << 20),
        ("rail", "broadcast", (3, 9, 12), 8 << 20),
        ("rail", "sendrecv", (2, 10), 16 << 20),
        ("rail", "sendrecv", (10, 2), 16 << 20),
    ],
)
def test_one_collective_alone_takes_the_solve_time(request, which, collective, ranks, nbytes):
    snap = request.getfixturevalue(which)
    res = simulate(snap, [_alone_job(snap, collective, ranks, nbytes)])
    want = float(solve_collective(snap, collective, sizes=[nbytes], ranks=list(ranks)).time_s[0])
    assert res.jobs[0].iteration_s == pytest.approx(want, rel=1e-12)
    assert res.jobs[0].alone_s == res.jobs[0].iteration_s
    assert res.jobs[0].slowdown == 1.0


def _dp_job(name, groups, nbytes, lead=0.0):
    """A compute span of ``lead`` seconds, then an all-reduce over ``groups``."""
    return JobTraffic(
        name,
        (
            Compute(0, "compute", lead, label="bwd"),
            Comm(1, "dp", "allreduce", groups, nbytes, deps=(0,), label="grad all-reduce"),
        ),
    )


def _hand_rate(snap, n_flows):
    """Max-min by hand: ``n_flows`` rings each cross a leaf's uplink bundle once per
    direction and their own NIC cables: each gets the smaller of the NIC cable and an
    equal share of the uplink."""
    names = [snap.arc_name(a) for a in range(snap.n_arcs)]
    up = [snap.arc_cap[a] for a, n in enumerate(names) if "(leaf-0 -> spine-0)" in n]
    nic = [snap.arc_cap[a] for a, n in enumerate(names) if "(n01-nic0 -> leaf-0)" in n]
    return min(nic[0], up[0] / n_flows), nic[0]


@pytest.mark.parametrize(
    ("groups_a", "groups_b"),
    [
        (((0, 4), (1, 5)), ((2, 6), (3, 7))),  # 4 rings on the 2:1 uplinks: half rate each
        (((0, 4), (1, 5)), ((2, 6),)),  # 3 rings: two thirds each
    ],
)
def test_two_jobs_on_a_2_to_1_leaf_spine_slow_down_as_hand_max_min(leafspine, groups_a, groups_b):
    snap = leafspine
    shared_rate, alone_rate = _hand_rate(snap, len(groups_a) + len(groups_b))
    # Alone, neither job fills the uplinks: its rings run at the NIC cable's rate.
    assert alone_rate == _hand_rate(snap, max(len(groups_a), len(groups_b)))[0]
    nbytes = 1 << 30
    a = _dp_job("a", tuple(_gpus(snap, g) for g in groups_a), nbytes)
    b = _dp_job("b", tuple(_gpus(snap, g) for g in groups_b), nbytes)
    res = simulate(snap, [a, b])
    # A 2-rank ring all-reduce moves the message once each way (2 (n - 1) / n = 1): the
    # bandwidth term goes from S / alone rate to S / shared rate; the rest is unchanged.
    extra = nbytes / (shared_rate * 1e9) - nbytes / (alone_rate * 1e9)
    for job in res.jobs:
        assert job.iteration_s - job.alone_s == pytest.approx(extra, rel=1e-9)
        assert job.slowdown > 1.4


def test_rates_are_re_solved_when_a_job_joins_and_leaves(leafspine):
    """Job b starts its all-reduce ``c`` later: a runs alone, then both at half speed
    until a ends, then b alone: a ends at F + 2B - c, b at F + 2B (alone, B is the
    bandwidth term and F the rest)."""
    snap = leafspine
    nbytes = 1 << 30
    lone = lone_collective(snap, "allreduce", (0, 4), nbytes, cache={})
    lat, band = lone.fixed_s, lone.bandwidth_s
    c = band / 4
    a = _dp_job("a", (_gpus(snap, (0, 4)), _gpus(snap, (1, 5))), nbytes)
    b = _dp_job("b", (_gpus(snap, (2, 6)), _gpus(snap, (3, 7))), nbytes, lead=c)
    res = simulate(snap, [a, b])
    assert res.jobs[0].iteration_s == pytest.approx(lat + 2 * band - c, rel=1e-9)
    assert res.jobs[1].iteration_s == pytest.approx(lat + 2 * band, rel=1e-9)
    assert res.jobs[1].alone_s == pytest.approx(c + lat + band, rel=1e-12)


def test_opposite_sends_share_nothing_same_direction_sends_share(leafspine):
    snap = leafspine

    def there(name, sender, receiver):
        pair = (_gpus(snap, (sender, receiver)),)
        return JobTraffic(name, (Comm(0, "pp", "sendrecv", pair, 1 << 30),))

    both_ways = simulate(snap, [there("a", 0, 4), there("b", 5, 1)])
    assert [j.slowdown for j in both_ways.jobs] == [1.0, 1.0]
    # Four senders from leaf 0 to leaf 1 over a 2:1 uplink: half rate each.
    same = simulate(snap, [there("a", 0, 4), there("b", 1, 5), there("c", 2, 6), there("d", 3, 7)])
    assert all(j.slowdown > 1.5 for j in same.jobs)


def test_links_report_bytes_shares_and_utilisation(leafspine):
    snap = leafspine
    nbytes = 1 << 30
    a = _dp_job("a", (_gpus(snap, (0, 4)), _gpus(snap, (1, 5))), nbytes, lead=1e-3)
    b = _dp_job("b", (_gpus(snap, (2, 6)),), nbytes, lead=1e-3)
    res = simulate(snap, [a, b])
    links = {row["id"]: row for row in res.to_json()["links"]}
    up = links["leaf-0:spine-0"]
    # A 2-rank ring all-reduce sends the message once each way; 3 rings cross the uplink.
    assert up["bytes"] == pytest.approx(3 * 2 * nbytes, rel=1e-9)
    assert up["jobs"] == {"a": pytest.approx(2 / 3), "b": pytest.approx(1 / 3)}
    assert 0 < up["mean_util"] < up["peak_util"] <= 1.0 + 1e-9
    assert res.busiest[0][0] in ("leaf-0:spine-0", "leaf-1:spine-0")
    assert links["n01-nic0:leaf-0"]["jobs"] == {"a": 1.0}
    assert "n04-nic0:leaf-0" not in links  # rank 3 sends nothing


def test_breakdown_follows_the_critical_path(leafspine):
    snap = leafspine
    job = JobTraffic(
        "a",
        (
            Compute(0, "compute", 2e-3, label="fwd"),
            Comm(1, "tp", "allreduce", (_gpus(snap, (0, 1)),), 1 << 24, deps=(0,)),
            Compute(2, "compute", 1e-3, deps=(1,), label="bwd"),
            Comm(3, "dp", "allreduce", (_gpus(snap, (0, 4)),), 1 << 20, deps=(0,)),
            Compute(4, "compute", 5e-4, deps=(2, 3), label="step"),
        ),
    )
    res = simulate(snap, [job])
    br = res.jobs[0].breakdown
    assert br["compute"] == pytest.approx(3.5e-3)
    assert br["tp"] > 0 and br["dp"] == 0.0  # dp hid behind tp + bwd
    assert br["exposed_comm"] == br["tp"]
    total = sum(v for k, v in br.items() if k != "exposed_comm")
    assert total == pytest.approx(res.jobs[0].iteration_s, rel=1e-12)
    lanes = [(e.task, e.lane) for e in res.timeline]
    assert sorted(lanes) == [(0, "compute"), (1, "tp"), (2, "compute"), (3, "dp"), (4, "compute")]


def test_repeated_micro_batches_and_identical_groups_are_solved_once(rail):
    snap = rail
    tp = tuple(_gpus(snap, range(k, k + 8)) for k in (0, 8))
    dp = tuple(_gpus(snap, (k, k + 8)) for k in range(8))

    def job(micro):
        tasks, prev = [], ()
        for m in range(micro):
            tasks.append(Compute(3 * m, "compute", 1e-4, deps=prev))
            tasks.append(Comm(3 * m + 1, "tp", "allreduce", tp, 8 << 20, deps=(3 * m,)))
            tasks.append(Comm(3 * m + 2, "dp", "allreduce", dp, 4 << 20, deps=(3 * m,)))
            prev = (3 * m + 1, 3 * m + 2)
        return JobTraffic("j", tuple(tasks))

    one, many = simulate(snap, [job(1)]), simulate(snap, [job(16)])
    assert many.stats["maxmin_solves"] == one.stats["maxmin_solves"]
    assert many.jobs[0].iteration_s == pytest.approx(16 * one.jobs[0].iteration_s, rel=1e-9)
    plain = simulate(snap, [job(16)], reuse=False)
    assert plain.stats["maxmin_solves"] > many.stats["maxmin_solves"]
    assert plain.jobs[0].iteration_s == pytest.approx(many.jobs[0].iteration_s, rel=1e-12)
    assert np.allclose(plain.links.bytes, many.links.bytes, rtol=1e-12)


def test_results_do_not_depend_on_job_or_task_order(leafspine):
    snap = leafspine
    a = _dp_job("a", (_gpus(snap, (0, 4)), _gpus(snap, (1, 5))), 1 << 28)
    b = _dp_job("b", (_gpus(snap, (2, 6)),), 1 << 28, lead=1e-4)
    b_rev = JobTraffic("b", tuple(reversed(b.tasks)))
    one = simulate(snap, [a, b]).to_json(timeline=False)
    two = simulate(snap, [b_rev, a]).to_json(timeline=False)
    assert sorted(one["jobs"], key=lambda j: j["name"]) == sorted(
        two["jobs"], key=lambda j: j["name"]
    )
    assert one["links"] == [{**r, "jobs": dict(sorted(r["jobs"].items()))} for r in two["links"]]


def test_a_group_the_fabric_does_not_connect_names_job_and_task():
    topo = build_template("leaf-spine", leaves=2, spines=1, hosts_per_leaf=2, uplinks=1)
    topo.remove_link("leaf-1:spine-0")
    snap = take_snapshot(topo)
    job = _alone_job(snap, "allreduce", (0, 3), 1 << 20)
    with pytest.raises(SolverError, match=r"job 'j', task 0 .*n01-gpu0, n04-gpu0.*no fabric"):
        simulate(snap, [job])
    stranger = JobTraffic(
        "k", (Comm(5, "dp", "allreduce", (("n01-gpu0", "nope"),), 1.0, label="grads"),)
    )
    with pytest.raises(SolverError, match=r"job 'k', task 5 \(grads\): 'nope' is not a GPU"):
        simulate(snap, [stranger])


def test_jobs_sharing_a_gpu_or_a_name_are_refused(leafspine):
    a = _alone_job(leafspine, "allreduce", (0, 1), 1 << 20)
    b = JobTraffic("b", a.tasks)
    with pytest.raises(ValueError, match="GPU 'n01-gpu0' is in job 'j' and in job 'b'"):
        simulate(leafspine, [a, b])
    with pytest.raises(ValueError, match="two jobs are named 'j'"):
        simulate(leafspine, [a, _alone_job(leafspine, "allreduce", (2, 3), 1 << 20)])


def test_cancelled_between_events(leafspine):
    job = _dp_job("a", (_gpus(leafspine, (0, 4)),), 1 << 20)
    polls = []
    with pytest.raises(Cancelled):
        simulate(leafspine, [job], cancelled=lambda: polls.append(1) or len(polls) > 1)


def test_send_pairs_timed_by_class_match_each_pair_solved_alone():
    """A pipeline send over many pairs: routed in one batch and timed by class, it gives
    what solving every pair on its own gives (crossing leaves or not, either way)."""
    snap = take_snapshot(build_template("rail-cluster", nodes=4))
    forward = tuple(_gpus(snap, (k, k + 8)) for k in range(8)) + tuple(
        _gpus(snap, (k + 24, k + 16)) for k in range(4)
    )
    inside = tuple(_gpus(snap, (k, k + 1)) for k in range(8, 16, 2))
    job = JobTraffic(
        "pp",
        (
            Comm(0, "pp", "sendrecv", forward, 48 << 20),
            Comm(1, "pp", "sendrecv", inside, 48 << 20, deps=(0,)),
            Comm(2, "pp", "sendrecv", forward, 1 << 16, deps=(1,)),
        ),
    )
    other = _dp_job("dp", (_gpus(snap, (20, 28)), _gpus(snap, (21, 29))), 1 << 28)
    fast = simulate(snap, [job, other])
    plain = simulate(snap, [job, other], reuse=False)
    assert fast.stats["lone_collectives"] == plain.stats["lone_collectives"]
    for f, p in zip(fast.jobs, plain.jobs, strict=True):
        assert f.iteration_s == pytest.approx(p.iteration_s, rel=1e-12)
        assert f.alone_s == pytest.approx(p.alone_s, rel=1e-12)
    assert np.allclose(fast.links.job_bytes, plain.links.job_bytes, rtol=1e-12)
    assert np.allclose(fast.links.peak_util, plain.links.peak_util, rtol=1e-12)


def test_groups_in_alike_nvlink_domains_are_solved_once_and_moved():
    """TP groups in every server: solved in the first server and moved to the alike ones,
    but a server with a degraded NVLink bundle is solved on its own; either way the same
    times and the same bytes on the same links as solving each group alone."""
    topo = build_template("rail-cluster", nodes=4)
    topo.update_link("n03-gpu0:n03-nvs0", count=2)
    snap = take_snapshot(topo)
    tp = tuple(_gpus(snap, range(8 * k, 8 * k + 8)) for k in range(4))
    half = tuple(_gpus(snap, range(8 * k + 2, 8 * k + 6)) for k in range(4))
    job = JobTraffic(
        "tp",
        (
            Comm(0, "tp", "allreduce", tp, 256 << 20, label="all"),
            Comm(1, "tp", "allgather", tuple(g[:4] for g in tp), 32 << 20, deps=(0,)),
        ),
    )
    other = JobTraffic("x", (Comm(0, "tp", "reducescatter", half, 8 << 20),))
    fast = simulate(snap, [JobTraffic("tp", job.tasks)], reuse=True)
    plain = simulate(snap, [job], reuse=False)
    assert fast.stats["lone_collectives"] == plain.stats["lone_collectives"] == 8
    assert fast.jobs[0].iteration_s == pytest.approx(plain.jobs[0].iteration_s, rel=1e-12)
    assert np.allclose(fast.links.job_bytes, plain.links.job_bytes, rtol=1e-12)
    assert np.allclose(fast.links.peak_util, plain.links.peak_util, rtol=1e-12)
    degraded = {row["id"] for row in fast.to_json()["links"] if row["id"].startswith("n03")}
    assert "n03-gpu0:n03-nvs0" in degraded
    assert simulate(snap, [other]).jobs[0].iteration_s == pytest.approx(
        simulate(snap, [other], reuse=False).jobs[0].iteration_s, rel=1e-12
    )


@pytest.mark.parametrize(("routing", "broken"),
                         [("adaptive", False), ("adaptive", True), ("ecmp", False)])
def test_groups_across_twin_servers_are_solved_once_and_moved(routing, broken):
    """Groups of one GPU per server in the servers of one SU (twins: the same leaves):
    solved once per pattern and moved under adaptive routing, solved each under ECMP
    (its hash reads indices); a server whose NIC link failed is no twin.  Either way
    the same times and bytes as solving every group alone."""
    topo = build_template("superpod", gpu="B200", sus=1)
    topo.set_setting("routing", routing)
    if broken:  # server 6's first NIC loses its leaf link
        link = next(lk.id for lk in topo.links() if "n06-nic0" in (lk.a, lk.b)
                    and topo.node(lk.b if lk.a == "n06-nic0" else lk.a).kind == "leaf")
        topo.update_link(link, failed=True)
    snap = take_snapshot(topo)
    groups = [
        _gpus(snap, [8 * s + t for s in servers])
        for t, servers in ((1, range(0, 8)), (1, range(8, 16)), (1, range(16, 24)),
                           (2, range(24, 32)), (2, range(1, 32, 4)), (0, range(0, 8)),
                           (0, range(8, 16)), (3, range(15, 7, -1)))
    ]
    job = JobTraffic(
        "dp", tuple(Comm(k, "dp", "allreduce", (g,), 64 << 20) for k, g in enumerate(groups))
    )
    fast = simulate(snap, [job], reuse=True)
    plain = simulate(snap, [job], reuse=False)
    assert fast.jobs[0].iteration_s == pytest.approx(plain.jobs[0].iteration_s, rel=1e-12)
    assert np.allclose(fast.links.job_bytes, plain.links.job_bytes, rtol=1e-12, atol=1e-6)
    assert np.allclose(fast.links.peak_util, plain.links.peak_util, rtol=1e-12)
    if routing == "adaptive":
        # Solved: the first group of each (local position, server order) pattern,
        # and every group holding server 6 when it is no twin (then also the next of
        # its pattern); the others moved.
        assert fast.stats["solved_alone"] == (7 if broken else 4)
    else:
        assert fast.stats["solved_alone"] == plain.stats["solved_alone"] == len(groups)


def test_groups_across_sus_and_collectives_move_between_twin_servers():
    """Groups spanning two SUs (two servers in each), for an all-reduce, an all-to-all
    and an all-gather: each collective solved once for its pattern and moved to the
    twins, with the times and bytes of solving every group."""
    topo = build_template("superpod", gpu="B200", sus=2)
    snap = take_snapshot(topo)
    comms = []
    for s in (0, 4, 8):
        for local, collective in ((0, "allreduce"), (3, "alltoall"), (5, "allgather")):
            servers = (s, s + 2, 32 + s, 32 + s + 1)
            group = _gpus(snap, [8 * d + local for d in servers])
            comms.append(Comm(len(comms), "dp", collective, (group,), 16 << 20))
    job = JobTraffic("dp", tuple(comms))
    fast = simulate(snap, [job], reuse=True)
    plain = simulate(snap, [job], reuse=False)
    assert fast.stats["solved_alone"] == 3 and plain.stats["solved_alone"] == 9
    assert fast.jobs[0].iteration_s == pytest.approx(plain.jobs[0].iteration_s, rel=1e-12)
    assert np.allclose(fast.links.job_bytes, plain.links.job_bytes, rtol=1e-12, atol=1e-6)
    assert np.allclose(fast.links.peak_util, plain.links.peak_util, rtol=1e-12)


def test_servers_of_another_gpu_model_are_no_twins():
    """Two servers wired alike but with another GPU model are not twins: the time
    model reads the GPU's generation."""
    from designer.model.commands import SetNodeProps
    from designer.workload.domains import DomainMaps, ServerMaps

    topo = build_template("rail-cluster", nodes=4)
    snap = take_snapshot(topo)
    alike = ServerMaps(snap, DomainMaps(snap)).twin_class
    assert len(set(alike.tolist())) == 1
    gpus = [n.id for n in topo.nodes("gpu") if n.id.startswith("n02-")]
    SetNodeProps(gpus, model="H200").do(topo)
    snap = take_snapshot(topo)
    twins = ServerMaps(snap, DomainMaps(snap)).twin_class
    server = int(snap.node_domain[snap.node_ids.index(gpus[0])])
    assert len(set(twins.tolist())) == 2 and (twins == twins[server]).sum() == 1


def test_groups_moved_from_twin_servers_are_kept_by_a_memo_after_an_edit():
    """A memo checks a moved group's plans after an edit as a solved group's: an edit
    at a switch the groups pass through re-solves none of them when nothing changed
    for them, and the answer is a fresh simulation's."""
    topo = build_template("superpod", gpu="B200", sus=1)
    snap = take_snapshot(topo)
    groups = [_gpus(snap, [8 * s + 1 for s in servers])
              for servers in (range(0, 8), range(8, 16), range(16, 24), range(24, 32))]
    job = JobTraffic(
        "dp", tuple(Comm(k, "dp", "allreduce", (g,), 64 << 20) for k, g in enumerate(groups))
    )
    memo = SimulationMemo()
    first = simulate(snap, [job], memo=memo)
    assert first.stats["solved_alone"] == 1  # the other three moved from twins
    # A spine link of the groups' own rail leaf: their switch, none of their arcs.
    link = next(lk.id for lk in topo.links() if "su1-leaf-r1" in (lk.a, lk.b)
                and "spine" in lk.a + lk.b)
    topo.update_link(link, failed=True)
    again = simulate(take_snapshot(topo), [job], memo=memo)
    assert again.stats["solved_alone"] == 0 and again.stats["unchanged"] == len(groups)
    fresh = simulate(take_snapshot(topo), [job])
    assert again.jobs[0].iteration_s == fresh.jobs[0].iteration_s


@pytest.mark.parametrize(
    ("spines", "uplinks", "link", "edit"),
    [(1, 2, "leaf-1:spine-0", {"count": 1}), (2, 1, "leaf-1:spine-1", {"failed": True})],
)
def test_a_memo_keeps_what_an_edit_leaves_valid(spines, uplinks, link, edit):
    """Simulating again after an edit with the memo gives what a fresh simulation
    gives, solving again only the collectives at the edited link."""
    topo = build_template("leaf-spine", leaves=2, spines=spines, hosts_per_leaf=4, uplinks=uplinks)
    snap = take_snapshot(topo)
    across = _dp_job("a", (_gpus(snap, (0, 4)), _gpus(snap, (1, 5))), 1 << 28)
    inside = _dp_job("b", (_gpus(snap, (2, 3)), _gpus(snap, (6, 7))), 1 << 28, lead=1e-4)
    memo = SimulationMemo()
    first = simulate(snap, [across, inside], memo=memo)
    assert memo.last == {"kept": 0, "dropped": 0}
    topo.update_link(link, **edit)
    after = take_snapshot(topo)
    again = simulate(after, [across, inside], memo=memo)
    fresh = simulate(after, [across, inside])
    assert memo.last["kept"] >= 1 and memo.last["dropped"] >= 1
    assert again.stats["solved_alone"] < fresh.stats["solved_alone"]
    assert again.to_json() | {"timing_ms": {}} == fresh.to_json() | {"timing_ms": {}}
    assert first.to_json()["jobs"] != fresh.to_json()["jobs"]  # the edit mattered


def test_routing_option_solves_on_that_routing(leafspine):
    job = _alone_job(leafspine, "allreduce", (0, 1, 4, 5), 1 << 26)
    res = simulate(leafspine, [job], routing="ecmp")
    ecmp = dataclasses.replace(leafspine, routing="ecmp")
    want = float(solve_collective(ecmp, sizes=[1 << 26], ranks=[0, 1, 4, 5]).time_s[0])
    assert res.jobs[0].iteration_s == pytest.approx(want, rel=1e-12)


def _three_jobs(snap):
    """a and b cross leaf 0's 2:1 uplinks together; c stays inside leaf 2."""
    a = _dp_job("a", (_gpus(snap, (0, 4)), _gpus(snap, (1, 5))), 1 << 28)
    b = _dp_job("b", (_gpus(snap, (2, 6)),), 1 << 27, lead=2e-3)
    c = _dp_job("c", (_gpus(snap, (8, 9)), _gpus(snap, (10, 11))), 1 << 28, lead=1e-3)
    return [a, b, c]


def _three_leaves():
    return build_template("leaf-spine", leaves=3, spines=1, hosts_per_leaf=4, uplinks=2)


def test_jobs_sharing_no_link_run_apart_and_agree_with_one_event_loop():
    snap = take_snapshot(_three_leaves())
    jobs = _three_jobs(snap)
    split = simulate(snap, jobs, trace=True)
    whole = simulate(snap, jobs, trace=True, split=False)
    assert (split.stats["runs"], whole.stats["runs"]) == (2, 1)
    by = {j.name: j for j in split.jobs}
    assert by["a"].slowdown > 1.1 and by["b"].slowdown > 1.1  # they share the uplinks
    assert by["c"].slowdown == 1.0 and by["c"].alone_s == by["c"].iteration_s
    for s, w in zip(split.jobs, whole.jobs, strict=True):
        assert s.iteration_s == pytest.approx(w.iteration_s, rel=1e-12)
        assert s.alone_s == pytest.approx(w.alone_s, rel=1e-12)
        assert s.breakdown == pytest.approx(w.breakdown, rel=1e-9, abs=1e-15)
    for got, want in ((split.links, whole.links),):
        np.testing.assert_allclose(got.bytes, want.bytes, rtol=1e-12)
        np.testing.assert_allclose(got.job_bytes, want.job_bytes, rtol=1e-12)
        np.testing.assert_allclose(got.peak_util, want.peak_util, rtol=1e-12)
        np.testing.assert_allclose(got.mean_util, want.mean_util, rtol=1e-12)
    assert [(e.job, e.task) for e in split.timeline] == [(e.job, e.task) for e in whole.timeline]
    np.testing.assert_allclose([e.start_s for e in split.timeline],
                               [e.start_s for e in whole.timeline], rtol=1e-12)
    for k in np.flatnonzero(whole.links.bytes > 0).tolist():
        es, us = split.trace.series(k)
        ew, uw = whole.trace.series(k)
        np.testing.assert_allclose(es, ew, rtol=1e-12)
        np.testing.assert_allclose(us, uw, rtol=1e-12, atol=1e-12)
        assert [(c.job, c.label) for c in split.trace.crossings(k)] == [
            (c.job, c.label) for c in whole.trace.crossings(k)
        ]


def test_a_memo_runs_again_only_the_jobs_an_edit_reaches():
    topo = _three_leaves()
    snap = take_snapshot(topo)
    jobs = _three_jobs(snap)
    memo = SimulationMemo()
    simulate(snap, jobs, memo=memo)
    # A new job c: a and b's run is kept.
    jobs[2] = _dp_job("c", jobs[2].tasks[1].groups, 1 << 26, lead=1e-3)
    again = simulate(snap, jobs, memo=memo)
    assert again.stats["runs_reused"] == 1
    assert again.to_json() | {"timing_ms": {}} == simulate(snap, jobs).to_json() | {"timing_ms": {}}
    # A link only c uses: a and b's run is kept again; c's is made afresh.
    topo.update_link("n09-nic0:leaf-2", count=2)
    after = take_snapshot(topo)
    edited = simulate(after, jobs, memo=memo)
    fresh = simulate(after, jobs)
    assert edited.stats["runs_reused"] == 1
    assert edited.to_json() | {"timing_ms": {}} == fresh.to_json() | {"timing_ms": {}}
    # Leaf 0's uplinks halved: a and b run again (slower), c's run is kept.
    topo.update_link("leaf-0:spine-0", count=1)
    last = take_snapshot(topo)
    halved = simulate(last, jobs, memo=memo)
    assert halved.stats["runs_reused"] == 1
    fresh = simulate(last, jobs)
    assert halved.to_json() | {"timing_ms": {}} == fresh.to_json() | {"timing_ms": {}}
    assert halved.jobs[0].iteration_s > edited.jobs[0].iteration_s
    assert halved.jobs[2].iteration_s == edited.jobs[2].iteration_s


@pytest.mark.parametrize("plans_kept", [True, False])
def test_a_collective_solved_again_the_same_after_an_edit_keeps_what_was_built_on_it(
    plans_kept,
):
    """Failing leaf 1's link to spine 1 drops every result through spine 1 or leaf 1
    (their routes may change); those that cross neither that link nor a changed choice
    of next hops are used as before, so the runs built on them are kept: told by their
    plans patched unchanged (no solve), or, without the plans, solved again and found
    the same. The answer is a fresh simulation's."""
    topo = build_template("leaf-spine", leaves=3, spines=2, hosts_per_leaf=4, uplinks=1)
    snap = take_snapshot(topo)
    a = _dp_job("a", (_gpus(snap, (0, 8)),), 1 << 28)  # leaf 0 <-> leaf 2
    b = _dp_job("b", (_gpus(snap, (4, 5)),), 1 << 28, lead=1e-3)  # inside leaf 1
    c = _dp_job("c", (_gpus(snap, (6, 9)),), 1 << 27, lead=2e-3)  # leaf 1 <-> leaf 2
    memo = SimulationMemo()
    if not plans_kept:
        memo.routes.max_plans = 0
    first = simulate(snap, [a, b, c], memo=memo)
    assert first.stats["runs"] == 2  # a and c share leaf 2's links; b is apart
    topo.update_link("leaf-1:spine-1", failed=True)
    after = take_snapshot(topo)
    again = simulate(after, [a, b, c], memo=memo)
    fresh = simulate(after, [a, b, c])
    assert memo.last["dropped"] >= 3
    # a's and b's, not c's
    used = again.stats["unchanged"] if plans_kept else again.stats["revived"]
    assert again.stats["unchanged" if not plans_kept else "revived"] == 0
    assert 2 <= used < memo.last["dropped"]
    assert again.stats["solved_alone"] == memo.last["dropped"] - (used if plans_kept else 0)
    assert again.stats["runs_reused"] == 1  # b's; a's runs with c, whose route changed
    assert again.to_json() | {"timing_ms": {}} == fresh.to_json() | {"timing_ms": {}}
    assert again.jobs[1].iteration_s == first.jobs[1].iteration_s


def test_with_a_memo_each_new_job_is_still_checked():
    snap = take_snapshot(_three_leaves())
    a, b, c = _three_jobs(snap)
    memo = SimulationMemo()
    simulate(snap, [a, b, c], memo=memo)
    with pytest.raises(ValueError, match="two jobs are named 'a'"):
        simulate(snap, [a, b, JobTraffic("a", c.tasks)], memo=memo)
    broken = JobTraffic("c", (*c.tasks[:1], dataclasses.replace(c.tasks[1], deps=(7,))))
    with pytest.raises(ValueError, match="job 'c', task 1: depends on an unknown task"):
        simulate(snap, [a, b, broken], memo=memo)
    with pytest.raises(ValueError, match="GPU 'n01-gpu0' is in job 'a' and in job 'd'"):
        simulate(snap, [a, b, JobTraffic("d", a.tasks)], memo=memo)


def test_the_memo_holds_only_what_the_current_jobs_can_use():
    snap = take_snapshot(_three_leaves())
    jobs = _three_jobs(snap)
    memo = SimulationMemo()
    for k in range(4):  # job c edited again and again
        jobs[2] = _dp_job("c", jobs[2].tasks[1].groups, (1 << 26) * (k + 1), lead=1e-3)
        simulate(snap, jobs, memo=memo)
        held = {id(j) for key, v in memo.runs.items() for j in v[0]} | {
            id(v[0]) for v in memo.alone.values()
        }
        assert held <= {id(j) for j in jobs}
        assert len(memo.runs) == 2


def test_a_memo_starts_afresh_when_an_edit_moves_the_switch_hop_latency():
    """The time model adds the design's median network-arc latency per switch hop. A
    result through the switches that no edited link touches still changes when an
    edit far away moves that median: here the eighth NIC link turned 1 GbE (1,000 ns
    arcs) tips it from 530 to 1,000 ns."""
    from designer.solver import switch_latency

    topo = build_template("leaf-spine", leaves=3, spines=1, hosts_per_leaf=4, uplinks=1)
    for lid in ("n09-nic0:leaf-2", "n10-nic0:leaf-2", "n11-nic0:leaf-2", "n12-nic0:leaf-2",
                "n05-nic0:leaf-1", "n06-nic0:leaf-1", "n07-nic0:leaf-1"):
        topo.update_link(lid, tech="eth-1g")
    snap = take_snapshot(topo)
    job = JobTraffic("a", (Comm(0, "dp", "allreduce", (("n01-gpu0", "n09-gpu0"),), 1 << 16),))
    memo = SimulationMemo()
    simulate(snap, [job], memo=memo)
    topo.update_link("n08-nic0:leaf-1", tech="eth-1g")  # neither leaf 0 nor leaf 2
    after = take_snapshot(topo)
    assert switch_latency(after) != switch_latency(snap)
    again = simulate(after, [job], memo=memo)
    assert memo.last["kept"] == 0
    fresh = simulate(after, [job])
    assert again.jobs[0].iteration_s == fresh.jobs[0].iteration_s


def test_progress_rises_to_one_over_the_tasks_simulated(rail, monkeypatch):
    import designer.workload.events as events

    monkeypatch.setattr(events, "PROGRESS_EVENTS", 4)
    snap = rail
    tp = tuple(_gpus(snap, range(k, k + 8)) for k in (0, 8))
    tasks, prev = [], ()
    for m in range(12):
        tasks.append(Compute(2 * m, "compute", 1e-4, deps=prev))
        tasks.append(Comm(2 * m + 1, "tp", "allreduce", tp, 8 << 20, deps=(2 * m,)))
        prev = (2 * m + 1,)
    job = JobTraffic("j", tuple(tasks))
    seen: list[float] = []
    simulate(snap, [job], progress=seen.append)
    assert len(seen) > 3 and seen[-1] == 1.0
    assert seen == sorted(seen) and seen[0] >= 0.0
    # With a memo, a kept set counts as done at once.
    memo, again = SimulationMemo(), []
    simulate(snap, [job], memo=memo)
    simulate(snap, [job], memo=memo, progress=again.append)
    assert again == [1.0]


def test_a_memo_hands_on_the_merged_timeline_while_no_run_changed():
    """A failure that no job's run notices gives the very timeline tuple of the last
    simulation (the GUI then keeps its laid-out bars); one that re-runs a job gives a
    new one, equal to a fresh simulation's."""
    topo = build_template("leaf-spine", leaves=3, spines=2, hosts_per_leaf=4, uplinks=1)
    snap = take_snapshot(topo)
    a = _dp_job("a", (_gpus(snap, (0, 1)),), 1 << 28)  # inside leaf 0
    c = _dp_job("c", (_gpus(snap, (6, 9)),), 1 << 27, lead=2e-3)  # leaf 1 <-> leaf 2
    memo = SimulationMemo()
    first = simulate(snap, [a, c], memo=memo)
    topo.update_link("leaf-0:spine-0", failed=True)  # neither a's nor c's routes
    same = simulate(take_snapshot(topo), [a, c], memo=memo)
    assert same.stats["runs_reused"] == 2 and same.timeline is first.timeline
    topo.update_link("leaf-1:spine-0", failed=True)  # c's: c runs again
    moved = simulate(take_snapshot(topo), [a, c], memo=memo)
    assert moved.stats["runs_reused"] == 1 and moved.timeline is not first.timeline
    assert moved.timeline == simulate(take_snapshot(topo), [a, c]).timeline
