"""Helpers shared by the CLI tests: run the command in-process and read its output."""

from __future__ import annotations

from designer.cli import main


def run(capsys, *argv):
    """``fabric-designer ARGV`` in this process: ``(exit code, stdout, stderr)``."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> bool:
    """One line of error, no traceback, no internal error."""
    return err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err


def new_design(folder, template: str = "hgx", *args: str):
    """``fabric-designer new TEMPLATE`` into ``folder``; the file's path."""
    path = folder / f"{template}.fabric.json"
    assert main(["new", template, *args, "-o", str(path)]) == 0
    return path
