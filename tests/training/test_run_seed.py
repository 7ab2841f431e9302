"""Each run's chains draw noise of their own: the sampler seed is the job's seed made the run's (issue: shared noise
made every training seed's LLC peak at the same step)."""

import dataclasses

from grokslt.training.runs import run_seed
from grokslt.training.train import TrainConfig


def test_runs_that_differ_in_any_setting_get_different_seeds_and_one_run_always_the_same():
    base = TrainConfig(p=11, hidden=16)
    variants = [base, *(dataclasses.replace(base, **change) for change in ({"seed": 1}, {"hidden": 32}, {"lr": 2e-4}))]
    seeds = [run_seed(0, config) for config in variants]
    assert len(set(seeds)) == len(seeds)
    assert run_seed(0, TrainConfig(p=11, hidden=16)) == seeds[0]
    assert run_seed(1, base) != seeds[0]
    assert all(0 <= seed < 2**63 for seed in seeds)
