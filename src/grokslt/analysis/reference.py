"""The authors' logged runs as reference data (facts with provenance), and matching our runs to them.

`reference/authors/` holds their `params.csv` and `loss_data.csv` per run, as they published them
(`reference/PROVENANCE.md`: repository, commit, paths; `scripts/build_reference.py` rebuilds it from a
checkout of theirs), with `SHA256SUMS`, which is checked before anything is read. Their `training_step`
counts samples (step x batch size), their older sweep logs the optimizer step as `batch`. A run of ours
matches one of theirs when every setting that shapes its training agrees: task (addition), p, K,
train_frac, optimizer, learning rate, weight decay, batch size, seed, the authors' split and the
early-stop rule of their sweep; LLCs are comparable only where the sampler settings agree too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd

from grokslt.errors import BadInput

# the early-stop rule of each of their sweeps (their training.py): flatness runs wait 10 evaluations at 0.99
EARLY_STOP = {"flatness_test": (0.99, 10), "sweep_seeds": (0.99, 10)}
# sampler settings a sweep's params.csv leaves out, from the code that ran it (grokslt.estimation.llc.PRESETS)
UNLOGGED_SAMPLER = {"sweep_batch_lr_wd": "paper_code_lr_wd"}
DEFAULT_EARLY_STOP = (0.95, 3)
MATCHED = ("p", "hidden", "train_frac", "optimizer", "lr", "weight_decay", "batch_size", "seed")


@dataclass
class AuthorsRun:
    name: str  # sweep/run
    settings: dict  # our names: p, hidden, ..., early_stop (threshold, patience)
    log: pd.DataFrame  # step, train_acc, val_acc, llc, trace_hutchinson (where logged)
    params: pd.Series  # their params.csv

    @cached_property
    def sampler(self) -> dict:
        """step_size, localization, num_chains, num_draws, num_burnin (read when asked: an unlogged step size is
        our preset's, and the presets' module starts torch, which a figure's overlay does not need)."""
        return logged_sampler(self.params, self.name.split("/")[0])


def checked_files(root: Path) -> list[Path]:
    """The files `SHA256SUMS` lists, each checked against its checksum."""
    sums = root / "SHA256SUMS"
    if not sums.exists():
        raise BadInput(f"reference {root}: no SHA256SUMS there; rebuild it with scripts/build_reference.py")
    files = []
    for line in sums.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        path = root / name
        if not path.exists():
            raise BadInput(f"reference file {path}: missing (listed in {sums})")
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise BadInput(f"reference file {path}: its checksum differs from {sums}: the data were changed")
        files.append(path)
    return files


def authors_run(params_csv: Path, loss_csv: Path, name: str) -> AuthorsRun:
    params = pd.read_csv(params_csv).iloc[0]
    sweep = name.split("/")[0]
    hidden = params["hidden_dim"] if "hidden_dim" in params else params["embed_dim"]
    settings = {
        "p": int(params["p"]), "hidden": int(hidden), "train_frac": float(params["train_frac"]),
        "optimizer": str(params["optimiser"]), "lr": float(params["lr"]), "weight_decay": float(params["weight_decay"]),
        "batch_size": int(params["batch_size"]), "seed": int(params["random_seed"]),
        "max_steps": int(params["epochs"]), "eval_every": int(params["checkpoint_epochs"]),
        "early_stop": EARLY_STOP.get(sweep, DEFAULT_EARLY_STOP),
    }  # fmt: skip
    log = pd.read_csv(loss_csv)
    steps = log["batch"] if "batch" in log else log["training_step"] // settings["batch_size"]
    trace = log["flatness/trace_hutchinson"] if "flatness/trace_hutchinson" in log else float("nan")
    table = pd.DataFrame({"step": steps.astype(int), "train_acc": log["train_acc"], "val_acc": log["val_acc"],
                          "llc": log["llc"], "trace_hutchinson": trace})  # fmt: skip
    return AuthorsRun(name, settings, table, params)


def logged_sampler(params: pd.Series, sweep: str) -> dict:
    """The SGLD settings behind a run's LLC column: its params.csv, completed from the sweep's code where the
    step size and localisation were not logged (their sweep_batch_lr_wd)."""
    if "SGLD_lr" in params:
        step_size, localization = float(params["SGLD_lr"]), float(params["SGLD_localisation"])
    else:
        from grokslt.estimation.llc import PRESETS

        preset = PRESETS[UNLOGGED_SAMPLER[sweep]]
        step_size, localization = preset.step_size, preset.localization
    return {"step_size": step_size, "localization": localization, "num_chains": int(params["num_chains"]),
            "num_draws": int(params["num_draws"]), "num_burnin": int(params["num_burnin"])}  # fmt: skip


def load_reference(root) -> list[AuthorsRun]:
    """Every run of the reference data set, its checksums checked first."""
    root = Path(root)
    files = checked_files(root)
    runs = []
    for params_csv in sorted(p for p in files if p.name == "params.csv"):
        loss_csv = params_csv.with_name("loss_data.csv")
        if loss_csv in files:
            runs.append(authors_run(params_csv, loss_csv, str(params_csv.parent.relative_to(root / "authors"))))
    return runs


def find_match(row: pd.Series, runs: list[AuthorsRun]) -> AuthorsRun | None:
    """The authors' run whose settings equal those of our summary row, or None."""
    if not runs or row.get("task", "add") != "add":
        return None
    if row.get("model", "quadratic") != "quadratic" or row.get("loss", "centred_mse") != "centred_mse":
        return None  # the authors trained the quadratic network with the centred loss only
    threshold, patience = row["early_stop_threshold"], row["early_stop_patience"]
    for run in runs:
        settings = run.settings
        same = all(_equal(row[key], settings[key]) for key in MATCHED)
        stop = bool(row["early_stop"]) and (threshold, patience) == settings["early_stop"]
        if same and stop and row.get("split", "authors") == "authors":
            return run
    return None


def _equal(a, b) -> bool:
    try:
        return abs(float(a) - float(b)) <= 1e-12 * max(1.0, abs(float(b)))
    except (TypeError, ValueError):
        return str(a) == str(b)
