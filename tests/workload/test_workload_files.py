"""``*.workload.toml``: round trip, and one-line errors naming file, job and field."""

import dataclasses

import pytest

from designer.workload.files import (
    dumps_workload,
    job_from_dict,
    job_to_dict,
    loads_workload,
    read_workload,
    write_workload,
)
from designer.workload.job import Job
from designer.workload.presets import preset, preset_names


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_round_trips(name, tmp_path):
    job = Job.from_preset("job", preset(name))
    path = tmp_path / "w.workload.toml"
    write_workload(path, [job])
    assert read_workload(path) == [job]


def test_awkward_text_and_explicit_gpus_round_trip():
    job = dataclasses.replace(
        Job.from_preset('we"ird\\ job\t\x7f\u00e9', preset("tiny")), placement="explicit",
        gpus=tuple(f"g-{i}\"" for i in range(8)), layer_times=(1e-3, 2.5e-3), tflops=989.0)
    other = Job.from_preset("b", preset("tiny-moe"), mfu=0.375)
    assert loads_workload(dumps_workload([job, other])) == [job, other]


def test_a_preset_alone_is_a_job():
    job = job_from_dict({"name": "a", "preset": "tiny", "parallel": {"dp": 2, "tp": 2, "pp": 2}})
    assert job == Job.from_preset("a", preset("tiny"))


TEXT = dumps_workload([Job.from_preset("a", preset("tiny"))])


@pytest.mark.parametrize("old,new,message", [
    ("tp = 2", "tp = 3", "w.toml: job 1 ('a'): tp x cp x pp x dp|tp \\(3\\) must divide"),
    ("tp = 2", 'tp = "2"', "w.toml: job 1 \\('a'\\).parallel.tp: expected a whole number"),
    ("layers = 4", "layers = 4\nlayer = 5", "w.toml: job 1 \\('a'\\).model: unknown field 'layer'"),
    ('preset = "tiny"', 'preset = "llama9"', "job 1 \\('a'\\).preset: unknown preset 'llama9'"),
    ("mfu = 0.5", "mfu = 1.5", "job 1 \\('a'\\): mfu must be in"),
    ("version = 1", "version = 7", "w.toml: written by a newer Fabric Designer"),
    ('name = "a"', "", "w.toml: job 1: missing field 'name'"),
    ("global_batch = 16", "global_batch = 15", "global_batch \\(15\\) must be a multiple"),
    ("[job.model]", "[job.model\n", "w.toml: not valid TOML"),
])
def test_bad_files_name_file_job_and_field(old, new, message):
    assert old in TEXT
    with pytest.raises(ValueError, match=message) as err:
        loads_workload(TEXT.replace(old, new, 1), "w.toml")
    assert "\n" not in str(err.value)


def test_ep_must_divide_the_experts():
    data = job_to_dict(Job.from_preset("m", preset("tiny-moe")))
    data["parallel"]["ep"] = 3
    with pytest.raises(ValueError, match="ep \\(3\\) must divide the model's 4 experts"):
        job_from_dict(data)


def test_two_jobs_with_one_name_are_refused():
    with pytest.raises(ValueError, match="job 2 \\('a'\\): another job has this name"):
        loads_workload(TEXT + TEXT.split("\n", 2)[2], "w.toml")
