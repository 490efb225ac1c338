"""NVLS latency on a whole NVL72 rack: one rack of 72 GPUs in one NVLink domain runs
everything two racks do without the network, so at the same per-GPU message it is not
slower (NCCL's tuner charges NVLS and NVLS-tree the same intra-node latency,
``tuning.cc``)."""

from __future__ import annotations

import numpy as np
import pytest

from designer.model.templates import build_template
from designer.solver.pipeline import solve_collective
from designer.solver.snapshot.build import take_snapshot
from designer.solver.timing.nccl_steps import step_split

SIZES = [1 << 20, 16 << 20, 256 << 20, 1 << 30, 8 << 30]


@pytest.fixture(scope="module")
def racks():
    return {r: take_snapshot(build_template("nvl72", racks=r)) for r in (1, 2)}


def test_one_rack_nvls_not_slower_than_two_racks(racks):
    """The in-switch algorithms at the same per-GPU bytes: NVLS on 72 GPUs against
    NVLS-tree on 144."""
    one = solve_collective(racks[1], "allreduce", sizes=SIZES, algorithm="nvls")
    two = solve_collective(racks[2], "allreduce", sizes=SIZES, algorithm="nvlstree")
    assert np.all(one.time_s <= two.time_s)


def test_nvls_handshakes_same_inside_nvls_and_nvls_tree():
    """The intra-node stage of NVLS-tree is NVLS's scatter/reduce/gather with the same
    peers: the same handshakes."""
    for ppn in (2, 8, 72):
        assert (
            step_split("allreduce", "nvlstree", 2 * ppn, 2)[0]
            == step_split("allreduce", "nvls", ppn, 1)[0]
        )
    assert step_split("allreduce", "nvls", 8, 1) == (14, 0)  # the 8-GPU fit, unchanged
    assert step_split("allreduce", "nvls", 72, 1) == (2 * 71, 0)
