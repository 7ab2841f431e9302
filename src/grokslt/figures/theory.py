"""New: the closed-form LLCs beside the measured ones, against p and against K, each curve divided
by its value at the smallest size (absolute SGLD values carry an estimator-dependent scale, scaling
laws do not); and the numerical Jacobian-rank checks of the formulas."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from grokslt.figures import inputs, style

CURVES = [
    ("final_llc", "measured final LLC", "o-"),
    ("final_keff_llc", r"$K_{eff}(3p-1)/2$ (Rmk 5.5)", "s--"),
    ("generic_llc", "generic (Cor 4.2 / 5.4)", "-"),
    ("lazy_lower", "lazy lower $p(2p-1)/2$", ":"),
    ("lazy_upper", "lazy upper $pK/2$", "-."),
]


def normalised_panel(ax, rows: pd.DataFrame, x: str, fixed: str, xlabel: str, title: str) -> None:
    """The curves of the runs at the commonest value of `fixed`, each over its value at the smallest size. The
    measured final LLCs are those of the runs that reached val 95%, marked as `style.mark_estimates` marks them
    (an x where any averaged run's final estimate is not local, hollow where one did not converge)."""
    value = rows[fixed].mode().iloc[0]
    subset = rows[rows[fixed] == value]
    means = subset.groupby(x)[[c for c, _, _ in CURVES[1:]]].mean().sort_index()
    measured = measured_finals(subset, x)
    for colour, (column, label, fmt) in zip(style.PALETTE, CURVES, strict=False):
        if column == "final_llc":
            shown = measured[~style.descending(measured)]
            if len(shown) and shown["llc"].iloc[0] > 0:
                shown = shown.assign(llc=shown["llc"] / shown["llc"].iloc[0])
                ax.plot(shown[x], shown["llc"], "-", color=colour, linewidth=1, label=label)
                style.mark_estimates(ax, shown, colour, labelled=False, size=3, x=x)
            continue
        curve = means[column].dropna()
        if len(curve) and curve.iloc[0] > 0:
            ax.plot(curve.index, curve / curve.iloc[0], fmt, color=colour, markersize=3, linewidth=1, label=label)
    ax.set_xlabel(xlabel)
    never = int((~inputs.grokked(subset)).sum())
    left_out = f"\n{never} of {len(subset)} runs never reached val 95%: not measured" if never else ""
    ax.set_title(f"{title}, at {'K' if fixed == 'hidden' else fixed} = {value}{left_out}", fontsize=7)
    ax.set_ylabel("relative to smallest size")


def measured_finals(rows: pd.DataFrame, x: str) -> pd.DataFrame:
    """The final LLCs of the runs that grokked, averaged per x, with the marks of `style.mark_estimates`."""
    grokked = style.with_marks(rows[inputs.grokked(rows)], "final_")
    return grokked.groupby(x, as_index=False).agg(llc=("final_llc", "mean"), converged=("converged", "all"),
                                                  local=("local", "all"), descends=("descends", "any"))  # fmt: skip


def theory_vs_measurement(read, experiments: list[str]):
    summary, rank_checks = read.summary, read.csv("rank_checks")
    needed = ["p", "hidden", "final_llc", "final_converged", "final_local", "final_keff_llc",
              "generic_llc", "lazy_lower", "lazy_upper"]  # fmt: skip
    by_p = inputs.experiment_rows(summary, experiments[0], "summary/runs.csv")
    by_K = inputs.experiment_rows(summary, experiments[-1], "summary/runs.csv")
    inputs.require_columns(by_p, needed, "summary/runs.csv")
    inputs.require_columns(
        rank_checks, ["generic_llc", "parameter_map_llc", "data_llc", "defective"], "rank_checks.csv"
    )
    fig, (p_ax, K_ax, rank_ax) = plt.subplots(1, 3, figsize=(style.PAGE_WIDTH, 2.5))
    normalised_panel(p_ax, by_p, "p", "hidden", "modulus $p$", "LLCs against p")
    normalised_panel(K_ax, by_K, "hidden", "p", "hidden width $K$", "LLCs against K")
    style.legend_marks(p_ax, measured_finals(pd.concat([by_p, by_K]), "p"), "measured: ", size=3)
    p_ax.legend(fontsize=5)
    limit = float(np.nanmax(rank_checks[["generic_llc", "parameter_map_llc", "data_llc"]].to_numpy())) * 1.05
    rank_ax.plot([0, limit], [0, limit], color="0.6", linewidth=0.8)
    rank_ax.plot(
        rank_checks["generic_llc"],
        rank_checks["parameter_map_llc"],
        "o",
        color=style.PALETTE[0],
        markersize=3,
        label=r"rank $J\Phi_p$ / 2",
    )
    rank_ax.plot(
        rank_checks["generic_llc"],
        rank_checks["data_llc"],
        "x",
        color=style.PALETTE[1],
        markersize=3,
        label=r"rank $J f_\theta(X)$ / 2",
    )
    defective = rank_checks[rank_checks["defective"].astype(str) == "True"]
    rank_ax.plot(
        defective["generic_llc"],
        defective["parameter_map_llc"],
        "o",
        mfc="none",
        color="red",
        markersize=7,
        label="defective",
    )
    rank_ax.set_xlabel("Corollary 4.2 (generic)")
    rank_ax.set_ylabel("numerical rank / 2")
    rank_ax.set_title("Jacobian rank checks, small architectures", fontsize=7)
    rank_ax.legend(fontsize=5)
    return fig
