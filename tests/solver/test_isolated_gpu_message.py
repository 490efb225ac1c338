"""A GPU that cannot reach the others is the one the solver's error names.

A transfer between two NVLink domains needs both ranks on the compute fabric.  When a
GPU loses every link, the error must name *that* GPU, not the first end of the first
transfer that fails (in a lone HGX board or a torus, whose GPUs have no fabric at all,
that end is one of the GPUs still joined to the others).  When a whole group is cut off
(a server whose NICs all failed), the error names one GPU of the group and says how
many it holds and how many it is cut off from.

Every case renames the cut-off GPU so that it sorts first, in the middle or last, and
shuffles the file's node and link lists: the message must follow the structure, not
the names or the order.
"""

from __future__ import annotations

import random
import re

import pytest

from designer.io.fabric_json import from_dict, to_dict
from designer.model.templates import build_template
from designer.solver.errors import SolverError
from designer.solver.pipeline import solve_collective
from designer.solver.snapshot.build import take_snapshot

#: New names for the cut-off GPU: before, among and after the template's own names.
NAMES = ["0-lonely", "n01-gpu3x", "zz-lonely"]
COLLECTIVES = [
    ("allreduce", "ring"),
    ("allreduce", "auto"),
    ("allgather", "auto"),
    ("alltoall", "auto"),
    ("sendrecv", "auto"),
]


def gpu_ids(data: dict) -> list[str]:
    return [n["id"] for n in data["nodes"] if n["kind"] == "gpu"]


def rename(data: dict, old: str, new: str) -> None:
    for node in data["nodes"]:
        if node["id"] == old:
            node["id"] = new
    for link in data["links"]:
        link["a"], link["b"] = (new if x == old else x for x in (link["a"], link["b"]))


def isolate(template: str, victim: int, name: str, seed: int, **params) -> tuple:
    """``template`` with its ``victim``-th GPU's links removed and the GPU renamed to
    ``name``, nodes and links shuffled: the topology and the GPU's id."""
    data = to_dict(build_template(template, **params))
    old = gpu_ids(data)[victim]
    data["links"] = [lk for lk in data["links"] if old not in (lk["a"], lk["b"])]
    rename(data, old, name)
    rng = random.Random(seed)
    rng.shuffle(data["nodes"])
    rng.shuffle(data["links"])
    return from_dict(data), name


def error_of(topology, collective: str, algorithm: str) -> str:
    snap = take_snapshot(topology)
    with pytest.raises(SolverError) as info:
        solve_collective(snap, collective, sizes=[1 << 20], algorithm=algorithm)
    return str(info.value)


def named_gpus(message: str, ids: list[str]) -> set[str]:
    """The GPU ids ``message`` mentions as whole words."""
    return {g for g in ids if re.search(rf"(?<![\w-]){re.escape(g)}(?![\w-])", message)}


CASES = [
    # (template, params, GPUs in the design)
    ("hgx", {}, 8),  # NVSwitch board, NICs cabled to nothing
    ("torus3d", {"x": 2, "y": 2, "z": 2}, 8),  # GPUs cabled to each other, no NICs
    ("nvl72", {"gpus": 8}, 8),
    ("leaf-spine", {}, 16),  # one-GPU servers on a fabric
]


@pytest.mark.parametrize(("template", "params", "n"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("name", NAMES)
def test_an_isolated_gpu_is_the_one_named(template, params, n, where, name):
    victim = {"first": 0, "middle": n // 2, "last": n - 1}[where]
    topo, lonely = isolate(template, victim, name, seed=victim * 7 + len(name), **params)
    ids = gpu_ids(to_dict(topo))
    for collective, algorithm in COLLECTIVES:
        message = error_of(topo, collective, algorithm)
        assert named_gpus(message, ids) == {lonely}, (collective, message)
        assert f"cut off from the other {n - 1} GPUs" in message, message


def fail_server_nics(data: dict, server: str) -> None:
    for node in data["nodes"]:
        if node["kind"] == "nic" and node["id"].startswith(server + "-"):
            node["failed"] = True


@pytest.mark.parametrize("server", ["n01", "n02", "n03"])
def test_a_cut_off_server_is_named_with_its_size(server):
    """Every NIC of one 8-GPU server fails: its GPUs still share NVLink, so the error
    names one of them and says eight are cut off from the other 16."""
    data = to_dict(build_template("rail-cluster", nodes=3))
    fail_server_nics(data, server)
    random.Random(len(server)).shuffle(data["links"])
    topo = from_dict(data)
    ids = gpu_ids(data)
    for collective, algorithm in COLLECTIVES:
        message = error_of(topo, collective, algorithm)
        named = named_gpus(message, ids)
        assert len(named) == 1 and next(iter(named)).startswith(server + "-"), message
        assert "7 other GPUs are cut off from the other 16" in message, message


def test_two_equal_halves_name_the_half_without_a_fabric():
    """A board with no NIC beside a board on a working fabric, as large: the board
    without a way out is the one cut off, whichever sorts first."""
    for broken in ("n01", "n02"):
        data = to_dict(build_template("rail-cluster", nodes=2))
        fail_server_nics(data, broken)
        message = error_of(from_dict(data), "allreduce", "ring")
        named = named_gpus(message, gpu_ids(data))
        assert len(named) == 1 and next(iter(named)).startswith(broken + "-"), message
