"""Our MLP runs against devinterp's grokking notebook, point by point where its published outputs can be read.

reference/devinterp_grokking/published.csv holds the notebook's numbers (its plots read from the pixels, its text
outputs; provenance in SETTINGS.md there). For each run's loss_data.csv this writes, per published point, our value
at the same step (the LLC, accuracies and losses at that checkpoint; the memorisation and val-50% steps from our
log), and the LLC peak (raw maximum) beside the notebook's.

    python scripts/compare_devinterp_grokking.py results/families/runs/RUN [RUN ...] --out comparison.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from grokslt.io import write_csv
from grokslt.training.metrics import transition_steps

PUBLISHED = Path(__file__).resolve().parents[1] / "reference" / "devinterp_grokking" / "published.csv"


def our_value(table: pd.DataFrame, quantity: str, step: int) -> tuple[float, int]:
    """Our value of `quantity` (a loss_data.csv column, or a transition step) and the step it was read at."""
    if quantity in ("memorisation_step", "grok_step_50"):
        steps = transition_steps(table["step"], table["train_acc"], table["val_acc"])
        return steps[quantity], steps[quantity]
    table = table[table[quantity].notna()]  # a thinned LLC trajectory (llc.every) skips checkpoints
    nearest = table.iloc[(table["step"] - step).abs().argmin()]
    return float(nearest[quantity]), int(nearest["step"])


def comparison_rows(run_dir: Path, published: pd.DataFrame) -> list[dict]:
    table = pd.read_csv(run_dir / "loss_data.csv")
    table = table[~table["diverged"].astype(bool)]
    rows = []
    for _, point in published.iterrows():
        ours, at = our_value(table, point["quantity"], int(point["step"]))
        rows.append({"run": run_dir.name, "quantity": point["quantity"], "published_step": int(point["step"]),
                     "published": point["value"], "ours": ours, "our_step": at})  # fmt: skip
    peak = table.loc[table["llc"].idxmax()]
    rows.append({"run": run_dir.name, "quantity": "llc_peak", "published_step": 3000, "published": 49.6,
                 "ours": float(peak["llc"]), "our_step": int(peak["step"])})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    published = pd.read_csv(PUBLISHED)
    rows = [row for run in args.runs for row in comparison_rows(run, published)]
    write_csv(args.out, rows, list(rows[0]))
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
