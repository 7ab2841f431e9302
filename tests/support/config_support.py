"""Configs built from the tiny one, for the config check's tests and the dry run that shows its lines."""

from __future__ import annotations

from workflow_support import TINY, load


def tiny(edit=lambda config: None) -> dict:
    config = load(TINY)
    edit(config)
    return config


def one_experiment(name: str = "baseline") -> dict:
    """The tiny config with one experiment, and no key that names another."""

    def edit(config):
        config["experiments"] = {name: {}}
        del config["sampler_sensitivity"], config["certified"], config["refined"], config["coefficient"]
        config["figures"] = {"dpi": 60}

    return tiny(edit)


ONE_EXPERIMENT_SKIPPED = [
    "figures.fig1a: not drawn, its experiment 'vary_p' (the default) is not in this config",
    "figures.fig1b: not drawn, its experiment 'vary_K' (the default) is not in this config",
    "figures.fig2.band_experiment: 'seeds' (the default) is not in this config; drawn without it",
    "figures.saturation: not drawn, its experiment 'baseline_long' (the default) is not in this config",
    "figures.trajectories: not drawn, its experiments 'vary_p', 'vary_K', 'vary_lr_wd' (the default) not in this "
    "config",
    "figures.fig9: not drawn, its experiment 'vary_lr_wd' (the default) is not in this config",
    "figures.estimator_accuracy: not drawn, estimator_accuracy.experiment 'accuracy_nets' (the default) is not in "
    "this config",
    "figures.theory_vs_measurement: not drawn, its experiments 'vary_p', 'vary_K' (the default) not in this config",
    "figures.claim_fig1a: not drawn, its experiment 'vary_p' (the default) is not in this config",
    "figures.claim_fig1b: not drawn, its experiment 'vary_K' (the default) is not in this config",
    "figures.claim_keff: not drawn, its experiments 'vary_p', 'vary_K' (the default) not in this config",
]
