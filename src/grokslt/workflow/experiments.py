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
from grokslt.workflow.studies import STUDIES, calibration_needed

TRAIN_KEYS = [f.name for f in dataclasses.fields(TrainConfig) if not f.name.startswith("early_stop")]
BASELINE = TrainConfig()
# how each setting a run id does not always name shows once it is off the baseline
ID_SUFFIXES = {
    "momentum": lambda c: f"mom{c.momentum:g}",
    "train_frac": lambda c: f"tf{c.train_frac:g}",
    "max_steps": lambda c: f"T{c.max_steps}",
    "eval_every": lambda c: f"ev{c.eval_every}",
    "split": lambda c: c.split,
    "task": lambda c: c.task,
    "dense_until": lambda c: f"dense{c.dense_until}x{c.dense_every}",
    "model": lambda c: c.model,
    "loss": lambda c: {"cross_entropy": "ce", "centred_mse": "mse"}[c.loss],
    "embed": lambda c: f"e{c.embed}",
    "activation": lambda c: c.activation,
    "heads": lambda c: f"h{c.heads}",
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
    """The runs of one experiment; a ValueError with a line for each sweep point whose settings are wrong."""
    settings = {**defaults, **{k: v for k, v in experiment.items() if k not in ("sweep", "llc")}}
    sweep = experiment.get("sweep", {})
    keys = list(sweep)
    configs, errors = [], {}  # {what is wrong: the first sweep point where it is}
    for values in itertools.product(*(sweep[k] for k in keys)):
        point = dict(zip(keys, values, strict=True))
        where = f"experiments.{name}" + "".join(f" {k}={v}" for k, v in point.items())
        try:
            configs.append(train_config({**settings, **point}, where))
        except ValueError as error:
            errors.setdefault(str(error).removeprefix(f"{where}: "), str(error))
    if errors:
        raise ValueError("\n".join(errors.values()))
    return configs


def expand_experiments(config: dict) -> tuple[dict[str, TrainConfig], dict[str, list[str]]]:
    """({run id: TrainConfig}, {experiment: [run ids in sweep order]}); a ValueError with a line for each
    mistake of every experiment."""
    runs: dict[str, TrainConfig] = {}
    membership: dict[str, list[str]] = {}
    errors = []
    for name, experiment in config["experiments"].items():
        membership[name] = []
        try:
            trains = expand_experiment(name, config.get("defaults", {}), experiment or {})
        except ValueError as error:
            errors.append(str(error))
            continue
        for train in trains:
            key = run_id(train)
            if key in runs and runs[key] != train:
                errors.append(f"experiments.{name}: run id {key} names two different settings")
                continue
            runs[key] = train
            if key not in membership[name]:
                membership[name].append(key)
    if errors:
        raise ValueError("\n".join(errors))
    return runs, membership


def _given(config: dict | None, *path: str) -> bool:
    """Whether the config as written sets this key."""
    node = config
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def check_references(config: dict, membership: dict[str, list[str]], given: dict | None = None) -> list[str]:
    """Every experiment that a figure, a study or `certified` names must exist and hold runs.

    `given` is the config as written (default: `config` itself). An experiment named there that does not
    exist is a mistake: a ValueError with a line for each. One named by default only leaves out what
    needs it, so that a config of one experiment runs: a figure (set to false in `config`), the band of
    fig2 (null), a study (its experiment null, and the figure that reads it), the experiments of a
    per-experiment figure that are absent. Returns a line for each thing left out.
    """
    from grokslt.figures import FIGURES

    given = config if given is None else given
    known = sorted(name for name, runs in membership.items() if runs)
    errors, skipped = [], []

    def absent(where: str, name) -> bool:
        """Whether the named experiment is absent; a mistake where the config sets the key."""
        if name is None or membership.get(name):
            return False
        if _given(given, *where.split(".")):
            figure = where.split(".")[1] if where.startswith("figures.") else None
            hint = f", or set figures.{figure}: false" if figure else f", or set {where}: null (not run)"
            errors.append(f"{where} = {name!r}: no such experiment with runs; expected one of {known}{hint}")
        return True

    lists = [("certified", "experiments"), ("refined", "experiments")]
    lists += [(name, key) for name, study in STUDIES.items() if study.per_run for key in study.experiment_keys]
    for section, key in lists:
        for i, name in enumerate(config[section][key]):
            if not membership.get(name):
                errors.append(f"{section}.{key}[{i}] = {name!r}: no such experiment with runs; expected one of {known}")
    not_run = {}  # study: why it does not run
    for study in (name for name, study in STUDIES.items() if not study.per_run):
        name = config[study]["experiment"]
        if name is None:
            not_run[study] = f"{study}.experiment is null"
        elif absent(f"{study}.experiment", name) and not _given(given, study, "experiment"):
            not_run[study] = f"{study}.experiment {name!r} (the default) is not in this config"
            config[study]["experiment"] = None
            if study == "sampler_sensitivity":  # (claims.csv reads it: say so once)
                skipped.append(f"{study}: not run, {not_run[study]} (claims.csv goes without it)")
    need = calibration_needed(config)
    if "calibration" in not_run and need:
        errors.append(f"calibration: {not_run['calibration']}, but {need}; expected one of {known}")
    for name, figure in FIGURES.items():
        section = config["figures"].get(name, {})
        if section is False:
            continue
        section = config["figures"][name] = {**figure.settings, **(section or {})}
        reasons, notes = [], []  # why it is not drawn; what it is drawn without
        for key in figure.settings:
            where = f"figures.{name}.{key}"
            if key.endswith("experiment") and absent(where, section[key]) and not _given(given, *where.split(".")):
                if key == "experiment":
                    reasons.append(f"its experiment {section[key]!r} (the default) is not in this config")
                else:
                    notes.append(f"{where}: {section[key]!r} (the default) is not in this config; drawn without it")
                    section[key] = None
            elif key.endswith("experiments"):
                missing = [v for v in section[key] if absent(where, v)]
                if missing and not _given(given, *where.split(".")):
                    kept = [v for v in section[key] if v not in missing]
                    words = f"{', '.join(map(repr, missing))} (the default) not in this config"
                    if figure.per_experiment and kept:
                        notes.append(f"{where}: {words}; drawn for {', '.join(kept)}")
                        section[key] = kept
                    else:
                        reasons.append(f"its experiments {words}")
        reasons += [not_run[name] for name, study in STUDIES.items() if study.table in figure.reads and name in not_run]
        if figure.per_experiment and not section["experiments"] and not reasons:  # opt-in: none listed
            config["figures"][name] = False
        elif reasons:
            config["figures"][name] = False
            skipped.append(f"figures.{name}: not drawn, {'; '.join(reasons)}")
        else:
            skipped += notes
    if errors:
        raise ValueError("\n".join(dict.fromkeys(errors)))
    return skipped


LLC_JOB_KEYS = ("chunk_size", "stack")
LLC_CHOICE_KEYS = ("preset", "backend", "seed", "every")  # the rest of an llc block are sampler settings


def experiment_llc(config: dict, experiment: str) -> dict:
    """The sampler keys of an experiment's LLC jobs: the global `llc:`, updated by its own `llc:`, checked."""
    from grokslt.estimation.llc import sampler_settings
    from grokslt.estimation.samplers import SamplerSettings

    block = {**config["llc"], **(config["experiments"][experiment] or {}).get("llc", {})}
    block = {key: value for key, value in block.items() if key not in LLC_JOB_KEYS}
    overrides = {key: value for key, value in block.items() if key not in LLC_CHOICE_KEYS}
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
    """{run: its sampler keys}; a ValueError with a line for each experiment whose sampler keys are wrong and
    each run shared by experiments whose sampler keys differ."""
    chosen, owner, errors = {}, {}, []
    for experiment, runs in membership.items():
        try:
            block = experiment_llc(config, experiment)
        except ValueError as error:
            if (config["experiments"][experiment] or {}).get("llc"):
                errors.append(str(error))
            else:  # the global llc's mistake, once
                prefix = f"experiments.{experiment}.llc (with the global llc): "
                errors.append("llc: " + str(error).removeprefix(prefix))
            continue
        for run in runs:
            if run in chosen and chosen[run] != block:
                errors.append(
                    f"experiments.{owner[run]} and experiments.{experiment} share run {run} but not their llc "
                    f"settings ({chosen[run]} vs {block}); give them the same llc block or runs that differ"
                )
                continue
            chosen.setdefault(run, block)
            owner.setdefault(run, experiment)
    if errors:
        raise ValueError("\n".join(dict.fromkeys(errors)))
    return chosen


def dataset_id(config: TrainConfig) -> str:
    """The name of a run's dataset file: every setting that defines the split and its labels."""
    task = "" if config.task == BASELINE.task else f"_{config.task}"
    return f"p{config.p}_tf{config.train_frac:g}_s{config.seed}_{config.split}{task}"
