"""The note a person reads when the workflow ends: what ran, where the figures are, which LLC estimates are
not local or not converged (and so decide nothing), and which claims were decided.

It reads the finished tables only (summary/runs.csv, runs/*/loss_data.csv and certified.csv, claims.csv), so
a workflow asked for one figure gets the lines of what that figure built.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

DECIDED = ("holds", "fails")


def closing_note(results: str | Path, configfile: str | None = None) -> str:
    """The note, a few lines; `configfile` names the config in the report command."""
    results = Path(results)
    lines = [f"grokslt: the workflow finished; its results are in {results}/"]
    summary = read_table(results / "summary" / "runs.csv")
    if summary is not None:
        lines.append(runs_line(summary))
    lines += figures_lines(results, configfile)
    lines += estimate_lines(results, summary)
    claims = read_table(results / "claims" / "claims.csv")
    if claims is not None:
        lines += claims_lines(claims, results / "claims" / "claims.csv")
    return "\n".join(lines)


def read_table(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path) if path.exists() else None


def runs_line(summary: pd.DataFrame) -> str:
    """How the runs' training ended: generalised (val 95%), stopped below it, diverged."""
    diverged = summary["status"] == "diverged"
    grokked = summary["grok_step_95"].notna() & ~diverged
    parts = [f"{int(grokked.sum())} reached val 95%"]
    below = int((~grokked & ~diverged).sum())
    if below:
        parts.append(f"{below} ended below val 95% (memorised only: their final LLC is not the paper's)")
    if diverged.any():
        parts.append(f"{int(diverged.sum())} diverged ({', '.join(summary.loc[diverged, 'run'])})")
    return f"  runs: {len(summary)} trained (summary/runs.csv): " + "; ".join(parts)


def figures_lines(results: Path, configfile: str | None) -> list[str]:
    figures = sorted((results / "figures").glob("*.png"))
    if not figures:
        return []
    names = ", ".join(path.stem for path in figures)
    config = f" --configfile {configfile}" if configfile else ""
    return [
        f"  figures: {len(figures)} in {results}/figures/ (PNG and PDF): {names}",
        f"    with their captions in one page: snakemake{config} --report report.html",
    ]


def estimate_lines(results: Path, summary: pd.DataFrame | None) -> list[str]:
    """Per LLC series (the runs' own sampler presets, the certified estimates): how many estimates are local,
    converged, both (trusted)."""
    series = {}
    for path in sorted((results / "runs").glob("*/loss_data.csv")):
        preset = run_preset(summary, path.parent.name)
        series.setdefault(preset, []).append(pd.read_csv(path))
    for path in sorted((results / "runs").glob("*/certified.csv")):
        table = pd.read_csv(path).rename(columns={"llc_mean": "llc"})  # an LLC table's column
        if not table.empty:
            series.setdefault(f"certified ({', '.join(sorted(set(table['preset'].astype(str))))})", []).append(table)
    lines = [estimate_line(name, tables) for name, tables in series.items()]
    lines = [line for line in lines if line]
    if not lines:
        return []
    header = "  LLC estimates: trusted = local (chains stay near w*) and converged (R-hat <= 1.01, ESS >= 100):"
    return [header, *lines]


def run_preset(summary: pd.DataFrame | None, run: str) -> str:
    if summary is None or run not in set(summary["run"]):
        return "the runs' sampler"
    return str(summary.loc[summary["run"] == run, "llc_preset"].iloc[0])


def estimate_line(name: str, tables: list[pd.DataFrame]) -> str | None:
    estimated = [table[table["llc"].notna()] for table in tables if "llc" in table]
    rows = pd.concat(estimated, ignore_index=True) if estimated else pd.DataFrame()
    if rows.empty:
        return None
    local, converged = flags(rows, "local"), flags(rows, "converged")
    trusted = int((local & converged).sum())
    verdict = "none trusted: read them as the paper's numbers, not as LLCs" if trusted == 0 else f"{trusted} trusted"
    return (f"    {name}: {len(rows)} estimates in {len(tables)} runs: {int((~local).sum())} not local, "
            f"{int((~converged).sum())} not converged; {verdict}")  # fmt: skip


def flags(rows: pd.DataFrame, column: str) -> pd.Series:
    """A True/False column read from CSV (blank: False)."""
    if column not in rows:
        return pd.Series(False, index=rows.index)
    return rows[column].astype(str).str.lower().eq("true")


def claims_lines(claims: pd.DataFrame, path: Path) -> list[str]:
    decided = claims[claims["verdict"].isin(DECIDED)]
    smoke = "note" in claims and claims["note"].astype(str).str.contains("smoke test").any()
    head = f"  claims ({path}{'; a smoke test of the pipeline, no evidence' if smoke else ''}): "
    head += f"{len(decided)} of {len(claims)} rows decided, {len(claims) - len(decided)} inconclusive"
    return [head, *(f"    {row.claim} ({row.preset}): {row.verdict}" for row in decided.itertuples())]
