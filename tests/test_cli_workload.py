"""``fabric-designer workload presets / new / check``."""

from __future__ import annotations

import json

import pytest

from designer.workload.files import read_workload
from tests.cli_support import new_design, one_line, run


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from designer.cli import main

    path = tmp_path_factory.mktemp("wl") / "rc.fabric.json"
    assert main(["new", "rail-cluster", "--set", "nodes=2", "-o", str(path)]) == 0
    return path


@pytest.fixture(autouse=True)
def _quiet(capsys):
    capsys.readouterr()


def test_presets_list_the_issue_names(capsys):
    code, out, _ = run(capsys, "workload", "presets", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    for name in ("llama3.1-405b", "llama3.1-70b", "llama3.1-8b", "gpt3-175b", "mixtral-8x7b",
                 "deepseek-v3", "tiny"):
        assert name in rows
    assert rows["deepseek-v3"]["experts"] == 256
    code, out, _ = run(capsys, "workload", "presets")
    assert code == 0 and "405.85B params" in out


def test_new_sets_keys_and_gpus_sets_dp(capsys, tmp_path):
    out = tmp_path / "w.workload.toml"
    code, text, err = run(capsys, "workload", "new", "tiny", "--set", "tp=1", "pp=2",
                          "gpus=16", "--set", "micro_batch=1", "placement=spread", "-o", out)
    assert code == 0, err
    (job,) = read_workload(out)
    assert (job.parallel.tp, job.parallel.pp, job.parallel.dp) == (1, 2, 8)
    assert job.config.micro_batch == 1 and job.placement == "spread"
    assert "on 16 GPUs, TP1 CP1 PP2 DP8" in text


def test_check_prints_placement_memory_and_lanes(capsys, tmp_path, cluster):
    w = tmp_path / "t.workload.toml"
    assert run(capsys, "workload", "new", "tiny", "-o", w)[0] == 0
    code, out, err = run(capsys, "workload", "check", w, cluster)
    assert code == 0, err
    assert "8 GPUs on 1 NVLink domain(s)" in out and "fits in 80 GB" in out
    lanes = {line.split()[0] for line in out.splitlines()[6:]}
    assert {"compute", "tp", "pp", "dp"} <= lanes
    code, out, _ = run(capsys, "workload", "check", w, cluster, "--json")
    job = json.loads(out)["jobs"][0]
    assert job["memory"]["fits"] and job["lanes"]["tp"]["bytes"] == 4 * 18 * 2 * 131072 * 2


@pytest.mark.parametrize("sets,message", [
    (["tp=2", "pp=2", "dp=2", "gpus=16"], "tp x cp x pp x dp = 8, not gpus=16"),
    (["gpus=12", "tp=8"], "gpus=12 is not a multiple of tp x cp x pp = 16"),
])
def test_new_refuses_sizes_that_do_not_multiply(capsys, tmp_path, sets, message):
    code, _, err = run(capsys, "workload", "new", "tiny", "--set", *sets,
                       "-o", tmp_path / "w.workload.toml")
    assert code == 1 and message in err and one_line(err)


def test_new_refuses_unknown_preset_and_ep_not_dividing(capsys, tmp_path):
    out = tmp_path / "w.workload.toml"
    code, _, err = run(capsys, "workload", "new", "llama9", "-o", out)
    assert code == 1 and "unknown preset 'llama9'" in err and one_line(err)
    code, _, err = run(capsys, "workload", "new", "mixtral-8x7b", "--set", "ep=3", "dp=3",
                       "gpus=3", "global_batch=3", "-o", out)
    assert code == 1 and "ep (3) must divide the model's 8 experts" in err and one_line(err)
    code, _, err = run(capsys, "workload", "new", "tiny", "--set", "tpp=2", "-o", out)
    assert code == 2 and "unknown key 'tpp'" in err and not out.exists()


def test_check_refuses_more_gpus_than_the_design(capsys, tmp_path):
    hgx = new_design(tmp_path)
    w = tmp_path / "w.workload.toml"
    assert run(capsys, "workload", "new", "tiny", "--set", "gpus=16", "-o", w)[0] == 0
    code, _, err = run(capsys, "workload", "check", w, hgx)
    assert code == 1 and "needs 16 GPUs, the design has 8" in err and one_line(err)


def test_check_refuses_a_gpu_in_two_jobs(capsys, tmp_path, cluster):
    w = tmp_path / "w.workload.toml"
    job = ('\n[[job]]\nname = "{n}"\npreset = "tiny"\nplacement = "explicit"\n'
           'gpus = [{gpus}]\n[job.parallel]\ntp = 2\npp = 1\ndp = 1\n'
           '[job.training]\nglobal_batch = 2\n')
    w.write_text(job.format(n="a", gpus='"n01-gpu0", "n01-gpu1"')
                 + job.format(n="b", gpus='"n01-gpu1", "n01-gpu2"'))
    code, _, err = run(capsys, "workload", "check", w, cluster)
    assert code == 1 and "'n01-gpu1' is already in job 'a'" in err and one_line(err)


def test_check_bad_workload_file_is_one_line(capsys, tmp_path, cluster):
    w = tmp_path / "w.workload.toml"
    w.write_text("[[job]]\nname = 'a'\npreset = 'tiny'\n[job.parallel]\ntp = 3\n")
    code, _, err = run(capsys, "workload", "check", w, cluster)
    assert code == 1 and f"{w}: job 1 ('a')" in err and one_line(err)


def test_check_places_the_design_jobs_first(capsys, tmp_path):
    from designer.io.fabric_json import load, save
    from designer.workload.files import set_design_jobs
    from designer.workload.job import Job
    from designer.workload.presets import preset

    path = new_design(tmp_path, "rail-cluster", "--set", "nodes=2")
    topo = load(path)
    set_design_jobs(topo, [Job.from_preset("own", preset("tiny"))])
    save(topo, path)
    w = tmp_path / "w.workload.toml"
    assert run(capsys, "workload", "new", "tiny", "--set", "name=extra", "-o", w)[0] == 0
    code, out, err = run(capsys, "workload", "check", w, path, "--json")
    assert code == 0, err
    own, extra = json.loads(out)["jobs"]
    assert (own["name"], extra["name"]) == ("own", "extra")
    code, _, err = run(capsys, "workload", "check", w.parent / "none.workload.toml", path)
    assert code == 1 and "cannot read" in err and one_line(err)
