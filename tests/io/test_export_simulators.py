"""Simulator hand-off (topology parts): ASTRA-sim analytical network YAML and system
JSON with the upstream examples' keys, SimAI and ns-3 topology text whose headers
agree with their bodies."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from designer.io.exports import export
from designer.io.exports.common import ExportFormatError
from designer.model.templates import build_template

# astra-sim examples/system/native_collectives/*.json (e.g. ring.json): the keys every
# upstream system file has.
SYSTEM_KEYS = {
    "scheduling-policy",
    "endpoint-delay",
    "active-chunks-per-dimension",
    "preferred-dataset-splits",
    "all-reduce-implementation",
    "all-gather-implementation",
    "reduce-scatter-implementation",
    "all-to-all-implementation",
    "collective-optimization",
    "local-mem-bw",
    "boost-mode",
}
# astra-sim examples/network/analytical/*.yml
NETWORK_KEYS = {"topology", "npus_count", "bandwidth", "latency"}


def gpus(t) -> int:
    return sum(1 for n in t.nodes() if n.kind == "gpu")


@pytest.mark.parametrize("template, dims", [("hgx", 1), ("rail-cluster", 2), ("fat-tree", 2)])
def test_astra_sim_inputs(tmp_path, template, dims):
    t = build_template(template)
    export(t, tmp_path / "a.astra-sim")
    network = yaml.safe_load((tmp_path / "a.astra-sim" / "network.yaml").read_text())
    assert set(network) == NETWORK_KEYS
    assert all(len(network[k]) == dims for k in NETWORK_KEYS)
    assert math.prod(network["npus_count"]) == gpus(t)
    assert all(b > 0 for b in network["bandwidth"]) and all(x > 0 for x in network["latency"])
    system = json.loads((tmp_path / "a.astra-sim" / "system.json").read_text())
    assert set(system) == SYSTEM_KEYS
    assert all(len(system[k]) == dims for k in SYSTEM_KEYS if k.endswith("-implementation"))
    memory = json.loads((tmp_path / "a.astra-sim" / "remote_memory.json").read_text())
    assert memory == {"memory-type": "NO_MEMORY_EXPANSION"}
    assert "flattening loses" in (tmp_path / "a.astra-sim" / "network.yaml").read_text()


def test_astra_sim_nvlink_bandwidth_is_the_gpus():
    t = build_template("hgx")
    from designer.io.exports.simulators import astra_sim_files

    network = yaml.safe_load(astra_sim_files(t)["network.yaml"])
    tech = t.catalog.tech("nvlink4")
    # 18 NVLink 4 links per H100 at the technology's efficiency, in GB/s
    assert network["bandwidth"][0] == pytest.approx(18 * tech.GBps * tech.efficiency, rel=1e-3)


def test_astra_sim_refuses_what_it_cannot_hold(tmp_path):
    t = build_template("superpod")  # 127 servers: no product of dimensions makes 1,016
    with pytest.raises(ExportFormatError, match="do not split evenly"):
        export(t, tmp_path / "s.astra-sim")
    assert not (tmp_path / "s.astra-sim").exists()


@pytest.mark.parametrize("template", ["hgx", "rail-cluster", "superpod"])
def test_simai_and_ns3_headers_agree_with_their_bodies(tmp_path, template):
    t = build_template(template)
    export(t, tmp_path / "s.simai")
    lines = (tmp_path / "s.simai" / "topology.txt").read_text().splitlines()
    nodes, per_server, nvs, switches, links, gpu = lines[0].split()
    assert gpu == "H100" and int(per_server) == 8
    ids = [int(x) for x in lines[1].split()]
    assert len(ids) == int(nvs) + int(switches)
    assert int(nodes) == gpus(t) + len(ids)
    body = lines[2:]
    assert len(body) == int(links)
    for line in body:
        src, dst, rate, lat, err = line.split()
        assert 0 <= int(src) < int(nodes) and 0 <= int(dst) < int(nodes)
        assert rate.endswith("Gbps") and lat.endswith("ms") and err == "0"
    export(t, tmp_path / "s.ns3.txt")
    ns3 = (tmp_path / "s.ns3.txt").read_text().splitlines()
    n, sw, nl = (int(x) for x in ns3[0].split())
    assert (n, sw, nl) == (int(nodes), len(ids), int(links))
    assert ns3[2:] == body
