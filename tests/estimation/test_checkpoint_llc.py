import numpy as np
import pytest
import torch

from grokslt.estimation.checkpoint_llc import estimate_checkpoints
from grokslt.estimation.llc import estimate_llc, sampler_settings
from grokslt.estimation.quadratic_loss import QuadraticNetLoss
from grokslt.training.loss import centred_loss
from grokslt.training.model import QuadraticNet, forward_pairs
from grokslt.training.train import TrainConfig, train

SMALL = sampler_settings("paper_code", num_draws=200)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """p = 11, K = 64, trained to generalise: a random-init and a trained checkpoint."""
    config = TrainConfig(p=11, hidden=64, lr=1e-2, batch_size=32, eval_every=100, max_steps=1500, early_stop=False)
    trainer = train(config, tmp_path_factory.mktemp("run"))
    torch.manual_seed(0)
    init = QuadraticNet(11, 64).params()
    return trainer.data, {0: init, 1500: trainer.model.params()}


def test_hand_gradient_and_autograd_give_the_same_chains(small_run):
    data, checkpoints = small_run
    a, b, c = data.subset("train")
    hand = QuadraticNetLoss(a, b, c)

    def autograd_loss(params, idx):
        out = forward_pairs(params["W"], params["V"], a[idx], b[idx])
        return centred_loss(out, torch.nn.functional.one_hot(c[idx], 11).to(out.dtype))

    settings = sampler_settings("paper_code", num_draws=50, num_burnin=10)
    args = (checkpoints[1500], data.n_train, settings, 32, 7)
    first = estimate_llc(hand, *args)
    second = estimate_llc(autograd_loss, *args)
    np.testing.assert_allclose(first.loss_trace, second.loss_trace, rtol=1e-3)


def test_estimates_do_not_depend_on_stacking(small_run):
    data, checkpoints = small_run
    pairs = sorted(checkpoints.items())
    one_by_one = [result for result, _ in estimate_checkpoints(data, pairs, SMALL, 32, seed=3, stack=1)]
    stacked = [result for result, _ in estimate_checkpoints(data, pairs, SMALL, 32, seed=3, stack=2)]
    for single, batched in zip(one_by_one, stacked, strict=True):
        assert batched.llc_mean == pytest.approx(single.llc_mean, rel=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("step", [0, 1500])
def test_native_agrees_with_devinterp_within_monte_carlo_error(small_run, step):
    data, checkpoints = small_run
    pooled = {}
    for backend in ("native", "devinterp"):
        values = []
        for seed in range(4):
            [(result, _)] = estimate_checkpoints(data, [(step, checkpoints[step])], SMALL, 32, seed, backend)
            values.extend(result.llc_per_chain)
        pooled[backend] = np.array(values)
    native, reference = pooled["native"], pooled["devinterp"]
    stderr = np.sqrt(native.var(ddof=1) / len(native) + reference.var(ddof=1) / len(reference))
    assert abs(native.mean() - reference.mean()) < 4 * stderr, (native.mean(), reference.mean(), stderr)
    assert reference.mean() > 0


@pytest.mark.slow
def test_native_sgnht_agrees_with_devinterps_within_monte_carlo_error(small_run):
    """devinterp 1.3.2's SGNHT has no localization: compared at gamma = 0 on the trained checkpoint."""
    data, checkpoints = small_run
    settings = sampler_settings("paper_code", sampler="sgnht", localization=0.0, step_size=1e-4, num_draws=200)
    pooled = {}
    for backend in ("native", "devinterp"):
        values = []
        for seed in range(4):
            [(result, _)] = estimate_checkpoints(data, [(1500, checkpoints[1500])], settings, 32, seed, backend)
            values.extend(result.llc_per_chain)
        pooled[backend] = np.array(values)
    native, reference = pooled["native"], pooled["devinterp"]
    stderr = np.sqrt(native.var(ddof=1) / len(native) + reference.var(ddof=1) / len(reference))
    assert abs(native.mean() - reference.mean()) < 4 * stderr, (native.mean(), reference.mean(), stderr)


def test_init_loss_is_the_mean_of_distinct_batches_with_the_fused_loss(small_run):
    """The fused loss returns one reused buffer: L_init must still average three different batches."""
    from grokslt.estimation.llc import initial_losses

    data, checkpoints = small_run
    loss_fn = QuadraticNetLoss.training_set(data)
    centers = {k: v.expand((3,) + v.shape).contiguous() for k, v in checkpoints[1500].items()}
    settings = sampler_settings("paper_code")
    mean, stderr = initial_losses(loss_fn, centers, data.n_train, settings, 16, torch.Generator().manual_seed(5))
    generator = torch.Generator().manual_seed(5)
    permutation = torch.randperm(data.n_train, generator=generator)
    separate = [loss_fn(centers, permutation[i * 16 : (i + 1) * 16].expand(3, -1))[0][0].item() for i in range(3)]
    assert mean[0].item() == pytest.approx(np.mean(separate), rel=1e-6)
    assert stderr[0].item() == pytest.approx(np.std(separate, ddof=1) / np.sqrt(3), rel=1e-4)
    assert len(set(separate)) == 3
