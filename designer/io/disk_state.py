"""Whether a file changed on disk since it was opened or saved, and how two designs differ.

A window keeps the `DiskState` of its file as it opened or last saved it: modification
time, size, inode and a SHA-256 of the content.  Before saving over the file it asks
`changed_on_disk`; when another window or a script wrote the file meanwhile, the save
warns instead of silently overwriting the other writer's work.

A different size is a change at once; otherwise the content is hashed again, every time:
a file system that keeps times to the second (or two, on FAT), or a writer that sets the
time back, can leave time, size and inode as they were while the bytes changed.  Hashing
reads the file once per save (a save writes it anyway); a file merely touched, or
rewritten with the same bytes, is then not reported as changed.

`differences` summarises what a reload would bring: nodes and links only in one design or
different in both, by id.

Example
-------
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "d.fabric.json"
>>> _ = path.write_text("one")
>>> state = DiskState.of(path)
>>> changed_on_disk(path, state)
False
>>> _ = path.write_text("two, longer")
>>> changed_on_disk(path, state)
True
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Differences", "DiskState", "changed_on_disk", "differences"]

_CHUNK = 1 << 20


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class DiskState:
    """A file's fingerprint: ``mtime_ns``, ``size``, ``inode`` and ``sha256``."""

    mtime_ns: int
    size: int
    inode: int
    sha256: str

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> DiskState | None:
        """The fingerprint of ``path`` now; None when it is missing or not a regular file.

        Raises `OSError` for a file that exists but cannot be read.
        """
        path = Path(path)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        digest = _sha256(path)
        after = os.stat(path)
        # Written while we hashed: this fingerprint would match neither version, which only
        # makes the next check hash again (and find the content it then has).
        return cls(
            after.st_mtime_ns,
            after.st_size,
            after.st_ino,
            digest if _same_stat(info, after) else "",
        )


def _same_stat(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_mtime_ns, a.st_size, a.st_ino) == (b.st_mtime_ns, b.st_size, b.st_ino)


def changed_on_disk(path: str | os.PathLike[str], state: DiskState | None) -> bool:
    """Whether ``path`` now holds other content than when ``state`` was taken.

    A file that is gone, or was not there when ``state`` was taken (None), is not a
    conflict: saving creates it.  A file that cannot be read counts as changed (saving
    over it would overwrite what nobody has seen).
    """
    if state is None:
        return False
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    if info.st_size != state.size or not state.sha256:
        return True
    try:
        return _sha256(Path(path)) != state.sha256
    except OSError:
        return True


@dataclass(frozen=True)
class Differences:
    """How design ``theirs`` (on disk) differs from design ``mine`` (in the window), by id.

    Each field counts items: ``*_added`` are only in ``theirs`` (a reload brings them),
    ``*_removed`` only in ``mine`` (a reload drops them), ``*_changed`` in both with other
    values (position, name, device, count...).
    """

    nodes_added: int = 0
    nodes_removed: int = 0
    nodes_changed: int = 0
    links_added: int = 0
    links_removed: int = 0
    links_changed: int = 0
    other: tuple[str, ...] = ()

    @property
    def none(self) -> bool:
        return self == Differences()

    def lines(self) -> list[str]:
        """One line per kind of item that differs, e.g. ``"nodes: 3 added, 1 changed"``."""
        out = []
        for kind in ("nodes", "links"):
            parts = [
                f"{getattr(self, f'{kind}_{what}'):,} {what}"
                for what in ("added", "removed", "changed")
                if getattr(self, f"{kind}_{what}")
            ]
            if parts:
                out.append(f"{kind}: {', '.join(parts)}")
        if self.other:
            out.append(f"also different: {', '.join(self.other)}")
        return out


def _count(mine: dict[str, Any], theirs: dict[str, Any]) -> tuple[int, int, int]:
    added = sum(1 for k in theirs if k not in mine)
    removed = sum(1 for k in mine if k not in theirs)
    changed = sum(1 for k, v in theirs.items() if k in mine and mine[k] != v)
    return added, removed, changed


def differences(mine: Any, theirs: Any) -> Differences:
    """What differs between two designs (`Topology`, or anything with ``nodes()``,
    ``links()``, ``groups()``, ``name``, ``settings`` and ``overrides``)."""
    nodes = _count({n.id: n for n in mine.nodes()}, {n.id: n for n in theirs.nodes()})
    links = _count({lk.id: lk for lk in mine.links()}, {lk.id: lk for lk in theirs.links()})
    other = []
    if mine.name != theirs.name:
        other.append("design name")
    if sorted(mine.groups(), key=lambda g: g.id) != sorted(theirs.groups(), key=lambda g: g.id):
        other.append("groups")
    if dict(mine.settings) != dict(theirs.settings):
        other.append("settings")
    if mine.overrides != theirs.overrides:
        other.append("device overrides")
    return Differences(*nodes, *links, other=tuple(other))
