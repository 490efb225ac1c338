"""`designer.memory`: once an entry point has called `tune_process`, numpy's
transparent huge pages are off unless the user chose with NUMPY_MADVISE_HUGEPAGE, and
threads share one malloc arena unless the user chose with MALLOC_ARENA_MAX.  Importing
the package alone changes neither."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

_TUNE = "from designer.memory import tune_process; tune_process()\n"

_PROBE = ("import sys\n"
          "{first}\n"
          "import numpy, designer\n"
          "{tune}"
          "set_ = numpy._core.multiarray._set_madvise_hugepage\n"
          "print(set_(False))\n")


def _huge_pages_after_import(env_value: str | None, numpy_first: bool,
                             tune: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if env_value is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = env_value
    code = _PROBE.format(first="import numpy" if numpy_first else "", tune=_TUNE if tune else "")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def test_importing_the_package_changes_no_process_setting():
    """A notebook or another program that imports designer keeps numpy's huge pages
    (on by default on Linux) and glibc's arenas; only the entry points tune them."""
    if sys.platform != "linux":
        pytest.skip("numpy asks for huge pages on Linux only")
    assert _huge_pages_after_import(None, numpy_first=False, tune=False) == "True"
    if hasattr(ctypes.CDLL(None), "malloc_info"):
        assert _arenas(None, tune=False) == 2


def test_the_command_line_tunes_its_process(monkeypatch):
    """`designer.cli.main` calls `tune_process` before anything else."""
    from designer import cli

    called = []
    monkeypatch.setattr(cli, "tune_process", lambda: called.append(True))
    cli.main(["--version"])
    assert called == [True]


def test_off_whether_numpy_or_designer_is_imported_first():
    assert _huge_pages_after_import(None, numpy_first=False) == "False"
    assert _huge_pages_after_import(None, numpy_first=True) == "False"


def test_the_users_choice_wins():
    if sys.platform == "linux":
        assert _huge_pages_after_import("1", numpy_first=True) == "True"
        assert _huge_pages_after_import("1", numpy_first=False) == "True"
    assert _huge_pages_after_import("0", numpy_first=True) == "False"


# A thread allocates (numpy arrays of 64 KiB: malloc, not Python's small-object pool),
# then glibc's malloc_info lists the arenas in use, one <heap nr=...> each.
_ARENAS = ("import ctypes, os, sys, tempfile, threading\n"
           "import numpy, designer\n"
           "{tune}"
           "keep = []\n"
           "t = threading.Thread(target=lambda: keep.extend(numpy.ones(8192) for _ in range(64)))\n"
           "t.start(); t.join()\n"
           "libc = ctypes.CDLL(None)\n"
           "libc.fopen.restype = ctypes.c_void_p\n"
           "libc.fopen.argtypes = libc.fclose.argtypes = (ctypes.c_char_p, ctypes.c_char_p)\n"
           "libc.fclose.argtypes = (ctypes.c_void_p,)\n"
           "libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)\n"
           "path = os.path.join(tempfile.mkdtemp(), 'info.xml')\n"
           "fp = libc.fopen(path.encode(), b'w'); libc.malloc_info(0, fp); libc.fclose(fp)\n"
           "print(open(path).read().count('<heap nr='))\n")


def _arenas(env_value: str | None, tune: bool = True) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    if env_value is not None:
        env["MALLOC_ARENA_MAX"] = env_value
    code = _ARENAS.format(tune=_TUNE if tune else "")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return int(out.stdout.strip())


def test_threads_share_one_malloc_arena_unless_the_user_chose():
    if sys.platform != "linux" or not hasattr(ctypes.CDLL(None), "malloc_info"):
        pytest.skip("glibc only")
    assert _arenas(None) == 1
    assert _arenas("4") == 2     # the thread got an arena of its own


# Arrays of 16 MB and 8 MB written and freed, then the same again: the page faults of
# the second pair (its pages are the first pair's if the process kept them).
_REUSE = ("import resource\n"
          "import numpy, designer\n" + _TUNE +
          "def faults(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
          "a, b = numpy.ones(2 << 20), numpy.ones(1 << 20); del a, b\n"
          "f = faults()\n"
          "a, b = numpy.ones(2 << 20), numpy.ones(1 << 20)\n"
          "print(faults() - f)\n")


def _faults_on_reuse(env: dict[str, str]) -> int:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", _REUSE], env={**clean, **env},
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_freed_memory_is_kept_for_the_next_solve_unless_the_user_chose():
    # 6,144 pages written twice: the second time in memory the process kept, unless
    # the user set glibc's trim threshold (here to its default, 128 KiB), which returns
    # the freed top of the heap to the kernel: then the pages fault again.
    if sys.platform != "linux" or not hasattr(ctypes.CDLL(None), "mallopt"):
        pytest.skip("glibc only")
    assert _faults_on_reuse({}) < 200
    assert _faults_on_reuse({"MALLOC_TRIM_THRESHOLD_": "131072"}) > 3000


@pytest.mark.parametrize("env", [{"FABRIC_DESIGNER_MALLOC": "glibc"},
                                 {"MALLOC_TOP_PAD_": "0"}, {"MALLOC_MMAP_THRESHOLD_": "0"}])
def test_glibcs_thresholds_are_left_alone_when_asked(monkeypatch, env):
    from designer.memory import keep_freed_memory

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert keep_freed_memory() is False


# 24 MB of arrays written and freed in a tuned process: glibc keeps the pages (the
# resident size stays up), and heap_in_use says they are free again.
_IN_USE = ("import re\n"
           "import numpy, designer\n" + _TUNE +
           "from designer.memory import heap_in_use\n"
           "def rss():\n"
           "    text = open('/proc/self/status').read()\n"
           "    return int(re.search(r'VmRSS:\\s+(\\d+)', text).group(1)) << 10\n"
           "before = heap_in_use(), rss()\n"
           "a, b = numpy.ones(2 << 20), numpy.ones(1 << 20)\n"
           "held = heap_in_use(), rss()\n"
           "del a, b\n"
           "print(*before, *held, heap_in_use(), rss())\n")


def test_heap_in_use_falls_when_memory_is_freed_and_the_resident_size_does_not():
    if sys.platform != "linux" or not hasattr(ctypes.CDLL(None), "mallinfo2"):
        pytest.skip("glibc 2.33 or later only")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", _IN_USE], env=clean, capture_output=True,
                         text=True, check=True)
    use0, rss0, use1, rss1, use2, rss2 = map(int, out.stdout.split())
    size = 24 << 20
    assert size <= use1 - use0 < size + (1 << 20)
    assert abs(use2 - use0) < 1 << 20                # freed: not in use any more
    assert rss1 - rss0 >= size * 0.95 and rss2 > rss1 - (1 << 20)   # but kept resident


def test_heap_in_use_is_none_or_a_positive_size():
    from designer.memory import heap_in_use

    used = heap_in_use()
    assert used is None or used > 0
