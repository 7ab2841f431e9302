"""LLC estimates of the quadratic network at training checkpoints, by either backend.

`native` runs the batched SGLD of `grokslt.estimation.llc` with the hand-derived gradient of the gather-form
network; `devinterp` runs the same estimate through devinterp 1.3.2, the field's reference. Each
checkpoint's chains are seeded from (seed, step), so an estimate does not depend on which other
checkpoints share its job.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from grokslt.errors import BadInput, ComputationFailed
from grokslt.estimation.laplace import COLUMNS as LAPLACE_COLUMNS
from grokslt.estimation.laplace import LaplaceSettings, laplace_columns
from grokslt.estimation.llc import LLCResult, estimate_llc_stacked, result_columns
from grokslt.estimation.samplers import SamplerSettings
from grokslt.io import format_cell
from grokslt.settings import as_columns
from grokslt.training.data import ModularArithmetic
from grokslt.training.families import Network
from grokslt.training.runs import load_run, parse_steps, run_seed, select_run_steps, select_steps, step_seed

BACKENDS = ("native", "devinterp")
log = logging.getLogger(__name__)


def estimate_checkpoints(
    data: ModularArithmetic,
    checkpoints: Sequence[tuple[int, dict[str, torch.Tensor]]],
    settings: SamplerSettings,
    batch_size: int,
    seed: int,
    backend: str = "native",
    device: str | torch.device = "cpu",
    stack: int = 1,
    progress=None,
    pair_sets: Sequence[str] = (),
    network: Network | None = None,
    attempt: int = 0,
) -> list[tuple[LLCResult, float]]:
    """(result, wall seconds) per (step, params) checkpoint, by the chosen backend. The native backend
    runs `stack` checkpoints x num_chains chains as one computation: no gain on a CPU, where one GEMM
    already fills a core, but the main win on a GPU. Refined estimates (`settings.weights`, `settings.data`)
    and per-pair traces on `pair_sets` are the native backend's (`grokslt.estimation.refined`). `network`: the
    run's (None: the quadratic network with the centred loss). `attempt`: 0, or a retry's number (fresh noise)."""
    if backend not in BACKENDS:
        raise BadInput(f"backend = {backend!r}: expected one of {BACKENDS}")
    if backend == "devinterp":
        from grokslt.estimation.devinterp_backend import check_supported, devinterp_estimate

        check_supported(settings, pair_sets)
    out = []
    group_size = stack if backend == "native" and settings.weights == "all" else 1
    for start in range(0, len(checkpoints), group_size):
        group = checkpoints[start : start + group_size]
        seeds = [step_seed(seed, step, attempt) for step, _ in group]
        began = time.perf_counter()
        try:
            if backend == "native":
                results = native_estimates(data, [params for _, params in group], settings, batch_size, seeds,
                                           device, pair_sets, network)  # fmt: skip
            else:
                results = [devinterp_estimate(data, group[0][1], settings, batch_size, seeds[0], device, network)]
        except ComputationFailed as error:
            steps = ", ".join(str(step) for step, _ in group)
            raise ComputationFailed(f"checkpoint step {steps}: {error}") from None
        elapsed = (time.perf_counter() - began) / len(group)
        for (step, _), result in zip(group, results, strict=True):  # as each finishes: a killed job shows how far
            log.info("llc at step %d: %s (%.1f s)", step, result.described(), elapsed)
        out.extend((result, elapsed) for result in results)
        if progress is not None:
            progress(len(group))
    return out


def native_estimates(data, group, settings: SamplerSettings, batch_size: int, seeds, device, pair_sets=(),
                     network=None):  # fmt: skip
    """The estimates at the checkpoints `group` (several only for `weights: all`, stacked into one
    computation: noise is drawn in their order), with the closed form beside where one exists."""
    from grokslt.estimation.refined import refined_problem

    problems = [refined_problem(data, params, settings, device, pair_sets, network) for params in group]
    centres = [problem.centre for problem in problems]
    results = estimate_llc_stacked(problems[0].loss_fn, centres, problems[0].n, settings, batch_size, seeds,
                                   device=device)  # fmt: skip
    for problem, result in zip(problems, results, strict=True):
        if problem.exact is not None:
            result.exact = problem.exact(result.nbeta)
    return results


def settings_columns(settings: SamplerSettings, preset: str, backend: str, batch_size: int, seed: int) -> dict:
    """The columns that say how an LLC row was estimated: every sampler setting (resolved), and more."""
    resolved = as_columns(settings) | {
        "nbeta": settings.resolved_nbeta(batch_size),
        "init_loss": settings.init_loss_mode,
    }
    return {
        "backend": backend,
        "preset": preset,
        **{("init_loss_mode" if name == "init_loss" else name): value for name, value in resolved.items()},
        "batch_size": batch_size,
        "seed": seed,
    }


@dataclass(frozen=True)
class Sampling:
    """How each checkpoint is estimated: `preset` with its `overrides`, by `backend`, the chains seeded from `seed`
    and the checkpoint's step; `label` is the preset the rows name (the preset's own name by default)."""

    preset: str | SamplerSettings = "paper_code"
    overrides: Mapping = dataclasses.field(default_factory=dict)
    backend: str = "native"
    seed: int = 0
    label: str | None = None


@dataclass(frozen=True)
class Checkpoints:
    """Which checkpoints of the run (`grokslt.training.runs.select_run_steps`): `steps` (a list or a named set),
    one `chunk` of them ('i/n'), every `every`-th."""

    steps: str | None = None
    chunk: str | None = None
    every: int | None = None


@dataclass(frozen=True)
class Saved:
    """What is written beside the table: the loss traces (.npz) and the per-pair traces (a folder of
    step<STEP:06d>.nc, `grokslt.estimation.pair_traces`)."""

    traces: str | None = None
    pair_traces: str | None = None


@dataclass(frozen=True)
class Retry:
    """An estimate that did not converge is estimated again with `draws` per chain (`retry_unconverged`); with
    `first_try`, the first tries are that table's, written by the same command without retries."""

    draws: int | None = None
    first_try: str | None = None


def write_llc_table(run_dir, out, sampling: Sampling | None = None, checkpoints: Checkpoints | None = None,
                    saved: Saved | None = None, retry: Retry | None = None, device: str = "cpu",
                    stack: int = 1, laplace: LaplaceSettings | None = None) -> list[dict]:  # fmt: skip
    """Estimate the LLC at the selected checkpoints of a run on `device` (`stack` checkpoints' chains at once);
    write one CSV row per checkpoint, and what `saved` asks for. The chains' seed is `sampling.seed` made the run's
    own (`runs.run_seed`: runs compared by a claim draw independent noise), recorded as `seed` beside `seed_base`.
    Beside each estimate of the quadratic network on all its weights and its training set: lambda_Q and the V-only
    estimand at its (nbeta, gamma) (`grokslt.estimation.laplace`, with `laplace`'s probes and Lanczos steps). Every
    input is checked before the first estimate."""
    from grokslt.artefacts import seal
    from grokslt.estimation.llc import sampler_settings
    from grokslt.estimation.pair_traces import (
        PAIR_SETS,
        check_pair_traces,
        pair_trace_tree,
        save_pair_traces,
        trace_name,
    )
    from grokslt.estimation.refined import check_network_supports, weight_pieces
    from grokslt.io import save_npz, write_csv

    sampling, checkpoints = sampling or Sampling(), checkpoints or Checkpoints()
    saved, retry = saved or Saved(), retry or Retry()
    preset, backend, seed = sampling.preset, sampling.backend, sampling.seed
    traces, pair_traces, retry_draws, first_try = saved.traces, saved.pair_traces, retry.draws, retry.first_try
    settings = sampler_settings(preset, **sampling.overrides)
    if backend not in BACKENDS:
        raise BadInput(f"backend = {backend!r}: expected one of {BACKENDS}")
    if backend == "devinterp":
        from grokslt.estimation.devinterp_backend import check_supported

        check_supported(settings)
    if stack < 1:
        raise BadInput(f"stack = {stack}: expected a positive integer")
    check_retry(retry_draws, settings, traces or pair_traces, first_try)
    warn_one_chain(settings)
    run = load_run(run_dir)
    if pair_traces:
        check_pair_traces(settings, backend, pair_traces)
    check_network_supports(settings, run.network)
    run.data.subset(settings.data)  # a residue outside 0..p-1 or an empty subset, before any work
    selected = select_run_steps(run, checkpoints.steps, checkpoints.chunk, checkpoints.every)
    batch_size = run.batch_size
    label = sampling.label or (preset if isinstance(preset, str) else "custom")
    seed_base, seed = seed, run_seed(seed, run.config)
    fixed = settings_columns(settings, label, backend, batch_size, seed) | {"seed_base": seed_base}
    columns = ["step", *dict.fromkeys([*result_columns(settings), *LAPLACE_COLUMNS, *fixed])]
    first_rows = first_try_rows(first_try, run_dir, selected, fixed, columns) if first_try else None
    loaded = [(step, run.load(step)) for step in selected]
    for _, params in loaded if run.network.paper_model else ():  # an empty weight group, before any estimate
        weight_pieces(settings.weights, params["W"], params["V"])
    estimate = functools.partial(estimate_checkpoints, run.data, batch_size=batch_size, seed=seed, backend=backend,
                                 device=device, stack=stack, network=run.network)  # fmt: skip
    if first_rows is None:
        bar = _progress(len(selected))
        pair_sets = PAIR_SETS if pair_traces else ()
        results = [result for result, _ in estimate(loaded, settings, progress=bar.update, pair_sets=pair_sets)]
        bar.close()
        rows = [{"step": step, **result.summary(), **fixed} for step, result in zip(selected, results, strict=True)]
        if traces:  # (the traces hold one number of draws: never with second tries, check_retry)
            seal(traces, save_npz(traces, **trace_arrays(selected, results, settings)), "grokslt llc", run.identity)
        for (step, params), result in zip(loaded, results, strict=True) if pair_traces else ():
            tree = pair_trace_tree(result, run.data, params, step, settings, run.network)
            save_pair_traces(Path(pair_traces) / trace_name(step), tree, run.identity)
    else:
        rows = first_rows
    if retry_draws:
        rows = retry_unconverged(estimate, loaded, rows, settings.replace(num_draws=retry_draws), fixed)
    laplace = laplace or LaplaceSettings()
    if not (run.network.paper_model and settings.weights == "all" and settings.data == "train"):
        laplace = dataclasses.replace(laplace, laplace_probes=0)  # lambda_Q is the whole network's, on L_n
    rows = [row | laplace_beside(row, params, run.data, settings, laplace, seed) for row, (_, params) in
            zip(rows, loaded, strict=True)]  # fmt: skip
    seal(out, write_csv(out, rows, columns), "grokslt llc", run.identity)
    return rows


def laplace_beside(row: dict, params, data, settings: SamplerSettings, laplace: LaplaceSettings, seed: int) -> dict:
    """The Laplace columns of an estimate's row, at its own nbeta and gamma (a row kept from a first try is text)."""
    step = int(row["step"])
    nbeta, llc, mcse = (float(row[name]) if row[name] not in ("", None) else math.nan
                        for name in ("nbeta", "llc_mean", "mcse"))  # fmt: skip
    return laplace_columns(params, data, nbeta, settings.localization, laplace, step_seed(seed, step), llc, mcse)


def warn_one_chain(settings: SamplerSettings) -> None:
    if settings.num_chains == 1:
        log.warning("one chain: R-hat and the MCSE are undefined (they compare chains; use num_chains >= 2): "
                    "r_hat, mcse and llc_std are blank, and no estimate is converged")  # fmt: skip


def check_retry(retry_draws: int | None, settings: SamplerSettings, traces: str | None, first_try: str | None):
    if retry_draws is None:
        if first_try:
            raise BadInput(f"first_try = {first_try!r}: only with retry_draws, the draws of the second tries")
        return
    if retry_draws <= settings.num_draws:
        raise BadInput(f"retry_draws = {retry_draws}: expected more than the {settings.num_draws} draws per chain "
                       "of the first try")  # fmt: skip
    if traces:
        raise BadInput(f"retry_draws = {retry_draws}: not with saved traces or per-pair traces, which hold one number "
                       "of draws")  # fmt: skip


def first_try_rows(path: str, run_dir, selected: list[int], fixed: dict, columns: list[str]) -> list[dict]:
    """The rows of a table this command wrote without `retry_draws`, as written (text, so that a kept row is the
    same bytes), refused unless it is in the run's directory (no column names the run: another run's table with the
    same steps would pass) and its columns, steps and settings are this command's."""
    import csv

    where = f"first_try = {str(path)!r}"
    if Path(path).resolve().parent != Path(run_dir).resolve():
        raise BadInput(f"{where}: not in the run's directory {str(run_dir)!r}; expected the run's own table, as "
                       "runs/RUN/certified.csv")  # fmt: skip
    try:
        with open(path, newline="") as file:
            reader = csv.DictReader(file)
            rows, header = list(reader), reader.fieldnames
    except OSError as error:
        raise BadInput(f"{where}: cannot be read ({error.strerror})") from None
    if header != columns:
        raise BadInput(f"{where}: its columns are not this command's (written by other code or settings)")
    if [row["step"] for row in rows] != [str(step) for step in selected]:
        raise BadInput(f"{where}: steps {[row['step'] for row in rows]} differ from the selected {selected}")
    for name, value in fixed.items():
        found = {row[name] for row in rows} - {format_cell(value)}
        if found:
            raise BadInput(f"{where}: {name} = {sorted(found)[0]} in its rows, expected {format_cell(value)} (a first "
                           "try at other settings, or a table already retried)")  # fmt: skip
    return rows


def retry_unconverged(estimate, checkpoints, rows: list[dict], longer: SamplerSettings, fixed: dict) -> list[dict]:
    """Each estimate whose chains did not converge (its `converged` column: honest R-hat, ESS, drift), estimated once
    more with `longer`'s draws per chain and fresh noise: sampling longer is the honest way to converge. The second
    estimate replaces the first, converged or not, so that no estimate is chosen among tries by its value; its row
    says its draws."""
    again = [i for i, row in enumerate(rows) if str(row["converged"]) != "True"]
    log.info("retrying %d of %d estimates with %d draws", len(again), len(rows), longer.num_draws)
    bar = _progress(len(again))
    redone = estimate([checkpoints[i] for i in again], longer, attempt=1, progress=bar.update)
    bar.close()
    rows = list(rows)
    for i, (result, _) in zip(again, redone, strict=True):
        rows[i] = {"step": checkpoints[i][0], **result.summary(), **fixed, "num_draws": longer.num_draws}
    return rows


def trace_arrays(steps: list[int], results: list[LLCResult], settings: SamplerSettings) -> dict[str, np.ndarray]:
    """What `--traces` saves: the minibatch loss trace [S, C, draws] and, where observed, the full-batch
    observations [S, C, T] (`observed_loss`, `observed_distance_sq`, `observed_accuracy`) and L_n(w*) [S]."""
    arrays = {"steps": np.array(steps, dtype=np.int64)}
    if not results:
        arrays["loss_trace"] = np.zeros((0, settings.num_chains, settings.num_draws), np.float32)
        return arrays
    arrays["loss_trace"] = np.stack([r.loss_trace for r in results])
    for name in results[0].observations:
        if name.startswith("pairs_"):  # per-pair traces go to their own files (`--pair-traces`)
            continue
        arrays[f"observed_{name}"] = np.stack([r.observations[name] for r in results])
    if results[0].centre:
        arrays["centre_loss"] = np.array([r.centre["loss"] for r in results])
    return arrays


def _progress(total: int):
    import sys

    from tqdm import tqdm

    return tqdm(total=total, disable=not sys.stderr.isatty(), desc="llc", unit="checkpoint")


def write_sensitivity_table(
    run_dir,
    out,
    step: str,
    step_sizes,
    localizations,
    preset: str = "paper_code",
    backend="native",
    seed: int = 0,
    overrides: dict | None = None,
    label: str | None = None,
) -> list[dict]:
    """Appendix B.2: the LLC at one checkpoint over a grid of SGLD step size x localization; the
    other sampler settings are the preset's with `overrides`."""
    from grokslt.artefacts import seal
    from grokslt.estimation.llc import sampler_settings
    from grokslt.io import write_csv

    if not step_sizes or not localizations:
        raise BadInput(f"step_sizes = {list(step_sizes)}, localizations = {list(localizations)}: expected at least "
                       "one of each (--step-sizes, --localizations)")  # fmt: skip
    base = {k: v for k, v in (overrides or {}).items() if k not in ("step_size", "localization")}
    grid = [sampler_settings(preset, **base, step_size=e, localization=g) for e in step_sizes for g in localizations]
    run = load_run(run_dir)
    available = list(run.checkpoints)
    chosen = available[-1] if step == "final" else select_steps(available, parse_steps(step))[0]
    params = run.load(chosen)
    rows = []
    for settings in grid:
        [(result, _)] = estimate_checkpoints(
            run.data, [(chosen, params)], settings, run.batch_size, seed, backend, network=run.network
        )
        fixed = settings_columns(settings, label or str(preset), backend, run.batch_size, seed)
        rows.append({"step": chosen, **result.summary(), **fixed})
    seal(out, write_csv(out, rows, ["step", *dict.fromkeys([*result_columns(grid[0]), *fixed])]), "grokslt sensitivity",
         run.identity)  # fmt: skip
    return rows
