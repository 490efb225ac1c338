"""A UALink pod (template ``ualink``): accelerators with ``p`` UALink x4 ports, one to
each of ``p`` UALink 1.0 switches (one switch per port: a plane each), no in-switch
reduction.  docs/model.md ("UALink pod"): all-reduce ``busbw = p B`` (ring), all-to-all
``busbw = p B``, ``B`` one x4 port's achieved rate one way (800 Gb/s x 0.93 = 93 GB/s)."""

from __future__ import annotations

import pytest

from designer.model.catalog import default_catalog
from designer.model.errors import DesignError
from designer.model.templates import build_template
from designer.solver.pipeline import solve_collective
from designer.solver.snapshot.build import take_snapshot

BIG = [16 << 30]


def _b() -> float:
    t = default_catalog().tech("ualink-x4")
    return t.gbps / 8 * t.efficiency


@pytest.fixture(scope="module")
def helios():
    return build_template("ualink")


def test_helios_pod_counts(helios):
    """72 MI455X and 18 UALink switches, each GPU one x4 port to each switch."""
    gpus = [n for n in helios.nodes() if n.kind == "gpu"]
    switches = [n for n in helios.nodes() if n.model == "UALink-Switch"]
    assert (len(gpus), len(switches)) == (72, 18)
    assert all(
        sorted(lk.count for lk in helios.links_of(g.id) if lk.tech == "ualink-x4") == [1] * 18
        for g in gpus
    )


@pytest.mark.parametrize(("collective", "algorithm"), [("allreduce", "ring"), ("alltoall", "auto")])
def test_ualink_pod_busbw_is_ports_times_rate(helios, collective, algorithm):
    snap = take_snapshot(helios)
    res = solve_collective(snap, collective, sizes=BIG, algorithm=algorithm)
    assert res.ceiling_busbw_GBps == pytest.approx(18 * _b(), rel=1e-6)


def test_no_nvls_and_radix_limit(helios):
    """UALink 1.0 has no in-switch reduction; one switch tier holds 128 accelerators."""
    snap = take_snapshot(build_template("ualink", gpus=16))
    res = solve_collective(snap, "allreduce", sizes=BIG)
    assert not any(a.startswith("nvls") for a in res.algorithm_by_size)
    with pytest.raises(DesignError, match="128"):
        build_template("ualink", gpus=256)
