"""Settings defined once: every field of the settings classes reaches the command line, the workflow's
command, the run id and the tables, with nothing listed by hand here."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex

import pytest
from workflow_support import REPO, TINY, load, snakemake, write_config

from grokslt.analysis.hessian import HessianSettings
from grokslt.cli import build_parser
from grokslt.errors import BadInput
from grokslt.estimation.samplers import SamplerSettings
from grokslt.settings import check_fields, fields, flag_name, from_arguments, to_arguments
from grokslt.training.data import DatasetSettings
from grokslt.training.train import TrainConfig
from grokslt.workflow.experiments import dataset_id, run_id


def another_value(f: dataclasses.Field, cls):
    """A valid value of the field other than its default."""
    default = f.default
    if f.metadata["choices"] is not None:
        return next(choice for choice in f.metadata["choices"] if choice != default)
    if isinstance(default, bool):
        return not default
    if f.name == "p":
        return 7
    if f.name == "data":
        return "val"
    if isinstance(default, int):
        high = f.metadata["maximum"]
        return default + 2 if high is None or default + 2 <= high else default - 1
    if isinstance(default, float):
        bound = f.metadata["maximum"] or f.metadata["exclusive_maximum"]
        return default / 2 if bound is not None else default * 2 + 0.5
    if "int" in str(f.type):
        return 3  # an optional integer (None by default)
    return 0.5  # an optional number (None by default) with an exclusive bound in (0, 1) or above 0


@pytest.mark.parametrize("command, cls", [("train", TrainConfig), ("dataset", DatasetSettings)])
def test_every_setting_is_a_flag_and_round_trips(command, cls):
    parser = build_parser()
    changed = cls(**{f.name: another_value(f, cls) for f in fields(cls) if f.name not in ("momentum",)})
    args = parser.parse_args([command, *to_arguments(changed), "--out", "x"])
    assert from_arguments(cls, args) == changed


@pytest.mark.parametrize(
    "cls, command", [(SamplerSettings, "llc"), (HessianSettings, "hessian"), (HessianSettings, "tables")]
)
def test_every_sampler_and_hessian_setting_is_an_override_flag(cls, command):
    options = build_parser()._subparsers._group_actions[0].choices[command]._option_string_actions
    for f in fields(cls):
        assert flag_name(f) in options, f.name


@pytest.mark.parametrize("f", fields(TrainConfig), ids=lambda f: f.name)
def test_every_training_setting_changes_the_run_id(f):
    value = another_value(f, TrainConfig)
    changes = {f.name: value} | ({"dense_until": 200} if f.name == "dense_every" else {})
    changes |= {"optimizer": "sgd"} if f.name == "momentum" else {}
    changes |= {"model": "mlp"} if f.name in ("embed", "activation") else {}
    changes |= {"model": "transformer", "embed": 4 * value} if f.name == "heads" else {}
    changed = dataclasses.replace(TrainConfig(), **changes)
    check_fields(changed)
    if f.name == "dense_every":
        assert run_id(changed) != run_id(dataclasses.replace(TrainConfig(), dense_until=200))
    else:
        assert run_id(changed) != run_id(TrainConfig()), f.name
    assert re.fullmatch(r"[A-Za-z0-9_.+-]+", run_id(changed))


@pytest.mark.parametrize("f", fields(DatasetSettings), ids=lambda f: f.name)
def test_every_dataset_setting_changes_the_dataset_id(f):
    changed = dataclasses.replace(TrainConfig(), **{f.name: another_value(f, DatasetSettings)})
    assert dataset_id(changed) != dataset_id(TrainConfig())


def test_sampler_overrides_given_as_config_keys_parse_back_on_the_llc_command():
    from grokslt.cli import sampler_overrides
    from grokslt.settings import mapping_to_arguments

    for sampler in ("rmsprop_sgld", "sgnht"):
        values = {f.name: another_value(f, SamplerSettings) for f in fields(SamplerSettings)}
        values = {
            k: v for k, v in values.items() if k not in ("sampler", "rmsprop_alpha", "rmsprop_eps", "diffusion_factor")
        }
        own = {"rmsprop_sgld": {"rmsprop_alpha": 0.9, "rmsprop_eps": 0.2}, "sgnht": {"diffusion_factor": 0.02}}[sampler]
        values |= {"sampler": sampler, **own}
        args = build_parser().parse_args(
            ["llc", "--run", "r", "--out", "x", *mapping_to_arguments(SamplerSettings, values)]
        )
        assert sampler_overrides(args) == values


def test_a_setting_of_another_sampler_is_refused():
    with pytest.raises(BadInput, match="rmsprop_alpha = 0.9: a setting of sampler rmsprop_sgld, not of sgld"):
        check_fields(SamplerSettings(rmsprop_alpha=0.9))
    check_fields(SamplerSettings(sampler="rmsprop_sgld", rmsprop_alpha=0.9))


@pytest.mark.slow
def test_every_setting_reaches_the_rules_commands_and_the_tables(tmp_path):
    """A dry run's train commands name every training setting, the dataset's among them (a model family's own
    settings in the commands of that family's runs)."""
    config = load(TINY)
    config["results"] = "out"
    result = snakemake("-n", "-p", "--configfile", write_config(tmp_path, config), cwd=tmp_path)
    prefix = "Shell command: "
    commands = [line[len(prefix) :] for line in result.stdout.splitlines() if line.startswith(prefix + "grokslt ")]
    trains = [shlex.split(c) for c in commands if c.startswith("grokslt train")]
    named = set().union(*trains)
    for f in fields(TrainConfig):
        assert flag_name(f) in named or "--no-" + flag_name(f)[2:] in named, f.name
    assert all("--embed" not in train for train in trains if train[train.index("--model") + 1] == "quadratic")


@pytest.mark.slow
def test_params_csv_holds_every_training_setting(finished_tiny):
    import pandas as pd
    from workflow_support import TINY_RESULTS

    root = finished_tiny.root
    for params in (root / TINY_RESULTS / "runs").glob("*/params.csv"):
        table = pd.read_csv(params)
        record = json.loads((params.parent / "run.json").read_text())["config"]
        for f in fields(TrainConfig):
            cell, given = table[f.name].iloc[0] if f.name in table.columns else "absent", record[f.name]
            assert pd.isna(cell) if given is None else str(cell) == str(given), f.name  # unset: an empty cell
        llc = pd.read_csv(next((params.parent / "llc").glob("*.csv")))
        if len(llc):
            for f in fields(SamplerSettings):
                assert (f.name if f.name != "init_loss" else "init_loss_mode") in llc.columns, f.name


def test_checking_many_runs_resolves_each_class_annotations_once(monkeypatch):
    """config.yaml's 265 runs are checked at every Snakemake start: resolving the text annotations of a class
    for each field checked (13,000 times) made that check take 10-60 s."""
    from grokslt import settings
    from grokslt.workflow.config import check_workflow

    resolved = []
    resolve = settings.typing.get_type_hints
    monkeypatch.setattr(settings.typing, "get_type_hints", lambda cls: resolved.append(cls) or resolve(cls))
    check_workflow(load(REPO / "config.yaml"))
    assert len(resolved) == len(set(resolved))  # (none at all where an earlier test resolved them)
