"""Synthetic tables the figures' tests draw from (tests/figures)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from grokslt.artefacts import seal, sha256

STEPS = np.arange(50, 550, 50)


def loss_table(steps: np.ndarray, peak: float) -> pd.DataFrame:
    grok = 1 / (1 + np.exp(-(steps - steps.mean()) / 50))
    llc = peak * (1 - np.exp(-steps / 100)) * (1 - 0.3 * grok)
    return pd.DataFrame(
        {
            "step": steps,
            "train_loss": 0.5 * np.exp(-steps / 50) + 1e-4,
            "val_loss": 0.5 - 0.4 * grok,
            "train_acc": np.minimum(1, steps / 100),
            "val_acc": grok,
            "llc": llc,
            "llc_std": 0.05 * llc,
            "trace_hutchinson": 2 * llc,
            "llc_init_loss": 0.01,
            "diverged": False,
            "converged": steps > steps.mean(),
            "local": steps > steps.min(),  # the first estimate not local: drawn as a cross
            "r_hat": 1.0 + 0.1 * np.exp(-steps / 200),
            "ess_bulk": 50 + steps,
            "ess_tail": 40 + steps,
            "r_hat_minibatch": 1.0 + 0.005 * np.exp(-steps / 200),
            "ess_bulk_minibatch": 200 + 2 * steps,
            "ess_tail_minibatch": 150 + 2 * steps,
            "converged_minibatch": True,
            "train_acc_offset": np.minimum(1, steps / 80),
            "val_acc_offset": grok,
        }
    )


def sealed(path):
    """Seal a table written here as its writer (`grokslt tables`, `grokslt llc`) does: the figures read no other."""
    seal(path, sha256(path.read_bytes()), "a test")


def summary_row(run: str, experiment: str, grokked: bool = True, **settings) -> dict:
    row = {"run": run, "experiments": experiment, "status": "early_stop", "p": 7, "hidden": 16, "lr": 1e-2,
           "weight_decay": 1e-4, "batch_size": 16, "seed": 0, "final_step": 500, "final_llc": 20.0,
           "final_mcse": 0.5, "final_converged": True, "final_local": True, "final_descends": False,
           "peak_llc": 30.0, "peak_converged": True, "peak_local": True, "gsm": 0.4, "llc_preset": "paper_code",
           "memorisation_step": 100, "grok_step_50": 300, "grok_step_95": 450 if grokked else np.nan,
           "final_keff_llc": 30.0, "generic_llc": 40.0, "lazy_lower": 45.5, "lazy_upper": 56.0}  # fmt: skip
    return row | settings


def reads(summary: list[dict], tables: dict | None = None, **csvs) -> SimpleNamespace:
    return SimpleNamespace(summary=pd.DataFrame(summary), loss_data=tables or {}, authors_runs=lambda: [],
                           certified={}, csv=lambda kind: csvs[kind])  # fmt: skip
