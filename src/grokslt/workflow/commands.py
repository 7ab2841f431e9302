"""The workflow's jobs as command lines: from the checked config to the `grokslt` flags each rule passes, and
to the files each figure reads. Every setting becomes a flag, so that a changed setting reruns its job.

`Layout` holds what the builders need beyond a config section (the results path, the experiments' runs);
`workflow/rules/common.smk` makes one and its input functions call it. Nothing here needs Snakemake: the
one thing known only once a run has trained, the LLC trace files of a run, is passed in as a function.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from grokslt.analysis.hessian import HessianSettings
from grokslt.analysis.summary import ROW_FILE, membership_words
from grokslt.estimation.samplers import SamplerSettings
from grokslt.figures import OPTIONAL, READS, Figure, experiment_settings
from grokslt.settings import mapping_to_arguments
from grokslt.workflow.experiments import LLC_CHOICE_KEYS
from grokslt.workflow.studies import STUDIES, Study


def whole_runs(config: Mapping, runs: Mapping, run_llc: Mapping) -> list[str]:
    """The runs trained, estimated and tabled in one job (`run_jobs: whole`): those whose every checkpoint fits one
    LLC chunk whatever early stopping does, so that their chunk is known before training, and whose sampler needs no
    calibration (made from a trained run) and no GPU (training would hold it)."""
    if config["run_jobs"] != "whole" or config["gpu"]:
        return []
    size = config["llc"]["chunk_size"]
    return [
        run
        for run, settings in runs.items()
        if settings.most_checkpoints <= size and run_llc[run]["preset"] != "calibrated"
    ]


@dataclass(frozen=True)
class Layout:
    """Where the workflow's files lie, for a checked config (`config.CheckedConfig`): `runs` {run: its
    TrainConfig}, `membership` {experiment: its runs}, `run_llc` {run: its experiment's `llc:` block};
    `reference` the authors' logs' checksum file."""

    config: Mapping
    runs: Mapping
    membership: Mapping[str, list[str]]
    run_llc: Mapping[str, Mapping]
    reference: str

    @classmethod
    def of(cls, checked, reference: str) -> Layout:
        return cls(checked.config, checked.runs, checked.membership, checked.run_llc, reference)

    @property
    def results(self) -> str:
        return self.config["results"]

    def run_dir(self, run: str) -> str:
        return f"{self.results}/runs/{run}"

    @functools.cached_property
    def whole_runs(self) -> list[str]:
        return whole_runs(self.config, self.runs, self.run_llc)

    def staged_runs(self) -> list[str]:
        """The runs with a job per stage: training, each LLC chunk, the tables."""
        return [run for run in self.runs if run not in set(self.whole_runs)]

    def experiment_runs(self, names) -> list[str]:
        return list(dict.fromkeys(run for name in names for run in self.membership[name]))

    def membership_of(self, runs) -> dict[str, list[str]]:
        """Every experiment's runs among `runs`: the `experiments` cells of a summary of those runs."""
        chosen = set(runs)
        return {name: [run for run in members if run in chosen] for name, members in self.membership.items()}

    def calibration_file(self, suffix: str) -> str:
        return f"{self.results}/calibration/{self.config['calibration']['experiment']}/calibration.{suffix}"

    def study_runs(self, section: str) -> list[str]:
        """The runs of the experiments a section lists (`certified`, `refined`), those the config trains."""
        runs = self.experiment_runs(self.config[section]["experiments"])
        return [run for run in runs if run in self.runs]

    # -- the studies (grokslt.workflow.studies) -----------------------------------------------------------
    def study_outputs(self, study: Study) -> dict[str, str]:
        """Its rule's outputs by name, the table first; a table per run keeps the wildcard {run}."""
        return {name: f"{self.results}/{path}" for name, path in study.paths(self.config).items()}

    def study_tables(self, study: Study) -> list[str]:
        """The tables it writes for this config: one per run it reads (a table per run), one, or none."""
        runs = study.run_ids(self.config, self.membership)
        if study.per_run:
            return [f"{self.results}/{study.path(self.config, run)}" for run in runs]
        return [f"{self.results}/{study.path(self.config)}"] if runs else []

    def study_args(self, study: Study, run: str | None = None) -> list[str]:
        """Its command's flags before `--threads` and `--out`: for one run's table, or over the runs it reads."""
        return study.arguments(self, [run] if study.per_run else study.run_ids(self.config, self.membership))

    def study_inputs(self, study: Study, run: str | None = None) -> list[str]:
        """The training logs of the runs it reads (their checkpoints are its input)."""
        runs = [run] if study.per_run else study.run_ids(self.config, self.membership)
        return [f"{self.run_dir(run)}/train_log.csv" for run in runs]

    # -- command-line flags ------------------------------------------------------------------------------
    def llc_args(self, run: str) -> list[str]:
        """The flags of a run's LLC trajectory: its sampler, and its thinning `every`."""
        every = self.run_llc[run]["every"]
        return [*self.sampler_args(run), *(["--every", str(every)] if every > 1 else [])]

    def sampler_args(self, run: str) -> list[str]:
        """The sampler flags of a run's experiment (its `llc:` over the global one), for a study of one of its
        checkpoints as for its trajectory."""
        block = self.run_llc[run]
        overrides = {key: value for key, value in block.items() if key not in LLC_CHOICE_KEYS}
        job = ["--preset", block["preset"], "--backend", block["backend"], "--seed", str(block["seed"])]
        if block["preset"] == "calibrated":
            job += ["--calibration", self.calibration_file("json")]
        return [*job, *mapping_to_arguments(SamplerSettings, overrides)]

    def calibration_input(self, run: str) -> list[str]:
        """The calibration an LLC job reads (for `preset: calibrated`): a new grid reruns it, not training."""
        return [self.calibration_file("json")] if self.run_llc[run]["preset"] == "calibrated" else []

    def tables_args(self) -> list[str]:
        """`grokslt tables` flags: what it computes at each checkpoint (the Hessian trace, the closed forms)."""
        hessian, theory = self.config["hessian"], self.config["theory"]
        overrides = {key: value for key, value in hessian.items() if key not in ("preset", "seed")}
        words = ["--hessian-preset", hessian["preset"], "--hessian-seed", str(hessian["seed"])]
        words += mapping_to_arguments(HessianSettings, overrides)
        return [*words, "--mass", str(theory["mass"]), "--atom-rank-max", str(theory["atom_rank_max"])]

    def refined_kinds(self) -> dict[str, list[str]]:
        """{file name: grokslt llc flags} of the refined estimates: all weights on the training loss, each weight
        group alone, all weights on each data subset."""
        section = self.config["refined"]
        kinds = {"all": []}
        kinds |= {f"weights_{g.replace(':', '-')}": ["--weights", g] for g in section["weights"]}
        kinds |= {f"data_{d.replace(':', '-')}": ["--data", d] for d in section["data"] if d != "train"}
        return kinds

    def refined_args(self, kind: str) -> list[str]:
        """`grokslt llc` flags of one refined table; `traced`: all weights at the decisive checkpoints."""
        section = self.config["refined"]
        words = ["--preset", section["preset"], "--seed", str(section["seed"])]
        words += ["--num-draws", str(section["num_draws"])] if "num_draws" in section else []
        if kind == "traced":
            return [*words, "--steps", "transitions"]
        return [*words, "--every", str(section["every"]), *self.refined_kinds()[kind]]

    def certify_args(self) -> list[str]:
        """The certified estimates at a subset of checkpoints: the calibration's choice (empty when it chose
        nothing) or a named preset."""
        section = self.config["certified"]
        words = ["--preset", section["preset"], "--seed", str(section["seed"]), "--every", str(section["every"])]
        if section["preset"] == "calibrated":
            words += ["--calibration", self.calibration_file("json"), "--if-chosen"]
        words += ["--num-draws", str(section["num_draws"])] if "num_draws" in section else []
        return [*words, *(["--retry-draws", str(section["retry_draws"])] if "retry_draws" in section else [])]

    # -- figures -----------------------------------------------------------------------------------------
    def figure_tables(self, name: str, figure: Figure, settings: Mapping, kind: str,
                      traces: Callable[[str], list[str]]) -> list[str]:  # fmt: skip
        """The files of one kind that the figure drawn as `name` reads; `traces(run)`: a run's LLC trace files."""
        results, run_dir = self.results, self.run_dir
        experiments = experiment_settings(settings)
        first_run = lambda: self.experiment_runs([settings["experiment"]])[0]  # noqa: E731
        if kind == "loss_data" and not figure.one_run:
            return [f"{run_dir(run)}/loss_data.csv" for run in self.experiment_runs(experiments)]
        if kind == "certified":
            certified = set(self.study_runs("certified"))
            return [f"{run_dir(run)}/certified.csv" for run in self.experiment_runs(experiments) if run in certified]
        if kind == "reference":
            return [] if self.config["reference"] == "none" else [self.reference]
        if kind == "traces":
            return traces(first_run())
        if kind == "summary":  # each run's row, put together by the figure (`grokslt.analysis.summary`)
            return [f"{run_dir(run)}/{ROW_FILE}" for run in self.experiment_runs(experiments)]
        fixed = {
            "rank_checks": f"{results}/theory/rank_checks.csv",
            "scorecard": f"{results}/scorecard/scorecard.csv",
        }
        if kind in fixed:
            return [fixed[kind]]
        study = next((study for study in STUDIES.values() if study.table == kind), None)
        if study is not None and study.per_run:
            studied = set(study.run_ids(self.config, self.membership))
            return [f"{results}/{study.path(self.config, run)}" for run in self.experiment_runs(experiments)
                    if run in studied]  # fmt: skip
        if study is not None:
            return [f"{results}/{study.path(self.config)}"]
        of_first_run = {"loss_data": "loss_data.csv", "params": "params.csv", "refined": "refined.csv",
                        "waic": "waic.csv", "pair_traces": "traces"}  # fmt: skip
        if kind in of_first_run:
            return [f"{run_dir(first_run())}/{of_first_run[kind]}"]
        raise ValueError(f"figure input {kind!r}: unknown")


def figure_args(figure: Figure, settings: Mapping, files: Mapping[str, list[str]],
                membership: Mapping[str, list[str]] | None = None) -> list[str]:  # fmt: skip
    """`grokslt figure` arguments: the figure, its tables by kind (`files`), the experiments of the runs whose
    summary rows it reads (`membership`, `Layout.membership_of`), and its settings."""
    words = [figure.name]
    for kind in figure.reads:  # (before a run's training ends, Snakemake may ask with the inputs unknown)
        found = files.get(kind, [])
        if found or kind not in OPTIONAL:
            words += [READS[kind][0], *found]
    if "summary" in figure.reads and membership is not None:
        words += ["--membership", *membership_words(membership)]
    for key, value in settings.items():
        if value is not None:
            flag = f"--{key.replace('_', '-')}"
            words += [flag, *(map(str, value) if isinstance(value, list) else [str(value)])]
    return words


def figure_prefix(output: str) -> str:
    """The figure's output path without suffix: the CLI writes PREFIX.pdf and PREFIX.png."""
    return os.path.splitext(output)[0]
