"""The checks a design file passes before anything reads it: it exists, is a regular
file, and is not larger than `MAX_FILE_BYTES`.

Light on purpose (no numpy, no networkx, no model): the command line runs
`check_design_file` on a command's design file before the command imports what it
needs, so a file over the limit is refused in a fraction of a second, whatever the
command.  `designer.io.fabric_json.load` runs the same checks.
"""

from __future__ import annotations

import os
import stat

from designer.model.errors import DesignError

__all__ = ["MAX_FILE_BYTES", "FileFormatError", "check_design_file"]

#: Files larger than this are refused before being read (a 131,072-GPU rail cluster,
#: the largest design a template builds, is about 180 MB).
MAX_FILE_BYTES = 256 * 1024 * 1024


class FileFormatError(DesignError):
    """A design file cannot be read or written; the message is
    ``"<file>: <where>: <what>"``, e.g.
    ``"x.fabric.json: nodes[3] (id 'n0-gpu1'): unknown device model 'H900'"``."""


def check_design_file(path: str | os.PathLike[str]) -> os.stat_result:
    """``path``'s status, once it is known to be a regular file within the size limit;
    `FileFormatError` (one line naming the file) otherwise."""
    source = os.fspath(path)
    try:
        info = os.stat(path)
    except OSError as err:
        raise FileFormatError(f"{source}: cannot read: {err.strerror or err}") from err
    if not stat.S_ISREG(info.st_mode):  # a folder, or a pipe that would block forever
        raise FileFormatError(f"{source}: cannot read: not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise FileFormatError(
            f"{source}: too big ({info.st_size:,} bytes; the limit is {MAX_FILE_BYTES:,})"
        )
    return info
