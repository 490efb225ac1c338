"""Saving onto a really full disk, a really read-only file system or past a file size
limit keeps the old file and says why in one line.

``tests/io/test_save_errors.py`` simulates these failures inside the process; here the
operating system produces them:

* a small tmpfs, filled to the last byte (``mount`` needs root: skipped otherwise, with
  the reason);
* the same tmpfs remounted read-only (a read-only file system, which even root cannot
  write);
* a process file size limit (``RLIMIT_FSIZE``: writes past it fail with ``EFBIG``), which
  needs no privileges, so it runs everywhere POSIX does.

Each through `fabric_json.save` and through the command line, which prints the message.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from designer.cli import main
from designer.io.atomic import save_error_message
from designer.io.fabric_json import FileFormatError, save
from designer.model.templates import build_template

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file systems")

UNTOUCHED = "the previous version is untouched"


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def small_disk(tmp_path):
    """A 512 KiB tmpfs mounted for the test (root only), unmounted after it."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command here")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


def fill(folder: Path) -> None:
    """Write a file into ``folder`` until its file system has no byte left."""
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as out:
        while True:
            out.write(b"x" * 4096)
            out.flush()


def old_design(folder: Path) -> tuple[Path, bytes]:
    path = folder / "d.fabric.json"
    save(build_template("hgx"), path)
    return path, path.read_bytes()


def cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_a_full_disk(small_disk, capsys):
    path, old = old_design(small_disk)
    fill(small_disk)
    with pytest.raises(FileFormatError) as info:
        save(build_template("rail-cluster", nodes=2), path)
    assert save_error_message(info.value) == (
        f"cannot save {path}: disk full (No space left on device); {UNTOUCHED}"
    )
    assert path.read_bytes() == old
    assert listing(small_disk) == ["d.fabric.json", "filler"]  # no temporary file left

    code, err = cli(capsys, "new", "rail-cluster", "--set", "nodes=2", "-o", str(path))
    assert (code, err) == (
        1,
        "fabric-designer: error: cannot save "
        f"{path}: disk full (No space left on device); {UNTOUCHED}\n",
    )
    assert path.read_bytes() == old
    assert listing(small_disk) == ["d.fabric.json", "filler"]


def test_a_read_only_file_system(small_disk, capsys):
    path, old = old_design(small_disk)
    done = subprocess.run(
        ["mount", "-o", "remount,ro", str(small_disk)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot remount read-only: {done.stderr.strip()}")
    message = f"cannot save {path}: read-only file system (Read-only file system); {UNTOUCHED}"
    with pytest.raises(FileFormatError) as info:
        save(build_template("hgx", gpus=4), path)
    assert save_error_message(info.value) == message
    code, err = cli(capsys, "new", "hgx", "-o", str(path))
    assert (code, err) == (1, f"fabric-designer: error: {message}\n")
    assert path.read_bytes() == old
    assert listing(small_disk) == ["d.fabric.json"]


def _limit_file_size(limit: int):
    def apply():
        import resource
        import signal

        # Python ignores SIGXFSZ at start-up; say so here too, so a write past the
        # limit fails with EFBIG instead of killing the process.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs resource limits (POSIX)")
def test_a_file_size_limit(tmp_path):
    """``ulimit -f``: the new design is larger than a process may write."""
    path, old = old_design(tmp_path)
    env = dict(os.environ, FABRIC_DESIGNER_LOG_DIR=str(tmp_path / "log"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "designer",
            "new",
            "rail-cluster",
            "--set",
            "nodes=2",
            "-o",
            str(path),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        preexec_fn=_limit_file_size(len(old) + 1024),
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"fabric-designer: error: cannot save {path}: the file is too large "
        f"for this disk (File too large); {UNTOUCHED}\n"
    )
    assert path.read_bytes() == old
    assert [name for name in listing(tmp_path) if name != "log"] == ["d.fabric.json"]
