"""The ``fabric-designer`` command: the contract other tools script against (issue 2)."""

import csv
import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import networkx as nx
import pytest

from designer.cli import main, parse_size
from tests.cli_support import new_design, run


@pytest.fixture(scope="module")
def example_file(tmp_path_factory):
    return new_design(tmp_path_factory.mktemp("cli"), "example")


def test_templates_lists_names_params_and_defaults(capsys):
    code, out, _ = run(capsys, "templates", "--json")
    data = json.loads(out)
    assert code == 0
    assert {"hgx", "nvl72", "rail-cluster", "superpod", "fat-tree", "leaf-spine", "torus3d",
            "example"} <= set(data)
    assert data["superpod"]["params"]["sus"]["default"] == 4
    code, out, _ = run(capsys, "templates")
    assert "superpod" in out and "sus=4" in out


def test_new_with_repeated_and_grouped_sets(tmp_path, capsys):
    out_file = tmp_path / "sp.fabric.json"
    code, out, _ = run(capsys, "new", "superpod", "--set", "gpu=B200", "sus=4", "-o",
                       str(out_file))
    assert code == 0 and "1024 GPUs" in out
    code, out, _ = run(capsys, "info", str(out_file), "--json")
    counts = json.loads(out)["counts"]
    assert (counts["gpu"], counts["leaf"], counts["spine"], counts["core"]) == (1024, 32, 16, 0)
    out2 = tmp_path / "h.fabric.json"
    assert main(["new", "hgx", "--set", "gpu=A100", "--set", "gpus=4", "-o", str(out2)]) == 0
    capsys.readouterr()
    _, out, _ = run(capsys, "info", str(out2), "--json")
    assert json.loads(out)["counts"]["gpu"] == 4


@pytest.mark.parametrize("argv, fragment", [
    (["new", "nosuch", "-o", "x.fabric.json"], "nosuch"),
    (["new", "hgx", "--set", "gpus=99", "-o", "x.fabric.json"], "gpus"),
    (["new", "hgx", "--set", "novalue", "-o", "x.fabric.json"], "key=value"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, capsys, monkeypatch, argv, fragment):
    monkeypatch.chdir(tmp_path)
    code, _out, err = run(capsys, *argv)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.fabric.json").exists()


def test_validate_passes_on_a_template_and_fails_on_a_broken_design(example_file, tmp_path,
                                                                    capsys):
    code, out, _ = run(capsys, "validate", str(example_file))
    assert code == 0 and "OK" in out
    data = json.loads(example_file.read_text())
    gpu = next(n["id"] for n in data["nodes"] if n["kind"] == "gpu")
    leaf = next(n["id"] for n in data["nodes"] if n["kind"] == "leaf")
    # An NVLink cable into an InfiniBand switch: incompatible technology.
    data["links"].append({"id": "bad-link", "a": gpu, "b": leaf, "tech": "nvlink4", "count": 1,
                          "plane": "compute", "failed": False})
    broken = tmp_path / "broken.fabric.json"
    broken.write_text(json.dumps(data))
    code, out, _ = run(capsys, "validate", str(broken), "--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"]
    assert any(f["code"] == "incompatible-tech" and f["subject"] == "bad-link"
               for f in report["findings"])


def test_bad_file_is_one_line_exit_1(tmp_path, capsys):
    bad = tmp_path / "bad.fabric.json"
    bad.write_text('{"format": "fabric-designer", "version": 99}')
    code, _out, err = run(capsys, "info", str(bad))
    assert code == 1 and "newer" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "validate", str(tmp_path / "missing.fabric.json"))
    assert code == 1 and "missing.fabric.json" in err


def test_bom_text_csv_and_json(example_file, capsys):
    code, out, _ = run(capsys, "bom", str(example_file))
    assert code == 0 and "assumption" in out.lower()
    code, out, _ = run(capsys, "bom", str(example_file), "--csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and len(rows) > 5
    code, out, _ = run(capsys, "bom", str(example_file), "--json")
    data = json.loads(out)
    assert data["gpus"] == 32 and data["total_price_usd"] > 0


def test_export_graphml_and_node_link_json(example_file, tmp_path, capsys):
    gml = tmp_path / "x.graphml"
    assert main(["export", str(example_file), "-o", str(gml)]) == 0
    ET.parse(gml)
    g = nx.read_graphml(gml)
    design = json.loads(example_file.read_text())
    devices = [n for n, d in g.nodes(data=True) if d["kind"] != "group"]  # groups: nodes too
    assert len(devices) == len(design["nodes"])
    js = tmp_path / "x.json"
    assert main(["export", str(example_file), "-o", str(js)]) == 0
    assert len(json.loads(js.read_text())["nodes"]) == len(design["nodes"])
    capsys.readouterr()
    code, _, err = run(capsys, "export", str(example_file), "-o", str(tmp_path / "x.xyz"))
    assert code == 2 and ".xyz" in err


def test_parse_size():
    assert parse_size("8GiB") == 8 << 30
    assert parse_size("32KiB") == 32 << 10
    assert parse_size("1048576") == 1 << 20


def test_console_script_and_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "designer", "--version"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("fabric-designer ")
    proc = subprocess.run([sys.executable, "-m", "designer", "frobnicate", "x"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "frobnicate" in proc.stderr
