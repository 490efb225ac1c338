"""Two writers, one file: lock files (who has a design open, taking over a crashed
session's lock) and noticing that a file changed on disk since it was opened or saved.

The two-process tests run a second Python process that holds a lock through
`designer.io.file_lock`, or the command line that rewrites a design in place.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest

from designer.io.disk_state import DiskState, changed_on_disk, differences
from designer.io.fabric_json import load, save
from designer.io.file_lock import (
    JUNK_AFTER_S,
    FileLock,
    design_lock_path,
    lock_owner,
)
from designer.model.commands import MoveNodes
from designer.model.templates import build_template

HOLDER = """
import sys
from designer.io.file_lock import FileLock
lock = FileLock(sys.argv[1])
print("held" if lock.acquire() else "busy", flush=True)
sys.stdin.readline()  # hold it until the test says
"""


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "designer", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def holder(tmp_path):
    """Start a second process that holds a lock file: ``start(lock_path) -> Popen``."""
    started = []

    def start(path):
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        assert proc.stdout.readline().strip() == "held"
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()


def dead_pid() -> int:
    """The id of a process that has just exited (not reused within a test)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def write_lock(path, pid, host=None, boot=None):
    lines = [str(pid), "Fabric Designer", host or socket.gethostname()]
    if boot is not None:
        lines.append(f"boot={boot}")
    lines.append(f"since={datetime.now().astimezone().isoformat()}")
    path.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------ locks
def test_a_lock_held_by_another_process_is_seen_and_not_taken(tmp_path, holder):
    lock_path = design_lock_path(tmp_path / "d.fabric.json")
    other = holder(lock_path)
    ours = FileLock(lock_path)
    assert not ours.acquire()
    assert ours.holder.pid == other.pid
    assert ours.holder.host == socket.gethostname()
    owner = lock_owner(lock_path)
    assert owner is not None and owner.pid == other.pid
    assert f"process {other.pid}" in owner.describe()


def test_the_lock_of_a_killed_process_is_taken_over(tmp_path, holder):
    lock_path = design_lock_path(tmp_path / "d.fabric.json")
    other = holder(lock_path)
    other.send_signal(signal.SIGKILL)  # a crash: the lock file stays behind
    other.wait()
    assert lock_path.exists()
    assert lock_owner(lock_path) is None  # stale
    ours = FileLock(lock_path)
    assert ours.acquire()
    assert lock_path.read_text().splitlines()[0] == str(os.getpid())
    ours.release()
    assert not lock_path.exists()


def test_the_lock_of_a_killed_process_not_yet_reaped_is_stale(tmp_path, holder):
    """A zombie (exited, its parent has not waited yet) still answers to signals."""
    lock_path = design_lock_path(tmp_path / "d.fabric.json")
    other = holder(lock_path)
    other.send_signal(signal.SIGKILL)  # no wait(): it stays a zombie of this process
    stat_file = Path(f"/proc/{other.pid}/stat")
    if not stat_file.exists():
        pytest.skip("no /proc here")
    deadline = time.monotonic() + 10
    while stat_file.read_text().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert lock_owner(lock_path) is None
    assert FileLock(lock_path).acquire()


def test_a_lock_whose_pid_is_dead_is_stale(tmp_path):
    lock_path = tmp_path / ".d.fabric.json.lock"
    write_lock(lock_path, dead_pid())
    lock = FileLock(lock_path)
    assert lock.acquire()
    assert lock.holder is None
    lock.release()


def test_a_lock_from_before_the_last_reboot_is_stale(tmp_path):
    lock_path = tmp_path / ".d.fabric.json.lock"
    write_lock(lock_path, os.getppid(), boot="00000000-not-this-boot")  # a live pid
    if not os.path.exists("/proc/sys/kernel/random/boot_id"):
        pytest.skip("no boot id on this system")
    assert lock_owner(lock_path) is None


def test_a_lock_from_another_host_is_respected(tmp_path):
    lock_path = tmp_path / ".d.fabric.json.lock"
    write_lock(lock_path, dead_pid(), host="some-other-host.example")
    lock = FileLock(lock_path)
    assert not lock.acquire()  # its process cannot be asked about: not stale
    assert "on some-other-host.example" in lock.holder.describe()


def test_an_unreadable_lock_is_stale_only_once_old(tmp_path):
    lock_path = tmp_path / ".d.fabric.json.lock"
    lock_path.write_bytes(b"\x00garbage")
    assert lock_owner(lock_path) is not None  # maybe being written right now
    old = time.time() - JUNK_AFTER_S - 5
    os.utime(lock_path, (old, old))
    assert lock_owner(lock_path) is None
    assert FileLock(lock_path).acquire()


def test_a_second_lock_object_of_this_process_is_refused_until_released(tmp_path):
    lock_path = design_lock_path(tmp_path / "d.fabric.json")
    first, second = FileLock(lock_path), FileLock(lock_path)
    assert first.acquire() and first.acquire()  # taking it again is a no-op
    assert not second.acquire()
    assert second.holder.pid == os.getpid()
    first.release()
    assert second.acquire()
    second.release()


def test_a_lock_object_collected_or_the_process_exiting_gives_the_lock_up(tmp_path):
    lock_path = design_lock_path(tmp_path / "d.fabric.json")
    lock = FileLock(lock_path)
    assert lock.acquire()
    del lock
    gc.collect()
    assert not lock_path.exists()
    assert FileLock(lock_path).acquire()  # (and collected at once: given up again)
    code = f"from designer.io.file_lock import FileLock; FileLock({str(lock_path)!r}).acquire()"
    keep = (
        f"import sys; from designer.io.file_lock import FileLock; "
        f"lock = FileLock({str(lock_path)!r}); sys.exit(0 if lock.acquire() else 3)"
    )
    for script in (code, keep):
        done = subprocess.run([sys.executable, "-c", script], check=False)
        assert done.returncode == 0
        assert not lock_path.exists()  # a clean exit removes it


def test_a_lock_naming_this_process_but_held_by_no_object_is_stale(tmp_path):
    lock_path = tmp_path / ".d.fabric.json.lock"
    write_lock(lock_path, os.getpid())  # e.g. a previous process that had our id
    assert FileLock(lock_path).acquire()


def test_release_leaves_a_lock_someone_else_took_over(tmp_path):
    lock_path = tmp_path / ".d.fabric.json.lock"
    lock = FileLock(lock_path)
    assert lock.acquire()
    write_lock(lock_path, os.getppid())  # (removed by hand and taken by another session)
    lock.release()
    assert lock_path.exists()


def test_a_lock_in_a_read_only_folder_raises_the_system_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(PermissionError):
            FileLock(tmp_path / ".d.lock").acquire()
    finally:
        tmp_path.chmod(0o755)


# ------------------------------------------------------------------ changed on disk
def test_touching_or_rewriting_the_same_bytes_is_no_change(tmp_path):
    path = tmp_path / "d.fabric.json"
    save(build_template("hgx"), path)
    state = DiskState.of(path)
    os.utime(path, ns=(1, 1))
    assert not changed_on_disk(path, state)
    save(load(path), path)  # same content through a new inode (an atomic rename)
    assert not changed_on_disk(path, state)


def test_other_content_of_the_same_size_is_a_change(tmp_path):
    path = tmp_path / "d.fabric.json"
    path.write_bytes(b"abcd")
    state = DiskState.of(path)
    with open(path, "r+b") as f:  # in place: same inode, same size
        f.write(b"abcX")
    os.utime(path, ns=(state.mtime_ns, state.mtime_ns))  # even the same time
    assert changed_on_disk(path, state)


def test_a_missing_file_is_no_conflict(tmp_path):
    path = tmp_path / "d.fabric.json"
    path.write_text("x")
    state = DiskState.of(path)
    path.unlink()
    assert not changed_on_disk(path, state)
    assert DiskState.of(path) is None


def test_a_second_process_rewriting_the_design_is_detected(tmp_path):
    path = tmp_path / "d.fabric.json"
    assert run_cli("new", "hgx", "-o", str(path)).returncode == 0
    state = DiskState.of(path)  # as a window opened it
    assert not changed_on_disk(path, state)
    done = run_cli("new", "hgx", "--set", "gpus=4", "-o", str(path))  # the second writer
    assert done.returncode == 0, done.stderr
    assert changed_on_disk(path, state)


def test_differences_count_nodes_and_links_by_id():
    mine = build_template("hgx")
    theirs = build_template("hgx")
    assert differences(mine, theirs).none
    node = next(iter(theirs.nodes()))
    MoveNodes({node.id: (node.x + 10, node.y)}).do(theirs)
    link = next(iter(theirs.links()))
    theirs.remove_link(link.id)
    diff = differences(mine, theirs)
    assert (diff.nodes_added, diff.nodes_removed, diff.nodes_changed) == (0, 0, 1)
    assert (diff.links_added, diff.links_removed, diff.links_changed) == (0, 1, 0)
    assert diff.lines() == ["nodes: 1 changed", "links: 1 removed"]
    assert differences(theirs, mine).lines() == ["nodes: 1 changed", "links: 1 added"]


# ------------------------------------------------------------------ the command line
def test_the_cli_refuses_to_overwrite_a_design_open_elsewhere(tmp_path, holder):
    path = tmp_path / "d.fabric.json"
    assert run_cli("new", "hgx", "-o", str(path)).returncode == 0
    before = path.read_bytes()
    other = holder(design_lock_path(path))  # a window has it open
    for args in (
        ["new", "hgx", "--set", "gpus=4", "-o", str(path)],
        ["export", str(path), "-o", str(path)],
    ):
        done = run_cli(*args)
        assert done.returncode == 1, done
        assert f"is open in Fabric Designer (process {other.pid}" in done.stderr
        assert "--force" in done.stderr
        assert path.read_bytes() == before
    done = run_cli("new", "hgx", "--set", "gpus=4", "-o", str(path), "--force")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() != before
    other.kill()
    other.wait()  # crashed: its stale lock no longer stops anyone
    assert run_cli("new", "hgx", "-o", str(path)).returncode == 0
