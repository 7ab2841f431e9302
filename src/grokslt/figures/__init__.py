"""The paper's figures, each drawn from tables alone (never from checkpoints) by its own module.

FIGURES is the one list of figures: for each, the function that draws it, the tables it reads, its
settings with their defaults (the config section `figures.<name>`, every key optional) and its
caption (`workflow/report/<name>.rst`). The command line (`grokslt figure NAME`), the workflow's
figure rule and the config schema are derived from it: adding a figure is its module, its caption
and one line here.

A figure's settings whose names end in `experiment` name an experiment of the config (`experiments`:
a list of them). A figure with `per_experiment` is drawn once per name in its `experiments` setting,
as `<name>_<experiment>`, its function receiving that one `experiment`; one with `one_run` reads the
tables of its experiment's first run alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field

# what a figure may read: the command-line flag that passes it, and whether it takes several files
READS = {
    "summary": ("--summary", True, "summary/runs.csv, or the runs' summary.csv rows with --membership"),
    "loss_data": ("--loss-data", True, "runs/*/loss_data.csv of the figure's experiments"),
    "params": ("--params", False, "runs/RUN/params.csv of the figure's run"),
    "traces": ("--traces", True, "runs/RUN/llc/*.npz, the figure's run's LLC traces"),
    "rank_checks": ("--rank-checks", False, "theory/rank_checks.csv"),
    "sensitivity": ("--sensitivity", False, "sensitivity/sensitivity.csv"),
    "calibration": ("--calibration", False, "calibration/EXPERIMENT/calibration.csv"),
    "accuracy": ("--accuracy", False, "accuracy/accuracy.csv"),
    "scorecard": ("--scorecard", False, "scorecard/scorecard.csv"),
    "reference": ("--reference", False, "reference/SHA256SUMS of the authors' logs (overlays; optional)"),
    "refined": ("--refined", False, "runs/RUN/refined.csv, the figure's run's refined LLCs"),
    "waic": ("--waic", False, "runs/RUN/waic.csv, the figure's run's WAIC table"),
    "pair_traces": ("--pair-traces", False, "runs/RUN/traces, the figure's run's per-pair traces (step<STEP:06d>.nc)"),
    "certified": ("--certified", True, "runs/*/certified.csv of the figure's experiment (optional)"),
    "coefficient": ("--coefficient", True, "runs/*/coefficient.csv of the figure's experiments (optional)"),
}
# reads a figure draws without: the authors' logs when the config says `reference: none`, the certified estimates
# when the figure's experiment is not among `certified.experiments`, the coefficient tables when its runs are not
# among `coefficient.experiments` or `coefficient.finals`
OPTIONAL = ("reference", "certified", "coefficient")


@dataclass(frozen=True)
class Figure:
    name: str
    draw: str  # "module.function" in grokslt.figures
    reads: tuple[str, ...]
    settings: Mapping[str, object] = field(default_factory=dict)
    per_experiment: bool = False
    one_run: bool = False  # it shows the first run of its experiment, and reads that run's tables alone
    subcategory: str = "Paper figures"

    @property
    def module(self) -> str:
        return self.draw.split(".")[0]

    def function(self):
        module, name = self.draw.split(".")
        return getattr(importlib.import_module(f"grokslt.figures.{module}"), name)


def one_run_figure(name: str, draw: str, reads: tuple[str, ...]) -> Figure:
    """A figure of one run's study, drawn for the first run of each experiment a config lists (none by default)."""
    return Figure(name, draw, reads, {"experiments": []}, per_experiment=True, one_run=True,
                  subcategory="Beyond the paper")  # fmt: skip


def claim_figures() -> list[Figure]:
    """Each claim on the coefficient's value or shape at every estimator (`estimators`): the runs' LLC, the certified
    one, lambda_Q, r / 2 (from runs/RUN/coefficient.csv, optional), beside the closed form and the nulls."""
    reads = ("summary", "loss_data", "certified", "coefficient")
    words = {"subcategory": "Claims at every estimator"}
    return [
        Figure("claim_fig1a", "estimators.claim_fig1a", reads, {"experiment": "vary_p"}, **words),
        Figure("claim_fig1b", "estimators.claim_fig1b", reads, {"experiment": "vary_K"}, **words),
        Figure("claim_fig2", "estimators.claim_fig2", reads, {"experiment": "baseline"}, **words),
        Figure("claim_keff", "estimators.claim_keff", reads, {"experiments": ["vary_p", "vary_K"]}, **words),
    ]


FIGURES: dict[str, Figure] = {
    figure.name: figure
    for figure in [
        Figure("fig1a", "scaling.fig1a", ("summary", "reference"), {"experiment": "vary_p"}),
        Figure("fig1b", "scaling.fig1b", ("summary",), {"experiment": "vary_K"}),
        Figure(
            "fig2",
            "trajectory.fig2",
            ("summary", "loss_data", "reference", "certified"),
            {"experiment": "baseline", "band_experiment": "seeds"},
        ),
        Figure(
            "saturation",
            "trajectory.fig2",
            ("summary", "loss_data", "certified"),
            {"experiment": "baseline_long", "band_experiment": None},
            subcategory="Beyond the paper",
        ),  # fmt: skip
        Figure(
            "trajectories",
            "trajectory.small_multiples",
            ("summary", "loss_data", "reference"),
            {"experiments": ["vary_p", "vary_K", "vary_lr_wd"]},
            per_experiment=True,
            subcategory="Trajectories (appendix H.2)",
        ),  # fmt: skip
        Figure("fig9", "severity.fig9", ("summary", "reference", "certified"), {"experiment": "vary_lr_wd"}),
        Figure("sensitivity", "sensitivity.sensitivity", ("sensitivity",)),
        Figure("calibration", "calibration.calibration", ("calibration",), subcategory="Beyond the paper"),
        Figure("estimator_accuracy", "accuracy.estimator_accuracy", ("accuracy",), subcategory="Beyond the paper"),
        Figure("scorecard", "scorecard.scorecard", ("scorecard", "reference"), subcategory="Beyond the paper"),
        Figure(
            "theory_vs_measurement",
            "theory.theory_vs_measurement",
            ("summary", "rank_checks"),
            {"experiments": ["vary_p", "vary_K"]},
            subcategory="Beyond the paper",
        ),  # fmt: skip
        Figure(
            "family",
            "trajectory.family_fig2",
            ("summary", "loss_data"),
            {"experiments": []},
            per_experiment=True,
            subcategory="Beyond the paper",
        ),  # fmt: skip
        one_run_figure("refined", "refined.refined", ("loss_data", "refined", "waic")),
        one_run_figure("influence", "influence.influence", ("loss_data", "pair_traces")),
        *claim_figures(),
        Figure(
            "diagnostics",
            "diagnostics.diagnostics",
            ("loss_data", "params", "traces"),
            {"experiment": "baseline", "checkpoints": 4},
            subcategory="Beyond the paper",
        ),  # fmt: skip
    ]
}


def experiment_settings(settings: Mapping[str, object]) -> list[str]:
    """The experiments a figure's settings name (for its inputs and the config's reference check)."""
    names = []
    for key, value in settings.items():
        if key.endswith("experiment") and value is not None:
            names.append(value)
        elif key.endswith("experiments"):
            names.extend(value)
    return names


def instances(config_figures: Mapping[str, object]) -> dict[str, tuple[Figure, dict]]:
    """{output name: (figure, its settings)} for the figures a config draws: each figure's defaults
    updated by its config section; a section `false` leaves the figure out."""
    drawn = {}
    for name, figure in FIGURES.items():
        section = config_figures.get(name, {})
        if section is False:
            continue
        settings = {**figure.settings, **(section or {})}
        if figure.per_experiment:
            for experiment in settings["experiments"]:
                drawn[f"{name}_{experiment}"] = (figure, {"experiment": experiment})
        else:
            drawn[name] = (figure, settings)
    return drawn


def setting_flags() -> dict[str, tuple[str, object]]:
    """{setting: (flag, example default)} over every figure, for the command line."""
    flags = {}
    for figure in FIGURES.values():
        for key, default in ({"experiment": ""} if figure.per_experiment else figure.settings).items():
            flags.setdefault(key, ("--" + key.replace("_", "-"), default))
    return flags
