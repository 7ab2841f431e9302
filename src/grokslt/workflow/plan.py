"""What a config will cost before it runs: runs, checkpoints, LLC and Hessian estimates, CPU seconds and
the wall time on N cores, from a measurement of this machine that takes under a minute.

The measurement times training steps and SGLD chain steps at two model sizes, a small one and the config's
largest paper network (so that the line interpolates to every run), and fits each as a + b x (batch x K x p),
the size of the step's GEMMs. Another family's steps (an MLP, a transformer) are timed at each size and batch
the config trains it at, since no such line fits them, and so is the paper network and batch that more of the
config's runs train than any other, where the line's error counts most. A job's start (Python,
torch, the commands' modules) is timed too and charged to every job, and a figure job (start, drawing,
saving) to every figure. A run's steps are its expected stop: the authors' logged stop where the run's
settings match one of their runs (`reference/`, when present), else max_steps (an upper bound for runs that
stop early). Wall time on N cores is the CPU time over N, or the longest single run's chain of jobs if that
is longer.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import torch

from grokslt.estimation.llc import sampler_settings
from grokslt.estimation.observables import MIN_OBSERVATIONS, default_thinning
from grokslt.training.families import Network
from grokslt.training.train import TrainConfig, Trainer
from grokslt.workflow.experiments import LLC_CHOICE_KEYS

SIZES = [(11, 32, 16), (31, 256, 64)]  # (p, K, batch) of the measurement: the small size, the least upper one
BUSY = 0.5  # load per core above which a measurement is slowed by other work
# the share of certified estimates tried again (`certified.retry_draws`): paper_subset's local-preset estimates
# that did not converge at 4,000 draws, 156 of 705 (measured/paper_subset): 12.8% in the Figure 2 runs, 40% in the
# early-stopping sweeps (each stops within 1,000 steps)
RETRY_SHARE = 0.22
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Machine:
    train: tuple[float, float]  # seconds per training step: a + b x size
    chain: tuple[float, float]  # seconds per SGLD step of one chain
    start: float  # seconds to start a grokslt process
    figure: float  # seconds of a figure job: its start, drawing and saving
    load: float = 0.0  # the 1-minute load average per core as the measurement began
    # (network, batch, train step s, chain step s) of each other family and of the paper network most runs share
    families: tuple[tuple[Network, int, float, float], ...] = ()


def linear_fit(sizes, seconds) -> tuple[float, float]:
    (x0, x1), (y0, y1) = sizes, seconds
    slope = max((y1 - y0) / (x1 - x0), 0.0)
    return max(y0 - slope * x0, 0.0), slope


def measure(steps: int = 100, repeats: int = 3, runs: Iterable[TrainConfig] = ()) -> Machine:
    """CPU seconds of training steps and chain steps at two sizes (the least of `repeats`), of the steps of
    each other family among `runs` at its size and batch and of the paper network most of them share, of a
    process start and of a figure job; the machine's load as the measurement began."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    runs = list(runs)
    timed = measured_runs(runs)
    timings = []
    for number, run in enumerate(timed, 1):
        log.info("timing training and SGLD steps: size %d of %d (p %d, K %d, batch %d)", number, len(timed), run.p,
                 run.hidden, effective_batch(run))  # fmt: skip
        timings.append(measure_run(run, steps, repeats))
    sizes = [gemm_size(run) for run in timed]
    log.info("timing a job's start and a figure job")
    start = fastest(lambda: python(JOB_START), 2)
    figure = fastest(lambda: python(DRAW), 2)
    train, chain = linear_fit(sizes, [t for t, _ in timings]), linear_fit(sizes, [c for _, c in timings])
    return Machine(train, chain, start, figure, load, measure_families(runs, FAMILY_STEPS, 1))


def measured_runs(runs: Iterable[TrainConfig]) -> list[TrainConfig]:
    """The two runs the size line is fitted through: SIZES' small one, and the config's largest paper network
    (at least SIZES' upper one) as it trains, with its own training set and batch, so that the line
    interpolates to every run rather than extrapolating (its slope is noisy)."""
    small, upper = (TrainConfig(p=p, hidden=K, batch_size=batch, train_frac=0.5) for p, K, batch in SIZES)
    paper = [run for run in runs if Network.of(run).paper_model]
    return [small, max([upper, *paper], key=gemm_size)]


def gemm_size(config: TrainConfig) -> float:
    """batch x parameters / 3 (batch x K x p for the quadratic network): the size of a step's GEMMs, the axis
    of the measurement's line."""
    return effective_batch(config) * Network.of(config).n_params() / 3


FAMILY_STEPS = 50  # a transformer's step is slow


def measure_families(runs: Iterable[TrainConfig], steps: int, repeats: int) -> tuple:
    """(network, batch, seconds per training step, per chain step) of each family other than the paper's, whose
    steps no size line fits, and of the paper network and batch that more runs train than any other: the line put
    Figure 2's network (p 53, K 1024, batch 128), whose estimates are most of paper_subset's cost, at 1.40 ms a
    chain step against 1.50 timed at it."""
    shapes, paper = {}, Counter()
    for config in runs:
        network = Network.of(config)
        if network.paper_model:
            paper[network, effective_batch(config)] += 1
        shapes.setdefault((network, effective_batch(config)), config)
    timed = [shape for shape in shapes if not shape[0].paper_model] + [shape for shape, _ in paper.most_common(1)]
    measured = []
    for number, (network, batch) in enumerate(timed, 1):
        log.info("timing the steps of network %d of %d (%s, p %d, K %d, batch %d)", number, len(timed), network.model,
                 network.p, network.hidden, batch)  # fmt: skip
        measured.append((network, batch, *measure_run(shapes[network, batch], steps, repeats)))
    return tuple(measured)


# what a job imports before it works: the commands' modules, torch.func (the Hessian), pandas; not ArviZ, which
# only the jobs that diagnose chains import (about one torch import more, small beside their sampling)
JOB_START = "import " + ", ".join(
    [
        "grokslt.cli",
        "grokslt.analysis.hessian",
        "grokslt.estimation.checkpoint_llc",
        "grokslt.workflow.tables",
        "grokslt.estimation.diagnostics",
        "torch.func",
    ]
)
DRAW = """
import tempfile, os, grokslt.cli, pandas, matplotlib.pyplot as plt  # (a figure job starts without torch)
from grokslt.figures import style
style.apply()
figure, axes = plt.subplots(1, 2)
axes[0].plot(range(100))
with tempfile.TemporaryDirectory() as out:
    figure.savefig(os.path.join(out, "f.png"), dpi=150)
    figure.savefig(os.path.join(out, "f.pdf"))
"""


def python(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True)


def measure_run(config: TrainConfig, steps: int, repeats: int) -> tuple[float, float]:
    """(seconds per training step, seconds per SGLD step of one chain) of the run's network and batch."""
    import tempfile

    from grokslt.estimation.functional_loss import NetworkLoss
    from grokslt.estimation.llc import estimate_llc
    from grokslt.estimation.quadratic_loss import QuadraticNetLoss

    config = dataclasses.replace(config, early_stop=False)
    with tempfile.TemporaryDirectory() as out:
        trainer = Trainer(config, out)
        train = fastest(lambda: [trainer.train_step() for _ in range(steps)], repeats) / steps
    network = Network.of(config)
    data, params = trainer.data, trainer.model.params()
    batch = effective_batch(config)
    # enough draws for the full-batch observations at their default thinning, whose cost the chains carry
    draws = max(steps, MIN_OBSERVATIONS * default_thinning(data.n_train, batch))
    settings = sampler_settings("paper_code", num_burnin=0, num_draws=draws)
    loss_fn = QuadraticNetLoss.training_set(data) if network.paper_model else NetworkLoss.training_set(network, data)
    chain = fastest(lambda: estimate_llc(loss_fn, params, data.n_train, settings, batch, 0), repeats)
    return train, chain / (draws * settings.num_chains)


def fastest(work, repeats: int) -> float:
    """The least CPU time `work` took in `repeats` tries (CPU, not wall: other work on the machine delays a
    measurement but hardly adds to its CPU time)."""
    times = []
    for _ in range(repeats):
        began = cpu_seconds()
        work()
        times.append(cpu_seconds() - began)
    return min(times)


def cpu_seconds() -> float:
    """CPU time of this process and of its finished child processes (a job's start, a figure)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def step_seconds(machine: Machine, config: TrainConfig, kind: str) -> float:
    """Seconds of a training step (`kind` "train") or of one chain's SGLD step ("chain") of the run: as timed
    for its family, size and batch where the measurement did, else from the measurement's line at its `gemm_size`."""
    network, batch = Network.of(config), effective_batch(config)
    for timed_network, timed_batch, train, chain in machine.families:
        if (timed_network, timed_batch) == (network, batch):
            return chain if kind == "chain" else train
    fit = machine.chain if kind == "chain" else machine.train
    return fit[0] + fit[1] * gemm_size(config)


def effective_batch(config: TrainConfig) -> int:
    """The batch a step uses: at most the training set (a full-batch run may name any larger size)."""
    return min(config.batch_size, int(config.train_frac * config.p**2))


def evaluations(config: TrainConfig, steps: int) -> int:
    return sum(config.evaluates_at(step) for step in range(1, steps + 1)) or 1


def run_costs(config: TrainConfig, steps: int, llc: dict, hessian_probes: int, machine: Machine, chunk: int) -> dict:
    """CPU seconds of one run's jobs, and its job count."""
    checkpoints = evaluations(config, steps)
    settings = sampler_settings(llc["preset"] if llc["preset"] != "calibrated" else "paper_code",
                                **{k: v for k, v in llc.items() if k not in LLC_CHOICE_KEYS})  # fmt: skip
    chain_step = step_seconds(machine, config, "chain")
    full_batch = chain_step * int(config.train_frac * config.p**2) / effective_batch(config)
    per_estimate = (
        settings.num_chains
        * (settings.num_burnin + settings.num_draws)
        * (full_batch if settings.sampler == "mala" else chain_step)
    )
    train = steps * step_seconds(machine, config, "train") + checkpoints * 2 * full_batch
    early = evaluations(config, min(steps, config.dense_until)) if config.dense_until else 0
    estimates = thinned_count(checkpoints, llc["every"], early)
    llc_jobs = max(1, math.ceil(estimates / chunk))
    return {
        "steps": steps,
        "checkpoints": checkpoints,
        "dense_checkpoints": early,
        "llc_estimates": estimates,
        "train_seconds": train,
        "llc_seconds": estimates * per_estimate,
        "hessian_seconds": checkpoints * hessian_probes * 4 * full_batch,
        "jobs": 2 + llc_jobs,  # train, tables (the Hessian with them); llc chunks
    }


def thinned_count(checkpoints: int, every: int, early: int = 0) -> int:
    """At most how many of a run's checkpoints `thin_steps` estimates: the `early` ones of the dense schedule,
    every `every`-th after them, the last, and at most four transitions with a neighbour either side."""
    if every == 1:
        return checkpoints
    return min(checkpoints, early + math.ceil((checkpoints - early) / every) + 1 + 4 * 3)


def plan(config: dict, cores: int, machine: Machine, stops: dict[str, tuple[int, str]] | None = None) -> dict:
    """Per experiment and in total: runs, checkpoints, estimates, CPU seconds, and wall seconds on `cores`,
    for what the workflow runs of `config` (figures and studies whose default experiment is absent left out)."""
    from grokslt.figures import instances
    from grokslt.workflow.commands import whole_runs
    from grokslt.workflow.config import check_workflow

    checked = check_workflow(config)
    config, runs, membership, llc = checked.config, checked.runs, checked.membership, checked.run_llc
    probes = config["hessian"].get("num_probes") or (2 if config["hessian"]["preset"] == "paper_code" else 100)
    costs = {}
    for run, train in runs.items():
        steps = (stops or {}).get(run, (train.max_steps, ""))[0]
        costs[run] = run_costs(train, steps, llc[run], probes, machine, config["llc"]["chunk_size"])
    for run in whole_runs(config, runs, llc):
        costs[run]["jobs"] = 1
    experiments = {}
    for name, members in membership.items():
        rows = [costs[run] for run in members]
        experiments[name] = {
            "runs": len(rows),
            "checkpoints": sum(r["checkpoints"] for r in rows),
            "llc_estimates": sum(r["llc_estimates"] for r in rows),
            "hessian_estimates": sum(r["checkpoints"] for r in rows),
            "cpu_seconds": sum(map(run_seconds, rows)),
        }
    certified = certified_seconds(config, membership, costs, lambda run: step_seconds(machine, runs[run], "chain"))
    studies = study_seconds(config, runs, membership, costs, machine, certified)
    figures = instances(config["figures"])
    jobs = sum(r["jobs"] for r in costs.values()) + shared_jobs(config, membership)
    parts = {"runs, each once": sum(map(run_seconds, costs.values()))}
    parts |= {f"study: {name}": seconds for name, seconds in studies.items() if seconds}
    parts |= {"job starts": jobs * machine.start, "figures": len(figures) * machine.figure}
    cpu = sum(parts.values())
    jobs += len(figures)
    wall = wall_seconds(cpu, costs.values(), cores, machine)
    return {
        "cores": cores,
        "runs": len(runs),
        "jobs": jobs,
        "checkpoints": sum(r["checkpoints"] for r in costs.values()),
        "cpu_seconds": cpu,
        "cpu_hours": cpu / 3600,
        "cpu_seconds_parts": parts,
        "wall_seconds": wall,
        "experiments": experiments,
        "studies_cpu_seconds": studies,
        "figures": figure_costs(config, membership, costs, studies, certified, cores, machine),
        "machine": asdict(machine),
        "threads": torch.get_num_threads(),
        "stops": stops_sentence(stops or {}),
    }


def stops_sentence(stops: dict[str, tuple[int, str]]) -> str:
    sources = [source for _, source in stops.values()]
    return (
        f"the authors' logged stop for {sources.count('logged')} runs, the nearest logged run's for "
        f"{sources.count('nearest')}, max_steps (an upper bound) for the rest"
    )


def run_seconds(cost: dict) -> float:
    return cost["train_seconds"] + cost["llc_seconds"] + cost["hessian_seconds"]


def wall_seconds(cpu: float, costs, cores: int, machine: Machine) -> float:
    """CPU time over the cores, or the longest run's chain of jobs if that is longer."""
    return max(cpu / cores, max(map(run_seconds, costs)) + 4 * machine.start)


def figure_costs(config, membership, costs, studies, certified, cores: int, machine: Machine) -> dict[str, dict]:
    """What `snakemake FIGURE` alone costs: the runs of the figure's experiments (all runs for the
    scorecard), trained and estimated, plus the studies it reads (their runs trained only) and the certified
    estimates of its runs where it reads them (`certified_seconds`, with the calibration they need)."""
    from grokslt.figures import experiment_settings, instances
    from grokslt.workflow.studies import STUDIES

    out = {}
    for name, (figure, settings) in instances(config["figures"]).items():
        estimated = {run for experiment in experiment_settings(settings) for run in membership[experiment]}
        if "scorecard" in figure.reads:
            estimated = set(costs)
        cpu = sum(run_seconds(costs[run]) for run in estimated)
        if "certified" in figure.reads and estimated & set(certified):
            cpu += sum(certified.get(run, 0.0) for run in estimated)
            cpu += studies.get("calibration", 0.0) if config["certified"]["preset"] == "calibrated" else 0.0
        trained = set()
        for study in STUDIES.values():
            if study.table in figure.reads:
                cpu += studies.get(study.table, 0.0)
                trained |= set(study.run_ids(config, membership)) - estimated
        cpu += sum(costs[run]["train_seconds"] for run in trained)
        cpu += (4 * len(estimated | trained) + 2) * machine.start + machine.figure
        chosen = [costs[run] for run in estimated | trained]
        out[name] = {"runs": len(chosen), "cpu_seconds": cpu, "wall_seconds": wall_seconds(cpu, chosen, cores, machine)}
    return out


def expected_stops(runs: dict[str, TrainConfig], reference_root) -> dict[str, tuple[int, str]]:
    """Each early-stopping run's expected stop step and where it comes from: the authors' log of the same
    run ("logged"), else the stop of the logged run nearest in settings with the same stopping rule
    ("nearest"), capped at max_steps. Runs without early stopping run to max_steps and are left out.

    Nearest: Euclidean in (log10 lr, log2 batch size, log10(weight decay + 1e-6), log2 K, p / 10, train
    fraction x 10) with the optimizer equal; a seed is no setting, so another seed's log counts as nearest
    at distance 0. Leave-one-out on the 133 shipped logs: total steps 1.00x the logged, 92% of runs within 2x,
    median error a factor 1.26 (tests/workflow/test_plan.py holds the total within 2x)."""
    from grokslt.analysis.reference import find_match, load_reference

    authors = load_reference(reference_root)
    stops = {}
    for run, train in runs.items():
        if not train.early_stop:
            continue
        match = find_match(asdict(train), authors)
        if match is not None:
            stops[run] = (int(match.log["step"].max()), "logged")
            continue
        nearest = nearest_logged_run(train, authors)
        if nearest is not None:
            stops[run] = (min(train.max_steps, int(nearest.log["step"].max())), "nearest")
    return stops


def nearest_logged_run(train: TrainConfig, authors: list):
    """The authors' run with the same optimizer and stopping rule nearest to `train` (see expected_stops)."""
    rule = (train.early_stop_threshold, train.early_stop_patience)
    candidates = [a for a in authors if a.settings["early_stop"] == rule and a.settings["optimizer"] == train.optimizer]
    if not candidates:
        return None
    return min(candidates, key=lambda a: math.dist(stop_features(asdict(train)), stop_features(a.settings)))


def stop_features(settings: dict) -> tuple[float, ...]:
    return (
        math.log10(float(settings["lr"])),
        math.log2(float(settings["batch_size"])),
        math.log10(float(settings["weight_decay"]) + 1e-6),
        math.log2(float(settings["hidden"])),
        float(settings["p"]) / 10,
        float(settings["train_frac"]) * 10,
    )


def certified_runs(config, membership) -> list[str]:
    return list(dict.fromkeys(run for name in config["certified"]["experiments"] for run in membership[name]))


def certified_seconds(config, membership, costs, chain_step) -> dict[str, float]:
    """{run: CPU seconds of its certified estimates}: the same selection as a thinned trajectory's
    (`training.runs.thin_steps`), second tries at the share that needed one in paper_subset."""
    certified, calibration = config["certified"], config["calibration"]
    if certified["preset"] == "calibrated":
        chains, burnin, draws = calibration["num_chains"], calibration["num_burnin"], calibration["num_draws"]
    else:
        preset = sampler_settings(certified["preset"])
        chains, burnin, draws = preset.num_chains, preset.num_burnin, preset.num_draws
    steps = chains * (burnin + certified.get("num_draws", draws))
    if "retry_draws" in certified:
        steps += RETRY_SHARE * chains * (burnin + certified["retry_draws"])
    return {
        run: thinned_count(costs[run]["checkpoints"], certified["every"], costs[run]["dense_checkpoints"])
        * steps
        * chain_step(run)
        for run in certified_runs(config, membership)
    }


def refined_seconds(config, membership, costs, chain_step) -> float:
    """The refined estimates (`refined:`): one table per weight group and data subset beside all weights, at
    every `every`-th checkpoint and about 9 near the transitions, and the traced estimates at the (at most 5)
    decisive checkpoints, whose per-pair observations cost about as much again as their sampling."""
    section = config["refined"]
    preset = sampler_settings(section["preset"])
    steps = preset.num_chains * (preset.num_burnin + section.get("num_draws", preset.num_draws))
    runs, kinds = refined_tables(section, membership)
    traced = 5 * 2 if section["traces"] else 0
    return sum(
        (kinds * (costs[run]["checkpoints"] / section["every"] + 9) + traced) * steps * chain_step(run) for run in runs
    )


def refined_tables(section, membership) -> tuple[list[str], int]:
    """The runs of `refined:` and how many refined LLC tables each has: all weights, each weight group, each data
    subset but the training set."""
    runs = list(dict.fromkeys(run for name in section["experiments"] for run in membership[name]))
    return runs, 1 + len(section["weights"]) + len([d for d in section["data"] if d != "train"])


def shared_jobs(config, membership) -> int:
    """The jobs beside the runs' own and the figures, as the workflow's rules make them: the theory, summary, claims
    and scorecard tables; each study's (one per run where its table is per run); the certified estimates (one per
    run); the refined ones (per run: a table per weight group and data subset beside all weights, their table, and
    with `traces` the per-pair traces and WAIC)."""
    from grokslt.workflow.studies import STUDIES

    studies = 0
    for study in STUDIES.values():
        members = study.run_ids(config, membership)
        studies += len(members) if study.per_run else int(bool(members))
    section = config["refined"]
    refined_runs, kinds = refined_tables(section, membership)
    refined = len(refined_runs) * (kinds + 1 + (2 if section["traces"] else 0))
    return 4 + studies + len(certified_runs(config, membership)) + refined


@dataclass(frozen=True)
class Prices:
    """What a study's CPU time is made of, per run (`studies.Study.seconds`): one chain step, one full-batch pass,
    the checkpoints a thinning keeps; `membership` {experiment: its runs}."""

    machine: Machine
    runs: dict
    costs: dict
    membership: dict

    def chain_step(self, run: str) -> float:
        return step_seconds(self.machine, self.runs[run], "chain")

    def full_batch(self, run: str) -> float:
        train = self.runs[run]
        return self.chain_step(run) * int(train.train_frac * train.p**2) / effective_batch(train)

    def checkpoints(self, run: str, every: int) -> int:
        return thinned_count(self.costs[run]["checkpoints"], every, self.costs[run].get("dense_checkpoints", 0))

    def experiment_runs(self, names) -> list[str]:
        return list(dict.fromkeys(run for name in names for run in self.membership[name]))


def study_seconds(config, runs, membership, costs, machine, certified: dict[str, float]) -> dict[str, float]:
    """CPU seconds of the studies that the workflow runs (`studies.STUDIES`), the certified estimates
    (`certified_seconds`, per run) and the refined estimates."""
    from grokslt.workflow.studies import STUDIES

    prices = Prices(machine, runs, costs, membership)
    out = {}
    for study in STUDIES.values():
        members = study.run_ids(config, membership)
        if members:
            out[study.table] = study.seconds(config[study.section], members, prices)
    out["certified"] = sum(certified.values())
    out["refined"] = refined_seconds(config, membership, costs, prices.chain_step)
    return out


def describe(result: dict) -> str:
    lines = [f"{'experiment':16s} {'runs':>5s} {'checkpoints':>12s} {'LLC estimates':>14s} {'CPU hours':>10s}"]
    for name, row in result["experiments"].items():
        lines.append(
            f"{name:16s} {row['runs']:5d} {row['checkpoints']:12d} {row['llc_estimates']:14d} "
            f"{row['cpu_seconds'] / 3600:10.2f}"
        )
    rows = sum(row["cpu_seconds"] for row in result["experiments"].values())
    lines.append(f"(the rows sum to {rows / 3600:.2f} CPU hours: a run counts in every experiment it belongs to, and "
                 "they leave out the studies, job starts and figures)")  # fmt: skip
    lines.append("CPU hours of the whole workflow, each run once:")
    lines += [f"  {name:28s} {seconds / 3600:10.2f}" for name, seconds in result["cpu_seconds_parts"].items()]
    lines.append(
        f"total: {result['runs']} runs, {result['jobs']} jobs, {result['checkpoints']} checkpoints (a Hessian trace "
        f"at each; LLCs as above), {result['cpu_hours']:.2f} CPU hours; wall on {result['cores']} cores "
        f"{result['wall_seconds'] / 3600:.2f} h ({result['wall_seconds'] / 60:.1f} min); steps: {result['stops']}"
    )
    lines.append(f"\n{'figure target':28s} {'runs':>5s} {'CPU hours':>10s} {'wall on ' + str(result['cores']):>12s}")
    for name, row in result["figures"].items():
        lines.append(
            f"{name:28s} {row['runs']:5d} {row['cpu_seconds'] / 3600:10.2f} {row['wall_seconds'] / 60:9.1f} min"
        )
    if result["machine"]["load"] > BUSY:
        lines.append(
            f"\nwarning: the machine was busy while it was measured (load {result['machine']['load']:.1f} per core): "
            "every time above may be too long; plan again on an idle machine"
        )
    return "\n".join(lines)
