"""Config mistakes as a new user makes them in a copy of config/quick.yaml: each ends in a few lines
that name the key, what is wrong and what is allowed, before any job starts, every mistake at once;
sections and figure entries with sensible defaults may be left out. A config is read as a person
writes it (`1e-3` is a number, an empty section its defaults), a key given twice is refused, and a
config of one experiment runs, leaving out with a line what needs the experiments it lacks."""

from __future__ import annotations

import copy

import pytest
import yaml
from config_support import ONE_EXPERIMENT_SKIPPED, one_experiment, tiny
from snakemake.common.configfile import load_configfile
from snakemake_interface_common.exceptions import WorkflowError
from workflow_support import REPO, TINY, load

from grokslt.figures import instances
from grokslt.workflow.config import ConfigError, check_config, check_workflow, duplicate_keys

# (what Snakemake prints of these: tests/e2e/test_config_dry_run.py)
QUICK = load(REPO / "config" / "quick.yaml")
MAX_LINES = 10


def changed(edit) -> dict:
    config = copy.deepcopy(QUICK)
    edit(config)
    return config


MISTAKES = {
    "figure names a missing experiment": (
        lambda c: c["figures"]["fig1a"].update(experiment="vary_q"),
        "figures.fig1a.experiment = 'vary_q': no such experiment",
    ),
    "non-prime p in a sweep": (
        lambda c: c["experiments"]["vary_p"]["sweep"].update(p=[17, 21]),
        "p = 21: expected a prime integer",
    ),
    "misspelt key": (
        lambda c: c["experiments"]["vary_p"].update(lr_rate=0.1),
        "experiments.vary_p.lr_rate: unknown key; did you mean lr?",
    ),
    "wrong type": (lambda c: c["defaults"].update(hidden="big"), "defaults.hidden = 'big': expected an integer >= 1"),
    "negative size": (lambda c: c["llc"].update(num_draws=-5), "llc.num_draws = -5: expected an integer >= 1"),
    "empty sweep list": (
        lambda c: c["experiments"]["seeds"]["sweep"].update(seed=[]),
        "experiments.seeds.sweep.seed = []: expected a non-empty list",
    ),
    "unknown llc preset": (lambda c: c["llc"].update(preset="fast"), "llc.preset = 'fast': expected one of"),
    "unknown key in an experiment's llc block": (
        lambda c: c["experiments"]["vary_lr_wd"].update(llc={"step": 1e-3}),
        "experiments.vary_lr_wd.llc.step: unknown key; did you mean",
    ),
    "a thinning below 1": (
        lambda c: c["experiments"]["vary_lr_wd"].update(llc={"every": 0}),
        "experiments.vary_lr_wd.llc.every = 0: expected an integer >= 1",
    ),
    "a setting of another sampler": (
        lambda c: c["llc"].update(diffusion_factor=0.1),
        "diffusion_factor = 0.1: a setting of sampler sgnht, not of sgld",
    ),
    "results path that could reach a shell": (lambda c: c.update(results="out;rm -rf x"), "results = 'out;rm -rf x'"),
    "experiments left out": (lambda c: c.pop("experiments"), "experiments: required key missing"),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_mistake_ends_in_a_few_lines_naming_the_key(mistake):
    edit, message = MISTAKES[mistake]
    lines = mistakes(changed(edit))
    assert len(lines) <= MAX_LINES, "\n".join(lines)
    assert any(message in line for line in lines), "\n".join(lines)


def test_yaml_that_does_not_parse_is_refused_in_a_line(tmp_path):
    """Snakemake's own reading of `--configfile` (before our check sees a key): one line that says why."""
    (tmp_path / "broken.yaml").write_text("experiments: {baseline: [1\n")
    with pytest.raises(WorkflowError) as raised:
        load_configfile(tmp_path / "broken.yaml")
    lines = str(raised.value).splitlines()
    assert len(lines) == 1 and "not valid JSON or YAML" in lines[0]


@pytest.mark.parametrize("section", ["sampler_sensitivity", "figures.fig9", "figures", "llc", "hessian", "defaults"])
def test_sections_with_defaults_may_be_left_out(section):
    """Left out, a section is its defaults (`defaults` empty: the training's own). The workflow builds its jobs on a
    config with several left out: tests/e2e/test_config_dry_run.py."""
    *parents, last = section.split(".")

    def drop(config):
        node = config
        for key in parents:
            node = node[key]
        del node[last]

    checked = check_workflow(changed(drop))
    node = checked.config
    for key in section.split("."):
        node = node[key]
    assert checked.runs and isinstance(node, dict)


def test_a_figure_can_be_switched_off():
    """The figures the workflow draws are `instances` of the checked config's figures (workflow/rules/common.smk)."""
    drawn = instances(check_workflow(changed(lambda c: c["figures"].update(fig9=False))).config["figures"])
    assert "fig9" not in drawn and "fig1a" in drawn
    assert "fig9" in instances(check_workflow(QUICK).config["figures"])


def mistakes(config: dict, files=()) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        check_workflow(config, files)
    return str(raised.value).splitlines()


def test_numeric_strings_are_numbers_wherever_a_number_is_expected():
    """YAML 1.1 (Snakemake's) reads 1e-3 as text: every numeric setting takes it as the number."""
    assert yaml.safe_load("lr: 1e-3") == {"lr": "1e-3"}

    def edit(config):
        config["defaults"].update(lr="1e-3", max_steps="1e3")
        config["experiments"]["vary_lr_wd"]["sweep"]["lr"] = ["3e-3", "1e+3"]
        config["experiments"]["baseline"]["llc"] = {"step_size": "5e-5"}
        config["llc"]["num_draws"] = "2e1"
        config["calibration"].update(step="100", step_sizes=["1e-3", 2e-3])
        config["theory"]["mass"] = " 9.9e-1 "
        config["estimator_accuracy"]["methods"]["sgld"]["num_draws"] = "1e2"
        config["results"] = "1e3"

    checked = check_config(tiny(edit))
    assert checked["defaults"]["lr"] == 1e-3 and checked["defaults"]["max_steps"] == 1000
    assert isinstance(checked["defaults"]["max_steps"], int) and isinstance(checked["llc"]["num_draws"], int)
    assert checked["experiments"]["vary_lr_wd"]["sweep"]["lr"] == [3e-3, 1e3]
    assert checked["experiments"]["baseline"]["llc"] == {"step_size": 5e-5}
    assert checked["llc"]["num_draws"] == 20 and checked["theory"]["mass"] == 0.99
    assert checked["calibration"]["step"] == 100 and checked["calibration"]["step_sizes"] == [1e-3, 2e-3]
    assert checked["estimator_accuracy"]["methods"]["sgld"]["num_draws"] == 100
    assert checked["results"] == "1e3" and checked["sampler_sensitivity"]["step"] == "final"  # text stays text


def test_a_value_that_is_not_a_number_is_named_with_what_is_expected():
    def edit(config):
        config["defaults"].update(lr="1e-3x", max_steps="2.5", weight_decay="1e999")
        config["experiments"]["vary_p"]["sweep"]["p"] = [5, "seven"]

    assert mistakes(tiny(edit)) == [
        "defaults.lr = '1e-3x': expected a number > 0",
        "defaults.max_steps = 2.5: expected an integer >= 1",
        "defaults.weight_decay = '1e999': expected a number >= 0",
        "experiments.vary_p.sweep.p[1] = 'seven': expected an integer >= 3",
    ]


def test_a_key_given_twice_is_refused_naming_the_file_the_key_and_the_lines(tmp_path):
    text = TINY.read_text()
    text = text.replace("  lr: 1.0e-2\n", "  lr: 0.01\n  lr: 5.0\n").replace(
        "vary_p: {sweep: {p: [5, 7]}}", "vary_p: {sweep: {p: [5, 7], p: [11]}}"
    )
    path = tmp_path / "config.yaml"
    path.write_text(text + "threads: 2\n")
    lines = text.splitlines()
    lr = lines.index("  lr: 5.0") + 1
    threads = lines.index("threads: 1") + 1
    vary_p = next(i for i, line in enumerate(lines) if "vary_p: {sweep" in line) + 1
    expected = [
        f"{path}: defaults.lr given twice in one mapping (lines {lr - 1} and {lr}); keep one",
        f"{path}: experiments.vary_p.sweep.p given twice in one mapping (lines {vary_p} and {vary_p}); keep one",
        f"{path}: threads given twice in one mapping (lines {threads} and {len(lines) + 1}); keep one",
    ]
    assert duplicate_keys(path) == expected
    assert mistakes(yaml.safe_load(path.read_text()), [path]) == expected
    assert duplicate_keys(TINY) == [] and duplicate_keys(tmp_path / "absent.yaml") == []


def test_every_mistake_is_reported_at_once_one_line_each():
    def schema_mistakes(config):
        config["defaults"]["hidden"] = "big"
        config["llc"]["num_draws"] = -5
        config["experiments"]["vary_p"]["lr_rate"] = 0.1
        config["figures"]["fig1a"] = {"experimnt": "vary_p"}

    lines = mistakes(tiny(schema_mistakes))
    assert len(lines) == 4
    assert lines[0] == "defaults.hidden = 'big': expected an integer >= 1"
    assert lines[1].startswith("experiments.vary_p.lr_rate: unknown key; did you mean lr? allowed: activation, ")
    assert lines[2] == "figures.fig1a.experimnt: unknown key; did you mean experiment? allowed: experiment"
    assert lines[3] == "llc.num_draws = -5: expected an integer >= 1"

    def run_mistakes(config):  # every sweep point of every experiment
        config["experiments"]["vary_p"]["sweep"]["p"] = [4, 9]
        config["experiments"]["seeds"]["p"] = 6

    assert mistakes(tiny(run_mistakes)) == [
        "experiments.seeds seed=1: p = 6: expected a prime integer >= 3",
        "experiments.vary_p p=4: p = 4: expected a prime integer >= 3",
        "experiments.vary_p p=9: p = 9: expected a prime integer >= 3",
    ]


def test_a_config_of_one_experiment_leaves_out_what_needs_others_with_a_line_each():
    checked = check_workflow(one_experiment())
    assert checked.skipped == ONE_EXPERIMENT_SKIPPED
    figures = checked.config["figures"]
    drawn = sorted(name for name, section in figures.items() if name != "dpi" and section is not False)
    assert drawn == ["calibration", "claim_fig2", "diagnostics", "fig2", "scorecard", "sensitivity"]
    assert figures["fig2"] == {"experiment": "baseline", "band_experiment": None}
    assert checked.config["estimator_accuracy"]["experiment"] is None  # (not run)

    other = check_workflow(one_experiment("main"))  # nothing names it: only the scorecard is drawn
    assert other.skipped[0] == (
        "sampler_sensitivity: not run, sampler_sensitivity.experiment 'baseline' (the default) is not in this config "
        "(claims.csv goes without it)"
    )
    assert (
        "figures.diagnostics: not drawn, its experiment 'baseline' (the default) is not in this config" in other.skipped
    )
    assert [name for name, section in other.config["figures"].items() if section not in (False, 60)] == ["scorecard"]


def test_a_per_experiment_figure_is_drawn_for_the_experiments_there_are():
    config = one_experiment("vary_p")
    config["experiments"]["vary_p"] = {"sweep": {"p": [5, 7]}}
    checked = check_workflow(config)
    assert (
        "figures.trajectories.experiments: 'vary_K', 'vary_lr_wd' (the default) not in this config; drawn for vary_p"
        in checked.skipped
    )
    assert checked.config["figures"]["trajectories"] == {"experiments": ["vary_p"]}
    assert checked.config["figures"]["fig1a"] == {"experiment": "vary_p"}


def test_an_absent_experiment_set_in_the_config_stays_a_mistake():
    def edit(config):
        config["figures"]["fig1a"] = {"experiment": "vary_p"}
        config["figures"]["fig2"] = {"band_experiment": "seeds"}
        config["estimator_accuracy"]["experiment"] = "accuracy_nets"
        config["llc"]["preset"] = "calibrated"  # needs the calibration, whose default experiment is absent

    config = one_experiment("main")
    edit(config)
    assert mistakes(config) == [
        "estimator_accuracy.experiment = 'accuracy_nets': no such experiment with runs; expected one of ['main'], or "
        "set estimator_accuracy.experiment: null (not run)",
        "calibration: calibration.experiment 'baseline' (the default) is not in this config, but llc preset "
        "calibrated needs it; expected one of ['main']",
        "figures.fig1a.experiment = 'vary_p': no such experiment with runs; expected one of ['main'], or set "
        "figures.fig1a: false",
        "figures.fig2.band_experiment = 'seeds': no such experiment with runs; expected one of ['main'], or set "
        "figures.fig2: false",
    ]


def test_null_is_accepted_where_something_can_go_without_it():
    def edit(config):
        config["figures"]["fig2"]["band_experiment"] = None  # drawn without the band, like saturation's default
        config["figures"]["fig1a"] = None  # an empty section: its defaults
        config["calibration"]["experiment"] = None  # the study is not run, its figure not drawn
        config["certified"]["experiments"] = []
        config["llc"] = None
        config["experiments"]["baseline"] = None  # an experiment without settings of its own

    checked = check_workflow(tiny(edit))
    assert checked.skipped == ["figures.calibration: not drawn, calibration.experiment is null"]
    assert checked.config["figures"]["fig2"]["band_experiment"] is None
    assert checked.config["figures"]["saturation"]["band_experiment"] is None
    assert checked.config["figures"]["fig1a"] == {"experiment": "vary_p"}
    assert checked.config["llc"]["preset"] == "paper_code" and checked.membership["baseline"]
    assert mistakes(tiny(lambda c: c["figures"]["fig1a"].update(experiment=None))) == [
        "figures.fig1a.experiment = None: expected a string"
    ]
    early_stop = mistakes(tiny(lambda c: c["defaults"].update(early_stop=None)))  # stop early or not? say which
    assert early_stop[0].startswith("defaults.early_stop = None: expected stop once")
    needed = mistakes(tiny(lambda c: c["calibration"].update(experiment=None)))
    assert needed[0].startswith("calibration: calibration.experiment is null, but certified.experiments needs it")


def test_a_refined_residue_outside_the_runs_field_is_one_line_before_any_job():
    config = one_experiment()
    config["refined"] = {"experiments": ["baseline"], "data": ["val", "residue:99"]}
    with pytest.raises(ValueError, match=r"refined\.data\[1\] = 'residue:99': residue outside 0\.\.p-1 for the runs"):
        check_workflow(config)
    config["refined"] = {"experiments": ["baseline"], "weights": ["atoms:all"]}
    with pytest.raises(ValueError, match=r"refined\.weights\[0\]"):
        check_workflow(config)
    config["refined"] = {"experiments": ["baseline"], "traces": False}
    config["figures"] = {"influence": {"experiments": ["baseline"]}}
    with pytest.raises(ValueError, match=r"figures\.influence: reads per-pair traces, but refined\.traces is false"):
        check_workflow(config)
    del config["figures"]
    config["refined"] = {"experiments": ["nope"]}
    with pytest.raises(ValueError, match=r"refined\.experiments\[0\] = 'nope': no such experiment with runs"):
        check_workflow(config)


def test_a_second_try_that_draws_no_more_than_the_first_is_one_line_before_any_job():
    config = one_experiment()
    config["certified"] = {"experiments": ["baseline"], "preset": "local", "num_draws": 4000, "retry_draws": 4000}
    with pytest.raises(ValueError, match=r"certified\.retry_draws = 4000: expected more than the first try's 4000"):
        check_workflow(config)
    config["certified"] = {"experiments": ["baseline"], "preset": "local", "retry_draws": 1000}
    with pytest.raises(ValueError, match=r"retry_draws = 1000: expected more than the first try's 2000 draws"):
        check_workflow(config)  # the preset's own draws
    config["certified"]["retry_draws"] = 8000
    check_workflow(config)


def test_studies_of_the_paper_model_refuse_other_families():
    """Weight groups and the estimator accuracy study are the quadratic network's with the centred MSE: a config
    that points them at an MLP experiment is refused before any job, naming the key."""

    def point_at_the_mlp(config):
        config["experiments"]["accuracy_nets"] |= {"model": "mlp", "loss": "cross_entropy"}
        config["refined"]["experiments"] = ["mlp"]

    lines = mistakes(tiny(point_at_the_mlp))
    assert lines == [
        "refined.weights = ['V', 'atoms:top']: weight groups are the quadratic network's with the centred MSE; "
        "refined.experiments include mlp/cross_entropy runs",
        "estimator_accuracy.experiment = 'accuracy_nets': its runs are mlp/cross_entropy; the study needs the "
        "quadratic network with the centred MSE",
    ]


def overlaid(base: dict, overlay: dict) -> dict:
    """`base` with `overlay`'s keys, nested sections merged, by Snakemake's own merge of several --configfile files."""
    from snakemake.utils import update_config

    merged = copy.deepcopy(base)
    update_config(merged, overlay)
    return merged


SHIPPED = sorted(path for path in (REPO / "config").glob("*.yaml") if path.name != "gpu.yaml")


@pytest.mark.parametrize("path", [REPO / "config.yaml", *SHIPPED], ids=lambda path: path.name)
def test_every_shipped_config_passes_every_check(path):
    """A user's first command is one of these: none may fail its checks (the GPU overlay on top of each too)."""
    config = load(path)
    assert check_workflow(config, [path]).runs
    gpu = REPO / "config" / "gpu.yaml"
    assert check_workflow(overlaid(config, load(gpu)), [path, gpu]).runs


@pytest.mark.parametrize("value", ["out;touch pwned;", "$(touch pwned)", "`touch pwned`", "a'b", 'a"b', "-rf"])
def test_config_values_that_could_reach_a_shell_are_refused_naming_the_key(value):
    assert mistakes(tiny(lambda c: c.update(results=value))) == [
        f"results = {value!r}: expected output directory: letters, digits, spaces and _ . / + - (not first: space, -)"
    ]


def test_experiment_names_that_could_reach_a_shell_are_refused():
    named = mistakes(tiny(lambda c: c["experiments"].update({"x;touch pwned": {}})))
    assert named == ["experiments = 'x;touch pwned': expected text matching ^[A-Za-z][A-Za-z0-9_]*$"]
    drawn = mistakes(tiny(lambda c: c["figures"]["fig1a"].update(experiment="vary_p;touch pwned")))
    assert len(drawn) == 1
    assert drawn[0].startswith("figures.fig1a.experiment = 'vary_p;touch pwned': no such experiment")


def test_eval_every_past_max_steps_is_refused_in_a_line_for_each_experiment_it_would_end_early():
    lines = mistakes(tiny(lambda c: c["defaults"].update(eval_every=500, max_steps=200)))
    assert len(lines) > 1 and all("eval_every = 500 > max_steps = " in line for line in lines)
    assert lines[0] == (
        "experiments.baseline: eval_every = 500 > max_steps = 200: training would end before its first evaluation; "
        "expected eval_every <= max_steps"
    )


def test_a_sweep_point_that_is_not_prime_is_named_by_its_run():
    """(A run of Snakemake on such a config ends before any job: tests/e2e/test_config_dry_run.py.)"""
    lines = mistakes(tiny(lambda c: c["experiments"]["vary_p"]["sweep"].update(p=[5, 51])))
    assert lines == ["experiments.vary_p p=51: p = 51: expected a prime integer >= 3"]
