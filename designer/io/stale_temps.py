"""Leftover temporary files of atomic writes: which ones are stale, and removing them.

`designer.io.atomic` writes a file's new content to ``.<name>.tmp<pid>-<8 hex>`` beside
it and renames that over the file.  A process killed in between (a crash, a power cut)
leaves the temporary file behind, as large as the design, hidden, and no later save would
ever look at it.  So every save of a file, and every opening of it, removes that file's
stale leftovers.

The rule, chosen so that a temporary file another process may still be writing is never
removed:

* its name is a temporary name of *this* file (``.d.fabric.json.tmp<pid>-<8 hex>``, or
  ``.d.fabric.json.tmp<8 hex>`` as versions before the process id wrote), and it is a
  regular file (not a link, not a folder);
* it has not been modified for `STALE_AFTER_S` (a writer writes the whole content at
  once, then fsyncs and renames within seconds);
* the process that made it is gone: no process with that id runs on this machine.  A
  name without a process id, or a system where that cannot be asked (Windows), needs
  `STALE_WITHOUT_PID_S` (an hour) instead.  A process id is only meaningful on the
  machine that wrote the file: a writer on another machine sharing the folder is
  protected by the age alone.

Removing is best effort: a leftover that cannot be removed is left, silently; cleaning
never makes a save fail.

Example
-------
>>> import pathlib
>>> target = pathlib.Path("/x/d.fabric.json")
>>> is_temp_of(target, target.with_name(".d.fabric.json.tmp4242-0a1b2c3d"))
True
>>> is_temp_of(target, target.with_name(".d.fabric.json.bak.tmp4242-0a1b2c3d"))
False
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import time
from pathlib import Path

__all__ = ["STALE_AFTER_S", "STALE_WITHOUT_PID_S", "is_temp_of", "remove_stale_temps", "temp_name"]

#: A leftover whose writer is gone is stale once it has not changed for this long.
STALE_AFTER_S = 60.0
#: A leftover whose writer cannot be asked about is stale after this long.
STALE_WITHOUT_PID_S = 3600.0

_SUFFIX = re.compile(r"\.tmp(?:(?P<pid>[0-9]{1,10})-)?[0-9a-f]{8}")


def temp_name(target: Path, token: str) -> str:
    """The temporary name this process uses for ``target`` (``token``: 8 hex digits)."""
    return f".{target.name}.tmp{os.getpid()}-{token}"


def _match(target: Path, candidate: Path) -> re.Match[str] | None:
    prefix = f".{target.name}"
    name = candidate.name
    if not name.startswith(prefix):
        return None
    return _SUFFIX.fullmatch(name, len(prefix))


def is_temp_of(target: str | os.PathLike[str], candidate: str | os.PathLike[str]) -> bool:
    """Whether ``candidate``'s name is a temporary name of ``target`` (same folder)."""
    target, candidate = Path(target), Path(candidate)
    return candidate.parent == target.parent and _match(target, candidate) is not None


def _process_is_gone(pid: int) -> bool | None:
    """True when no process ``pid`` runs here, False when one does, None when unknown."""
    if sys.platform == "win32":  # os.kill(pid, 0) would send CTRL_C_EVENT there
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # it runs, under another user
    except (OSError, OverflowError):
        return None
    return False


def _is_stale(match: re.Match[str], age_s: float) -> bool:
    pid = match.group("pid")
    gone = _process_is_gone(int(pid)) if pid is not None else None
    if gone is None:
        return age_s >= STALE_WITHOUT_PID_S
    return gone and age_s >= STALE_AFTER_S


def remove_stale_temps(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the stale temporary files of ``target`` (see the module's rule); return
    the ones removed.  Never raises for a file system error."""
    target = Path(target)
    removed = []
    now = time.time()
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        candidate = target.parent / entry.name
        match = _match(target, candidate)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode) or not _is_stale(match, now - info.st_mtime):
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(candidate)
        except OSError:
            continue
        removed.append(candidate)
    return removed
