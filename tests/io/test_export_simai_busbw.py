"""SimAI-Analytical ``busbw.yaml``: the upstream example's keys, every value what
``fabric-designer solve`` prints for the same group, collective and size."""

from __future__ import annotations

import re

import pytest

from designer.cli import main
from designer.io.exports import export
from designer.io.fabric_json import save
from designer.model.templates import build_template

# SimAI example/busbw.yaml: a name line, then these keys in this order.
_SET = ["allreduce,", "allgather,", "reducescatter,", "alltoall,"]
UPSTREAM_KEYS = ["TP", *_SET, "DP", *_SET, "EP", *_SET, "PP", "busbw"]


def _read(path):
    lines = path.read_text().splitlines()
    pairs = [line.split(":", 1) for line in lines[1:]]
    return lines[0], [k for k, _ in pairs], [v.strip() for _, v in pairs]


def _groups(readme: str) -> dict[str, str]:
    return dict(re.findall(r"^#   (TP|DP|EP|PP): (\S+)$", readme, re.M))


def _cli_busbw(capsys, design, collective, ranks) -> float:
    argv = ["solve", str(design), "--algorithm", "auto", "--ranks", ranks]
    assert main([*argv, "--collective", collective]) == 0
    out = capsys.readouterr().out.splitlines()
    row = out[out.index(next(x for x in out if x.strip().startswith("size"))) + 1]
    return float(row.split()[-2])


@pytest.mark.parametrize("template", ["rail-cluster"])
def test_busbw_yaml_keys_and_values_match_solve(tmp_path, capsys, template):
    t = build_template(template)
    design = tmp_path / "d.fabric.json"
    save(t, design)
    export(t, tmp_path / "s.simai")
    name, keys, values = _read(tmp_path / "s.simai" / "busbw.yaml")
    assert name and " " not in name
    assert keys == UPSTREAM_KEYS
    groups = _groups((tmp_path / "s.simai" / "README.txt").read_text())
    assert set(groups) == {"TP", "DP", "EP", "PP"}
    assert len(groups["TP"].split(",")) == 8 and len(groups["DP"].split(",")) == 4
    colls = ["allreduce", "allgather", "reducescatter", "alltoall"]
    expected = []
    for g in ("TP", "DP", "EP"):
        expected += [""] + [_cli_busbw(capsys, design, c, groups[g]) for c in colls]
    expected += ["", _cli_busbw(capsys, design, "sendrecv", groups["PP"])]
    got = ["" if v == "" else float(v) for v in values]
    assert got == expected
    # NVLink inside a server is faster than the scale-out across servers.
    assert got[1] > got[6] > 0


def test_busbw_yaml_one_server_has_no_scale_out_groups(tmp_path):
    export(build_template("hgx"), tmp_path / "s.simai")
    _, keys, values = _read(tmp_path / "s.simai" / "busbw.yaml")
    assert keys == UPSTREAM_KEYS
    assert all(float(v) > 0 for v in values[1:5])
    assert values[6:] == ["null"] * 4 + [""] + ["null"] * 4 + ["", "null"]
    readme = (tmp_path / "s.simai" / "README.txt").read_text()
    assert "DP: the design has one NVLink domain" in readme
