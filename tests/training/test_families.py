"""Model families beyond the quadratic network: each forward pass against an independent implementation, the
chain-batched torch.func loss against the hand-derived one and against autograd chain by chain, the Hessian
trace against the exact one, training, and the settings a family refuses."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from grokslt.analysis.hessian import hutchinson_trace, network_loss
from grokslt.errors import BadInput
from grokslt.estimation.functional_loss import NetworkLoss
from grokslt.estimation.llc import estimate_llc
from grokslt.estimation.quadratic_loss import QuadraticNetLoss
from grokslt.estimation.refined import check_network_supports
from grokslt.estimation.samplers import SamplerSettings
from grokslt.settings import check_fields
from grokslt.training.families import MODELS, Network
from grokslt.training.loss import sample_loss, zero_output_loss
from grokslt.training.model import QuadraticNet
from grokslt.training.train import TrainConfig, Trainer, train

MLP = TrainConfig(p=7, hidden=6, model="mlp", loss="cross_entropy", embed=3, batch_size=8, max_steps=40, eval_every=20)
TRANSFORMER = TrainConfig(p=7, hidden=12, model="transformer", loss="cross_entropy", embed=8, heads=2, max_steps=40,
                          eval_every=20, batch_size=64)  # fmt: skip


def params_of(config: TrainConfig, seed: int = 0, dtype=torch.float64):
    torch.manual_seed(seed)
    return {k: v.to(dtype) for k, v in Network.of(config).init().items()}


class NotebookMLP(nn.Module):
    """devinterp's grokking MLP as its notebook describes it (reference/devinterp_grokking/SETTINGS.md, part 2)."""

    def __init__(self, p, embed, hidden):
        super().__init__()
        self.embedding = nn.Embedding(p, embed)
        self.linear1r = nn.Linear(embed, hidden)  # created before linear1l, as in the notebook
        self.linear1l = nn.Linear(embed, hidden)
        self.linear2 = nn.Linear(hidden, p, bias=False)

    def forward(self, x):
        return self.linear2(nn.functional.gelu(self.linear1l(self.embedding(x[:, 0])) + self.linear1r(
            self.embedding(x[:, 1]))))  # fmt: skip


def test_the_mlp_is_devinterps_notebook_model_with_its_initialisation_and_parameter_count():
    torch.manual_seed(3)
    reference = NotebookMLP(53, 12, 48)
    network = Network.of(TrainConfig(p=53, hidden=48, model="mlp", embed=12))
    torch.manual_seed(3)
    params = network.init()
    assert network.n_params() == 4428 == sum(t.numel() for t in reference.parameters())  # the notebook's count
    a, b = torch.randint(0, 53, (2, 100))
    expected = reference(torch.stack([a, b], dim=1))
    assert torch.equal(network.forward(params, a, b), expected)


def transformer_all_positions(params, a, b, heads):
    """The transformer with every position's attention computed under a causal mask, read at the last."""
    tokens = torch.stack([a, b, torch.full_like(a, params["token_embedding"].shape[0] - 1)], dim=1)
    x = params["token_embedding"][tokens] + params["position_embedding"]  # [n, 3, d]
    n, positions, d = x.shape
    out = torch.zeros_like(x)
    for h in range(heads):
        q, k, v = (x @ params[name][h] for name in ("query", "key", "value"))
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        scores = scores.masked_fill(torch.triu(torch.ones(positions, positions, dtype=torch.bool), 1), -math.inf)
        out += scores.softmax(-1) @ v @ params["attention_output"][h]
    x = x + out
    x = x + torch.relu(x @ params["mlp_in"] + params["mlp_in_bias"]) @ params["mlp_out"] + params["mlp_out_bias"]
    return x[:, -1] @ params["unembedding"]


def test_the_transformer_reads_only_the_equals_position_exactly():
    params = params_of(TRANSFORMER)
    params = {k: v + 0.1 * torch.randn_like(v) for k, v in params.items()}  # non-zero biases too
    a, b = torch.randint(0, 7, (2, 30))
    expected = transformer_all_positions(params, a, b, heads=2)
    assert torch.allclose(Network.of(TRANSFORMER).forward(params, a, b), expected, atol=1e-12)


def test_the_quadratic_family_is_the_paper_network():
    config = TrainConfig(p=5, hidden=4)
    torch.manual_seed(0)
    net = QuadraticNet(5, 4)
    params = params_of(config, dtype=torch.float32)
    assert all(torch.equal(params[k], net.params()[k]) for k in ("W", "V"))
    assert Network.of(config).n_params() == 3 * 5 * 4 and Network.of(config).paper_model


def test_network_loss_on_the_quadratic_net_equals_the_hand_derived_one():
    data = TrainConfig(p=7, train_frac=0.6).dataset()
    config = TrainConfig(p=7, hidden=5)
    centre = params_of(config)
    chains = {k: v.expand(3, *v.shape) + 0.05 * torch.randn(3, *v.shape, dtype=v.dtype) for k, v in centre.items()}
    idx = torch.stack([torch.randperm(data.n_train)[:8] for _ in range(3)])
    a, b, c = (t for t in data.subset("train"))
    generic_loss, generic_grads = NetworkLoss(Network.of(config), a, b, c)(chains, idx)
    hand_loss, hand_grads = QuadraticNetLoss(a, b, c)(chains, idx)
    assert torch.allclose(generic_loss, hand_loss, rtol=1e-10)
    assert all(torch.allclose(generic_grads[k], hand_grads[k], rtol=1e-9, atol=1e-12) for k in ("W", "V"))


@pytest.mark.parametrize("config", [MLP, TRANSFORMER], ids=["mlp", "transformer"])
def test_network_loss_gradients_are_each_chains_own(config):
    torch.manual_seed(0)  # the draws below do not depend on which tests ran before in this process
    data = config.dataset()
    network = Network.of(config)
    chains = {k: torch.stack([v + 0.1 * torch.randn_like(v) for _ in range(3)]) for k, v in params_of(config).items()}
    idx = torch.stack([torch.randperm(data.n_train)[:6] for _ in range(3)])
    a, b, c = data.subset("train")
    loss, grads = NetworkLoss(network, a, b, c)(chains, idx)
    for chain in range(3):
        own = {k: v[chain].clone().requires_grad_(True) for k, v in chains.items()}
        value = sample_loss(config.loss, network.forward(own, a[idx[chain]], b[idx[chain]]), c[idx[chain]])
        expected = torch.autograd.grad(value, list(own.values()))
        assert torch.allclose(loss[chain], value.detach())
        # components that cancel to near zero carry the rounding of their terms: an absolute tolerance on the scale
        assert all(torch.allclose(grads[k][chain], g, atol=1e-7 * float(g.abs().max()))
                   for k, g in zip(own, expected, strict=True))  # fmt: skip


def test_hutchinson_on_the_mlp_converges_to_the_exact_hessian_trace():
    config = TrainConfig(p=5, hidden=3, model="mlp", loss="cross_entropy", embed=2)
    data = config.dataset()
    params = params_of(config)
    a, b, c = data.subset("train")
    loss_fn = network_loss(a, b, c, Network.of(config))
    names = list(params)
    flat = torch.cat([params[k].flatten() for k in names])

    def flat_loss(vector):
        parts, start = {}, 0
        for k in names:
            parts[k] = vector[start : start + params[k].numel()].reshape(params[k].shape)
            start += params[k].numel()
        return loss_fn(parts)

    exact = torch.autograd.functional.hessian(flat_loss, flat).trace().item()
    estimate = hutchinson_trace(loss_fn, params, 4000, torch.Generator().manual_seed(0), chunk_size=500)
    assert abs(estimate.mean - exact) < 4 * estimate.stderr and estimate.stderr < 0.05 * abs(exact)


@pytest.mark.parametrize("config", [MLP, TRANSFORMER], ids=["mlp", "transformer"])
def test_a_family_trains_resumes_to_the_same_bits_and_its_llc_runs(config, tmp_path):
    whole = train(config, tmp_path / "whole", progress=False)
    half = train(TrainConfig(**{**config.__dict__, "max_steps": 20}), tmp_path / "resumed", progress=False)
    assert half.step == 20
    resumed = train(config, tmp_path / "resumed", progress=False)
    assert (tmp_path / "whole" / "train_log.csv").read_bytes() == (tmp_path / "resumed" / "train_log.csv").read_bytes()
    assert whole.rows[0]["train_loss"] > whole.rows[-1]["train_loss"] and resumed.step == 40
    data = config.dataset()
    loss_fn = NetworkLoss.training_set(Network.of(config), data)
    settings = SamplerSettings(step_size=1e-4, localization=100.0, nbeta=10.0, num_chains=2, num_burnin=5,
                               num_draws=40, observe_every=4)  # fmt: skip
    result = estimate_llc(loss_fn, whole.model.params(), data.n_train, settings, config.batch_size, seed=0)
    assert math.isfinite(result.llc_mean) and result.centre["zero_loss"] == pytest.approx(math.log(7))
    assert result.observations["accuracy"].shape == (2, 10)


def test_zero_output_loss_is_log_p_for_cross_entropy():
    c = torch.arange(7)
    assert zero_output_loss("cross_entropy", c, 7) == pytest.approx(math.log(7))
    assert zero_output_loss("centred_mse", c, 7) == pytest.approx(0.5 * (1 - 1 / 7))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"embed": 12}, "embed = 12: a setting of model mlp and transformer, not of model quadratic"),
        ({"model": "mlp", "heads": 2}, "heads = 2: a setting of model transformer, not of model mlp"),
        ({"model": "transformer", "activation": "relu"}, "activation = 'relu': a setting of model mlp"),
        ({"model": "transformer", "embed": 10, "heads": 4}, "embed = 10: the transformer's width must be divisible"),
        ({"model": "cnn"}, "model = 'cnn': expected one of"),
        ({"loss": "hinge"}, "loss = 'hinge': expected one of"),
    ],
)
def test_settings_of_one_family_given_to_another_are_refused(changes, message):
    with pytest.raises(BadInput, match=message.replace("(", r"\(")):
        check_fields(TrainConfig(**changes))


@pytest.mark.parametrize("config", [MLP, TrainConfig(p=7, hidden=4, loss="cross_entropy")], ids=["mlp", "quad-ce"])
def test_weight_groups_are_refused_off_the_paper_model(config):
    with pytest.raises(BadInput, match="weights = 'V': weight groups are the quadratic network's"):
        check_network_supports(SamplerSettings(weights="V"), Network.of(config))


def test_every_family_is_registered_with_defaults_for_its_own_settings():
    assert set(MODELS) == {"quadratic", "mlp", "transformer"}
    assert MODELS["mlp"].defaults == {"embed": 12, "activation": "gelu"}
    trainer = Trainer(MLP, "/nonexistent")
    assert sorted(trainer.model.params()) == sorted(Network.of(MLP).shapes())


@pytest.fixture(scope="module")
def trained_mlp(tmp_path_factory):
    config = TrainConfig(p=11, hidden=16, model="mlp", loss="cross_entropy", embed=4, lr=1e-2, batch_size=16,
                         max_steps=300, eval_every=300, early_stop=False)  # fmt: skip
    trainer = train(config, tmp_path_factory.mktemp("mlp") / "run", progress=False)
    return config, trainer.data, trainer.model.params()


@pytest.mark.slow
def test_the_mlps_native_llc_agrees_with_devinterp_within_monte_carlo_error(trained_mlp):
    from grokslt.estimation.checkpoint_llc import estimate_checkpoints
    from grokslt.estimation.llc import sampler_settings

    config, data, params = trained_mlp
    settings = sampler_settings("paper_code", num_draws=200, num_burnin=50)
    pooled = {}
    for backend in ("native", "devinterp"):
        values = []
        for seed in range(4):
            [(result, _)] = estimate_checkpoints(data, [(300, params)], settings, 16, seed, backend,
                                                 network=Network.of(config))  # fmt: skip
            values.extend(result.llc_per_chain)
        pooled[backend] = torch.tensor(values, dtype=torch.float64)
    native, reference = pooled["native"], pooled["devinterp"]
    stderr = (native.var() / len(native) + reference.var() / len(reference)).sqrt()
    assert abs(native.mean() - reference.mean()) < 4 * stderr and reference.mean() > 0


@pytest.mark.parametrize("sampler", ["sgld", "rmsprop_sgld", "mala", "sgnht"])
def test_every_sampler_runs_on_a_family_without_a_hand_derived_gradient(trained_mlp, sampler):
    config, data, params = trained_mlp
    settings = SamplerSettings(sampler=sampler, step_size=1e-5, localization=100.0, nbeta=10.0, num_chains=2,
                               num_burnin=5, num_draws=40, observe_every=4)  # fmt: skip
    loss_fn = NetworkLoss.training_set(Network.of(config), data)
    result = estimate_llc(loss_fn, params, data.n_train, settings, 16, seed=0)
    assert math.isfinite(result.llc_mean) and result.observations["loss"].shape == (2, 10)


def test_the_cross_entropy_is_torchs_on_random_logits_and_classes():
    logits, classes = torch.randn(4, 30, 7, dtype=torch.float64), torch.randint(0, 7, (30,))
    expected = torch.stack([nn.functional.cross_entropy(row, classes) for row in logits])
    assert torch.allclose(sample_loss("cross_entropy", logits, classes), expected)


def test_l_init_is_not_shrunk_by_the_batch_centring_factor_for_the_cross_entropy():
    """`init_loss: expected` multiplies L_n by the centred MSE's batch-centring factor only: a cross-entropy
    minibatch mean is an unbiased estimate of L_n."""
    settings = SamplerSettings(init_loss="expected")
    assert settings.init_loss_factor(1123, 128, "cross_entropy") == 1.0
    assert settings.init_loss_factor(1123, 128, "centred_mse") < 0.995
    assert NetworkLoss.training_set(Network.of(MLP), MLP.dataset()).loss_kind == "cross_entropy"


def test_the_quadratic_network_trains_with_the_cross_entropy_and_resumes_to_the_same_bits(tmp_path):
    config = TrainConfig(p=7, hidden=8, loss="cross_entropy", lr=1e-2, batch_size=16, max_steps=40, eval_every=20,
                         early_stop=False)  # fmt: skip
    whole = train(config, tmp_path / "whole", progress=False)
    train(TrainConfig(**{**config.__dict__, "max_steps": 20}), tmp_path / "resumed", progress=False)
    train(config, tmp_path / "resumed", progress=False)
    assert (tmp_path / "whole" / "train_log.csv").read_bytes() == (tmp_path / "resumed" / "train_log.csv").read_bytes()
    assert whole.zero_loss == pytest.approx(math.log(7)) and whole.rows[-1]["train_loss"] < whole.rows[0]["train_loss"]
