"""What a claim reads (`Evidence`), the rows it writes, and the verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from grokslt.analysis.membership import in_experiments

COLUMNS = ["claim", "model", "preset", "estimator", "statistic", "value", "uncertainty", "verdict", "n", "note"]
HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"


class ReadRecord(dict):
    """{run: LLC series} that remembers which runs were read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def __getitem__(self, run):
        self.read.add(run)
        return super().__getitem__(run)


@dataclass
class Evidence:
    """What one preset's claims read about one model family. `llc`: {run: DataFrame[step, llc, mcse, converged,
    local]}. For the quadratic network an experiment's runs are the config's; another family has no paper
    experiments, so every run of that family stands for each (`Claim.families` are statements about each run).
    `waic` ({run: runs/RUN/waic.csv}) and `traced` ({run: runs/RUN/refined/traced.csv}, the estimates behind it)
    are there where the workflow traced per-pair losses."""

    summary: pd.DataFrame
    loss: Mapping[str, pd.DataFrame]
    llc: ReadRecord
    sensitivity: pd.DataFrame | None
    model: str = "quadratic"
    waic: Mapping[str, pd.DataFrame] | None = None
    traced: Mapping[str, pd.DataFrame] | None = None

    def runs(self, experiment: str) -> pd.DataFrame:
        family = models(self.summary) == self.model
        member = in_experiments(self.summary, experiment) if self.model == "quadratic" else family
        rows = self.summary[family & member & (self.summary["status"] != "diverged")]
        return rows[rows["run"].isin(self.llc)]


def models(summary: pd.DataFrame) -> pd.Series:
    """Each run's model family; a quadratic network trained with another loss than the paper's counts as a family
    of its own, `quadratic/LOSS` (summaries written before families existed hold the paper's model only)."""
    model = summary["model"].fillna("quadratic") if "model" in summary else pd.Series("quadratic", summary.index)
    loss = summary["loss"].fillna("centred_mse") if "loss" in summary else pd.Series("centred_mse", summary.index)
    return model.where((model != "quadratic") | (loss == "centred_mse"), "quadratic/" + loss)


def row(claim, preset, statistic, value, uncertainty, verdict, n, note="", model="quadratic") -> dict:
    return dict(claim=claim, model=model, preset=preset, statistic=statistic, value=value, uncertainty=uncertainty,
                verdict=verdict, n=n, note=note)  # fmt: skip


def label(evidence: Evidence, preset: str, runs: pd.DataFrame) -> str:
    """The rows' preset: `certified`, or the sampler presets the runs' own LLCs come from."""
    if preset == "certified" or runs.empty or "llc_preset" not in runs:
        return preset
    return ";".join(sorted(runs["llc_preset"].dropna().astype(str).unique())) or preset


def final_llc(evidence: Evidence, runs: pd.DataFrame) -> pd.Series:
    return runs["run"].map(lambda run: evidence.llc[run]["llc"].iloc[-1])


def final_estimates(evidence: Evidence, runs) -> pd.DataFrame:
    """The last row of each run's LLC series (step, llc, mcse, converged, local), in the order of `runs`."""
    return pd.concat([evidence.llc[run].iloc[-1:] for run in runs], ignore_index=True)


def grokked(runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs that reached val 95% (`grok_step_95`), and those that never did: a final LLC of a run that has not
    generalised is not the paper's final LLC, and a claim on final LLCs leaves those runs out."""
    reached = runs["grok_step_95"].notna()
    return runs[reached], runs[~reached]


def never_grokked_note(never: pd.DataFrame) -> str:
    return f"; runs that never reached val 95%, left out: {len(never)}" if len(never) else ""
