"""The paper's per-run tables (`params.csv`, `loss_data.csv`, the authors' layout) and the one-row-per-run
summary that the figures read."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from grokslt.analysis.hessian import hessian_columns, hessian_rows, hessian_settings
from grokslt.analysis.summary import ROW_FILE
from grokslt.analysis.theory import (
    THEORY_COLUMNS,
    checkpoint_theory,
    closed_form_row,
    closed_forms_apply,
    closed_forms_label,
)
from grokslt.artefacts import (
    LLC_TABLE,
    SUMMARISED,
    config_digest,
    read_table,
    read_tables,
    seal,
    unsealed,
)
from grokslt.estimation.checkpoint_llc import settings_columns
from grokslt.estimation.diagnostics import COLUMNS as DIAGNOSTIC_COLUMNS
from grokslt.estimation.diagnostics import MINIBATCH_COLUMNS
from grokslt.estimation.laplace import ESTIMATES as LAPLACE_ESTIMATES
from grokslt.estimation.locality import COLUMNS as LOCALITY_COLUMNS
from grokslt.estimation.samplers import SamplerSettings
from grokslt.io import write_csv
from grokslt.training.metrics import grokking_severity, transition_steps
from grokslt.training.runs import (
    estimated_steps,
    load_run,
    logged_checkpoints,
    run_record,
    select_run_steps,
    verified_record,
)
from grokslt.training.train import TrainConfig, versions

# the columns of an LLC table that say how it was estimated (every sampler setting, backend, preset, seed)
SAMPLER_COLUMNS = [c for c in settings_columns(SamplerSettings(), "preset", "backend", 2, 0) if c != "batch_size"]
# the authors' params.csv names for our settings, kept so their analysis code reads our tables
AUTHORS_NAMES = {
    "max_steps": "epochs",
    "eval_every": "checkpoint_epochs",
    "hidden": "hidden_dim",
    "seed": "random_seed",
    "optimizer": "optimiser",
    "llc_step_size": "SGLD_lr",
    "llc_localization": "SGLD_localisation",
    "num_probes": "flatness_hutchinson_probes",
}


def write_refined_table(parts, out) -> None:
    """refined.csv: a run's refined estimates (one LLC table per weight group or data subset), by group,
    subset and step."""
    table = read_tables(parts, LLC_TABLE, chunks=False).sort_values(["weights", "data", "step"], kind="stable")
    write_csv(out, table.to_dict("records"), list(table.columns))


def loss_data(run_dir, llc: pd.DataFrame, hessian: pd.DataFrame, theory: pd.DataFrame | None, llc_every: int = 1
              ) -> pd.DataFrame:  # fmt: skip
    """One row per checkpoint: the training log joined with the LLC (at the checkpoints `estimated_steps`
    selects for `llc_every`, empty elsewhere), Hessian-trace and theory columns (`theory` None where the paper's
    closed forms do not apply to the run)."""
    log_file = Path(run_dir) / "train_log.csv"
    log = pd.read_csv(log_file)
    chain_columns = [c for c in llc.columns if c.startswith("llc_chain_")]
    wanted = [
        "step",
        "llc_mean",
        "llc_std",
        *chain_columns,
        "init_loss",
        "llc_drift",
        "n_diverged",
        "llc_full",
        *DIAGNOSTIC_COLUMNS,
        *MINIBATCH_COLUMNS,
        *LOCALITY_COLUMNS,
        *LAPLACE_ESTIMATES,
    ]
    llc = llc[wanted].rename(columns={"llc_mean": "llc", "init_loss": "llc_init_loss"})
    hessian = hessian[["step", "trace_hutchinson", "trace_stderr", "trace_exact"]]
    table = log.merge(llc, on="step", how="left").merge(hessian, on="step", how="left")
    if theory is not None:
        table = table.merge(theory[["step", "K_eff", "keff_llc"]], on="step", how="left")
    else:  # the paper's closed forms do not apply to the run: their columns stay blank
        table = table.assign(K_eff=float("nan"), keff_llc=float("nan"))
    unestimated = table["step"].isin(estimated_steps(log_file, llc_every)) & table["llc"].isna()
    unestimated |= table["trace_hutchinson"].isna()
    missing = table.loc[unestimated & ~table["diverged"], "step"].tolist()
    if missing:
        raise ValueError(f"{run_dir}: no LLC or Hessian-trace row for steps {missing[:5]}")
    table.insert(1, "training_step", table["samples_seen"])  # the authors' name for samples seen
    return table


def params_row(run_id: str, run_dir, llc: pd.DataFrame, hessian: pd.DataFrame, llc_every: int = 1) -> dict:
    meta = run_record(Path(run_dir))
    config = meta["config"]
    row = {"run": run_id, **config, **meta["dataset"], "n_params": meta["n_params"]}
    row.update(status=meta["outcome"]["status"], status_step=meta["outcome"]["step"])
    if len(llc):
        row.update({f"llc_{c}": llc[c].iloc[0] for c in SAMPLER_COLUMNS}, llc_every=llc_every)
    if len(hessian):
        row.update(hessian_preset=hessian["hessian_preset"].iloc[0], num_probes=int(hessian["num_probes"].iloc[0]))
    row.update({f"version_{k}": v for k, v in {**meta["versions"], **versions(), **_devinterp()}.items()})
    row.update({alias: row[name] for name, alias in AUTHORS_NAMES.items() if name in row})
    return row


def _devinterp() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return {"devinterp": version("devinterp")}
    except PackageNotFoundError:
        return {}


@dataclass(frozen=True)
class PerCheckpoint:
    """What `grokslt tables` computes at each checkpoint of a run: the Hessian trace (at `hessian_preset` with its
    `hessian_overrides`, probes seeded by `hessian_seed`) and, where the paper's closed forms apply, K_eff at
    atom-norm `mass` (ranks of the atoms' Jacobian up to `atom_rank_max`)."""

    hessian_preset: str = "paper_code"
    hessian_overrides: dict = field(default_factory=dict)
    hessian_seed: int = 0
    mass: float = 0.99
    atom_rank_max: int = 0


def write_run_tables(run_id, run_dir, llc_csvs, params_out, loss_out, llc_every=1,
                     computed: PerCheckpoint = PerCheckpoint()) -> None:  # fmt: skip
    """params.csv and loss_data.csv of a run, from its LLC tables (each the sealed table of this run,
    `grokslt.artefacts`, the chunks covering its checkpoints once), the Hessian trace and the closed forms at its
    checkpoints (`grokslt.analysis.theory.checkpoint_theory`, where they apply); and beside them the run's row of
    the summary (`grokslt.analysis.summary`), computed here where torch is already loaded."""
    identity = config_digest(verified_record(Path(run_dir))["config"])
    llc = read_tables(llc_csvs, LLC_TABLE, identity, logged_checkpoints(Path(run_dir) / "train_log.csv"))
    run = load_run(run_dir)
    steps = select_run_steps(run, None, None)
    settings = hessian_settings(computed.hessian_preset, **computed.hessian_overrides)
    rows = hessian_rows(run, steps, settings, computed.hessian_preset, computed.hessian_seed)
    hessian = pd.DataFrame(rows, columns=hessian_columns(settings))
    theory = None
    if closed_forms_apply(run.config):
        rows = checkpoint_theory(run, steps, mass=computed.mass, atom_rank_max=computed.atom_rank_max)
        theory = pd.DataFrame(rows, columns=THEORY_COLUMNS)
    table = loss_data(run_dir, llc, hessian, theory, llc_every)
    seal(loss_out, write_csv(loss_out, table.to_dict("records"), list(table.columns)), "grokslt tables", identity)
    row = params_row(run_id, run_dir, llc, hessian, llc_every)
    seal(params_out, write_csv(params_out, [row], list(row)), "grokslt tables", identity)
    row = {key: _blank_nan(value) for key, value in summary_row(run_id, run_dir, run.config, identity).items()}
    summary_out = Path(params_out).parent / ROW_FILE
    seal(summary_out, write_csv(summary_out, [row], list(row)), "grokslt tables", identity)


def summary_row(run_id: str, run_dir, config: TrainConfig, identity: str) -> dict:
    """Final and peak LLC, Hessian trace, GSM, transition steps and the closed forms for one run of settings
    `config` (its experiments are the config's: `grokslt.analysis.summary` adds them), from its tables as sealed
    (`identity`: the run's `config_digest`). A run that diverged says so in `status`; its statistics cover the
    evaluations before it diverged."""
    run_dir = Path(run_dir)
    params = pd.read_csv(io.BytesIO(unsealed(run_dir / "params.csv", identity)[0])).iloc[0]
    table = read_table(run_dir / "loss_data.csv", SUMMARISED, identity)
    theory = closed_form_row(config.p, config.hidden)
    row = {
        "run": run_id,
        **{key: getattr(config, key) for key in ("p", "hidden", "optimizer", "lr", "weight_decay", "batch_size")},
        "seed": config.seed,
        "train_frac": config.train_frac,
        "task": config.task,
        "model": config.model,
        "loss": config.loss,
        "split": config.split,
        **{key: getattr(config, key) for key in ("early_stop", "early_stop_threshold", "early_stop_patience")},
        "llc_preset": params.get("llc_preset"),
        "status": params["status"],
        "final_step": int(params["status_step"]),
        "stopped_early": params["status"] == "early_stop",
        **dict.fromkeys(MEASURED_COLUMNS),
    }
    table = table[~table["diverged"]]
    if len(table):
        row.update(measured_columns(table, config.eval_every))
    closed_forms = ("regime", "generic_llc", "stage2_llc", "lazy_lower", "lazy_upper")
    applies = closed_forms_apply(config)
    row["closed_forms"] = closed_forms_label(config)
    row.update({key: theory[key] if applies else None for key in closed_forms})
    return row


MEASURED_COLUMNS = [
    "final_train_acc",
    "final_val_acc",
    "final_llc",
    "final_llc_std",
    "peak_llc",
    "peak_llc_step",
    "peak_converged",
    "peak_local",
    "final_trace",
    "peak_trace",
    "peak_trace_step",
    "gsm",
    "memorisation_step",
    "grok_step_50",
    "grok_step_95",
    "saturation_step",
    "final_r_hat",
    "final_ess_bulk",
    "final_ess_tail",
    "final_mcse",
    "final_converged",
    "converged_fraction",
    "final_loss_excess_fraction",
    "final_relative_distance",
    "final_descends",
    "final_local",
    "local_fraction",
    "final_K_eff",
    "final_keff_llc",
]


def measured_columns(table: pd.DataFrame, eval_every: int) -> dict:
    """The summary statistics of a run's loss table (evaluations before any divergence). The GSM
    averages over the regular evaluations every `eval_every` steps, as the paper's logged epochs,
    leaving out the extra early ones of a dense schedule."""
    regular = table[table["step"] % eval_every == 0]
    estimated = table[table["llc"].notna()]  # every checkpoint, or those a thinned trajectory (llc: every) chose
    final, peak = table.iloc[-1], table.loc[table["llc"].idxmax()]
    peak_trace = table.loc[table["trace_hutchinson"].idxmax()]
    values = {
        "final_train_acc": final["train_acc"],
        "final_val_acc": final["val_acc"],
        "final_llc": final["llc"],
        "final_llc_std": final["llc_std"],
        "peak_llc": peak["llc"],
        "peak_llc_step": int(peak["step"]),
        "peak_converged": bool(peak["converged"]),
        "peak_local": bool(peak["local"]),
        "final_trace": final["trace_hutchinson"],
        "peak_trace": peak_trace["trace_hutchinson"],
        "peak_trace_step": int(peak_trace["step"]),
        "gsm": grokking_severity(regular["train_acc"], regular["val_acc"]),
        **transition_steps(table["step"], table["train_acc"], table["val_acc"]),
        **{f"final_{name}": final[name] for name in DIAGNOSTIC_COLUMNS},
        "converged_fraction": float((estimated["converged"] == True).mean()),  # noqa: E712 (a flag, never blank here)
        "final_loss_excess_fraction": final["loss_excess_fraction"],
        "final_relative_distance": final["relative_distance"],
        "final_descends": bool(final.get("descends", False)),  # loss tables before the column: one-sided rule
        "final_local": final["local"],
        "local_fraction": float((estimated["local"] == True).mean()),  # noqa: E712
        "final_K_eff": int(final["K_eff"]) if pd.notna(final["K_eff"]) else None,  # atoms: quadratic nets only
        "final_keff_llc": final["keff_llc"],
    }
    assert list(values) == MEASURED_COLUMNS
    return values


def _blank_nan(value):
    return None if isinstance(value, float) and math.isnan(value) else value
