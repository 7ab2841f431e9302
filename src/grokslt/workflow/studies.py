"""The one-off studies: each reads the runs of one experiment and writes one table that a figure may read.

STUDIES is the one list of them: for each, its config section (whose `experiment` names the runs it reads), the
figure input its table is (`grokslt.figures.READS`), the `grokslt` command its rule runs, whether a config runs
it, and its CPU cost for the planner. The config check (`experiments.check_references`) and the planner
(`plan.study_seconds`, `plan.figure_costs`) loop over it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grokslt.estimation.llc import sampler_settings


def sensitivity_seconds(section: dict, runs: int, chain_step: float) -> float:
    """The grid of step sizes x localizations at the authors' sampler, on one checkpoint."""
    base = sampler_settings("paper_code")
    per = base.num_chains * (base.num_burnin + base.num_draws) * chain_step
    return len(section["step_sizes"]) * len(section["localizations"]) * per


def calibration_seconds(section: dict, runs: int, chain_step: float) -> float:
    """The grid of step sizes x nbetas x localizations, at each checkpoint it calibrates on (at most 4
    transitions)."""
    grid = len(section["step_sizes"]) * len(section["nbetas"]) * len(section["localizations"])
    steps = section["num_chains"] * (section["num_burnin"] + section["num_draws"])
    checkpoints = {"final": 1, "transitions": 4}.get(str(section["step"]), 1)
    return checkpoints * grid * steps * chain_step


def accuracy_seconds(section: dict, runs: int, chain_step: float) -> float:
    """Each run's final and initial point: the exact reference and every method's repeats at every nbeta."""
    reference = section["reference"]
    per_point = reference["chains"] * (reference["burnin"] + reference["draws"]) + section["repeats"] * sum(
        3 * (m.get("num_burnin", 100) + m.get("num_draws", 500)) for m in section["methods"].values()
    )
    return 2 * runs * len(section["nbetas"]) * per_point * chain_step * 4  # float64, tuning


def always(config: dict) -> bool:  # (claims.csv reads the sensitivity grid whether or not its figure is drawn)
    return True


def calibration_needed(config: dict) -> str:
    """Why the calibration must run whatever the figures ('' when nothing needs it)."""
    if config["certified"]["experiments"] and config["certified"]["preset"] == "calibrated":
        return "certified.experiments needs it (certified.preset: calibrated)"
    blocks = [config["llc"], *((experiment or {}).get("llc", {}) for experiment in config["experiments"].values())]
    return "llc preset calibrated needs it" if any(b.get("preset") == "calibrated" for b in blocks) else ""


def calibration_runs(config: dict) -> bool:
    return config["figures"].get("calibration") is not False or bool(calibration_needed(config))


def accuracy_runs(config: dict) -> bool:
    return config["figures"].get("estimator_accuracy", {}) is not False


@dataclass(frozen=True)
class Study:
    section: str  # the config section; its `experiment` names the runs the study reads
    table: str  # the figure input its table is (grokslt.figures.READS)
    command: str  # `grokslt COMMAND` writes the table
    runs: Callable[[dict], bool]  # whether a checked config runs it (its experiment set)
    seconds: Callable[[dict, int, float], float]  # (section, runs of its experiment, s per chain step) -> CPU s


STUDIES: dict[str, Study] = {
    study.section: study
    for study in [
        Study("sampler_sensitivity", "sensitivity", "sensitivity", always, sensitivity_seconds),
        Study("calibration", "calibration", "calibrate", calibration_runs, calibration_seconds),
        Study("estimator_accuracy", "accuracy", "accuracy", accuracy_runs, accuracy_seconds),
    ]
}
