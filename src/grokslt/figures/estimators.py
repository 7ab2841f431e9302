"""One figure per claim of the coefficient's value or shape (Figures 1a, 1b and 2, K_eff's closed form): every
estimator that exists for it beside the paper's closed form and the nulls (`shared/CLAIMS.md`).

Drawn per claim, on a log scale (the estimands span decades: lambda_Q of a local preset ~ 60, r / 2 ~ 30,000 at
paper scale): the LLC at each preset that estimated the runs (the runs' own; the certified preset, whichever it is,
the reach preset included), marked as every LLC is (`style.mark_estimates`), each with lambda_Q at its own
(nbeta, gamma) dashed in its colour; the data-rank truth r / 2 where its rule applies (`grokslt.analysis.coefficient`;
where it does not, the figure says why); the paper's closed form K_eff (3p - 1) / 2; the quadratic null tr(H) / 2 and
the trivial null d / 2 = 3pK / 2. A note under the legend says, per preset, what its estimand reaches of V's known
coefficient (the reach rule) and where lambda_Q is tr(H) / 2, i.e. where the estimate measures curvature.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from grokslt.analysis.claims.data_rank import rank_reason
from grokslt.analysis.claims.reach import REACH_MIN
from grokslt.figures import inputs, style

SUBABUNDANT = "subabundant"  # Corollary 4.2's regime as the summary names it (`grokslt.analysis.theory`, torch-bound)

OWN, CERTIFIED = "own", "certified"
SOURCE_COLOUR = {OWN: style.LLC, CERTIFIED: style.TRUSTED}
CLOSED_FORM = {"color": style.PALETTE[0], "linestyle": "--", "marker": "s", "markersize": 2.5, "linewidth": 1.0,
               "label": r"paper's closed form $K_{eff}(3p-1)/2$"}  # fmt: skip
TRACE_NULL = {"color": style.TRACE, "linestyle": ":", "linewidth": 1.2, "label": "quadratic null tr(H) / 2"}
D_NULL = {"color": "0.45", "linestyle": "-.", "linewidth": 0.9, "label": "trivial null d / 2 = 3pK / 2"}
HALF_RANK = {"color": "black", "marker": "D", "markersize": 3, "linewidth": 0.8,
             "label": "r / 2, the learning coefficient (data rank; interpolating)"}  # fmt: skip
LAMBDA_Q = {"linestyle": "--", "marker": "^", "markersize": 2.5, "linewidth": 0.9}
TRACE_MATCH = 0.1  # lambda_Q within this of tr(H) / 2: the estimand is the Hessian trace
YLABEL = "coefficient or estimate (log scale)"


# -- one run's estimators ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EstimatorTables:
    """What the estimators are read from, each table read once: {run: loss_data.csv}, {run: certified.csv} and
    {run: coefficient.csv} (the last two empty where the figure was given none)."""

    loss: dict[str, pd.DataFrame]
    certified: dict[str, pd.DataFrame]
    coefficient: dict[str, pd.DataFrame]

    @classmethod
    def of(cls, read) -> EstimatorTables:
        return cls(read.loss_data, read.certified, read.coefficient)


def llc_sources(read: EstimatorTables, run: str, own_preset: str) -> dict[str, pd.DataFrame]:
    """{source: the run's LLC estimates} in step order: the runs' own (loss_data.csv) and the certified ones
    (certified.csv, where given), each with step, llc, mcse, converged, local, descends, lambda_q, v_reach, preset."""
    own = inputs.estimated(read.loss[run]).assign(preset=own_preset)
    sources = {OWN: own}
    certified = read.certified.get(run)
    if certified is not None and certified["llc_mean"].notna().any():
        sources[CERTIFIED] = certified[certified["llc_mean"].notna()].rename(columns={"llc_mean": "llc"})
    columns = ["step", "llc", "mcse", "converged", "local", "descends", "lambda_q", "v_reach", "preset", "nbeta",
               "localization"]  # fmt: skip
    tables = {name: table.reindex(columns=columns).sort_values("step", ignore_index=True)
              for name, table in sources.items()}  # fmt: skip
    return {name: table.assign(descends=table["descends"].eq(True)) for name, table in tables.items()}


def half_trace(table: pd.DataFrame) -> tuple[pd.Series, str]:
    """tr(H) / 2 per checkpoint of a loss table: the exact trace where the run has it everywhere, else Hutchinson's."""
    if "trace_exact" in table and table["trace_exact"].notna().all():
        return table["trace_exact"] / 2, "exact"
    return table["trace_hutchinson"] / 2, "Hutchinson"


# -- finals of a sweep (Figures 1a, 1b, K_eff) ---------------------------------------------------------------
def finals(read: EstimatorTables, rows: pd.DataFrame) -> pd.DataFrame:
    """One row per run: p, hidden, K_eff (3p-1)/2, d / 2, tr(H) / 2, r / 2 (blank with `rank_why` where the rule
    gives none), and per LLC source its final estimate, marks, lambda_Q, reach and preset (`<source>_<column>`)."""
    coefficient = read.coefficient
    out = []
    for _, summary in rows.iterrows():
        run = summary["run"]
        table = inputs.loss_table(read.loss, run, ["step", "llc", "trace_hutchinson"])
        trace, trace_kind = half_trace(table)
        record = {"run": run, "p": summary["p"], "hidden": summary["hidden"],
                  "keff_llc": summary.get("final_keff_llc", np.nan),
                  "half_d": 3 * summary["p"] * summary["hidden"] / 2, "half_trace": trace.iloc[-1],
                  "trace_kind": trace_kind, "regime": summary.get("regime")}  # fmt: skip
        record |= final_rank(coefficient.get(run), int(table["step"].iloc[-1]))
        if pd.notna(record.get("coefficient_trace")):
            record |= {"half_trace": record.pop("coefficient_trace"), "trace_kind": "exact"}
        for source, estimates in llc_sources(read, run, str(summary.get("llc_preset") or "own")).items():
            if len(estimates):
                record |= {f"{source}_{key}": value for key, value in estimates.iloc[-1].items() if key != "step"}
        out.append(record)
    return pd.DataFrame(out)


def final_rank(table: pd.DataFrame | None, step: int) -> dict:
    """r / 2 at a run's final checkpoint, or why there is none (`rank_why`), and the table's tr(H) / 2 there."""
    if table is None:
        return {"half_rank": np.nan, "rank_why": "no coefficient table"}
    at = table[table["step"] == step]
    if at.empty:
        return {"half_rank": np.nan, "rank_why": f"no coefficient at the final step {step}"}
    checkpoint = at.iloc[0]
    return {"half_rank": checkpoint["half_rank"], "rank_why": rank_reason(checkpoint),
            "loss_fraction": checkpoint["loss_fraction"], "coefficient_trace": checkpoint["half_trace"]}  # fmt: skip


def source_marks(group: pd.DataFrame, source: str) -> pd.DataFrame:
    """A source's finals in `style.mark_estimates` columns (llc, converged, local, descends), where it has one."""
    group = group[group[f"{source}_llc"].notna()]
    marks = group[[f"{source}_{c}" for c in ("llc", "converged", "local", "descends")]]
    marks = marks.set_axis(["llc", "converged", "local", "descends"], axis=1)
    return marks.assign(converged=marks["converged"].eq(True), local=marks["local"].eq(True),
                        descends=marks["descends"].eq(True))  # fmt: skip


def sources_of(table: pd.DataFrame) -> list[str]:
    return [source for source in (OWN, CERTIFIED) if f"{source}_llc" in table and table[f"{source}_llc"].notna().any()]


def preset_words(table: pd.DataFrame, source: str) -> str:
    """'the local preset': the presets of a source's estimates."""
    presets = sorted(table[f"{source}_preset"].dropna().astype(str).unique())
    return f"the {', '.join(presets) or source} preset"


def source_label(table: pd.DataFrame, source: str) -> str:
    kind = "the runs' own" if source == OWN else "certified"
    return f"LLC at {preset_words(table, source)} ({kind})"


def per_x(group: pd.DataFrame, x: str) -> pd.DataFrame:
    """The finals averaged per x (seeds), marks kept only where every averaged run has them."""
    flags = [c for c in group if c.endswith(("_converged", "_local"))]
    descends = [c for c in group if c.endswith("_descends")]
    numeric = group.select_dtypes("number").columns.difference([x, *flags, *descends])
    means = group.groupby(x)[list(numeric)].mean()
    alls = group.groupby(x)[flags].agg(lambda s: s.eq(True).all())
    anys = group.groupby(x)[descends].agg(lambda s: s.eq(True).any())
    texts = group.groupby(x)[[c for c in group if c.endswith("_preset")]].first()
    return pd.concat([means, alls, anys, texts], axis=1).reset_index().sort_values(x)


def draw_estimators(ax, table: pd.DataFrame, x: str) -> None:
    """Every estimator of one line of a sweep against x, on a log scale."""
    for source in sources_of(table):
        colour, shown = SOURCE_COLOUR[source], table[table[f"{source}_llc"].notna()]
        marks = source_marks(shown, source).assign(**{x: shown[x].to_numpy()})
        on_scale = style.on_scale(marks).where(marks["llc"] > 0)
        ax.plot(shown[x], on_scale, "-", color=colour, linewidth=1.0, label=source_label(table, source))
        style.mark_estimates(ax, marks[on_scale.notna() | style.descending(marks)], colour, labelled=False, size=3.5,
                             x=x)  # fmt: skip
        if shown[f"{source}_lambda_q"].notna().any():  # blanks break the line: no segment joins distant values
            ax.plot(shown[x], shown[f"{source}_lambda_q"], color=colour, **LAMBDA_Q,
                    label=rf"$\lambda_Q$ at {preset_words(table, source)}'s $n\beta,\gamma$")  # fmt: skip
    ax.plot(table[x], table["keff_llc"], **CLOSED_FORM)
    ax.plot(table[x], table["half_trace"], **TRACE_NULL)
    ax.plot(table[x], table["half_d"], **D_NULL)
    ranked = table[table["half_rank"].notna()]
    if len(ranked):
        ax.plot(ranked[x], ranked["half_rank"], **HALF_RANK)
    ax.set_yscale("log")


def rank_note(table: pd.DataFrame, what: str) -> str:
    """What the figure shows of r / 2: where it applies, and why not elsewhere."""
    applies = int(table["half_rank"].notna().sum())
    why = table.loc[table["half_rank"].isna(), "rank_why"].value_counts()
    if not len(why):
        return f"r / 2 shown at every {what}"
    reasons = []
    for reason, count in why.items():
        if reason == "not interpolating" and "loss_fraction" in table:
            fraction = table.loc[table["rank_why"] == reason, "loss_fraction"]
            reason += f": $L_n / L_n(0)$ {spread(fraction, '.2g')}"
        reasons.append(f"{count} {reason}")
    head = "r / 2 does not apply" if not applies else f"r / 2 shown at {applies} of {len(table)} {what}s; elsewhere"
    return f"{head} ({'; '.join(reasons)}): the data-rank rule gives no learning coefficient there"


def reach_notes(table: pd.DataFrame, sources: list[str]) -> list[str]:
    """Per LLC source: the share of V's known coefficient its estimand reaches, and whether lambda_Q is tr(H) / 2."""
    notes = []
    for source in sources:
        name = f"LLC at {preset_words(table, source)}"
        reach = table[f"{source}_v_reach"].dropna() if f"{source}_v_reach" in table else pd.Series(dtype=float)
        if reach.empty:
            said = f"{name}: the reach of V's known coefficient was not measured"
        elif reach.min() >= REACH_MIN:
            said = f"{name}: the estimand reaches {reach.min():.0%}+ of V's known coefficient (it may decide)"
        else:
            said = (f"{name}: the estimand reaches only {reach.median():.2%} of V's known coefficient (median): not "
                    "the coefficient, its value and scaling decide nothing (reach rule)")  # fmt: skip
        laplace = table[f"{source}_lambda_q"] / table["half_trace"]
        if laplace.notna().any() and (laplace.dropna() - 1).abs().max() <= TRACE_MATCH:
            said += r"; its estimand $\lambda_Q$ = tr(H) / 2: it measures the Hessian trace"
        notes.append(said)
    return notes


def legend_with_notes(fig, axes, notes: list[str]) -> None:
    """One legend under the panels, the notes as its title (a caption's place, off the data)."""
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    wrapped = "\n".join(textwrap.fill(note, 130) for note in notes)
    legend = fig.legend(entries.values(), entries.keys(), fontsize=5.5, ncols=3, loc="outside lower center",
                        title=wrapped, title_fontsize=5.5)  # fmt: skip
    legend.get_title().set_color("0.25")


def sweep_claim(read, experiment: str, x: str, line: str, xlabel: str, title: str, regime: str | None = None):
    """Figures 1a and 1b at every estimator: one panel per line (K for 1a, p for 1b), over the runs that reached
    val 95% (the claim's finals)."""
    rows = inputs.experiment_rows(read.summary, experiment, "summary/runs.csv")
    inputs.require_columns(rows, [x, line], "summary/runs.csv")
    grokked = inputs.grokked(rows)
    table = finals(EstimatorTables.of(read), rows[grokked])
    if table.empty:
        return nothing_to_draw(f"none of the {len(rows)} runs of {experiment} reached val 95%: no final LLC of the "
                               "paper's to test Figure 1's law on")  # fmt: skip
    lines = sorted(table[line].unique())
    fig, axes = plt.subplots(1, len(lines), figsize=(style.PAGE_WIDTH, 3.9), squeeze=False, sharey=True)
    for ax, value in zip(axes[0], lines, strict=True):
        draw_estimators(ax, per_x(table[table[line] == value], x), x)
        ax.set_title(f"{'K' if line == 'hidden' else line} = {value}", fontsize=7)
        ax.set_xlabel(xlabel)
    axes[0, 0].set_ylabel(YLABEL)
    style.legend_marks(axes[0, 0], pd.concat([source_marks(table, s) for s in sources_of(table)]))
    notes = reach_notes(table, sources_of(table)) + [rank_note(table, "final"), trace_note(table)]
    never = int((~grokked).sum())
    if never:
        notes.append(f"{never} of {len(rows)} runs never reached val 95%: no final LLC of the paper's, left out")
    if regime and "regime" in table and (table["regime"] != regime).any():
        outside = table.loc[table["regime"] != regime, x].unique()
        name = "K" if x == "hidden" else x
        notes.append(f"{name} = {', '.join(f'{v:g}' for v in sorted(outside))}: not {regime}, outside the claim")
    legend_with_notes(fig, axes[0], notes)
    fig.suptitle(title, fontsize=7)
    return fig


def nothing_to_draw(why: str):
    """A figure that says why it has no data, rather than no figure."""
    fig, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 1.2))
    ax.set_axis_off()
    ax.text(0.5, 0.5, textwrap.fill(why, 60), ha="center", va="center", fontsize=7, transform=ax.transAxes)
    return fig


def trace_note(table: pd.DataFrame) -> str:
    kinds = sorted(table["trace_kind"].unique())
    return f"tr(H) / 2: the {' and '.join(kinds)} trace at each final checkpoint"


def claim_fig1a(read, experiment: str):
    return sweep_claim(read, experiment, "p", "hidden", "modulus $p$",
                       "Figure 1a's claim (final LLC linear in p) at every estimator, beside the closed form and the "
                       "nulls")  # fmt: skip


def claim_fig1b(read, experiment: str):
    return sweep_claim(read, experiment, "hidden", "p", "hidden width $K$",
                       "Figure 1b's claim (final LLC linear in K, subabundant) at every estimator, beside the closed "
                       "form and the nulls", SUBABUNDANT)  # fmt: skip


# -- K_eff's closed form -----------------------------------------------------------------------------------
def claim_keff(read, experiments: list[str]):
    """Each estimator's final against K_eff (3p - 1) / 2 over the runs of `experiments` that reached val 95% in the
    subabundant regime (the claim's runs): on the diagonal where the closed form holds; the claim's band shaded."""
    from grokslt.analysis.claims.keff import RATIO_HOLDS  # (its module imports torch: only where this figure is drawn)

    rows = pd.concat([inputs.experiment_rows(read.summary, e, "summary/runs.csv") for e in experiments])
    rows = rows.drop_duplicates("run")
    inputs.require_columns(rows, ["p", "hidden"], "summary/runs.csv")
    grokked = inputs.grokked(rows) & rows.get("final_keff_llc", pd.Series(np.nan, rows.index)).gt(0)
    inside = rows["regime"] == SUBABUNDANT if "regime" in rows else pd.Series(True, index=rows.index)
    table = finals(EstimatorTables.of(read), rows[grokked & inside])
    if table.empty:
        return nothing_to_draw(f"none of the {len(rows)} runs of {', '.join(experiments)} reached val 95% in the "
                               f"{SUBABUNDANT} regime: no final LLC for Remark 5.5's closed form")  # fmt: skip
    fig, ax = plt.subplots(figsize=(style.PAGE_WIDTH * 0.8, 4.8))
    closed = table["keff_llc"]
    span = np.array([closed.min() / 1.5, closed.max() * 1.5])
    ax.plot(span, span, color=CLOSED_FORM["color"], linewidth=1.0, label=r"estimate = $K_{eff}(3p-1)/2$ (the claim)")
    ax.fill_between(span, span * RATIO_HOLDS[0], span * RATIO_HOLDS[1], color=CLOSED_FORM["color"], alpha=0.12,
                    linewidth=0, label=f"holds: median ratio in [{RATIO_HOLDS[0]}, {RATIO_HOLDS[1]}]")  # fmt: skip
    sources = sources_of(table)
    for source in sources:
        colour = SOURCE_COLOUR[source]
        marks = source_marks(table, source).assign(keff_llc=closed)
        shown = marks[marks["llc"].gt(0) | style.descending(marks)]
        ax.plot(
            [],
            [],
            "-",
            color=colour,
            linewidth=3,
            label=ratio_label(source_label(table, source), table[f"{source}_llc"], closed),
        )
        style.mark_estimates(ax, shown, colour, labelled=False, size=3.5, x="keff_llc")
        laplace = table[f"{source}_lambda_q"]
        if laplace.notna().any():
            ax.plot(closed, laplace, "^", color=colour, mfc="none", markersize=3.5, markeredgewidth=0.7,
                    label=ratio_label(r"$\lambda_Q$ at its $n\beta,\gamma$", laplace, closed))  # fmt: skip
    ax.plot(closed, table["half_trace"], "v", color=TRACE_NULL["color"], markersize=3,
            label=ratio_label("quadratic null tr(H) / 2", table["half_trace"], closed))  # fmt: skip
    ax.plot(closed, table["half_d"], "+", color=D_NULL["color"], markersize=4,
            label=ratio_label("trivial null 3pK / 2", table["half_d"], closed))  # fmt: skip
    ranked = table["half_rank"].notna()
    if ranked.any():
        ax.plot(closed[ranked], table.loc[ranked, "half_rank"], "D", color="black", markersize=3,
                label=ratio_label("r / 2 (data rank)", table["half_rank"], closed))  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):  # 1, 2, 5 per decade in plain numbers: readable within a decade or two
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1 else f"{value:g}"))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(r"paper's closed form $K_{eff}(3p-1)/2$ at the final checkpoint (log scale)")
    ax.set_ylabel("final estimate (log scale)")
    style.legend_marks(ax, pd.concat([source_marks(table, s) for s in sources]))
    notes = reach_notes(table, sources) + [rank_note(table, "final"), trace_note(table)]
    left = int((~(grokked & inside)).sum())
    if left:
        notes.append(f"{left} of {len(rows)} runs left out (never reached val 95% or not {SUBABUNDANT})")
    legend_with_notes(fig, [ax], notes)
    fig.suptitle(f"K_eff's closed form (Remark 5.5) at every estimator: the {len(table)} finals of "
                 f"{', '.join(experiments)}", fontsize=7)  # fmt: skip
    return fig


def spread(values: pd.Series, fmt: str) -> str:
    """'low-high' of some values, or the one value where they agree at this precision."""
    low, high = format(values.min(), fmt), format(values.max(), fmt)
    return low if low == high else f"{low}-{high}"


def ratio_label(name: str, values: pd.Series, closed: pd.Series) -> str:
    ratio = (values / closed).dropna()
    return f"{name}: median ratio {ratio.median():.3g}" if len(ratio) else name


# -- Figure 2: one run's trajectory ------------------------------------------------------------------------
def claim_fig2(read, experiment: str):
    """The first run of `experiment` against training step: every estimator's trajectory (log), the transitions,
    and below, the accuracies that define them."""
    run = inputs.experiment_rows(read.summary, experiment, "summary/runs.csv").iloc[0]
    tables = EstimatorTables.of(read)
    table = inputs.loss_table(tables.loss, run["run"], ["step", "train_acc", "val_acc", "llc", "trace_hutchinson"])
    sources = llc_sources(tables, run["run"], str(run.get("llc_preset") or "own"))
    fig, (ax, acc_ax) = plt.subplots(2, 1, figsize=(style.PAGE_WIDTH * 0.8, 5.0), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 1]})  # fmt: skip
    notes = []
    for source, estimates in sources.items():
        if estimates.empty:
            continue
        colour, label = SOURCE_COLOUR[source], f"LLC, {estimates['preset'].iloc[0]} preset{settings(estimates)}"
        on_scale = style.on_scale(estimates).where(estimates["llc"] > 0)
        ax.plot(estimates["step"], on_scale, color=colour, linewidth=0.9, label=label)
        style.mark_estimates(ax, estimates, colour, labelled=False, size=2.5)
        if estimates["lambda_q"].notna().any():  # blanks break the line: no segment joins distant checkpoints
            ax.plot(estimates["step"], estimates["lambda_q"], color=colour, **LAMBDA_Q,
                    label=rf"$\lambda_Q$ at the {estimates['preset'].iloc[0]} preset's $n\beta,\gamma$")  # fmt: skip
        notes.append(trajectory_reach(estimates, label, table))
    trace, kind = half_trace(table)
    ax.plot(table["step"], trace, **(TRACE_NULL | {"label": f"quadratic null tr(H) / 2 ({kind})"}))
    if "keff_llc" in table and table["keff_llc"].notna().any():
        ax.plot(table["step"], table["keff_llc"], **(CLOSED_FORM | {"marker": None}))
    else:
        notes.append("K_eff (3p - 1) / 2: not in the loss table")
    ax.axhline(3 * run["p"] * run["hidden"] / 2, **D_NULL)
    notes.append(trajectory_rank(ax, tables.coefficient.get(run["run"])))
    ax.set_yscale("log")
    ax.set_ylabel(YLABEL)
    style.legend_marks(ax, pd.concat([e for e in sources.values() if len(e)]))
    acc_ax.plot(table["step"], table["train_acc"], color=style.TRAIN, label="train accuracy")
    acc_ax.plot(table["step"], table["val_acc"], color=style.VALIDATION, label="validation accuracy")
    acc_ax.set_ylim(-0.03, 1.03)
    acc_ax.set_ylabel("accuracy")
    acc_ax.set_xlabel("training step")
    for axis in (ax, acc_ax):
        style.mark_transitions(axis, run, labelled=axis is ax)
    legend_with_notes(fig, [ax, acc_ax], [n for n in notes if n])
    fig.suptitle(f"Figure 2's claims (the LLC peaks before val 50%, mirrors the validation loss) at every "
                 f"estimator\n{style.run_words(run['run'])}", fontsize=7)  # fmt: skip
    return fig


def settings(estimates: pd.DataFrame) -> str:
    """' (nbeta N, gamma G)' of a table's estimates where it records one setting of each, else ''."""
    nbeta, gamma = estimates["nbeta"].dropna().unique(), estimates["localization"].dropna().unique()
    return rf" ($n\beta$ {nbeta[0]:g}, $\gamma$ {gamma[0]:g})" if len(nbeta) == len(gamma) == 1 else ""


def trajectory_reach(estimates: pd.DataFrame, label: str, table: pd.DataFrame) -> str:
    """What one preset's estimand is along the trajectory: its reach of V's coefficient; lambda_Q against tr(H) / 2."""
    reach = estimates["v_reach"].dropna()
    said = (f"{label}: reach of V's known coefficient not measured" if reach.empty else
            f"{label}: the estimand reaches at most {100 * reach.max():.2g}% of V's known coefficient")  # fmt: skip
    trace = half_trace(table)[0].set_axis(table["step"])
    ratio = (estimates.set_index("step")["lambda_q"] / trace.reindex(estimates["step"])).dropna()
    if len(ratio) and (ratio - 1).abs().max() <= TRACE_MATCH:
        said += r" and $\lambda_Q$ = tr(H) / 2 throughout: this LLC's shape is the Hessian trace's, not the "
        said += "coefficient's"
    return said


def trajectory_rank(ax, coefficient: pd.DataFrame | None) -> str:
    """r / 2 at the tabled checkpoints where its rule applies; the note says where and why not elsewhere."""
    if coefficient is None:
        return "r / 2: no coefficient table for this run (not among the config's coefficient experiments)"
    ranked = coefficient[coefficient["half_rank"].notna()]
    if len(ranked):
        ax.errorbar(ranked["step"], ranked["half_rank"], yerr=ranked.get("half_rank_stderr"), **HALF_RANK)
    reasons = coefficient.apply(rank_reason, axis=1)
    table = coefficient.assign(rank_why=reasons)
    return rank_note(table, "tabled checkpoint")
