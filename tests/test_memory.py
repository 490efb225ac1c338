"""`designer.memory`: numpy's transparent huge pages are off once designer is imported,
unless the user chose with NUMPY_MADVISE_HUGEPAGE."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

import designer  # noqa: F401  (the import is what is tested)

_PROBE = ("import sys\n"
          "{first}\n"
          "import numpy, designer\n"
          "set_ = numpy._core.multiarray._set_madvise_hugepage\n"
          "print(set_(False))\n")


def _huge_pages_after_import(env_value: str | None, numpy_first: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
    if env_value is not None:
        env["NUMPY_MADVISE_HUGEPAGE"] = env_value
    code = _PROBE.format(first="import numpy" if numpy_first else "")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def test_huge_pages_are_off_in_this_process():
    setter = np._core.multiarray._set_madvise_hugepage
    was = setter(False)
    setter(was)
    assert was is False


def test_off_whether_numpy_or_designer_is_imported_first():
    assert _huge_pages_after_import(None, numpy_first=False) == "False"
    assert _huge_pages_after_import(None, numpy_first=True) == "False"


def test_the_users_choice_wins():
    if sys.platform == "linux":
        assert _huge_pages_after_import("1", numpy_first=True) == "True"
        assert _huge_pages_after_import("1", numpy_first=False) == "True"
    assert _huge_pages_after_import("0", numpy_first=True) == "False"
