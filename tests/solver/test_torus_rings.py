"""Dimension-ordered rings on a torus, checked against the hand formula of docs/model.md
("Collectives on full meshes, tori and UALink pods"):

reduce-scatter stage ``i`` moves ``(k_i - 1)/k_i x S / (2 B k_1 ... k_{i-1})`` per link
direction (``B`` one link's achieved rate one way; a dimension of 2 is one bundle of
two links, ``2B``, exchanged once), all-reduce is the reduce-scatters then the
all-gathers in reverse, ``k_i - 1`` steps each.
"""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.solver.flows.torus import torus_lines
from designer.solver.pipeline import solve_collective
from designer.solver.snapshot.build import take_snapshot
from designer.solver.timing import nccl_model

BIG = [16 << 30]


@pytest.fixture(scope="module")
def tpu432():
    """A 4 x 3 x 2 TPU v5p torus (24 chips, one ICI link per neighbour)."""
    return take_snapshot(build_template("torus3d", x=4, y=3, z=2, gpu="TPU-v5p"))


def _b(snap) -> float:
    """One ICI link's achieved rate one way (GB/s): the catalog's rate x efficiency, as
    the snapshot's x-direction arcs carry it (one link per bundle)."""
    return float(np.median(snap.arc_cap[snap.arc_cap > 0]))


def test_allreduce_is_dimension_ordered_rings(tpu432):
    """Per byte, by hand (B = 85 GB/s): x (k=4): 3/4 / 2B; y (k=3) on a quarter:
    2/3 x 1/4 / 2B; z (k=2, a 2B bundle, one exchange) on a twelfth: 1/2 x 1/12 / 2B;
    then the same back.  The sum telescopes to ``(n-1)/n / B``: busbw = 2B."""
    b = _b(tpu432)
    res = solve_collective(tpu432, "allreduce", sizes=BIG, algorithm="ring")
    rs = [0.75 / (2 * b), (2 / 3) * 0.25 / (2 * b), 0.5 / 12 / (2 * b)]
    hand = np.array(rs + rs[::-1]) * 1e-9
    got = np.array([p.seconds_per_byte for p in res.phases])
    assert got == pytest.approx(hand, rel=1e-9)
    assert [p.steps for p in res.phases] == [3, 2, 1, 1, 2, 3]
    assert res.ceiling_busbw_GBps == pytest.approx(2 * b)
    # a single ring over all 24 chips would cross one link per chip: busbw = B
    assert res.ceiling_busbw_GBps > 1.9 * b


def test_torus_ring_latency_counts_steps_per_dimension(tpu432):
    """At 1 KiB the time is latency: the torus pays 2 x (3 + 2 + 1) = 12 ring steps,
    not a single ring's 2 x 23 = 46."""
    res = solve_collective(tpu432, "allreduce", sizes=[1024], algorithm="ring")
    shape = nccl_model.CollectiveShape(
        "allreduce", "ring", 24, 1, res.ceiling_busbw_GBps, 1, 0, step_counts=(12, 0)
    )
    assert float(res.time_s[0]) == pytest.approx(float(nccl_model.predict(shape, 1024).time_s[0]))
    single = nccl_model.CollectiveShape("allreduce", "ring", 24, 1, res.ceiling_busbw_GBps, 1, 0)
    assert float(res.time_s[0]) < float(nccl_model.predict(single, 1024).time_s[0])


def test_every_link_direction_busy_in_the_first_stage(tpu432):
    """The x stage loads both directions of every x link, the others none."""
    res = solve_collective(tpu432, "allreduce", sizes=BIG, algorithm="ring")
    x = res.phases[0]
    busy = x.arc_load_GBps > 0
    lines = torus_lines(tpu432, np.arange(tpu432.n_gpus))[0]
    assert busy.sum() == 2 * lines.size  # 6 lines of 4 chips, 4 links each, both ways


@pytest.mark.parametrize(
    ("dims", "shape"),
    [((3, 3, 3), [(9, 3)] * 3), ((5, 4, 1), [(4, 5), (5, 4)]), ((4, 4, 4), [(16, 4)] * 3)],
)
def test_dimensions_from_cabling(dims, shape):
    """The dimensions come from the links alone (4 x 4 x 4 is a 6-cube: its 4-cycles
    are paired back into rings of 4); a full mesh or a switched board is no torus."""
    snap = take_snapshot(build_template("torus3d", x=dims[0], y=dims[1], z=dims[2], gpu="TPU-v5p"))
    got = torus_lines(snap, np.arange(snap.n_gpus))
    assert [d.shape for d in got] == shape
    # each row is a ring of neighbours: consecutive chips share a link
    assert all(np.unique(d).size == snap.n_gpus for d in got)
    mesh = take_snapshot(build_template("hgx", gpu="MI300X"))
    assert torus_lines(mesh, np.arange(8)) is None
    assert torus_lines(take_snapshot(build_template("hgx", gpu="H100")), np.arange(8)) is None


def test_auto_picks_torus_rings_for_large_messages(tpu432):
    res = solve_collective(tpu432, "allreduce", sizes=BIG)
    assert res.algorithm_by_size[0] == "ring"
    assert res.ceiling_busbw_GBps == pytest.approx(2 * _b(tpu432))
