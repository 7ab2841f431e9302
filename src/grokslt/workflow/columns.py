"""What every column of every table the workflow writes means, and the reference `docs/columns.md`.

The columns of each table come from the code that writes it, never from a list kept here: `observed_columns`
pushes a tiny run (p = 5, K = 2, two training steps, a 24-draw sampler) through the same writers the
workflow calls, in a temporary directory, and reads the headers back (about a second); the tables whose
code names its columns in a constant (claims, scorecard, accuracy) are read from that constant. A table's
columns known only at run time are written as one pattern: `llc_chain_{i}` (one per chain) and
`version_{package}`. The meanings are DESCRIPTIONS, a table's own `meanings` where a name means something
else there, and the help text of the settings classes (`grokslt.settings`) for the columns that are settings.

    python -m grokslt.workflow.columns > docs/columns.md

regenerates the reference; tests/workflow/test_columns.py fails when a column has no meaning or the file is stale.
"""

# one meaning per line in DESCRIPTIONS, however long:
# ruff: noqa: E501
from __future__ import annotations

import functools
import re
import sys
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grokslt.workflow.studies import STUDIES

REGENERATE = "python -m grokslt.workflow.columns > docs/columns.md"

# Names of columns that one table has several of, as documented: (pattern, documented name).
PATTERNS = [(re.compile(r"llc_chain_\d+"), "llc_chain_{i}"), (re.compile(r"version_\w+"), "version_{package}")]

# One meaning per column name; a table whose column means something else says so in its own `meanings`.
DESCRIPTIONS = {
    # the training log (train_log.csv, loss_data.csv)
    "step": "training step (optimizer steps; the paper's 'epochs', one step on one fresh batch) of the evaluation or checkpoint",
    "samples_seen": "training samples drawn so far: step x batch_size",
    "training_step": "the authors' name for samples_seen (the same value), kept so that their analysis code reads our tables",
    "train_loss": "centred loss L_n = 1/(2n) ||(Y - Yhat) P_perp||_F^2 over the whole training set (dimensionless): the L_n of the LLC and the Hessian",
    "val_loss": "the same centred loss over the validation set",
    "train_acc": "fraction of training pairs whose arg-max output is the target class (0 to 1)",
    "val_acc": "fraction of validation pairs whose arg-max output is the target class (0 to 1)",
    "train_acc_offset": "training accuracy after subtracting each output's mean over the training set, a shift the centred loss leaves free (0 to 1)",
    "val_acc_offset": "validation accuracy after subtracting each output's mean over the training set (0 to 1)",
    "train_loss_authors": "the training loss as the authors' logs report it: their evaluation one example at a time, each output vector centred over its own entries, divided by p",
    "val_loss_authors": "the validation loss as the authors' logs report it (see train_loss_authors)",
    "diverged": "True on the evaluation where training diverged (loss not finite or above 1000 times the zero function's loss): no checkpoint, no estimates",
    "llc": "the LLC estimate at the checkpoint (llc_mean of the LLC tables; dimensionless; blank, with its other LLC columns, at checkpoints a thinned trajectory skips: llc.every)",
    "llc_every": "the LLC trajectory's thinning (llc.every): every k-th checkpoint, the last and those beside the transitions (1: all)",
    # an LLC estimate (runs/RUN/llc/*.csv, certified.csv, sensitivity.csv, calibration.csv)
    "llc_mean": "the LLC estimate: mean over the chains that did not diverge of nbeta (mean draw loss - L_init) (dimensionless)",
    "llc_std": "standard deviation of the per-chain estimates (blank with one chain)",
    "llc_chain_{i}": "chain i's estimate, i = 0 .. num_chains - 1 (blank where it diverged)",
    "n_diverged": "chains that diverged (a non-finite loss or |loss| > 1e8), left out of the estimate",
    "loss_slope": "least-squares slope of the loss over the second half of the draws, mean over chains (loss per draw; near 0 for stationary chains)",
    "llc_drift": "how far the estimate moves over the second half of the draws at the fitted slope, nbeta x loss_slope x draws / 2 (LLC units; near 0 for stationary chains)",
    "noise": "where the Gaussian noise came from: xoshiro128++ (the compiled CPU kernels), torch or devinterp",
    "init_loss_stderr": "standard error of L_init (0 where L_init is L_n itself); part of mcse",
    "llc_full": "the full-batch estimate nbeta (mean L_n(w_t) - L_n(w*)) over the thinned observations of the chains that did not diverge (dimensionless)",
    "observed_every": "draws between two full-batch observations of each chain (the thinning; their cost <= 25% of the sampling by default)",
    "r_hat": "honest R-hat: the larger rank-normalised split R-hat of the full-batch observables nbeta (L_n(w_t) - L_n(w*)) and ||w_t - w*||^2 (converged needs <= 1.01)",
    "ess_bulk": "honest bulk ESS: the smaller of the two full-batch observables' (observations; converged needs >= 100)",
    "ess_tail": "honest tail ESS (the smaller ESS of the 5% and 95% quantiles), the smaller of the two observables' (converged needs >= 100)",
    "mcse": "Monte Carlo standard error from the full-batch observations, with nbeta x init_loss_stderr added in quadrature (LLC units)",
    "converged": "True when no chain diverged, R-hat <= 1.01 and both ESS >= 100 on both full-batch observables, and their drift is within 5% of the estimate or 10 MCSE",
    "r_hat_minibatch": "R-hat of the minibatch draws nbeta (L_t - L_init), kept for comparison: white batch noise pulls it toward 1",
    "ess_bulk_minibatch": "bulk ESS of the minibatch draws (inflated by white batch noise; for comparison)",
    "ess_tail_minibatch": "tail ESS of the minibatch draws (for comparison)",
    "mcse_minibatch": "MCSE of llc_mean from the minibatch draws, L_init's error included (LLC units; for comparison)",
    "converged_minibatch": "the earlier verdict on the minibatch draws: R-hat <= 1.01, ESS >= 100 per chain, drift small",
    "loss_excess": "mean over observations of L_n(w_t) - L_n(w*): how much worse the sampled networks fit the training set",
    "loss_excess_fraction": "loss_excess / zero_loss (local needs <= 0.1)",
    "zero_loss": "L_n(0): the training loss of the zero function, the task's own loss scale",
    "sampled_train_acc": "mean training accuracy of the sampled networks (each output's training-set mean removed first; 0 to 1)",
    "centre_train_acc": "the same accuracy of w* itself (0 to 1)",
    "relative_distance": "mean over observations of ||w_t - w*|| / ||w*||",
    "descends": "True when the chains' mean loss is below L_n(w*) by more than 2 standard errors (over the chains' means): w* is no minimum, the chains left its basin downhill (a negative LLC); never local",
    "local": "True when loss_excess <= 0.1 zero_loss and the chains do not descend: they sample networks near w*, neither the localizing Gaussian nor a lower basin",
    "exact_llc": "weights V only: the closed-form estimand nbeta E[L_n - L_n(w*)] of the Gaussian posterior of V with W held at w* (blank otherwise)",
    "exact_learning_coefficient": "weights V only: that model's learning coefficient p rank(Phi_c) / 2 (pK / 2 at full rank)",
    "lambda_q": "the quadratic (Laplace) estimand at the row's nbeta and gamma: 1/2 sum_i nbeta h_i / (nbeta h_i + gamma) over the Gauss-Newton spectrum at w* (stochastic Lanczos quadrature, mid-point of lambda_q_lower and lambda_q_upper); tr(H) / 2 where nbeta h << gamma (blank for refined estimates and other model families)",
    "lambda_q_stderr": "standard error of lambda_q over the Lanczos probes",
    "lambda_q_lower": "lambda_q by the Gauss-Radau rule with a node at 0: a lower bound of each probe's quadrature value (Golub-Meurant)",
    "lambda_q_upper": "lambda_q by the Gauss rule: an upper bound of each probe's quadrature value; the gap to lambda_q_lower is the quadrature's error, which more Lanczos steps close",
    "v_estimand": "the V-only estimand at the row's nbeta and gamma (W held at w*, the Gaussian posterior of V in closed form, grokslt.estimation.linear_v)",
    "v_coefficient": "V's learning coefficient with W held at w*: p rank(Phi_c) / 2, known exactly",
    "v_reach": "v_estimand / v_coefficient: the share of a known learning coefficient that these sampler settings can measure (CLAIMS.md's reach rule asks >= 0.9 before a value or scaling claim is decided)",
    "llc_minus_lambda_q": "llc_mean - lambda_q: what the estimate adds beyond the Laplace approximation at the same settings (SLT's singular part plus the sampler's bias)",
    "llc_minus_lambda_q_stderr": "the error of llc_minus_lambda_q: mcse and lambda_q_stderr in quadrature",
    "lambda_q_lanczos_steps": "the Lanczos steps lambda_q took (the most over its probes' runs): at most laplace_lanczos_steps, fewer where its bracket closed to laplace_bracket_rtol first",
    "accept_rate": "mala only: the Metropolis acceptance rate, mean over chains (0 to 1)",
    "backend": "native (this package's batched sampler) or devinterp (devinterp 1.3.2 itself)",
    "preset": "the sampler preset (paper_code, paper_code_lr_wd, paper_text, calibrated) or custom",
    "init_loss_mode": "how L_init was computed: batches (mean of minibatch losses, devinterp's way), full (L_n over the training set) or expected (L_n times the epoch's mean batch-centring factor: the minibatch losses' exact expectation)",
    # the Hessian (loss_data.csv, grokslt hessian)
    "trace_hutchinson": "Hutchinson estimate of Tr(H), H the Hessian of L_n at the checkpoint: mean of v^T H v over Rademacher probes v",
    "trace_stderr": "standard error of trace_hutchinson over the probes (blank with one probe)",
    "trace_exact": "the exact Tr(H) of L_n at the checkpoint, in closed form",
    "hessian_preset": "the Hessian preset: paper_code (2 probes) or paper_text (100 probes)",
    # theory (runs/RUN/theory.csv, theory/*.csv)
    "p": "prime modulus p",
    "K": "hidden width K",
    "d": "input dimension d",
    "K_eff": "effective atoms: the fewest atoms v_j (x) w_j w_j^T whose norms ||v_j|| ||w_j||^2 hold K_eff_mass of the total (blank where the closed forms do not apply)",
    "K_eff_mass": "the share of the total atom norm that defines K_eff (the config's theory.mass)",
    "keff_llc": "Corollary 4.2's LLC with K_eff atoms in place of K (Remark 5.5: K_eff (3p - 1) / 2 when subabundant); blank where the closed forms do not apply",
    "atom_rank_llc": "half the rank of Phi_p's Jacobian on the K_eff atoms alone (blank unless 0 < K_eff <= theory.atom_rank_max)",
    "regime": "Corollary 4.2's regime: subabundant (K (d + p - 1) < p d (d + 1) / 2) or superabundant",
    "generic_llc": "Corollary 4.2's LLC at width K, d = 2p: K (d + p - 1) / 2 when subabundant, else p d (d + 1) / 4; blank where the closed forms do not apply",
    "stage2_llc": "the stage-II (generalising) LLC: Corollary 4.2's value in the subabundant regime, blank when superabundant",
    "lazy_lower": "Corollary 5.3's lower bound p (2p - 1) / 2 on the lazy (memorising) LLC; blank unless K > 2p - 1",
    "lazy_upper": "Corollary 5.3's upper bound p K / 2 on the lazy (memorising) LLC; blank unless K > 2p - 1",
    "lazy_llc_all_pairs": "Theorem 5.2's lazy LLC p min(l, K) / 2 with l = p^2 - 1",
    "expected_rank": "generic rank of Phi_p's Jacobian, min(K (d + p - 1), p d (d + 1) / 2) (Theorem 4.1)",
    "parameter_map_rank": "numerical rank of the Jacobian of Phi_p(theta) = sum_j v_j (x) w_j w_j^T at random parameters",
    "parameter_map_llc": "parameter_map_rank / 2 (Theorem 4.1)",
    "defective": "True when parameter_map_rank < expected_rank (a defective architecture)",
    "data_jacobian_rank": "numerical rank of the Jacobian of theta -> f_theta(X) on all p^2 inputs at random parameters",
    "data_llc": "data_jacobian_rank / 2; also Theorem 5.1's NTK LLC at these parameters",
    "lazy_feature_rank": "l: the rank of the centred lazy features sigma(XW) on all p^2 inputs",
    "lazy_llc": "Theorem 5.2's lazy LLC p min(l, K) / 2 with l = lazy_feature_rank (0 when l = 0)",
    "theorem": "the theorem that gives llc: G.1 (d <= K) or G.2 (d > K)",
    "numerical_llc": "half the numerical rank of the single-output map's Jacobian at random parameters",
    # a run (params.csv, summary/runs.csv)
    "run": "run id: its settings in readable form, e.g. p53_K1024_adam_lr1e-04_wd1e-05_bs128_s0",
    "n_train": "training pairs",
    "n_val": "validation pairs",
    "n_params": "parameters of the network: 3 p K",
    "status": "how training ended: early_stop, max_steps or diverged",
    "status_step": "the step at which training ended (optimizer steps)",
    "version_{package}": "version of grokslt, python, torch, numpy and (where installed) devinterp when the tables were written",
    "experiments": "the experiments the run belongs to, separated by ';'",
    "final_step": "the step at which training ended (optimizer steps)",
    "stopped_early": "True when the early-stop rule ended training",
    "peak_llc": "the largest LLC estimate of the run",
    "peak_llc_step": "the step of peak_llc (optimizer steps)",
    "peak_converged": "converged of the peak_llc estimate",
    "peak_local": "local of the peak_llc estimate",
    "final_trace": "trace_hutchinson at the run's last checkpoint",
    "peak_trace": "the largest trace_hutchinson of the run",
    "peak_trace_step": "the step of peak_trace (optimizer steps)",
    "gsm": "grokking severity measure: mean |train_acc - val_acc| over the regular evaluations (every eval_every steps) when the last val_acc >= 0.95, else 0",
    "memorisation_step": "first evaluated step with train_acc >= 0.99 (blank if none)",
    "grok_step_50": "first evaluated step with val_acc >= 0.5 (blank if none)",
    "grok_step_95": "first evaluated step with val_acc >= 0.95 (blank if none)",
    "saturation_step": "first evaluated step from which val_acc stays >= 0.99 to the end (blank if none)",
    "converged_fraction": "share of the run's checkpoints whose LLC estimate converged (0 to 1)",
    "final_loss_excess_fraction": "loss_excess_fraction of the last checkpoint's estimate",
    "final_relative_distance": "relative_distance of the last checkpoint's estimate",
    "final_descends": "descends of the last checkpoint's estimate (its chains fell below L_n(w*))",
    "final_local": "local of the last checkpoint's estimate",
    "local_fraction": "share of the run's checkpoints whose LLC estimate is local (0 to 1)",
    "closed_forms": "'modular addition' where the paper's closed forms apply; otherwise 'not applied: ...' and the columns after it are blank",
    # calibration
    "seconds": "wall-clock time of one estimate (s)",
    "passes": "True when the grid point passes the rule at this checkpoint: converged, local, no chain diverged, and within 2 combined MCSE of the next smaller step (1.8-2.5x smaller); a setting qualifies when it passes at every checkpoint",
    "extrapolated": "where it passes: the step-extrapolated LLC (r lambda(eps / r) - lambda(eps)) / (r - 1), r the step ratio",
    "systematic": "where it passes: |llc_mean - extrapolated|, the discretisation error carried as a systematic error (LLC units)",
    "chosen": "True on the rows (one per checkpoint) of the grid point the rule chose",
    "why_not": "the criteria the grid point fails, separated by '; ' (blank when it qualifies)",
    # estimator accuracy
    "point": "the point estimated: RUN@STEP (the run's final checkpoint) or RUN@init (its random initial point)",
    "method": "the estimator: a method of the config's estimator_accuracy.methods, 'reference', or 'NAME (bias-reduced)' for the intercept over the nbeta grid",
    "estimate": "the method's mean estimate over its repeats; on bias-reduced rows the intercept of the estimates against 1 / log nbeta",
    "spread": "standard deviation of the estimates over repeats; on bias-reduced rows the intercept's standard error",
    "converged_share": "share of the method's repeats whose estimate converged (0 to 1)",
    "bias": "estimate - reference; on bias-reduced rows estimate - truth (LLC units)",
    "relative_bias": "bias / reference; on bias-reduced rows bias / truth",
    "reference": "the exact estimand E[nbeta (L_n(w) - L_n(w*))] at this nbeta and localization, from long float64 MALA chains",
    "reference_mcse": "Monte Carlo standard error of reference",
    "reference_r_hat": "R-hat of the reference's MALA chains",
    "reference_ess": "bulk ESS of the reference's MALA chains (draws)",
    "reference_converged": "True when the reference's chains pass the convergence criteria (see converged)",
    "reference_step": "the MALA step size, tuned to an acceptance rate in [0.5, 0.9]",
    "reference_accept": "the MALA acceptance rate (0 to 1)",
    "reference_seconds": "wall-clock time of the reference (s)",
    "truth": "the learning coefficient theory gives at the point: data_rank / 2 at an interpolating minimum, hessian_rank / 2 at a critical point, blank elsewhere",
    "truth_rule": "which rule gave truth",
    "loss_at_point": "L_n(w*) at the point",
    "gradient_norm": "norm of the gradient of L_n at the point",
    "data_rank": "rank of the Jacobian of the centred outputs on the training inputs at the point",
    "hessian_rank": "rank of the Hessian of L_n at the point",
    "dimension": "number of parameters",
    # scorecard
    "experiment": "the experiments of our run, separated by ';' (a `worst` row: the one experiment whose runs it covers, a run of two counted in each)",
    "authors_run": "the authors' run with the same settings (its folder under reference/authors/)",
    "metric": "what is compared: the step memorised / val 50% / val 95% / stop, GSM, the LLC at those steps, the peak LLC",
    "ours": "our value of the metric",
    "theirs": "the authors' value of the metric, read from their log",
    "deviation": "ours - theirs",
    "relative_deviation": "deviation / |theirs|",
    "note": "why the row compares nothing (no authors' run, another sampler), or which run is the worst case",
    # claims
    "claim": "the claim's id (one claim of shared/CLAIMS.md)",
    "statistic": "what value measures",
    "value": "the statistic's value",
    "uncertainty": "the uncertainty of value: a standard error or the half-width of a 95% interval (blank where none applies)",
    "verdict": "holds, fails or inconclusive, by the thresholds written beside the claim in grokslt/analysis/claims/",
    "n": "how many runs, groups or points the statistic is computed from",
}  # fmt: skip


@dataclass(frozen=True)
class Table:
    """One output file. `path` is relative to the config's `results`; `about` says what a row is and what
    writes it. A column's meaning is the first of: `meanings`, the help of a field of `settings`,
    DESCRIPTIONS, and for a name `prefix + rest` of `prefixes` (prefix, how to say it, table of `rest`)
    the meaning of `rest` in that table. `like`: another table whose columns this one starts with."""

    path: str
    about: str
    meanings: Mapping[str, str] = field(default_factory=dict)
    settings: tuple[str, ...] = ()  # "module:Class" of settings classes
    prefixes: tuple[tuple[str, str, str], ...] = ()
    like: str | None = None
    kind: str = "column"
    workflow: bool = True  # False: only a command a person runs writes it (the workflow puts its rows elsewhere)


LOG = "runs/RUN/train_log.csv"
LLC = "runs/RUN/llc/chunk{i}of{n}.csv"
TRACES = "runs/RUN/llc/chunk{i}of{n}.npz"
LOSS = "runs/RUN/loss_data.csv"
TRAIN = "grokslt.training.train:TrainConfig"
SAMPLER = "grokslt.estimation.samplers:SamplerSettings"
HESSIAN = "grokslt.analysis.hessian:HessianSettings"
LAPLACE = "grokslt.estimation.laplace:LaplaceSettings"


def study_path(study) -> str:
    """A study's table as the reference names it: RUN and EXPERIMENT for its run and experiment."""
    return study.output.format(run="RUN", experiment="EXPERIMENT")


_LLC_MEANINGS = {  # where a sampler setting's name means the value used
    "init_loss": "L_init: the loss at the checkpoint that the draws are compared with (see init_loss_mode)",
    "nbeta": "inverse temperature n beta used (B / ln B of the batch size B where the preset leaves it open)",
    "batch_size": "the run's training batch size: the sampler's minibatch size and B in nbeta = B / ln B",
    "seed": "seed of the sampler's chains: seed_base made the run's own (grokslt.training.runs.run_seed, from every training setting), so that runs draw independent noise",
    "seed_base": "the seed given to grokslt llc (the config's llc.seed, certified.seed, ...), from which seed is derived",
}

_RETRIED_MEANINGS = {
    "num_draws": "draws per chain: the first try's, or certified.retry_draws where the row is the second try at an estimate that did not converge",
    "seed": "seed of the sampler's chains, derived from seed_base and the run (a second try's chains draw noise of their own from it: step_seed(seed, step, attempt 1))",
}

# the tables the workflow writes but the studies' (`tables()` adds those)
TABLES = [
    Table(LOG, "One row per evaluation, written by `grokslt train`."),
    Table(
        LLC,
        "One row per checkpoint of the chunk, written by `grokslt llc`: the estimate, its diagnostics and every "
        "sampler setting. A sampler's own statistics appear only with that sampler.",
        _LLC_MEANINGS,
        settings=(SAMPLER, LAPLACE),
    ),
    Table(
        TRACES,
        "The chains' losses behind the LLC table of the same name (`grokslt llc --traces`), a NumPy .npz archive; "
        "`grokslt.estimation.llc_chains.load_llc_chains(RUN_DIR)` gives a run's chains as an ArviZ DataTree.",
        {
            "steps": "the checkpoints' steps, int64 [checkpoints]",
            "loss_trace": "the minibatch loss L_t at every draw of every chain, float32 [checkpoints, chains, draws]",
            "observed_loss": "full-batch L_n(w_t) at every observed draw, float64 [checkpoints, chains, observations]",
            "observed_distance_sq": "||w_t - w*||^2 at every observed draw, float64 [checkpoints, chains, observations]",
            "observed_accuracy": "training accuracy of the sampled network at every observed draw, float64 [checkpoints, chains, observations]",
            "centre_loss": "L_n(w*) of each checkpoint, float64 [checkpoints]",
        },
        kind="array",
    ),
    Table(
        "runs/RUN/hessian.csv",
        "One row per checkpoint, written by `grokslt hessian` (the workflow computes the same rows inside "
        "`grokslt tables`, into loss_data.csv's trace columns).",
        settings=(HESSIAN,),
        workflow=False,
    ),
    Table(
        "runs/RUN/theory.csv",
        "One row per checkpoint, written by `grokslt theory --run` (the workflow computes the same rows inside "
        "`grokslt tables`, into loss_data.csv's K_eff and keff_llc): K_eff and the closed forms at the checkpoint. "
        "Only for runs the closed forms describe (the quadratic network, the centred MSE, modular addition): "
        "the command refuses any other run in one line.",
        {"step": "the checkpoint's step (optimizer steps)"},
        workflow=False,
    ),
    Table(
        "runs/RUN/params.csv",
        "One row: the run's settings, dataset, outcome, sampler and versions, in the authors' layout (their names "
        "repeated at the end), written by `grokslt tables`.",
        settings=(TRAIN, HESSIAN),
        prefixes=(("llc_", "LLC sampler: {meaning} (`{rest}` of the LLC tables)", LLC),),
    ),
    Table(
        LOSS,
        "One row per evaluation, written by `grokslt tables`: the training log joined with the LLC tables, the "
        "Hessian trace and the closed forms at each checkpoint (what the figures read).",
        prefixes=(("llc_", "{meaning} (`{rest}` of the LLC tables)", LLC),),
    ),
    Table(
        "runs/RUN/certified.csv",
        "`certified.preset`'s sampler (the calibration's choice, or a named preset such as `local`) at every "
        "`certified.every`-th checkpoint and at the transitions (`grokslt llc --preset P --every K`), for the "
        "certified claims and Figure 9's third row. With `certified.retry_draws`, an estimate that did not converge is estimated once more "
        "with that many draws and fresh noise (`grokslt llc --retry-draws`), and the second estimate is the row.",
        _LLC_MEANINGS | _RETRIED_MEANINGS,
        settings=(SAMPLER, LAPLACE),
        like=LLC,
    ),
    Table(
        "runs/RUN/refined.csv",
        "The refined LLCs of a run of `refined.experiments` (`grokslt.estimation.refined`) at `refined.preset`: one LLC "
        "table per weight group (`weights`, the other weights held at w*) and per data subset (`data`, the pairs whose "
        "loss the posterior uses), at every `refined.every`-th checkpoint and the transitions (`grokslt llc --weights G "
        "| --data D --every K`), joined by `grokslt refined-table`.",
        _LLC_MEANINGS,
        settings=(SAMPLER, LAPLACE),
        like=LLC,
    ),
    Table(
        "runs/RUN/refined/{KIND}.csv",
        "The parts of refined.csv, one LLC table per kind: `all` (all weights, training loss), `weights_G` (group G "
        "alone), `data_D` (data subset D), and `traced` (all weights at the decisive checkpoints, whose per-pair "
        "traces are in traces/).",
        _LLC_MEANINGS,
        settings=(SAMPLER, LAPLACE),
        like=LLC,
    ),
    Table(
        "runs/RUN/waic.csv",
        "One row per checkpoint with per-pair traces (`grokslt waic`, `grokslt.analysis.waic`): WAIC from the training "
        "pairs alone against the Bayes loss measured on the validation pairs. Losses are per pair, without the "
        "Gaussian constant.",
        {
            "step": "the checkpoint's step (optimizer steps)",
            "nbeta": "the sampler's inverse temperature n beta",
            "beta": "beta = nbeta / n, the likelihood's inverse temperature (n training pairs)",
            "draws": "posterior draws pooled over chains (the full-batch observations)",
            "bayes_train_loss": "T_n = -(1/n) sum_i log E_w exp(-l_i(w)) over the training pairs",
            "functional_variance": "V_n = sum_i Var_w l_i(w) over the training pairs (ddof 1)",
            "effective_parameters": "beta V_n = n (WAIC - T_n)",
            "waic": "WAIC = T_n + beta V_n / n: the generalisation loss predicted from the training pairs alone",
            "waic_stderr": "standard error of WAIC over training pairs (not the Monte Carlo error)",
            "bayes_val_loss": "G_n measured: -(1/m) sum_j log E_w exp(-l_j(w)) over the m validation pairs",
            "bayes_val_loss_stderr": "standard error of bayes_val_loss over validation pairs",
            "predicted_gap": "WAIC - T_n: the generalisation gap WAIC predicts",
            "measured_gap": "bayes_val_loss - T_n: the gap measured on the validation pairs",
            "train_loss_at_centre": "the training pairs' centred loss at w*",
            "val_loss_at_centre": "the validation pairs' centred loss at w* (centred over the validation set)",
        },
    ),
    Table(
        "runs/RUN/traces/step{STEP}.nc",
        "Per-pair posterior traces at one decisive checkpoint (`grokslt llc --pair-traces`), an ArviZ DataTree in "
        "NetCDF (`grokslt.estimation.pair_traces`; load with `xarray.open_datatree`); STEP zero-padded to six "
        "digits (step000600.nc), so that sorted names sort by step.",
        {
            "posterior/loss": "L_n(w_t) on the training set at each observed draw (chain, draw)",
            "posterior/distance_sq": "||w_t - w*||^2 (chain, draw)",
            "posterior/accuracy": "training accuracy of the sampled network (chain, draw)",
            "log_likelihood/train": "-l_i(w_t) of every training pair, float32 (chain, draw, train_pair)",
            "log_likelihood/val": "-l_j(w_t) of every validation pair, float32 (chain, draw, val_pair)",
            "constant_data/train_a": "first operand a of each training pair",
            "constant_data/train_b": "second operand b of each training pair",
            "constant_data/train_answer": "answer (a + b) mod p of each training pair",
            "constant_data/train_loss_at_centre": "each training pair's loss l_i(w*)",
            "constant_data/val_a": "first operand a of each validation pair",
            "constant_data/val_b": "second operand b of each validation pair",
            "constant_data/val_answer": "answer of each validation pair",
            "constant_data/val_loss_at_centre": "each validation pair's loss l_j(w*)",
            "constant_data/W": "the checkpoint's first layer W* (input, neuron)",
            "constant_data/V": "the checkpoint's second layer V* (output, neuron)",
        },
        kind="array",
    ),
    Table(
        "summary/runs.csv",
        "One row per run, written by `grokslt summary` from each run's row `runs/RUN/summary.csv` (the same columns "
        "but `experiments`, written by `grokslt tables`; a figure puts together the rows of its own runs). Statistics "
        "cover the evaluations before any divergence.",
        settings=(TRAIN,),
        prefixes=(
            ("final_", "at the last evaluation: {meaning}", LOSS),
            ("llc_", "{meaning} (`{rest}` of the LLC tables)", LLC),
        ),
    ),
    Table(
        "theory/formulas.csv",
        "The paper's closed forms at the experiments' sizes (p, K), written by `grokslt theory`.",
        {"d": "input dimension d = 2p (a and b one-hot)"},
    ),
    Table(
        "theory/rank_checks.csv",
        "The closed forms against numerical Jacobian ranks at random parameters, on a grid of small sizes "
        "(`grokslt theory`).",
    ),
    Table(
        "theory/single_output.csv",
        "Theorems G.1 and G.2 (one output, input dimension d, width K) against numerical ranks (`grokslt theory`).",
        {"llc": "the closed-form LLC of the single-output network (Theorem G.1 or G.2)"},
    ),
    Table(
        "scorecard/scorecard.csv",
        "Our runs against the authors' logs of the same settings (`grokslt scorecard`), read at their evaluation "
        "schedule; the last rows (run `worst`) give the worst relative deviation per experiment and metric.",
        {"run": "our run id ('worst' on the worst-case rows)"},
    ),
    Table(
        "claims/claims.csv",
        "One row per claim of the paper, statistic and LLC series (`grokslt claims`). With `config/quick.yaml` the "
        "verdicts are a smoke test of the pipeline, not evidence.",
        {
            "model": "the model family whose runs the row tests: quadratic (every claim) or another family "
            "(the Figure 2 claims, on all of that family's runs)",
            "preset": "the LLC series tested: the runs' own sampler preset (e.g. paper_code) or certified; "
            "sampler-free for r/2",
            "estimator": "what the row's statistic was computed on: llc (the sampler's estimates), lambda_Q (the "
            "Laplace estimand at the same nbeta and gamma beside each estimate: CLAIMS.md's quadratic null) or r/2 "
            "(the data-rank learning coefficient of runs/RUN/coefficient.csv, where the checkpoints the claim reads "
            "interpolate; otherwise the row says why not)",
            "note": "details: the fitted line, the interval, or why the data cannot decide",
        },
    ),
]


def tables() -> list[Table]:
    """Every table the package writes: TABLES, and each study's (`workflow.studies.STUDIES`) before the scorecard."""
    at = next(i for i, table in enumerate(TABLES) if table.path == "scorecard/scorecard.csv")
    return [*TABLES[:at], *map(study_table, STUDIES.values()), *TABLES[at:]]


def study_table(study) -> Table:
    """A study's table from its entry; an LLC table's columns read like the LLC tables'."""
    llc = study.columns.llc
    meanings = (_LLC_MEANINGS if llc else {}) | dict(study.columns.meanings)
    return Table(study_path(study), study.columns.about, meanings, settings=(SAMPLER,) if llc else (),
                 like=LLC if llc else None)  # fmt: skip


def collapse(columns: list[str]) -> list[str]:
    """The documented names: each run of columns matching one pattern of PATTERNS as that pattern."""
    out: list[str] = []
    for name in columns:
        for pattern, documented in PATTERNS:
            if pattern.fullmatch(name):
                name = documented
                break
        if not out or out[-1] != name:
            out.append(name)
    return out


def _merged(base: list[str], other: list[str]) -> list[str]:
    """`base` with the names of `other` it lacks, each placed after its predecessor in `other`."""
    out = list(base)
    for i, name in enumerate(other):
        if name not in out:
            out.insert(out.index(other[i - 1]) + 1 if i else 0, name)
    return out


def _header(path: Path) -> list[str]:
    return path.read_text().splitlines()[0].split(",")


@functools.cache
def observed_columns() -> dict[str, list[str]]:
    """{table path: its columns (collapsed)}, from the writers themselves on a tiny run."""

    from grokslt.analysis import scorecard
    from grokslt.analysis.claims.evidence import COLUMNS as CLAIM_COLUMNS
    from grokslt.analysis.hessian import write_hessian_table
    from grokslt.analysis.summary import write_summary
    from grokslt.analysis.theory import write_checkpoint_theory, write_theory_tables
    from grokslt.analysis.waic import write_waic_table
    from grokslt.artefacts import read_arrays
    from grokslt.estimation.checkpoint_llc import Checkpoints, Sampling, Saved, write_llc_table
    from grokslt.estimation.llc import result_columns
    from grokslt.estimation.pair_traces import load_pair_traces
    from grokslt.estimation.samplers import SAMPLERS, SamplerSettings
    from grokslt.training.train import TrainConfig, train
    from grokslt.workflow.tables import write_refined_table, write_run_tables

    tiny = {"num_chains": 2, "num_burnin": 0, "num_draws": 24}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few draws make poor diagnostics, and that is all they say
        root = Path(tmp)
        run = root / "runs" / "run"
        train(TrainConfig(p=5, hidden=2, batch_size=4, max_steps=2, eval_every=1, early_stop=False), run, False)
        llc, traces = root / "llc.csv", root / "llc.npz"
        write_llc_table(run, llc, Sampling(overrides=tiny), saved=Saved(traces=str(traces)))
        write_llc_table(run, root / "certified.csv", Sampling(overrides=tiny, label="calibrated"), Checkpoints(every=1))
        write_hessian_table(run, root / "hessian.csv")
        write_checkpoint_theory(run, root / "theory.csv")
        write_theory_tables(root / "theory", [(5, 2)], [3], [1], [2], [1])
        write_run_tables("run", run, [llc], run / "params.csv", run / "loss_data.csv")
        write_summary({"run": run}, {"baseline": ["run"]}, root / "runs.csv")
        write_llc_table(
            run,
            root / "traced.csv",
            Sampling(overrides=tiny),
            Checkpoints("2"),
            Saved(pair_traces=str(root / "traces")),
        )
        write_llc_table(run, root / "weights_V.csv", Sampling(overrides=tiny | {"weights": "V"}), Checkpoints(every=1))
        write_refined_table([root / "traced.csv", root / "weights_V.csv"], root / "refined.csv")
        write_waic_table(root / "traces", root / "waic.csv")
        with load_pair_traces(root / "traces" / "step000002.nc") as tree:
            trace_variables = [f"{group}/{name}" for group in ("posterior", "log_likelihood", "constant_data")
                               for name in tree[group].data_vars]  # fmt: skip

        def with_statistics(path: Path) -> list[str]:  # every sampler's own statistics beside the default's
            columns = _header(path)
            for name in SAMPLERS:
                columns = _merged(columns, ["step", *result_columns(SamplerSettings(sampler=name))])
            return columns

        llc_columns = with_statistics(llc)
        trace_arrays = list(read_arrays(traces))
        headers = {
            LOG: _header(run / "train_log.csv"),
            LLC: llc_columns,
            TRACES: sorted(trace_arrays),
            "runs/RUN/hessian.csv": _header(root / "hessian.csv"),
            "runs/RUN/theory.csv": _header(root / "theory.csv"),
            "runs/RUN/params.csv": _header(run / "params.csv"),
            LOSS: _header(run / "loss_data.csv"),
            "runs/RUN/certified.csv": with_statistics(root / "certified.csv"),
            "runs/RUN/refined.csv": with_statistics(root / "refined.csv"),
            "runs/RUN/refined/{KIND}.csv": with_statistics(root / "weights_V.csv"),
            "runs/RUN/waic.csv": _header(root / "waic.csv"),
            "runs/RUN/traces/step{STEP}.nc": trace_variables,
            "summary/runs.csv": _header(root / "runs.csv"),
            **{
                f"theory/{name}.csv": _header(root / "theory" / f"{name}.csv")
                for name in ("formulas", "rank_checks", "single_output")
            },
            **{
                study_path(study): observed_study(study, run, root, tiny, with_statistics) for study in STUDIES.values()
            },
            "scorecard/scorecard.csv": list(scorecard.COLUMNS),
            "claims/claims.csv": list(CLAIM_COLUMNS),
        }
        found = {path: collapse(columns) for path, columns in headers.items()}
    missing = {table.path for table in tables()} ^ set(found)
    assert not missing, f"tables without columns or without a Table entry: {sorted(missing)}"
    return found


def observed_study(study, run: Path, root: Path, sampler: dict, with_statistics) -> list[str]:
    """A study's columns: those of the table it writes for the tiny run (an LLC table's with every sampler's
    statistics), or those its code names."""
    directory = root / study.section
    directory.mkdir()
    found = study.columns.observe(run, directory, sampler)
    if isinstance(found, list):
        return found
    return with_statistics(found) if study.columns.llc else _header(found)


@functools.cache
def _setting_help(spec: str) -> dict[str, str]:
    import importlib

    from grokslt.settings import fields

    module, name = spec.split(":")
    return {f.name: f.metadata["help"] for f in fields(getattr(importlib.import_module(module), name))}


def _authors_aliases() -> dict[str, str]:
    from grokslt.workflow.tables import AUTHORS_NAMES

    return {alias: name for name, alias in AUTHORS_NAMES.items()}


def meaning(path: str, name: str, used: set | None = None) -> str | None:
    """What column `name` of table `path` means, or None where nothing says. `used` collects the keys of
    DESCRIPTIONS that gave a meaning."""
    table = next(t for t in tables() if t.path == path)
    if name in table.meanings:
        return table.meanings[name]
    for spec in table.settings:
        if name in _setting_help(spec):
            return _setting_help(spec)[name]
    if name in DESCRIPTIONS:
        if used is not None:
            used.add(name)
        return DESCRIPTIONS[name]
    if path == "runs/RUN/params.csv" and name in _authors_aliases():
        original = _authors_aliases()[name]
        return f"the authors' name for `{original}` (the same value)"
    for prefix, phrase, source in table.prefixes:
        rest = name[len(prefix) :]
        if name.startswith(prefix) and (inner := meaning(source, rest, used)) is not None:
            return phrase.format(meaning=inner, rest=rest)
    return None


def undescribed() -> dict[str, list[str]]:
    """{table: its columns without a meaning}, empty when every column has one."""
    found = {path: [c for c in columns if meaning(path, c) is None] for path, columns in observed_columns().items()}
    return {path: columns for path, columns in found.items() if columns}


def unused_descriptions() -> list[str]:
    """The names of DESCRIPTIONS that no column of any table uses."""
    used: set[str] = set()
    for path, columns in observed_columns().items():
        for name in columns:
            meaning(path, name, used)
    return sorted(set(DESCRIPTIONS) - used)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference() -> str:
    """docs/columns.md: one table per output file, its columns in order with their meanings."""
    columns = observed_columns()
    lines = [
        "# Output columns",
        "",
        f"<!-- generated by `{REGENERATE}`: edit src/grokslt/workflow/columns.py, not this file -->",
        "",
        "Every table the workflow writes, its columns in order, and what each means. Paths are relative to the",
        "config's `results` directory (`results/quick/` for `config/quick.yaml`, `results/` for `config.yaml`);",
        "`RUN` is a run id. An empty cell is a missing value. `llc_chain_{i}` stands for one column per chain",
        "(`llc_chain_0`, `llc_chain_1`, ...), `version_{package}` for one per package.",
        "",
        f"Generated from the code that writes each table (`grokslt.workflow.columns`): `{REGENERATE}`.",
        "`tests/workflow/test_columns.py` fails when a column has no meaning or this file is stale.",
        "",
        *[f"- [`{table.path}`](#{_anchor(table.path)})" for table in tables()],
    ]
    for table in tables():
        names = columns[table.path]
        lines += ["", f"## `{table.path}`", "", table.about]
        if table.like is not None and names == columns[table.like]:
            lines += ["", f"The same columns as [`{table.like}`](#{_anchor(table.like)})."]
            names = [name for name in names if meaning(table.path, name) != meaning(table.like, name)]
            if not names:
                continue
            lines += ["", "Here these mean:"]
        if table.like is not None and names[: len(columns[table.like])] == columns[table.like]:
            lines += ["", f"The columns of [`{table.like}`](#{_anchor(table.like)}), then:"]
            names = names[len(columns[table.like]) :]
        lines += ["", f"| {table.kind} | meaning |", "| --- | --- |"]
        lines += [f"| `{name}` | {_cell(meaning(table.path, name) or 'UNDESCRIBED')} |" for name in names]
    return "\n".join(lines).rstrip() + "\n"


def _anchor(path: str) -> str:
    """GitHub's heading anchor of `## \\`path\\``: lower case, punctuation but - and _ dropped."""
    return re.sub(r"[^a-z0-9_ -]", "", path.lower()).replace(" ", "-")


def main() -> None:
    sys.stdout.write(reference())


if __name__ == "__main__":
    main()
