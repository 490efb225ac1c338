"""Jobs saved inside the design file (format version 2), old files still loading."""

import json

import pytest

from designer.io.fabric_json import FileFormatError, dumps, load, loads, save
from designer.model.templates import build_template
from designer.workload.files import design_jobs, job_to_dict, set_design_jobs
from designer.workload.job import Job
from designer.workload.presets import preset


def jobs():
    return [Job.from_preset("a", preset("tiny")),
            Job.from_preset("b", preset("tiny-moe"), placement="spread", colour="#ff7f0e")]


def test_jobs_round_trip_through_the_design_file(tmp_path):
    topo = build_template("hgx")
    set_design_jobs(topo, jobs())
    path = tmp_path / "d.fabric.json"
    save(topo, path)
    text = path.read_text(encoding="utf-8")
    assert json.loads(text)["version"] == 2
    again = load(path)
    assert design_jobs(again, str(path)) == jobs()
    assert dumps(again) == text


def test_a_design_without_jobs_stays_version_1_byte_for_byte():
    topo = build_template("hgx")
    text = dumps(topo)
    assert json.loads(text)["version"] == 1 and "workloads" not in text
    set_design_jobs(topo, jobs())
    set_design_jobs(topo, [])
    assert dumps(topo) == text
    assert dumps(loads(text)) == text


def _with_jobs(version, data_jobs):
    topo = build_template("hgx")
    set_design_jobs(topo, jobs())
    data = json.loads(dumps(topo))
    data["version"] = version
    data["settings"]["workloads"] = data_jobs
    return json.dumps(data)


def test_version_1_file_with_jobs_is_refused():
    with pytest.raises(FileFormatError, match=r"settings\.workloads: needs format version 2"):
        loads(_with_jobs(1, [job_to_dict(jobs()[0])]))


def test_a_newer_version_is_refused_politely():
    with pytest.raises(FileFormatError, match=r"newer Fabric Designer .format version 3.*up to 2"):
        loads(_with_jobs(3, []))


@pytest.mark.parametrize("mutate,message", [
    (lambda j: j["parallel"].update(tp="2"),
     r"settings.workloads\[0\].parallel: field 'tp' must be a whole number"),
    (lambda j: j["model"].update(layerz=4),
     r"settings.workloads\[0\].model: unknown field 'layerz'"),
    (lambda j: j.update(placement="scattered"), r"settings.workloads\[0\]: field 'placement'"),
])
def test_schema_names_the_job_and_field(mutate, message):
    data = job_to_dict(jobs()[0])
    mutate(data)
    with pytest.raises(FileFormatError, match=message) as err:
        loads(_with_jobs(2, [data]), source="d.fabric.json")
    assert str(err.value).startswith("d.fabric.json: ") and "\n" not in str(err.value)


def test_two_jobs_of_one_name_are_refused():
    data = job_to_dict(jobs()[0])
    with pytest.raises(FileFormatError, match="two jobs are named 'a'"):
        loads(_with_jobs(2, [data, data]))


def test_what_the_schema_cannot_say_is_refused_when_the_jobs_are_read():
    data = job_to_dict(jobs()[0])
    data["parallel"]["tp"] = 3
    topo = loads(_with_jobs(2, [data]))
    where = r"^d.fabric.json: settings.workloads\[0\] \('a'\): tp \(3\)"
    with pytest.raises(ValueError, match=where):
        design_jobs(topo, "d.fabric.json")
