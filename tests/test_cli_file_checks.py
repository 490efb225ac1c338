"""A command's design file is checked (regular file, size limit) before the command
imports anything heavy: a file over the limit is refused at once, whatever the command."""

from __future__ import annotations

import sys

import pytest

from designer import cli
from designer.io import design_file

COMMANDS = [["validate"], ["info"], ["bom"], ["solve"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_an_oversized_file_is_refused_before_the_command_imports_its_tools(
        command, tmp_path, monkeypatch, capsys):
    big = tmp_path / "big.fabric.json"
    big.write_bytes(b" " * 2000)
    monkeypatch.setattr(design_file, "MAX_FILE_BYTES", 1000)
    # The commands' own modules cannot be imported: the refusal must come first.
    for name in ("designer.model.rules", "designer.model.report", "designer.model.bom",
                 "designer.io.fabric_json", "designer.solver.snapshot.build"):
        monkeypatch.setitem(sys.modules, name, None)
    assert cli.main([*command, str(big)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(
        f"fabric-designer: error: {big}: too big (2,000 bytes; the limit is 1,000)")


def test_a_folder_is_not_a_design(tmp_path, capsys):
    assert cli.main(["validate", str(tmp_path)]) == 1
    assert "not a regular file" in capsys.readouterr().err
