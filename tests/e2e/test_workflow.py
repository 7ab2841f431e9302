"""The Snakemake workflow as users run it: lint, dry-run job counts, config rejections, a real run of a
tiny configuration, incremental rebuilds, and a run killed with SIGKILL and restarted."""

from __future__ import annotations

import copy
import math
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from workflow_support import (
    MACHINE,
    REPO,
    SCHEMA,
    SNAKEMAKE,
    TINY,
    TINY_RESULTS,
    copy_workflow,
    job_counts,
    load,
    snakemake,
    tables,
    write_config,
)

from grokslt.analysis.membership import experiments_cell, in_experiments
from grokslt.analysis.theory import closed_forms_apply
from grokslt.figures import instances
from grokslt.workflow.config import check_config, config_schema
from grokslt.workflow.experiments import expand_experiments
from grokslt.workflow.plan import plan


@pytest.mark.parametrize("configfile", [REPO / "config.yaml", REPO / "config" / "quick.yaml", TINY])
def test_lint_is_clean(configfile, tmp_path):
    result = snakemake("--lint", "--configfile", configfile, cwd=REPO, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Lints for" not in result.stdout + result.stderr


def expected_counts(config: dict) -> dict[str, int]:
    """Jobs a dry run shows before any training: LLC and Hessian chunks appear once runs have stopped.
    Every run trains once, however many experiments hold it; each figure of the registry is drawn once
    (once per experiment for the per-experiment ones)."""
    checked = check_config(config)
    runs, _ = expand_experiments(checked)
    _, membership = expand_experiments(checked)
    certified = {run for name in checked["certified"]["experiments"] for run in membership[name]}
    whole = len(whole_runs(checked, runs))
    per_run = {"whole_run": whole} if whole else {}
    per_run |= {"train": len(runs) - whole, "run_tables": len(runs) - whole} if whole < len(runs) else {}
    per_run |= {"certify": len(certified)} if certified else {}
    refined = checked["refined"]
    refined_runs = {run for name in refined["experiments"] for run in membership[name]}
    if refined_runs:  # one table per weight group and data subset, beside all weights
        kinds = 1 + len(refined["weights"]) + len([d for d in refined["data"] if d != "train"])
        per_run |= {"refined_estimates": kinds * len(refined_runs), "refined_table": len(refined_runs)}
        per_run |= {"pair_traces": len(refined_runs), "waic": len(refined_runs)} if refined["traces"] else {}
    return {
        "theory_tables": 1,
        **per_run,
        "sensitivity_grid": 1,
        "calibrate": 1,
        "summary": 1,  # summary/runs.csv; a figure puts together its runs' rows itself
        "claims": 1,
        "scorecard_table": 1,
        **({"accuracy": 1} if checked["figures"].get("estimator_accuracy", {}) is not False else {}),
        **coefficient_jobs(checked, membership),
        "figure": len(instances(checked["figures"])),
        "all": 1,
    }


def whole_runs(checked: dict, runs: dict) -> list[str]:
    """With `run_jobs: whole`, the runs that write at most one LLC chunk of checkpoints, counted step by step (no
    config here names the calibrated preset for a run's trajectory)."""
    if checked["run_jobs"] != "whole" or checked["gpu"]:
        return []
    size = checked["llc"]["chunk_size"]
    written = {}
    for run, settings in runs.items():
        steps = settings.max_steps
        written[run] = sum(map(settings.evaluates_at, range(1, steps + 1))) + (not settings.evaluates_at(steps))
    return [run for run, count in written.items() if count <= size]


def coefficient_jobs(checked: dict, membership: dict) -> dict[str, int]:
    """One job per run of the experiments the coefficient section names (a run of two counted once)."""
    section = checked["coefficient"]
    runs = {run for name in section["experiments"] + section["finals"] for run in membership[name]}
    return {"coefficient": len(runs)} if runs else {}


@pytest.mark.parametrize("configfile", [REPO / "config" / "quick.yaml", TINY])
def test_dry_run_job_counts(configfile, tmp_path):
    config = load(configfile)
    config["results"] = str(tmp_path / "results")
    result = snakemake("-n", "--configfile", write_config(tmp_path, config), cwd=tmp_path)
    jobs = job_counts(result.stdout)
    assert jobs == expected_counts(config)
    if not jobs.get("train"):  # every run in one job: the dry run holds every job, which the planner counts
        assert plan(copy.deepcopy(config), 2, MACHINE)["jobs"] == sum(jobs.values()) - jobs["all"]


def test_without_a_config_flag_the_workflow_reads_config_yaml_and_counts_its_jobs(tmp_path):
    """config.yaml's dry run (1,200 jobs, the slowest to build) as a user starts it: no --configfile, the default
    profile names config.yaml (its results moved here, so that results of the repository's own do not count)."""
    results = tmp_path / "results"
    result = snakemake("-n", "--config", f"results={results}", cwd=REPO)
    config = load(REPO / "config.yaml") | {"results": str(results)}
    assert job_counts(result.stdout) == expected_counts(config)


@pytest.mark.parametrize(
    "target, experiments",
    [
        ("fig1a", ["vary_p"]),
        ("fig2", ["baseline", "seeds"]),
        ("estimator_accuracy", ["accuracy_nets"]),
        ("scorecard", None),
    ],
)
def test_a_figure_target_builds_only_what_that_figure_reads(target, experiments, tmp_path):
    config = load(REPO / "config" / "quick.yaml")
    config["results"] = str(tmp_path / "results")
    runs, membership = expand_experiments(check_config(config))
    needed = set(runs) if experiments is None else {run for name in experiments for run in membership[name]}
    jobs = job_counts(snakemake("-n", target, "--configfile", write_config(tmp_path, config), cwd=tmp_path).stdout)
    trained = jobs.get("train", 0) + jobs.get("whole_run", 0)
    assert trained == len(needed) and (experiments is None or len(needed) < len(runs))
    assert jobs["figure"] == 1 and jobs[target] == 1 and "all" not in jobs
    assert "claims" not in jobs and ("scorecard_table" in jobs) == (target == "scorecard")


def test_expansion_gives_each_setting_combination_one_run():
    """config.yaml's experiments expand into the product of their sweeps, runs shared between
    experiments counted once."""
    config = check_config(load(REPO / "config.yaml"))
    runs, membership = expand_experiments(config)
    for name, experiment in config["experiments"].items():
        sizes = [len(values) for values in experiment.get("sweep", {}).values()]
        assert len(membership[name]) == math.prod(sizes)
    assert len(runs) == len({run for members in membership.values() for run in members})


def test_a_shared_run_belongs_to_each_of_its_experiments():
    """The summary's `experiments` cell names every experiment of a run trained once for several, and reads back
    as membership of each; a run of none belongs to nothing."""
    cells = [experiments_cell(["seeds", "baseline"]), experiments_cell(["vary_p"]), None]
    summary = pd.DataFrame({"run": ["a", "b", "c"], "experiments": cells})
    assert cells[0] == "baseline;seeds"
    assert in_experiments(summary, "baseline").tolist() == [True, False, False]
    assert in_experiments(summary, "seeds").tolist() == [True, False, False]
    assert in_experiments(summary, ["vary_p", "seeds"]).tolist() == [True, True, False]
    assert not in_experiments(summary, "base").any()


def tiny_with(change) -> dict:
    config = load(TINY)
    change(config)
    return config


def set_path(config: dict, path: str, value):
    *parents, last = path.split(".")
    node = config
    for key in parents:
        node = node[key]
    node[last] = value


def test_a_named_certified_preset_runs_without_the_calibration(tmp_path):
    config = tiny_with(lambda c: set_path(c, "certified.preset", "local"))
    config["results"] = "out"
    _, membership = expand_experiments(check_config(config))
    target = f"out/runs/{membership['baseline'][0]}/certified.csv"
    result = snakemake("-n", "-p", target, "--configfile", write_config(tmp_path, config), cwd=tmp_path)
    jobs = job_counts(result.stdout)
    assert jobs["certify"] == 1 and "calibrate" not in jobs
    [command] = [line for line in result.stdout.splitlines() if line.startswith("Shell command: grokslt llc")]
    assert "--preset local" in command and "--calibration" not in command and "--if-chosen" not in command
    assert "--retry-draws" not in command


def test_second_tries_reach_the_certified_estimates_command(tmp_path):
    config = tiny_with(lambda c: set_path(c, "certified", {"experiments": ["baseline"], "preset": "local",
                                                           "num_draws": 300, "retry_draws": 900}))  # fmt: skip
    config["results"] = "out"
    _, membership = expand_experiments(check_config(config))
    target = f"out/runs/{membership['baseline'][0]}/certified.csv"
    result = snakemake("-n", "-p", target, "--configfile", write_config(tmp_path, config), cwd=tmp_path)
    [command] = [line for line in result.stdout.splitlines() if line.startswith("Shell command: grokslt llc")]
    assert "--num-draws 300 --retry-draws 900" in command


def test_the_schema_file_is_the_generated_schema():
    """workflow/schemas/config.schema.yaml documents the keys; it must be what the code checks."""
    assert load(SCHEMA) == config_schema(), "regenerate: python -m grokslt.workflow.config > " + str(SCHEMA)


def test_env_files_parse_pin_like_pyproject_and_exist_for_every_rule():
    import tomllib

    pins = [d for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]]
    for env in (REPO / "envs").glob("*.yaml"):
        spec = load(env)
        assert spec["channels"] == ["conda-forge", "nodefaults"], env
        pip = next(item["pip"] for item in spec["dependencies"] if isinstance(item, dict))
        assert set(pins) <= set(pip), (env, set(pins) - set(pip))
        assert "-e .." in pip
    rules = (REPO / "workflow" / "rules").glob("*.smk")
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    for name in ("grokslt.yaml",):
        assert f'"../../envs/{name}"' in common
        assert (REPO / "envs" / name).exists()
    for rule_file in rules:
        text = rule_file.read_text()
        commands = re.findall(r"^\s*(?:shell|run|script):", text, flags=re.MULTILINE)  # every rule that runs one
        assert text.count("conda:") == len(commands), rule_file


# -- real runs --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_tiny_run_produces_every_table_and_figure(finished_tiny):
    root = finished_tiny.root
    results = root / TINY_RESULTS
    config = load(TINY)
    runs, _ = expand_experiments(config)
    for run, train in runs.items():
        for name in ("params.csv", "loss_data.csv", "train_log.csv"):
            assert (results / "runs" / run / name).stat().st_size > 0
        # K_eff at every checkpoint where the paper's closed forms describe the run, blank for the others
        table = pd.read_csv(results / "runs" / run / "loss_data.csv")
        K_eff = table.loc[~table["diverged"], "K_eff"]  # (a diverged evaluation has no checkpoint)
        assert (K_eff.notna().all() if closed_forms_apply(train) else K_eff.isna().all()), run
    for name in (
        "fig1a",
        "fig1b",
        "fig2",
        "fig9",
        "sensitivity",
        "theory_vs_measurement",
        "diagnostics",
        "trajectories_vary_p",
        "trajectories_vary_lr_wd",
        "saturation",
        "calibration",
        "estimator_accuracy",
        "scorecard",
    ):
        for suffix in (".pdf", ".png"):  # (the tiny runs match no authors' run: that scorecard is one line of text)
            assert (results / "figures" / f"{name}{suffix}").stat().st_size > (2000 if name == "scorecard" else 5000)

    summary = pd.read_csv(results / "summary" / "runs.csv")
    assert sorted(summary["run"]) == sorted(runs)
    diverged = summary["status"] == "diverged"
    assert summary.loc[diverged, "lr"].tolist() == [1e3]  # the run that explodes is recorded, the rest carry on
    assert summary.loc[~diverged, "final_llc"].notna().all() and (summary.loc[~diverged, "final_llc"] > 0).all()
    loss = pd.read_csv(results / "runs" / sorted(runs)[0] / "loss_data.csv")
    assert {"llc", "llc_std", "trace_hutchinson", "trace_exact", "K_eff", "training_step"} <= set(loss.columns)


def dry_run_jobs(root: Path, snakefile: Path, configfile: Path) -> dict[str, int]:
    result = snakemake("-n", "--configfile", configfile, cwd=root, snakefile=snakefile)
    if "Nothing to be done" in result.stdout + result.stderr:
        return {}
    return job_counts(result.stdout)


@pytest.mark.slow
def test_incremental_rebuilds(finished_tiny, tmp_path):
    root, snakefile = finished_tiny.root, finished_tiny.snakefile
    # (a) nothing changed: nothing runs
    assert dry_run_jobs(root, snakefile, TINY) == {}
    # (b) restyling one figure reruns that figure alone
    module = root / "src" / "grokslt" / "figures" / "severity.py"
    original = module.read_text()
    module.write_text(original + "\n# restyled\n")
    try:
        assert dry_run_jobs(root, snakefile, TINY) == {"figure": 1, "all": 1}
    finally:
        module.write_text(original)
    # (c) another sampler setting reruns the LLC jobs and what reads them, never training
    sampler = write_config(tmp_path, tiny_with(lambda c: set_path(c, "llc.num_draws", 25)), "sampler.yaml")
    jobs = dry_run_jobs(root, snakefile, sampler)
    assert "train" not in jobs
    runs = len(expand_experiments(check_config(load(TINY)))[0])
    assert jobs["llc"] >= runs and jobs["run_tables"] == runs and jobs["sensitivity_grid"] == 1 and jobs["figure"] >= 8
    # (d) a run added to an experiment trains that run only
    added = write_config(
        tmp_path, tiny_with(lambda c: c["experiments"]["seeds"]["sweep"]["seed"].append(3)), "added.yaml"
    )
    jobs = dry_run_jobs(root, snakefile, added)
    assert jobs["train"] == 1 and jobs["run_tables"] == 1


@pytest.mark.slow
def test_sigkill_mid_run_then_restart_gives_the_same_results(finished_tiny, tmp_path):
    """Two runs' tables as the target (the baseline's and a seed's thinned one: every kind of job but the
    shared ones), killed once two LLC chunks are on disk, restarted: every table equals the uninterrupted run's."""
    _, membership = expand_experiments(check_config(load(TINY)))
    runs = sorted(set(membership["baseline"] + membership["seeds"][:1]))
    targets = [f"{TINY_RESULTS}/runs/{run}/loss_data.csv" for run in runs]
    snakefile = copy_workflow(tmp_path)
    command = [SNAKEMAKE, "-s", str(snakefile), *targets, "--cores", "2", "--configfile", str(TINY)]
    log = tmp_path / "killed.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
        )
    deadline = time.time() + 300
    while time.time() < deadline and len(list((tmp_path / TINY_RESULTS / "runs").glob("*/llc/*.csv"))) < 2:
        if process.poll() is not None:
            pytest.fail(f"snakemake ended before two LLC chunks were written:\n{log.read_text()}")
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)  # Snakemake and every job it started
    process.wait()
    assert not all((tmp_path / target).exists() for target in targets), "killed after the end"
    snakemake("--unlock", "--configfile", TINY, cwd=tmp_path, snakefile=snakefile)
    snakemake(*targets, "--cores", "2", "--configfile", TINY, cwd=tmp_path, snakefile=snakefile)
    restarted = tables(tmp_path / TINY_RESULTS)
    expected = tables(finished_tiny.root / TINY_RESULTS)
    assert {f"runs/{run}/loss_data.csv" for run in runs} <= set(restarted)
    assert {path: expected[path] for path in restarted} == restarted


def test_whole_run_jobs_killed_then_restarted_give_the_by_stage_results(finished_tiny, tmp_path):
    """`run_jobs: whole` on the tiny config: a seed run's training, LLC and tables in one job, killed with SIGKILL
    once training has written its last checkpoint, restarted: every table equals the by-stage run's."""
    config = load(TINY) | {"run_jobs": "whole"}
    runs, membership = expand_experiments(check_config(config))
    run = membership["seeds"][0]
    assert run in whole_runs(check_config(config), runs)
    target = f"{TINY_RESULTS}/runs/{run}/loss_data.csv"
    snakefile = copy_workflow(tmp_path)
    configfile = write_config(tmp_path, config)
    command = [SNAKEMAKE, "-s", str(snakefile), target, "--cores", "1", "--configfile", str(configfile)]
    last = tmp_path / TINY_RESULTS / "runs" / run / "checkpoints" / f"step_{runs[run].max_steps:07d}.safetensors"
    with (tmp_path / "killed.log").open("w") as stderr:
        process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr,
                                   start_new_session=True)  # fmt: skip
    deadline = time.time() + 300
    while time.time() < deadline and not last.exists() and process.poll() is None:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert last.exists() and not (tmp_path / target).exists(), (tmp_path / "killed.log").read_text()
    snakemake("--unlock", "--configfile", configfile, cwd=tmp_path, snakefile=snakefile)
    result = snakemake(target, "--cores", "1", "--configfile", configfile, cwd=tmp_path, snakefile=snakefile)
    assert job_counts(result.stdout + result.stderr) == {"whole_run": 1}
    restarted = tables(tmp_path / TINY_RESULTS)
    expected = tables(finished_tiny.root / TINY_RESULTS)
    assert {f"runs/{run}/{name}" for name in ("loss_data.csv", "params.csv", "llc/chunk0of1.csv")} <= set(restarted)
    assert {path: expected[path] for path in restarted} == restarted


def test_the_slurm_profile_loads_config_yaml_by_default():
    """(The default profile: test_without_a_config_flag_the_workflow_reads_config_yaml_and_counts_its_jobs.)"""
    result = snakemake("-n", "--profile", "profiles/slurm", cwd=REPO)
    assert job_counts(result.stdout)["train"] == len(expand_experiments(check_config(load(REPO / "config.yaml")))[0])
    assert "slurm_partition=main" in result.stdout


@pytest.mark.slow
def test_report_holds_every_figure_with_its_caption(finished_tiny):
    root, snakefile = finished_tiny.root, finished_tiny.snakefile
    report = root / "report.html"
    snakemake("--configfile", TINY, "--report", report, cwd=root, snakefile=snakefile)
    text = report.read_text(errors="replace")
    assert report.stat().st_size > 100_000
    for caption in ("Figure 1a: final LLC", "Figure 9 and appendix H.4", "Sampler diagnostics"):
        assert caption in text
    for table in ("claims.csv", "runs.csv", "The paper's claims, one row each", "One row per run"):  # the tables too
        assert table in text
