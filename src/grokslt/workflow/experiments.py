"""Named experiments of the workflow config, expanded into training runs with readable ids.

An experiment is the config's `defaults`, overridden by its own keys, times the Cartesian product of
its `sweep` lists. Runs that two experiments share (same settings) are trained once. In the config,
the three early-stop settings are one key, `early_stop: {threshold, patience}` or `false`.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from grokslt.settings import check_fields
from grokslt.training.train import TrainConfig

TRAIN_KEYS = [f.name for f in dataclasses.fields(TrainConfig) if not f.name.startswith("early_stop")]
BASELINE = TrainConfig()
# the settings a run id always names, and how each other setting shows once it is off the baseline
ID_NAMED = ("p", "hidden", "optimizer", "lr", "weight_decay", "batch_size", "seed")
ID_SUFFIXES = {
    "momentum": lambda c: f"mom{c.momentum:g}",
    "train_frac": lambda c: f"tf{c.train_frac:g}",
    "max_steps": lambda c: f"T{c.max_steps}",
    "eval_every": lambda c: f"ev{c.eval_every}",
    "split": lambda c: c.split,
    "task": lambda c: c.task,
    "dense_until": lambda c: f"dense{c.dense_until}x{c.dense_every}",
}


def train_config(settings: dict, where: str) -> TrainConfig:
    """TrainConfig from one run's settings; `early_stop` is {threshold, patience} or false."""
    unknown = sorted(set(settings) - set(TRAIN_KEYS) - {"early_stop"})
    if unknown:
        raise ValueError(
            f"{where}: unknown training settings {unknown}; expected some of {TRAIN_KEYS + ['early_stop']}"
        )
    kwargs = {key: settings[key] for key in TRAIN_KEYS if key in settings}
    stop = settings.get("early_stop", {})
    if stop is False or stop is None:
        kwargs["early_stop"] = False
    else:
        kwargs["early_stop_threshold"] = stop.get("threshold", BASELINE.early_stop_threshold)
        kwargs["early_stop_patience"] = stop.get("patience", BASELINE.early_stop_patience)
    config = TrainConfig(**kwargs)
    try:
        check_fields(config)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    return config


def number(x: float) -> str:
    """1e-04, 2.5e-03, 0: short and unambiguous in a file name."""
    return "0" if x == 0 else np.format_float_scientific(x, trim="-", exp_digits=2)


def off_baseline(config: TrainConfig, key: str) -> bool:
    if key == "dense_until":  # the dense schedule's step matters only when there is one
        return (config.dense_until, config.dense_every if config.dense_until else None) != (
            BASELINE.dense_until,
            BASELINE.dense_every if BASELINE.dense_until else None,
        )
    return getattr(config, key) != getattr(BASELINE, key)


def run_id(config: TrainConfig) -> str:
    """p53_K1024_adam_lr1e-04_wd1e-05_bs128_s0, plus a suffix for each setting off the paper's baseline."""
    name = (
        f"p{config.p}_K{config.hidden}_{config.optimizer}_lr{number(config.lr)}_wd{number(config.weight_decay)}"
        f"_bs{config.batch_size}_s{config.seed}"
    )
    for key, suffix in ID_SUFFIXES.items():
        if off_baseline(config, key):
            name += f"_{suffix(config)}"
    stop = (config.early_stop_threshold, config.early_stop_patience)
    if not config.early_stop:
        name += "_noes"
    elif stop != (BASELINE.early_stop_threshold, BASELINE.early_stop_patience):
        name += f"_es{config.early_stop_threshold:g}x{config.early_stop_patience}"
    return name


def expand_experiment(name: str, defaults: dict, experiment: dict) -> list[TrainConfig]:
    settings = {**defaults, **{k: v for k, v in experiment.items() if k not in ("sweep", "llc")}}
    sweep = experiment.get("sweep", {})
    keys = list(sweep)
    configs = []
    for values in itertools.product(*(sweep[k] for k in keys)):
        point = dict(zip(keys, values, strict=True))
        where = f"experiments.{name}" + "".join(f" {k}={v}" for k, v in point.items())
        configs.append(train_config({**settings, **point}, where))
    return configs


def expand_experiments(config: dict) -> tuple[dict[str, TrainConfig], dict[str, list[str]]]:
    """({run id: TrainConfig}, {experiment: [run ids in sweep order]})."""
    runs: dict[str, TrainConfig] = {}
    membership: dict[str, list[str]] = {}
    for name, experiment in config["experiments"].items():
        membership[name] = []
        for train in expand_experiment(name, config.get("defaults", {}), experiment or {}):
            key = run_id(train)
            if key in runs and runs[key] != train:
                raise ValueError(f"experiments.{name}: run id {key} names two different settings")
            runs[key] = train
            if key not in membership[name]:
                membership[name].append(key)
    return runs, membership


def check_references(config: dict, membership: dict[str, list[str]]) -> None:
    """Every experiment a figure (by its settings or their defaults) or the sensitivity study names
    must exist and hold runs."""
    from grokslt.figures import FIGURES

    wanted = {
        "sampler_sensitivity.experiment": (config["sampler_sensitivity"]["experiment"], ""),
        "calibration.experiment": (config["calibration"]["experiment"], ""),
    }
    wanted.update(
        {f"certified.experiments[{i}]": (name, "") for i, name in enumerate(config["certified"]["experiments"])}
    )
    if config["figures"].get("estimator_accuracy", {}) is not False:
        wanted["estimator_accuracy.experiment"] = (config["estimator_accuracy"]["experiment"], "")
    for name, figure in FIGURES.items():
        section = config["figures"].get(name, {})
        if section is False:
            continue
        for key, value in {**figure.settings, **section}.items():
            default = "" if key in section else " (the default)"
            if key.endswith("experiment") and value is not None:
                wanted[f"figures.{name}.{key}"] = (value, default)
            elif key.endswith("experiments"):
                wanted.update({f"figures.{name}.{key}": (v, default) for v in value})
    for where, (name, default) in wanted.items():
        if not membership.get(name):
            figure = where.split(".")[1] if where.startswith("figures.") else None
            hint = f", or set figures.{figure}: false" if figure else ""
            raise ValueError(
                f"{where} = {name!r}{default}: no such experiment with runs; expected one of {sorted(membership)}{hint}"
            )


LLC_JOB_KEYS = ("chunk_size", "stack")


def experiment_llc(config: dict, experiment: str) -> dict:
    """The sampler keys of an experiment's LLC jobs: the global `llc:`, updated by its own `llc:`, checked."""
    from grokslt.estimation.llc import sampler_settings
    from grokslt.estimation.samplers import SamplerSettings

    block = {**config["llc"], **(config["experiments"][experiment] or {}).get("llc", {})}
    block = {key: value for key, value in block.items() if key not in LLC_JOB_KEYS}
    overrides = {key: value for key, value in block.items() if key not in ("preset", "backend", "seed")}
    try:
        # a calibrated preset is known only once the calibration has run: check the overrides alone
        base = SamplerSettings() if block["preset"] == "calibrated" else block["preset"]
        settings = sampler_settings(base, **overrides)
        if block["backend"] == "devinterp":
            from grokslt.estimation.devinterp_backend import check_supported

            check_supported(settings)
    except ValueError as error:
        raise ValueError(f"experiments.{experiment}.llc (with the global llc): {error}") from None
    return block


def run_llc(config: dict, membership: dict[str, list[str]]) -> dict[str, dict]:
    """{run: its sampler keys}; a run shared by experiments whose sampler keys differ is refused."""
    chosen, owner = {}, {}
    for experiment, runs in membership.items():
        block = experiment_llc(config, experiment)
        for run in runs:
            if run in chosen and chosen[run] != block:
                raise ValueError(
                    f"experiments.{owner[run]} and experiments.{experiment} share run {run} but not their llc "
                    f"settings ({chosen[run]} vs {block}); give them the same llc block or runs that differ"
                )
            chosen.setdefault(run, block)
            owner.setdefault(run, experiment)
    return chosen


def dataset_id(config: TrainConfig) -> str:
    """The name of a run's dataset file: every setting that defines the split and its labels."""
    task = "" if config.task == BASELINE.task else f"_{config.task}"
    return f"p{config.p}_tf{config.train_frac:g}_s{config.seed}_{config.split}{task}"
