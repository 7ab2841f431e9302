"""Config mistakes as a new user makes them in a copy of config/quick.yaml: each ends in a few lines
that name the key, what is wrong and what is allowed, before any job starts; sections and figure
entries with sensible defaults may be left out."""

from __future__ import annotations

import copy

import pytest
from workflow_support import REPO, load, snakemake, write_config

pytestmark = pytest.mark.slow  # one dry run of Snakemake (2-6 s) per case

QUICK = load(REPO / "config" / "quick.yaml")
MAX_LINES = 10


def changed(edit) -> dict:
    config = copy.deepcopy(QUICK)
    edit(config)
    return config


MISTAKES = {
    "figure names a missing experiment": (
        lambda c: c["figures"]["fig1a"].update(experiment="vary_q"),
        "figures.fig1a.experiment = 'vary_q': no such experiment",
    ),
    "non-prime p in a sweep": (
        lambda c: c["experiments"]["vary_p"]["sweep"].update(p=[17, 21]),
        "experiments.vary_p hidden=64 p=21: p = 21: expected a prime",
    ),
    "misspelt key": (
        lambda c: c["experiments"]["vary_p"].update(lr_rate=0.1),
        "experiments.vary_p.lr_rate: unknown key; did you mean lr?",
    ),
    "wrong type": (lambda c: c["defaults"].update(hidden="big"), "defaults.hidden = 'big': expected an integer >= 1"),
    "negative size": (lambda c: c["llc"].update(num_draws=-5), "llc.num_draws = -5: expected an integer >= 1"),
    "empty sweep list": (
        lambda c: c["experiments"]["seeds"]["sweep"].update(seed=[]),
        "experiments.seeds.sweep.seed = []: expected a non-empty list",
    ),
    "unknown llc preset": (lambda c: c["llc"].update(preset="fast"), "llc.preset = 'fast': expected one of"),
    "unknown key in an experiment's llc block": (
        lambda c: c["experiments"]["vary_lr_wd"].update(llc={"step": 1e-3}),
        "experiments.vary_lr_wd.llc.step: unknown key; did you mean",
    ),
    "a setting of another sampler": (
        lambda c: c["llc"].update(diffusion_factor=0.1),
        "diffusion_factor = 0.1: a setting of sampler sgnht, not of sgld",
    ),
    "results path that could reach a shell": (lambda c: c.update(results="out;rm -rf x"), "results = 'out;rm -rf x'"),
    "experiments left out": (lambda c: c.pop("experiments"), "experiments: required key missing"),
}


def dry_run(tmp_path, configfile):
    result = snakemake("-n", "--configfile", configfile, cwd=tmp_path, check=False)
    return result, (result.stdout + result.stderr).strip().splitlines()


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_mistake_ends_in_a_few_lines_naming_the_key(mistake, tmp_path):
    edit, message = MISTAKES[mistake]
    result, lines = dry_run(tmp_path, write_config(tmp_path, changed(edit)))
    assert result.returncode != 0
    assert len(lines) <= MAX_LINES, "\n".join(lines)
    assert any(message in line for line in lines), "\n".join(lines)
    assert not (tmp_path / "results").exists()


def test_yaml_that_does_not_parse_is_refused_in_a_few_lines(tmp_path):
    (tmp_path / "broken.yaml").write_text("experiments: {baseline: [1\n")
    result, lines = dry_run(tmp_path, tmp_path / "broken.yaml")
    assert result.returncode != 0 and len(lines) <= MAX_LINES
    assert any("not valid JSON or YAML" in line for line in lines)


@pytest.mark.parametrize("section", ["sampler_sensitivity", "figures.fig9", "figures", "llc", "hessian", "defaults"])
def test_sections_with_defaults_may_be_left_out(section, tmp_path):
    def drop(config):
        *parents, last = section.split(".")
        node = config
        for key in parents:
            node = node[key]
        del node[last]

    result, lines = dry_run(tmp_path, write_config(tmp_path, changed(drop)))
    assert result.returncode == 0, "\n".join(lines[-20:])


def test_a_figure_can_be_switched_off(tmp_path):
    config = changed(lambda c: c["figures"].update(fig9=False))
    result = snakemake("-n", "--configfile", write_config(tmp_path, config), cwd=tmp_path)
    assert "fig9" not in result.stdout and "fig1a.png" in result.stdout
