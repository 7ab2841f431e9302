"""Named experiments of the workflow config, expanded into training runs with readable ids.

An experiment is the config's `defaults`, overridden by its own keys, times the Cartesian product of
its `sweep` lists. Runs that two experiments share (same settings) are trained once.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from grokslt.train import TrainConfig

TRAIN_KEYS = [f.name for f in dataclasses.fields(TrainConfig) if not f.name.startswith("early_stop")]
BASELINE = TrainConfig()


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
        config.validate()
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    return config


def number(x: float) -> str:
    """1e-04, 2.5e-03, 0: short and unambiguous in a file name."""
    return "0" if x == 0 else np.format_float_scientific(x, trim="-", exp_digits=2)


def run_id(config: TrainConfig) -> str:
    """p53_K1024_adam_lr1e-04_wd1e-05_bs128_s0, plus a suffix for each setting off the paper's baseline."""
    name = (
        f"p{config.p}_K{config.hidden}_{config.optimizer}_lr{number(config.lr)}_wd{number(config.weight_decay)}"
        f"_bs{config.batch_size}_s{config.seed}"
    )
    extras = [
        ("momentum", f"mom{config.momentum:g}"),
        ("train_frac", f"tf{config.train_frac:g}"),
        ("max_steps", f"T{config.max_steps}"),
        ("eval_every", f"ev{config.eval_every}"),
        ("split", config.split),
    ]
    for key, suffix in extras:
        if getattr(config, key) != getattr(BASELINE, key):
            name += f"_{suffix}"
    if not config.early_stop:
        name += "_noes"
    elif (config.early_stop_threshold, config.early_stop_patience) != (0.99, 10):
        name += f"_es{config.early_stop_threshold:g}x{config.early_stop_patience}"
    return name


def expand_experiment(name: str, defaults: dict, experiment: dict) -> list[TrainConfig]:
    settings = {**defaults, **{k: v for k, v in experiment.items() if k != "sweep"}}
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
    """Every experiment a figure or the sensitivity study names must exist and hold runs."""
    wanted = {"sampler_sensitivity.experiment": config["sampler_sensitivity"]["experiment"]}
    for figure, settings in config["figures"].items():
        for key, value in settings.items() if isinstance(settings, dict) else []:
            if key.endswith("experiment"):
                wanted[f"figures.{figure}.{key}"] = value
            elif key.endswith("experiments"):
                wanted.update({f"figures.{figure}.{key}": v for v in value})
    for where, name in wanted.items():
        if not membership.get(name):
            raise ValueError(f"{where} = {name!r}: no such experiment with runs; have {sorted(membership)}")
