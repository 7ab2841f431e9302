"""The studies: each reads the runs of the experiments its config section names and writes a table that a figure
or the claims may read, once (`sensitivity/sensitivity.csv`) or once per run (`runs/RUN/coefficient.csv`).

STUDIES is the one list of them. An entry holds everything the workflow derives: its config section (keys,
defaults and the experiments it reads), the `grokslt` command and flags its rule runs, its output path, whether a
config runs it, its CPU cost, and the meanings of its table's columns. The config schema (`workflow.config`), its
check (`experiments.check_references`), the rule (`workflow/rules/estimation.smk`, one per entry), the figure
inputs and claims inputs (`commands.Layout`), the planner (`plan.study_seconds`) and the column reference
(`workflow.columns`) loop over it; adding a study is its module, its command in `cli.py` and one entry here.
"""

# one column's meaning per line, however long:
# ruff: noqa: E501
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grokslt.estimation.llc import PRESETS, sampler_settings
from grokslt.estimation.samplers import SamplerSettings
from grokslt.settings import json_schema, mapping_to_arguments
from grokslt.workflow.sections import llc_properties, numbers, one_checkpoint, section


def floats(values) -> str:
    """A grid of numbers as one flag value: 1,2 -> '1.0,2.0'."""
    return ",".join(map(repr, map(float, values)))


@dataclass(frozen=True)
class Columns:
    """A study's table for `docs/columns.md`: `about` (what a row is), `observe(run, directory, sampler)` writes it
    for a tiny trained run with a tiny sampler and returns its path (or its column names, where the code names
    them in a constant), `meanings` of the columns DESCRIPTIONS does not give; `llc`: an LLC table (the LLC
    tables' meanings, every sampler's statistics and the sampler settings' help apply)."""

    about: str
    observe: Callable[[Path, Path, dict], Path | list[str]]
    meanings: Mapping[str, str] = field(default_factory=dict)
    llc: bool = False


def always(config: dict) -> bool:  # (claims.csv reads the sensitivity grid whether or not its figure is drawn)
    return True


@dataclass(frozen=True)
class Study:
    section: str  # the config section
    about: str  # the section's description in the schema
    keys: Callable[[], dict]  # the section's keys: JSON schema properties with their defaults
    command: str  # `grokslt COMMAND` writes the table
    arguments: Callable[[Any, list[str]], list[str]]  # (commands.Layout, the runs it reads) -> flags before --out
    output: str  # the table under `results`: {run} per run, {experiment} the section's experiment
    table: str  # the figure input its table is (grokslt.figures.READS)
    rule: str  # the workflow's rule (the command's name, unless a figure's target rule has it: sensitivity_grid)
    columns: Columns
    seconds: Callable[[dict, list[str], Any], float]  # (section, its runs, plan.Prices) -> CPU seconds
    runs: Callable[[dict], bool] = always  # whether a checked config runs it (given its experiments)
    reads: str = "first"  # the runs it reads: the first of its experiment, all of them, or "each" (a table per run)
    experiment_keys: tuple[str, ...] = ("experiment",)  # the section's keys that name experiments
    also: Mapping[str, str] = field(default_factory=dict)  # further outputs beside the table, by name
    out_dir: bool = False  # `--out` is the table's directory
    paper_model: bool = False  # its runs must be the quadratic network with the centred MSE

    @property
    def per_run(self) -> bool:
        return self.reads == "each"

    def experiments(self, config: Mapping) -> list[str]:
        """The experiments the section names (none where a one-off study's `experiment` is null)."""
        names = []
        for key in self.experiment_keys:
            value = config[self.section][key]
            names += value if isinstance(value, list) else [value] if value is not None else []
        return list(dict.fromkeys(names))

    def run_ids(self, config: Mapping, membership: Mapping[str, list[str]]) -> list[str]:
        """The runs it reads where a config runs it: its experiment's first, all its experiments' runs, or each."""
        names = self.experiments(config)
        if not names or not self.runs(config):
            return []
        runs = list(dict.fromkeys(run for name in names for run in membership[name]))
        return runs[:1] if self.reads == "first" else runs

    def paths(self, config: Mapping, run: str = "{run}") -> dict[str, str]:
        """Its outputs under `results` by name, the table first (for a run, or with the wildcard {run})."""
        experiment = config[self.section].get("experiment")
        return {name: path.format(run=run, experiment=experiment)
                for name, path in {"table": self.output, **self.also}.items()}  # fmt: skip

    def path(self, config: Mapping, run: str = "{run}") -> str:
        """Its table under `results`."""
        return self.paths(config, run)["table"]


# -- appendix B.2: one checkpoint's LLC over step size x localization -------------------------------------------


def sensitivity_keys() -> dict:
    return {
        **one_checkpoint(),
        "step_sizes": numbers("SGLD step sizes", [1e-4, 5e-4, 1e-3]),
        "localizations": numbers("localizations gamma", [1, 2, 5, 10, 20, 50, 100]),
    }


def sensitivity_arguments(layout, runs: list[str]) -> list[str]:
    section, [run] = layout.config["sampler_sensitivity"], runs
    words = ["--run", layout.run_dir(run), "--step", str(section["step"])]
    words += ["--step-sizes", ",".join(map(repr, section["step_sizes"]))]
    return [*words, "--localizations", ",".join(map(repr, section["localizations"])), *layout.sampler_args(run)]


def sensitivity_seconds(section: dict, runs: list[str], prices) -> float:
    """The grid of step sizes x localizations at the authors' sampler, on one checkpoint."""
    base = sampler_settings("paper_code")
    per = base.num_chains * (base.num_burnin + base.num_draws) * prices.chain_step(runs[0])
    return len(section["step_sizes"]) * len(section["localizations"]) * per


def observe_sensitivity(run: Path, directory: Path, sampler: dict) -> Path:
    from grokslt.estimation.checkpoint_llc import write_sensitivity_table

    write_sensitivity_table(run, directory / "sensitivity.csv", "final", [1e-4], [5.0], overrides=sampler)
    return directory / "sensitivity.csv"


# -- the sampler calibration (grokslt.estimation.calibration) ---------------------------------------------------


def calibration_keys() -> dict:
    return {
        **one_checkpoint(),
        "step": {
            "oneOf": [{"enum": ["transitions", "final"]}, {"type": "integer", "minimum": 1}],
            "default": "transitions",
            "description": "transitions (memorisation, val 50%, val 95%, last), final or a step",
        },
        "preset": {"enum": sorted(PRESETS), "default": "paper_code", "description": "the other settings"},
        "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "chains' seed"},
        "step_sizes": numbers("step sizes (include halvings)", [1e-6, 2e-6, 1e-5, 2e-5, 1e-4, 2e-4]),
        "nbetas": numbers("inverse temperatures nbeta", [160.0, 1e3, 1e4, 1e5]),
        "localizations": numbers("localizations gamma", [5.0, 100.0, 1e3, 1e4]),
        "num_draws": {"type": "integer", "minimum": 1, "default": 3000, "description": "draws per chain"},
        "num_chains": {"type": "integer", "minimum": 2, "default": 4, "description": "chains"},
        "num_burnin": {"type": "integer", "minimum": 0, "default": 500, "description": "burn-in steps"},
        "sampler": json_schema(SamplerSettings)["sampler"] | {"default": "sgld"},
    }


def calibration_arguments(layout, runs: list[str]) -> list[str]:
    section, [run] = layout.config["calibration"], runs
    words = ["--run", layout.run_dir(run), "--step", str(section["step"]), "--preset", section["preset"]]
    words += ["--seed", str(section["seed"])]
    words += ["--step-sizes", floats(section["step_sizes"]), "--nbetas", floats(section["nbetas"])]
    words += ["--localizations", floats(section["localizations"])]
    keys = ("sampler", "num_chains", "num_burnin", "num_draws")
    overrides = {key: section[key] for key in keys if key in section}
    # Only an LLC trajectory at `preset: calibrated` needs a choice; the certified estimates are empty without one.
    needed = any(block["preset"] == "calibrated" for block in layout.run_llc.values())
    return [*words, *mapping_to_arguments(SamplerSettings, overrides), *([] if needed else ["--report-only"])]


def calibration_seconds(section: dict, runs: list[str], prices) -> float:
    """The grid of step sizes x nbetas x localizations, at each checkpoint it calibrates on (at most 4
    transitions)."""
    grid = len(section["step_sizes"]) * len(section["nbetas"]) * len(section["localizations"])
    steps = section["num_chains"] * (section["num_burnin"] + section["num_draws"])
    checkpoints = {"final": 1, "transitions": 4}.get(str(section["step"]), 1)
    return checkpoints * grid * steps * prices.chain_step(runs[0])


def calibration_needed(config: dict) -> str:
    """Why the calibration must run whatever the figures ('' when nothing needs it)."""
    if config["certified"]["experiments"] and config["certified"]["preset"] == "calibrated":
        return "certified.experiments needs it (certified.preset: calibrated)"
    blocks = [config["llc"], *((experiment or {}).get("llc", {}) for experiment in config["experiments"].values())]
    return "llc preset calibrated needs it" if any(b.get("preset") == "calibrated" for b in blocks) else ""


def calibration_runs(config: dict) -> bool:
    return config["figures"].get("calibration") is not False or bool(calibration_needed(config))


def observe_calibration(run: Path, directory: Path, sampler: dict) -> Path:
    from grokslt.estimation.calibration import calibrate

    calibrate(run, directory, "final", SamplerSettings(**sampler), [1e-4], [10.0], [5.0], report_only=True)
    return directory / "calibration.csv"


# -- each LLC method against an exact reference on small networks (grokslt.analysis.accuracy) -------------------

DEFAULT_METHODS = {
    "sgld_paper_code": {"preset": "paper_code"},
    "sgld_long": {"preset": "paper_code", "num_draws": 5000},
    "rmsprop_sgld": {"preset": "paper_code", "sampler": "rmsprop_sgld", "step_size": 5e-5},
    "sgnht": {"preset": "paper_code", "sampler": "sgnht", "step_size": 1e-4},
}


def accuracy_keys() -> dict:
    return {
        "experiment": {
            "type": ["string", "null"],
            "default": "accuracy_nets",
            "description": "small networks: their final and initial points; null: not run",
        },  # fmt: skip
        "nbetas": numbers("inverse temperatures nbeta", [10.0, 30.0, 100.0, 300.0]),
        "localization": {"type": "number", "minimum": 0, "default": 5.0, "description": "gamma"},
        "repeats": {"type": "integer", "minimum": 2, "default": 3, "description": "seeds per method"},
        "reference": section(
            {
                "chains": {"type": "integer", "minimum": 2, "default": 16, "description": "MALA chains"},
                "burnin": {"type": "integer", "minimum": 0, "default": 2000, "description": "burn-in"},
                "draws": {"type": "integer", "minimum": 100, "default": 20000, "description": "draws"},
            },
            "the exact reference: long float64 MALA chains",
        ),
        "methods": {
            "type": "object",
            "minProperties": 1,
            "description": "named methods: a preset and sampler settings (nbeta, localization set above)",
            "additionalProperties": section(
                {k: v for k, v in llc_properties(False).items() if k not in ("backend", "seed", "every")},
                "a method",
            ),
            "default": DEFAULT_METHODS,
        },
    }


def accuracy_arguments(layout, runs: list[str]) -> list[str]:
    section = layout.config["estimator_accuracy"]
    reference = section["reference"]
    words = ["--runs", *map(layout.run_dir, runs), "--nbetas", floats(section["nbetas"])]
    words += ["--localization", repr(section["localization"])]
    words += ["--methods", json.dumps(section["methods"], sort_keys=True), "--repeats", str(section["repeats"])]
    words += ["--reference-chains", str(reference["chains"]), "--reference-burnin", str(reference["burnin"])]
    return [*words, "--reference-draws", str(reference["draws"])]


def accuracy_seconds(section: dict, runs: list[str], prices) -> float:
    """Each run's final and initial point: the exact reference and every method's repeats at every nbeta."""
    reference = section["reference"]
    per_point = reference["chains"] * (reference["burnin"] + reference["draws"]) + section["repeats"] * sum(
        3 * (m.get("num_burnin", 100) + m.get("num_draws", 500)) for m in section["methods"].values()
    )
    return 2 * len(runs) * len(section["nbetas"]) * per_point * prices.chain_step(runs[0]) * 4  # float64, tuning


def accuracy_runs(config: dict) -> bool:
    return config["figures"].get("estimator_accuracy", {}) is not False


def observe_accuracy(run: Path, directory: Path, sampler: dict) -> list[str]:
    from grokslt.analysis.accuracy import COLUMNS

    return list(COLUMNS)


# -- the learning coefficient without a sampler, beside the estimands (grokslt.analysis.coefficient) ------------


def coefficient_keys() -> dict:
    return {
        "experiments": {"type": "array", "items": {"type": "string"}, "default": [],
                        "description": "experiments whose runs get it at every `every`-th checkpoint and the "
                        "transitions"},
        "finals": {"type": "array", "items": {"type": "string"}, "default": [],
                   "description": "experiments whose runs get it at their last checkpoint only"},
        "every": {"type": "integer", "minimum": 1, "default": 20,
                  "description": "every k-th checkpoint, plus the last and those at the transitions"},
        "probes": {"type": "integer", "minimum": 2, "default": 4,
                   "description": "Rademacher probes of the Lanczos quadrature (a standard error needs two)"},
        "lanczos_steps": {"type": "integer", "minimum": 1, "default": 100, "description": "Lanczos steps per probe"},
        "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "probe seed"},
    }  # fmt: skip


def coefficient_arguments(layout, runs: list[str]) -> list[str]:
    """A run of `experiments` at every `every`-th checkpoint and the transitions, one only of `finals` at its last."""
    section, [run] = layout.config["coefficient"], runs
    trajectory = run in layout.experiment_runs(section["experiments"])
    steps = ["--every", str(section["every"])] if trajectory else ["--steps", "final"]
    words = ["--run", layout.run_dir(run), *steps, "--probes", str(section["probes"])]
    return [*words, "--lanczos-steps", str(section["lanczos_steps"]), "--seed", str(section["seed"])]


def coefficient_seconds(section: dict, runs: list[str], prices) -> float:
    """Per checkpoint, `probes` Lanczos runs of `lanczos_steps` Gauss-Newton-vector products, each about two
    full-batch passes (a forward-mode and a reverse-mode one); the dense V block and trace beside them are small."""
    trajectory = set(prices.experiment_runs(section["experiments"]))
    return sum(
        (prices.checkpoints(run, section["every"]) if run in trajectory else 1)
        * section["probes"]
        * section["lanczos_steps"]
        * 2
        * prices.full_batch(run)
        for run in runs
    )


def observe_coefficient(run: Path, directory: Path, sampler: dict) -> Path:
    from grokslt.analysis.coefficient import write_coefficient_table

    write_coefficient_table(run, directory / "coefficient.csv", steps="final", probes=2, lanczos_steps=4)
    return directory / "coefficient.csv"


COEFFICIENT_MEANINGS = {
    "step": "the checkpoint's step (optimizer steps)",
    "train_loss": "L_n(w*): the centred training loss at the checkpoint itself",
    "loss_fraction": "train_loss / the zero function's loss: at or below 1e-3 the checkpoint interpolates",
    "interpolating": "True where loss_fraction <= 1e-3: the data-rank rule lambda = r / 2 may apply",
    "gn_largest": "the largest eigenvalue of the Gauss-Newton matrix G = J^T P J / n (its Lanczos nodes' largest)",
    "rank_threshold": "the rank's threshold: 1e-5 x gn_largest",
    "data_rank": "r: eigenvalues of G above rank_threshold, counted by stochastic Lanczos quadrature (the rank of the centred data Jacobian P J)",
    "data_rank_stderr": "standard error of data_rank over the probes",
    "rank_gap": "True where the count moves by at most 3 standard errors when the threshold moves a decade either way (the threshold sits in a spectral gap: the rank is numerically defined)",
    "rank_bound": "min(d, p (n - 1)): the most data_rank can be (the centring leaves n - 1 directions per output)",
    "half_rank": "r / 2, the learning coefficient at an interpolating checkpoint whose rank is defined (interpolating and rank_gap); blank elsewhere: the rule does not apply",
    "half_rank_stderr": "standard error of half_rank",
    "lambda_q_local": "the Laplace estimand lambda_Q = 1/2 sum_i nbeta h_i / (nbeta h_i + gamma) over G's spectrum at the local preset (nbeta = gamma = 1e4)",
    "lambda_q_local_stderr": "standard error of lambda_q_local over the probes",
    "lambda_q_authors": "lambda_Q at the authors' sampler (nbeta = B / ln B of the run's batch, their localization)",
    "lambda_q_authors_stderr": "standard error of lambda_q_authors over the probes",
    "half_trace": "tr(H) / 2, the exact Hessian trace halved: what the local preset's LLC measures where nbeta h << gamma",
    "K_eff": "effective atoms: the fewest atoms v_j (x) w_j w_j^T whose norms ||v_j|| ||w_j||^2 hold 99% of the total",
    "v_reach_local": "the V-only estimand at the local preset / v_coefficient: the share of a known coefficient that preset reaches",
    "half_d": "the trivial null d / 2 = 3pK / 2",
    "probes": "Rademacher probes of the Lanczos quadrature",
    "lanczos_steps": "Lanczos steps per probe",
}  # fmt: skip


STUDIES: dict[str, Study] = {
    study.section: study
    for study in [
        Study(
            "sampler_sensitivity",
            "appendix B.2: one checkpoint's LLC over step size x localization",
            sensitivity_keys,
            "sensitivity",
            sensitivity_arguments,
            "sensitivity/sensitivity.csv",
            "sensitivity",
            "sensitivity_grid",
            Columns(
                "Appendix B.2: one row per SGLD step size x localization at one checkpoint (`grokslt sensitivity`).",
                observe_sensitivity,
                llc=True,
            ),
            sensitivity_seconds,
        ),
        Study(
            "calibration",
            "sampler calibration at one checkpoint (grokslt.estimation.calibration); llc.preset: calibrated uses its "
            "choice",
            calibration_keys,
            "calibrate",
            calibration_arguments,
            "calibration/{experiment}/calibration.csv",
            "calibration",
            "calibrate",
            Columns(
                "One row per grid point of step size x nbeta x localization at one checkpoint (`grokslt calibrate`); "
                "calibration.json beside it holds the choice.",
                observe_calibration,
                llc=True,
            ),
            calibration_seconds,
            calibration_runs,
            also={"choice": "calibration/{experiment}/calibration.json"},
            out_dir=True,
        ),
        Study(
            "estimator_accuracy",
            "each LLC method against an exact reference on small networks (grokslt.analysis.accuracy)",
            accuracy_keys,
            "accuracy",
            accuracy_arguments,
            "accuracy/accuracy.csv",
            "accuracy",
            "accuracy",
            Columns(
                "Each LLC method against the exact MALA estimand and theory on small networks (`grokslt accuracy`): "
                "one row per point x nbeta x method, then the bias-reduced rows (nbeta inf).",
                observe_accuracy,
                {
                    "nbeta": "inverse temperature n beta of the estimand (inf on the bias-reduced rows)",
                    "localization": "localization gamma of the estimand",
                    "mcse": "mean Monte Carlo standard error of the method's estimates",
                    "seconds": "mean wall-clock time of one of the method's estimates (s)",
                },
            ),
            accuracy_seconds,
            accuracy_runs,
            reads="all",
            paper_model=True,
        ),
        Study(
            "coefficient",
            "the learning coefficient without a sampler (r / 2 where a checkpoint interpolates) beside lambda_Q, "
            "tr(H) / 2, V's coefficient, K_eff (3p - 1) / 2 and d / 2, per checkpoint (grokslt.analysis.coefficient)",
            coefficient_keys,
            "coefficient",
            coefficient_arguments,
            "runs/{run}/coefficient.csv",
            "coefficient",
            "coefficient",
            Columns(
                "One row per checkpoint of a run of `coefficient.experiments` (every `coefficient.every`-th and the "
                "transitions) or of `coefficient.finals` (the last), written by `grokslt coefficient`: the data-rank "
                "learning coefficient r / 2 where the rule applies, beside what each estimand measures.",
                observe_coefficient,
                COEFFICIENT_MEANINGS,
            ),
            coefficient_seconds,
            reads="each",
            experiment_keys=("experiments", "finals"),
            paper_model=True,
        ),
    ]
}
