"""The Dask engine: a LocalCluster of two worker processes and a real scheduler with a
worker, both started as separate processes, give the serial path's figures."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest
from cli_support import new_design, one_line, run
from study_designs import without_timing

from designer.studies.engine import batches

ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"}


def _study(path, *args, timeout=120, code=0):
    """``fabric-designer study failures PATH ARGS --json`` in a new process (Dask's
    threads and worker processes stay out of the test process)."""
    proc = subprocess.run(
        [sys.executable, "-m", "designer", "study", "failures", str(path), "--json", "-q", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
    )
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout) if code == 0 else proc.stderr


def _serial(capsys, path, *args):
    """The same study on the serial path, in this process."""
    capsys.readouterr()
    code, out, err = run(capsys, "study", "failures", path, "--json", "-q", "--workers", "0", *args)
    assert code == 0, err
    return json.loads(out)


def test_batches_carry_about_a_second_each_and_feed_every_worker():
    items = list(range(100))
    assert [len(b) for b in batches(items, 0.25, 2)] == [4] * 25
    assert [x for b in batches(items, 0.25, 2) for x in b] == items
    assert [len(b) for b in batches(items, 0.001, 2)] == [50, 50]  # one per worker
    assert [len(b) for b in batches(items[:3], 0.001, 8)] == [1, 1, 1]
    assert batches([], 1.0, 2) == []


@pytest.mark.slow
def test_local_cluster_of_two_workers_matches_serial(tmp_path, capsys):
    path = new_design(tmp_path, "fat-tree")
    local = _study(path, "--elements", "all", "--workers", "2")
    serial = _serial(capsys, path, "--elements", "all")
    assert without_timing(local) == without_timing(serial)
    assert len(serial["elements"]) == 116


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_existing_cluster_through_scheduler_option(tmp_path, capsys):
    """`dask scheduler` and `dask worker` as their own processes on localhost; the study
    reaches them only through --scheduler."""
    path = new_design(tmp_path, "leaf-spine")
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    procs = []
    try:
        procs.append(
            subprocess.Popen(
                [*dask, "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=ENV,
            )
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    address,
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                    "--local-directory",
                    str(tmp_path / "worker"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=ENV,
            )
        )
        remote = _study(path, "--elements", "switches", "--scheduler", address, timeout=90)
        serial = _serial(capsys, path, "--elements", "switches")
        assert without_timing(remote) == without_timing(serial)
    finally:
        for proc in reversed(procs):
            proc.terminate()
        deadline = time.monotonic() + 10
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.slow
def test_unreachable_scheduler_is_one_line(tmp_path):
    path = new_design(tmp_path, "leaf-spine")
    err = _study(path, "--scheduler", f"tcp://127.0.0.1:{_free_port()}", code=1)
    assert one_line(err) and "cannot use the Dask scheduler" in err, err
