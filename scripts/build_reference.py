"""Rebuild reference/ from a checkout of the authors' repository: per run of the sweeps the paper's figures
use, their params.csv as it is and the columns of their loss_data.csv that the figures and the scorecard read
(text as published: no number is parsed and rewritten), with SHA256SUMS and PROVENANCE.md.

    git clone https://github.com/SergioEstanRuiz/geom_phase_transitions /tmp/authors
    python scripts/build_reference.py --from /tmp/authors [--sweeps flatness_test sweep_p sweep_seeds ...]

Facts only: no code of theirs is copied. Without --sweeps it takes every run of the default sweeps.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
from pathlib import Path

SWEEPS = ["flatness_test", "sweep_p", "sweep_seeds", "sweep_batch_lr_wd"]
OUT = Path(__file__).resolve().parents[1] / "reference"
# the step (samples or optimizer steps), accuracies, LLC and Hutchinson trace; the losses and SAM are dropped
FIGURE_COLUMNS = ["training_step", "batch", "train_acc", "val_acc", "llc", "flatness/trace_hutchinson"]


def figure_columns(text: str) -> str:
    """loss_data.csv restricted to FIGURE_COLUMNS (those present), each field's text unchanged."""
    rows = [line.split(",") for line in text.splitlines()]
    keep = [rows[0].index(name) for name in FIGURE_COLUMNS if name in rows[0]]
    return "".join(",".join(row[i] for i in keep) + "\n" for row in rows)


def run_directories(checkout: Path, sweep: str) -> list[Path]:
    root = checkout / "results" / sweep
    if (root / "params.csv").exists():
        return [root]
    return sorted(d for d in root.iterdir() if (d / "params.csv").exists() and (d / "loss_data.csv").exists())


def write_checksums(out: Path) -> None:
    files = sorted(p for p in (out / "authors").rglob("*.csv"))
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(out)}" for p in files]
    (out / "SHA256SUMS").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--from", dest="checkout", required=True, type=Path)
    parser.add_argument("--sweeps", nargs="+", default=SWEEPS)
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", str(args.checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    paths = []
    for sweep in args.sweeps:
        for directory in run_directories(args.checkout, sweep):
            relative = directory.relative_to(args.checkout / "results")
            target = OUT / "authors" / relative
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(directory / "params.csv", target / "params.csv")
            (target / "loss_data.csv").write_text(figure_columns((directory / "loss_data.csv").read_text()))
            paths.append(f"results/{relative}")
    write_checksums(OUT)
    (OUT / "PROVENANCE.md").write_text(
        "# The authors' logged runs\n\nRepository: https://github.com/SergioEstanRuiz/geom_phase_transitions\n"
        f"Commit: {commit.stdout.strip() or 'unknown'}\nRebuilt by scripts/build_reference.py from:\n\n"
        + "\n".join(f"- {p}/params.csv, {p}/loss_data.csv ({', '.join(FIGURE_COLUMNS)} where present)" for p in paths)
        + "\n"
    )
    print(f"{len(paths)} runs into {OUT}")


if __name__ == "__main__":
    main()
