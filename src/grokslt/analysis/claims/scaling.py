"""Figure 1: the final LLC linear in p (1a) and in K (1b, the subabundant regime), against the d = 3pK null."""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats

from grokslt.analysis.claims.evidence import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    final_llc,
    grokked,
    label,
    never_grokked_note,
    row,
)
from grokslt.analysis.claims.statistics import ols
from grokslt.analysis.theory import SUBABUNDANT

# Linear laws: holds when R^2 >= 0.95, the slope exceeds 3 standard errors and no quadratic term exceeds its
# two-sided 95% t critical value (residual degrees of freedom n - 3: curvature decides linearity), for every
# line; fails when some line has R^2 < 0.8 or a slope <= 0; otherwise (or with fewer than 4 points) inconclusive.
# Figure 1b's law is the subabundant regime's (K (d + p - 1) < p d (d + 1) / 2): wider runs are left out, and so
# are the runs that never reached val 95% (a final LLC of a run that has not generalised is not the paper's).
# Each line also reports the final LLC over the parameter count d = 3pK, and the trivial null: d is itself
# linear in p and K, so a second row fits LLC = a K_eff (3p - 1) / 2 (Corollary 5.4, K_eff measured) and
# LLC = b d, both through 0, and holds when the theory's fit leaves at most half the null's residual sum of
# squares, fails when it leaves more than the null's, else inconclusive.
LINEAR_HOLDS_R2, LINEAR_FAILS_R2, SLOPE_SE = 0.95, 0.8, 3.0
NULL_RSS_HOLDS = 0.5


def linear_law(evidence, preset, claim, experiment, x, line, regime: str | None = None) -> list[dict]:
    """The law per line over the runs that reached val 95%; with `regime`, over the runs in that regime of
    Corollary 4.2 only (the note says how many others were left out)."""
    runs = evidence.runs(experiment)
    tag = label(evidence, preset, runs)
    runs, never = grokked(runs)
    runs, outside = in_regime(runs, regime)
    out = []
    for value, group in sorted(runs.assign(final=final_llc(evidence, runs)).groupby(line)):
        left_out = regime_note(outside[outside[line] == value], regime) + never_grokked_note(
            never[never[line] == value]
        )
        means = group.groupby(x)["final"].mean()
        name = f"{'K' if line == 'hidden' else line} = {value}"
        fitted = {"reads": tuple(group["run"])}
        if len(means) < 4:
            out.append(row(claim, tag, f"R^2 of final LLC on {x} ({name})", math.nan, math.nan, INCONCLUSIVE,
                           len(means), "fewer than 4 sizes" + left_out) | fitted)  # fmt: skip
            continue
        coef, se, r2 = ols(means.index, means.to_numpy())
        quadratic, quadratic_se, _ = ols(means.index, means.to_numpy(), 2)
        critical = stats.t.ppf(0.975, len(means) - 3)
        curved = abs(quadratic[0]) > critical * quadratic_se[0]
        slope, slope_se = coef[0], se[0]
        if r2 >= LINEAR_HOLDS_R2 and slope > SLOPE_SE * slope_se and not curved:
            verdict = HOLDS
        elif r2 < LINEAR_FAILS_R2 or slope <= 0:
            verdict = FAILS
        else:
            verdict = INCONCLUSIVE
        per_d = group["final"] / (3 * group["p"] * group["hidden"])
        note = (f"slope {slope:.4g} +- {slope_se:.2g}, intercept {coef[1]:.4g}; quadratic term {quadratic[0]:.3g} "
                f"+- {quadratic_se[0]:.2g} (t critical {critical:.3g}: {'curved' if curved else 'not curved'}); "
                f"LLC / 3pK {per_d.min():.3g}-{per_d.max():.3g}")  # fmt: skip
        out.append(row(claim, tag, f"R^2 of final LLC on {x} ({name})", r2, math.nan, verdict, len(means),
                       note + left_out) | fitted)  # fmt: skip
        out.append(beats_d_null(claim, tag, group, name) | fitted)
    note = f"no runs of {experiment}{regime_note(outside, regime)}{never_grokked_note(never)}"
    return out or [row(claim, tag, "R^2", math.nan, math.nan, INCONCLUSIVE, 0, note) | {"reads": ()}]


def in_regime(runs: pd.DataFrame, regime: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs in Corollary 4.2's `regime` (all for None), and those left out."""
    if regime is None:
        return runs, runs.iloc[:0]
    inside = runs["regime"] == regime
    return runs[inside], runs[~inside]


def regime_note(outside: pd.DataFrame, regime: str | None) -> str:
    return f"; runs not {regime}, left out: {len(outside)}" if len(outside) else ""


def beats_d_null(claim, tag, group: pd.DataFrame, name: str) -> dict:
    """The theory's constant K_eff (3p - 1) / 2 against a fixed fraction of d = 3pK, as predictors of the
    final LLC of one line's runs (each fitted through 0 by least squares)."""
    statistic = f"residual SS of LLC = a K_eff (3p - 1)/2 over that of LLC = b 3pK ({name})"
    if "final_K_eff" not in group or group["final_K_eff"].isna().any() or len(group) < 3:
        return row(claim, tag, statistic, math.nan, math.nan, INCONCLUSIVE, len(group), "K_eff not measured")
    y = group["final"].to_numpy(float)
    theory = (group["final_K_eff"] * (3 * group["p"] - 1) / 2).to_numpy(float)
    null = (3 * group["p"] * group["hidden"]).to_numpy(float)

    def rss(xs):
        a = xs @ y / (xs @ xs)
        return float(((y - a * xs) ** 2).sum()), a

    (theory_rss, a), (null_rss, b) = rss(theory), rss(null)
    ratio = theory_rss / null_rss if null_rss > 0 else math.nan
    verdict = HOLDS if ratio <= NULL_RSS_HOLDS else FAILS if ratio > 1 else INCONCLUSIVE
    note = f"a = {a:.3g} (theory: 1), b = {b:.3g}; runs {len(group)}"
    return row(claim, tag, statistic, ratio, math.nan, verdict, len(group), note)


def fig1a_linear_p(evidence, preset):
    return linear_law(evidence, preset, "fig1a_linear_p", "vary_p", "p", "hidden")


def fig1b_linear_K(evidence, preset):  # the paper's claim is about the subabundant regime (section 6, line 258)
    return linear_law(evidence, preset, "fig1b_linear_K", "vary_K", "hidden", "p", SUBABUNDANT)
