"""A save killed with SIGKILL at any moment leaves the complete old or the complete new file.

`designer.io.atomic` promises that the file on disk is always either the previous version
or the new one, that ``<file>.bak`` keeps the previous version, and that a crash leaves at
most a hidden temporary file, which a later save removes once its writer is gone and it
is a minute old (README, "When something goes wrong"; docs/file-format.md).  Here a real
process saving a 2,048-GPU design (`fabric_json.save`, as File > Save and the command
line do) is killed with ``kill -9`` at a seeded random moment, 50 times over the whole
length of a save (measured first) and 25 times over its part on disk (from the moment its
temporary file appears: write, fsync, backup, rename), and after every kill:

* the file parses and is, byte for byte, either the old design or the new one;
* ``.bak`` is the version before the old one or the old one, and whenever the file is the
  new design, ``.bak`` is the old one (the backup is taken before the rename);
* nothing else is in the folder but hidden temporary files of the file or its backup;
* at the end, once the leftovers are a minute old, one save removes every one whose
  process is gone.

To kill a save and not a Python start-up, a *zygote* process imports the program and
builds the design once; each trial forks a child from it that only saves
(`KillHarness`).  The autosave writer has the same test in
``tests/gui/test_kill_autosave.py``, with this harness.

The seed is printed; ``FABRIC_KILL_SEED=... FABRIC_KILL_TRIALS=...`` replays a run.
"""

from __future__ import annotations

import importlib
import os
import random
import re
import select
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from designer.io.atomic import backup_path
from designer.io.fabric_json import from_dict, load, save, to_dict
from designer.io.stale_temps import is_temp_of
from designer.model.templates import build_template

REPO = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("FABRIC_KILL_SEED", "2029"))
TRIALS = int(os.environ.get("FABRIC_KILL_TRIALS", "50"))
#: A design whose save takes a few hundred milliseconds: 2,048 one-GPU servers.
TEMPLATE = ("leaf-spine", {"leaves": 64, "hosts_per_leaf": 32})

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")


def design(name: str):
    """The test's design under ``name``: versions differ in their name, so a file that
    is one of them byte for byte cannot be the other."""
    data = to_dict(build_template(TEMPLATE[0], **TEMPLATE[1]))
    data["name"] = name
    return from_dict(data)


# --------------------------------------------------------------------------- the zygote
def zygote_main(spec: str, *args: str) -> None:
    """The zygote's loop: ``module:function(*args)`` prepares a job, then the zygote
    forks a child per ``fork <where>`` command that runs ``job(where)`` once.

    Lines on stdout: ``ready``, then per trial ``start <pid>`` (the child, just
    before the job), ``done`` (the child, after it) and ``reaped <status>``.  A child is
    reaped only when asked (``reap``), so the pid the test kills cannot be reused.
    """
    module, name = spec.split(":")
    job = getattr(importlib.import_module(module), name)(*args)
    # A job may come with what its child does first, before the moment to kill starts.
    before, job = job if isinstance(job, tuple) else (None, job)
    say("ready")
    child = None
    for line in sys.stdin:
        command, *rest = line.split()
        if command == "fork":
            sys.stdout.flush()
            child = os.fork()
            if child == 0:
                try:
                    if before is not None:
                        before()
                    say(f"start {os.getpid()}")
                    job(rest[0])
                    say("done")
                except BaseException as exc:  # the test fails with it, not by a timeout
                    say(f"error {exc!r}".replace("\n", " "))
                finally:
                    os._exit(0)
        elif command == "reap":
            _, status = os.waitpid(child, 0)
            say(f"reaped {status}")
        elif command == "quit":
            return


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())  # unbuffered: a forked child shares no buffer


class KillHarness:
    """A zygote process (`zygote_main`) and the test's side of it.

    Parameters
    ----------
    spec, *args
        ``module:function`` and its (string) arguments: the function returns the job,
        a function of one path, to kill while it runs (or ``(before, job)``: ``before()``
        runs in each child first, not timed).
    """

    def __init__(self, spec: str, *args: str):
        env = dict(
            os.environ,
            PYTHONPATH=str(REPO),
            OPENBLAS_NUM_THREADS="1",
            OMP_NUM_THREADS="1",
            QT_QPA_PLATFORM="offscreen",
        )
        code = (
            "import sys; from tests.io.test_kill_save import zygote_main; "
            "zygote_main(*sys.argv[1:])"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, spec, *args],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._out, self._buffer = self.proc.stdout.fileno(), b""
        assert self._line(120) == "ready"
        self.last_duration: float | None = 0.0
        self.last_pid = 0

    def _line(self, timeout: float) -> str:
        """The zygote's (or a child's) next line; ``select`` on the raw pipe, with this
        object's own buffer (a file object's would hide lines already read)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._out], [], [], max(left, 0.0))
            chunk = os.read(self._out, 4096) if ready else b""
            if not chunk:
                self.close()
                raise AssertionError(f"the zygote said nothing in {timeout} s")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        text = line.decode().strip()
        if text.startswith("error "):
            raise AssertionError(f"the job failed in the child: {text[6:]}")
        return text

    def _poll(self, timeout: float) -> str | None:
        """The next line if one comes within ``timeout`` seconds, else None."""
        if b"\n" not in self._buffer:
            ready, _, _ = select.select([self._out], [], [], timeout)
            if not ready:
                return None
        return self._line(60)

    def trial(
        self,
        where: str | os.PathLike[str],
        delay: float | None,
        when: Callable[[], bool] | None = None,
    ) -> bool:
        """Run the job once on ``where`` in a fresh child and SIGKILL it ``delay`` seconds
        after it starts, or after ``when()`` first holds (polled every 0.2 ms); return
        whether the kill came before the job had finished.  Without a ``delay`` the job
        runs to its end, and `last_duration` is the time from that start to its end
        (None when the job ended before ``when()`` held)."""
        self.proc.stdin.write(f"fork {where}\n")
        word, pid = self._line(60).split()
        assert word == "start"
        self.last_pid = int(pid)
        lines: list[str] = []
        while when is not None and not when():
            line = self._poll(0.0002)
            if line is not None:
                lines.append(line)
                if line == "done":
                    break
        started = time.perf_counter()
        self.last_duration = None
        if "done" in lines:
            pass
        elif delay is None:
            lines.append(self._line(120))
            self.last_duration = time.perf_counter() - started
        else:
            time.sleep(delay)
            os.kill(int(pid), signal.SIGKILL)  # a zombie until reaped: never another one
        self.proc.stdin.write("reap\n")
        lines.append(self._line(60))
        while not lines[-1].startswith("reaped"):
            lines.append(self._line(60))
        status = int(lines[-1].split()[1])
        finished = "done" in lines
        assert finished or (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL)
        return not finished

    def calibrate(
        self,
        setup: Callable[[], None],
        where: str | os.PathLike[str],
        when: Callable[[], bool] | None = None,
        runs: int = 3,
    ) -> float:
        """How long the job runs where the trials run it (the median of ``runs`` whole
        runs, each after ``setup()``), as the test sees it: from the child's start, or
        from when ``when()`` holds, to its end."""
        lengths = []
        for _ in range(4 * runs):
            setup()
            assert not self.trial(where, None, when)
            if self.last_duration is not None:
                lengths.append(self.last_duration)
            if len(lengths) == runs:
                return statistics.median(lengths)
        name = getattr(when, "__name__", "the moment")
        raise AssertionError(f"in {4 * runs} runs of the job, {name}() held {len(lengths)} times")

    def close(self) -> None:
        """Stop the zygote (its children are reaped already) and close the pipes."""
        try:
            if self.proc.poll() is None:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            self.proc.stdin.close()
            self.proc.stdout.close()


def delays(duration: float, trials: int, seed: int) -> list[float]:
    """Seeded kill moments spread over the whole save: uniform over [0, 1.2 x its
    measured length] (a little past it, as one save may take longer than the median)."""
    rng = random.Random(seed)
    return [rng.uniform(0.0, 1.2 * duration) for _ in range(trials)]


# --------------------------------------------------------------------------- save
def prepare_save():
    """Zygote side of `test_kill_during_save`: the job saves the new design, keeping a
    backup, as the GUI's File > Save and the command line do."""
    new = design("after")
    return lambda where: save(new, where)


@pytest.fixture(scope="module")
def versions(tmp_path_factory):
    """The three versions' bytes (as `save` writes them) and their parsed contents."""
    folder = tmp_path_factory.mktemp("versions")
    out = {}
    for name in ("oldest", "before", "after"):
        path = folder / f"{name}.fabric.json"
        save(design(name), path, backup=False)
        out[name] = path.read_bytes()
    return out


def parsed(path: Path, versions: dict, cache: dict) -> str:
    """Which version ``path`` holds: its bytes are one version's exactly, and parsing
    them gives that version's design (parsed once per distinct content)."""
    data = path.read_bytes()
    which = [name for name, content in versions.items() if content == data]
    assert which, f"{path.name} is none of the versions ({len(data)} bytes): a partial file"
    if which[0] not in cache:
        cache[which[0]] = to_dict(load(path)) == to_dict(design(which[0]))
    assert cache[which[0]], f"{path.name} does not parse back to the {which[0]!r} design"
    return which[0]


def put(path: Path, data: bytes) -> None:
    """Make ``path`` a new file holding ``data``.  Not written in place: a save killed
    between taking the backup and the rename leaves the file and its ``.bak`` as two
    names of one inode (the backup is a hard link), and writing one would change both."""
    spare = path.with_name(path.name + ".setup")
    spare.write_bytes(data)
    os.replace(spare, path)


def kill_trials(
    harness: KillHarness,
    where: Path,
    setup: Callable[[], None],
    check: Callable[[int], str],
    trials: int,
    seed: int,
    when: Callable[[], bool] | None = None,
) -> tuple[Counter, float]:
    """``trials`` kills of the job on ``where`` (each after ``setup()``, at a seeded
    moment of its measured length, from its start or from when ``when()`` holds), each
    followed by ``check(trial)``, which asserts what must hold and names the outcome.
    Returns the outcomes counted as ("killed" or "finished", outcome), and the length."""
    duration = harness.calibrate(setup, where, when)
    outcomes: Counter = Counter()
    for i, delay in enumerate(delays(duration, trials, seed)):
        setup()
        killed = harness.trial(where, delay, when)
        outcomes["killed" if killed else "finished", check(i)] += 1
    # On a loaded machine (the suite's other workers) a job may take several times its
    # calibrated length, so that no kill landed after its end: a few more kills at
    # doubling moments reach it, so that the whole job is covered.
    late = 2.4 * duration
    for i in range(trials, trials + 6):
        if any(how == "finished" for how, _ in outcomes):
            break
        setup()
        killed = harness.trial(where, late, when)
        outcomes["killed" if killed else "finished", check(i)] += 1
        late *= 2
    # The other way round: a job that now runs shorter than calibrated lets kills land
    # after its end.  Measured again, more kills inside its new length, until half of
    # ``trials`` landed inside (at most ``trials`` more).
    rng = random.Random(seed + 1)
    extra = 0
    while sum(n for (how, _), n in outcomes.items() if how == "killed") < trials // 2 \
            and extra < trials:
        if extra % 8 == 0:
            now = harness.calibrate(setup, where, when)
        setup()
        killed = harness.trial(where, rng.uniform(0.0, 0.9 * now), when)
        outcomes["killed" if killed else "finished", check(trials + 6 + extra)] += 1
        extra += 1
    return outcomes, duration


def assert_kills_covered(runs: list[tuple[Counter, int]], old: str, new: str, job: str):
    """The kills of each run of ``trials`` covered the job: most landed inside it, and
    both outcomes occurred (killed leaving the ``old`` file; the ``new`` one)."""
    for outcomes, trials in runs:
        killed = sum(n for (how, _), n in outcomes.items() if how == "killed")
        assert killed >= trials // 2, f"too few kills landed inside {job}: {outcomes}"
        assert outcomes["killed", old], outcomes
        assert outcomes["killed", new] + outcomes["finished", new], outcomes


@pytest.mark.slow
def test_kill_during_save(tmp_path, versions):
    """Kills over the whole save (mostly while the JSON is being made), then kills
    over its part on disk, from the moment its temporary file appears (write, fsync,
    backup, rename)."""
    folder = tmp_path / "designs"
    folder.mkdir()
    target = folder / "d.fabric.json"
    bak = backup_path(target)
    cache: dict = {}
    known: set[str] = set()

    def setup():  # before each save: the file is "before", its backup the one before
        put(target, versions["before"])
        put(bak, versions["oldest"])
        known.clear()
        known.update(os.listdir(folder))

    def writing() -> bool:  # a temporary file of this save exists
        return any(
            name not in known and is_temp_of(target, folder / name) for name in os.listdir(folder)
        )

    def check(trial: int) -> str:
        now, kept = parsed(target, versions, cache), parsed(bak, versions, cache)
        assert now in ("before", "after"), trial
        assert kept in ("oldest", "before"), trial
        if now == "after":
            assert kept == "before", f"trial {trial}: the new file without the old as .bak"
        others = [p for p in folder.iterdir() if p not in (target, bak)]
        assert all(is_temp_of(target, p) or is_temp_of(bak, p) for p in others), others
        return now

    harness = KillHarness("tests.io.test_kill_save:prepare_save")
    try:
        whole, length = kill_trials(harness, target, setup, check, TRIALS, SEED)
        on_disk, disk_length = kill_trials(
            harness, target, setup, check, TRIALS // 2, SEED + 1, when=writing
        )
    finally:
        harness.close()
    leftovers = [p for p in folder.iterdir() if p not in (target, bak)]
    print(
        f"\nkill -9 during save (seed {SEED}): {TRIALS} kills over the whole save "
        f"({length:.3f} s): {dict(whole)}; {TRIALS // 2} over its disk part "
        f"({disk_length:.3f} s): {dict(on_disk)}; temporary files left {len(leftovers)}"
    )
    assert_kills_covered([(whole, TRIALS), (on_disk, TRIALS // 2)], "before", "after", "a save")

    # The killed saves' leftovers, once a minute old, go with the next save.
    assert leftovers, "no kill left a temporary file: the kills missed the write"
    aged = time.time() - 120
    for p in leftovers:
        os.utime(p, (aged, aged))
    previous = parsed(target, versions, cache)
    save(design("after"), target)
    kept = [p for p in leftovers if p.exists()]
    # One stays only while a process of its id runs (a busy machine reuses process ids).
    assert all(running(int(re.search(r"\.tmp(\d+)-", p.name)[1])) for p in kept), kept
    assert target.read_bytes() == versions["after"]
    assert parsed(bak, versions, cache) == previous


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
