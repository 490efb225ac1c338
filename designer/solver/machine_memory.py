"""How much memory a solve may take on this machine: the memory available (the kernel's
``MemAvailable``, lowered to a container's cgroup limit), or the user's own limit
(``solve --max-memory``, the ``FABRIC_DESIGNER_MAX_MEMORY`` environment variable).
`designer.solver.memory_estimate` compares a solve's estimate with it.

No dependency reads memory on every platform (psutil would be a new one for three
numbers): Linux reads ``/proc``, Windows asks ``GlobalMemoryStatusEx``, and elsewhere
(macOS) the physical memory is the bound.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from designer.solver.errors import SolverError

__all__ = [
    "ENV_MAX_MEMORY",
    "MemoryLimit",
    "available_memory",
    "format_bytes",
    "memory_limit",
    "parse_memory",
]

ENV_MAX_MEMORY = "FABRIC_DESIGNER_MAX_MEMORY"
"""Environment variable: the most memory a solve may take, in bytes or with a unit
(``8GiB``); it replaces the machine's available memory as the limit."""


def available_memory() -> tuple[int | None, str]:
    """The memory this process may still take, in bytes, and what it is: the kernel's
    ``MemAvailable`` on Linux (lowered to a cgroup's memory limit when the process
    runs in one, as in a container), the free physical memory on Windows, the physical
    memory elsewhere; ``(None, ...)`` when the platform does not say."""
    if sys.platform.startswith("linux"):
        try:
            text = Path("/proc/meminfo").read_text()
        except OSError:
            text = ""
        for line in text.splitlines():
            if line.startswith("MemAvailable:"):
                free = int(line.split()[1]) * 1024
                room = _cgroup_room()
                if room is not None and room < free:
                    return room, "left under this process's cgroup memory limit"
                return free, "available"
    if sys.platform == "win32":
        return _windows_available(), "available"
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "of physical memory"
    except (ValueError, OSError, AttributeError):
        return None, "unknown"


def _cgroup_room() -> int | None:
    """Bytes left under the cgroup v2 ``memory.max`` of this process, or None."""
    try:
        line = Path("/proc/self/cgroup").read_text().splitlines()[0]
        group = Path("/sys/fs/cgroup") / line.split("::", 1)[1].lstrip("/")
        limit = (group / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(int(limit) - int((group / "memory.current").read_text()), 0)
    except (OSError, IndexError, ValueError):
        return None


def _windows_available() -> int | None:
    class MemoryStatusEx(ctypes.Structure):
        _fields_ = [
            ("dwLength", ctypes.c_ulong),
            ("dwMemoryLoad", ctypes.c_ulong),
            ("ullTotalPhys", ctypes.c_ulonglong),
            ("ullAvailPhys", ctypes.c_ulonglong),
            ("ullTotalPageFile", ctypes.c_ulonglong),
            ("ullAvailPageFile", ctypes.c_ulonglong),
            ("ullTotalVirtual", ctypes.c_ulonglong),
            ("ullAvailVirtual", ctypes.c_ulonglong),
            ("ullAvailExtendedVirtual", ctypes.c_ulonglong),
        ]

    status = MemoryStatusEx()
    status.dwLength = ctypes.sizeof(MemoryStatusEx)
    if not ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status)):
        return None
    return int(status.ullAvailPhys)


@dataclass(frozen=True)
class MemoryLimit:
    """The most memory a solve may take (``bytes``; None: no limit known) and where the
    figure comes from, as a message says it (``{}`` stands for the size)."""

    bytes: int | None
    phrase: str

    def text(self) -> str:
        """``the 3.1 GB available``, ``the --max-memory limit of 1.0 GB``."""
        return self.phrase.format(format_bytes(self.bytes or 0))


def memory_limit(setting: int | None = None, option: str = "--max-memory") -> MemoryLimit:
    """The most memory a solve may take: the ``setting`` (the command line's
    ``option``), else `ENV_MAX_MEMORY`, else `available_memory`.

    A malformed `ENV_MAX_MEMORY` raises `SolverError` naming it.
    """
    if setting is not None:
        return MemoryLimit(setting, f"the {option} limit of {{}}")
    text = os.environ.get(ENV_MAX_MEMORY, "").strip()
    if text:
        value = parse_memory(text)
        if value is None:
            raise SolverError(f"{ENV_MAX_MEMORY}={text[:40]!r} is not a size (use e.g. 8GiB)")
        return MemoryLimit(value, f"the {ENV_MAX_MEMORY} limit of {{}}")
    free, what = available_memory()
    return MemoryLimit(free, f"the {{}} {what}")


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "kb": 10**3,
    "m": 1 << 20,
    "mib": 1 << 20,
    "mb": 10**6,
    "g": 1 << 30,
    "gib": 1 << 30,
    "gb": 10**9,
    "t": 1 << 40,
    "tib": 1 << 40,
    "tb": 10**12,
}


def parse_memory(text: str) -> int | None:
    """``8GiB``, ``512MB``, ``2g`` or plain bytes -> bytes; None for anything else.

    >>> parse_memory("8GiB"), parse_memory("1.5GB"), parse_memory("lots")
    (8589934592, 1500000000, None)
    """
    t = text.strip().lower()
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(num) :].strip()
    try:
        value = float(num)
    except ValueError:
        return None
    if unit not in _UNITS or not 0 < value * _UNITS[unit] < 2**63:
        return None
    return int(value * _UNITS[unit])


def format_bytes(n: float) -> str:
    """``1.2 GiB``, ``350 MiB``: binary units, as ``--max-memory 8GiB`` is typed.

    >>> format_bytes(6.4e9), format_bytes(16 << 20), format_bytes(900)
    ('6.0 GiB', '16 MiB', '1 KiB')
    """
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20)):
        scale = 1 << shift
        if n >= scale:
            return f"{n / scale:.1f} {unit}" if n < 10 * scale else f"{n / scale:.0f} {unit}"
    return f"{max(n / 1024, 1):.0f} KiB"
