"""Presets: the parameter counts derived from the architecture against the published ones."""

import pytest

from designer.workload.model import ModelSpec
from designer.workload.presets import preset, preset_names

PUBLISHED = [
    "llama3.1-8b",
    "llama3.1-70b",
    "llama3.1-405b",
    "gpt3-175b",
    "mixtral-8x7b",
    "deepseek-v3",
]


def test_every_issue_preset_is_there():
    assert {*PUBLISHED, "tiny"} <= set(preset_names())


@pytest.mark.parametrize("name", PUBLISHED)
def test_derived_count_matches_the_published_one(name):
    p = preset(name)
    assert p.source.startswith("https://")
    assert 0 < p.params_tolerance <= 0.02
    assert p.model.params() == pytest.approx(p.published_params, rel=p.params_tolerance)
    if p.published_active_params:
        assert p.model.params(active=True) == pytest.approx(
            p.published_active_params, rel=p.params_tolerance
        )


def test_moe_counts_by_hand():
    # Mixtral: per layer attention 2 h^2 + 2 h (8 x 128), 8 experts of 3 h ffn, a router.
    m = preset("mixtral-8x7b").model
    h = 4096
    attn = 2 * h * h + 2 * h * 1024
    expert = 3 * h * 14336
    layer = attn + 8 * expert + 8 * h + 2 * h
    assert m.params() == 32 * layer + 2 * 32000 * h + h
    assert m.params(active=True) == 32 * (layer - 6 * expert) + 2 * 32000 * h + h


def test_deepseek_dense_layers_and_latent_attention():
    m = preset("deepseek-v3").model
    assert m.moe_layers == 58 and m.kv_width == 512 + 64
    assert 37e9 < m.params(active=True) < 38e9


@pytest.mark.parametrize("field,value", [("heads", 6), ("layers", 0), ("top_k", 3)])
def test_bad_models_are_refused_naming_the_field(field, value):
    args = dict(
        layers=2,
        hidden=64,
        ffn=128,
        heads=4,
        kv_heads=4,
        vocab=10,
        seq_len=8,
        experts=2,
        top_k=1,
        expert_ffn=32,
    )
    args[field] = value
    with pytest.raises(ValueError, match=field):
        ModelSpec(**args)


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown preset 'llama9'.*tiny"):
        preset("llama9")
