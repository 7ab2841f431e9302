"""Weight- and data-refined LLCs and per-pair traces (grokslt.estimation.refined, pair_traces)."""

import math

import numpy as np
import pytest
import torch
from estimation_support import tiny_net

from grokslt.errors import BadInput
from grokslt.estimation.checkpoint_llc import estimate_checkpoints
from grokslt.estimation.exact import tuned_mala_step
from grokslt.estimation.linear_v import v_only_estimand
from grokslt.estimation.llc import sampler_settings
from grokslt.estimation.quadratic_loss import QuadraticNetLoss
from grokslt.estimation.refined import FrozenParamsLoss, refined_problem, weight_pieces
from grokslt.estimation.samplers import WEIGHT_GROUPS, SamplerSettings
from grokslt.training.data import make_dataset
from grokslt.training.model import centred_loss_and_grad, top_atoms


@pytest.mark.parametrize("group", [g for g in WEIGHT_GROUPS if g != "all"])
def test_a_group_s_loss_is_the_network_s_loss_and_its_gradient_the_group_s_slice(group):
    data, W, V = tiny_net()
    pieces = weight_pieces(group, W, V)
    frozen = FrozenParamsLoss(QuadraticNetLoss.training_set(data), {"W": W, "V": V}, pieces)
    generator = torch.Generator().manual_seed(1)
    free = {k: v.expand(3, *v.shape) + 0.1 * torch.randn(3, *v.shape, generator=generator, dtype=v.dtype)
            for k, v in frozen.free_centre().items()}  # fmt: skip
    full = {"W": W.expand(3, -1, -1).clone(), "V": V.expand(3, -1, -1).clone()}
    for name, piece in pieces.items():  # the same network, written independently of FrozenParamsLoss
        if piece.index is None:
            full[piece.tensor] = free[name]
        else:
            view = full[piece.tensor].transpose(piece.dim + 1, -1)
            view[..., piece.index] = free[name].transpose(piece.dim + 1, -1)
    idx = torch.arange(data.n_train).expand(3, -1)
    a, b, c = data.subset("train")
    loss, grad_W, grad_V = centred_loss_and_grad(full["W"], full["V"], a[idx], b[idx], c[idx])
    got_loss, got_grads = frozen(free, idx)
    torch.testing.assert_close(got_loss, loss)
    grads = {"W": grad_W, "V": grad_V}
    for name, piece in pieces.items():
        expected = (
            grads[piece.tensor] if piece.index is None else grads[piece.tensor].index_select(piece.dim + 1, piece.index)
        )
        torch.testing.assert_close(got_grads[name], expected)
    assert torch.equal(frozen.centre["W"], W) and torch.equal(frozen.centre["V"], V)  # w* is never written


def test_groups_partition_the_network():
    data, W, V = tiny_net()
    top, rest = weight_pieces("atoms:top", W, V), weight_pieces("atoms:rest", W, V)
    neurons = torch.cat([top["W_top"].index, rest["W_rest"].index]).sort().values
    assert torch.equal(neurons, torch.arange(W.shape[1]))
    assert set(top["W_top"].index.tolist()) == set(top_atoms(W, V).tolist()) and len(rest["V_rest"].index) >= 2
    rows = torch.cat([weight_pieces("W_a", W, V)["W_a"].index, weight_pieces("W_b", W, V)["W_b"].index])
    assert torch.equal(rows, torch.arange(2 * data.p))


def test_with_every_neuron_in_the_top_group_the_estimate_is_the_full_one():
    data, W, V = tiny_net()
    V[:] = 0.1  # equal atoms are all needed to hold 99% of the mass
    W[:] = 1.0
    settings = sampler_settings("paper_code", num_draws=40, num_burnin=10)
    [(full, _)] = estimate_checkpoints(data, [(0, {"W": W, "V": V})], settings, 16, 0)
    [(top, _)] = estimate_checkpoints(data, [(0, {"W": W, "V": V})], settings.replace(weights="atoms:top"), 16, 0)
    assert top.llc_mean == full.llc_mean and np.array_equal(top.loss_trace, full.loss_trace)


def test_v_alone_on_the_validation_pairs_matches_its_closed_form_through_the_generic_path():
    """Per-pair traces send V through FrozenParamsLoss (not the linear fast path), on the validation pairs'
    loss: MALA there (exact for its target) must reproduce the closed form within 4 MCSE."""
    data, W, V = tiny_net()
    nbeta, gamma = 20.0, 5.0
    probe = SamplerSettings(localization=gamma, nbeta=nbeta, weights="V", data="val")
    problem = refined_problem(data, {"W": W, "V": V}, probe, pair_sets=("train", "val"))
    assert isinstance(problem.loss_fn, FrozenParamsLoss)
    step, _ = tuned_mala_step(problem.loss_fn, problem.centre, problem.n, nbeta, gamma, 0, first=1e-2)
    settings = probe.replace(sampler="mala", step_size=step, num_chains=4, num_burnin=300, num_draws=3000,
                             observe_every=5)  # fmt: skip
    [(result, _)] = estimate_checkpoints(data, [(0, {"W": W, "V": V})], settings, 16, 0, pair_sets=("train", "val"))
    exact = v_only_estimand(W, V, data, nbeta, gamma, "val")
    assert result.exact["estimand"] == exact["estimand"]
    assert 0.4 < result.sampler_statistics["accept_rate"].mean() < 0.95
    assert abs(result.llc_full - exact["estimand"]) < 4 * result.diagnostics.mcse, (result.llc_full, exact)
    val_exact_train = v_only_estimand(W, V, data, nbeta, gamma, "train")["estimand"]
    assert abs(val_exact_train - exact["estimand"]) > 8 * result.diagnostics.mcse  # the subset matters


def test_subsets_and_their_errors():
    data = make_dataset(7, 0.6, 0)
    sizes = 0
    for c in range(7):
        a, b, answer = data.subset(f"residue:{c}")
        assert (answer == c).all() and ((a + b) % 7 == c).all()
        sizes += len(a)
    assert sizes == data.n_train
    assert len(data.subset("all")[0]) == 49 and len(data.subset("val")[0]) == 49 - data.n_train
    with pytest.raises(BadInput, match=r"data = 'residue:7': residue 7 outside 0..6"):
        data.subset("residue:7")
    with pytest.raises(BadInput, match=r"data = 'test': expected one of"):
        data.subset("test")
    with pytest.raises(BadInput, match=r"data = 'residue:x'"):
        sampler_settings("paper_code", data="residue:x")
    sparse = make_dataset(7, 0.05, 0)
    missing = next(c for c in range(7) if c not in sparse.subset("train")[2].tolist())
    with pytest.raises(BadInput, match=f"data = 'residue:{missing}': no pairs"):
        sparse.subset(f"residue:{missing}")


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    from grokslt.training.train import TrainConfig, train

    root = tmp_path_factory.mktemp("refined") / "run"
    train(TrainConfig(p=7, hidden=8, lr=1e-2, batch_size=16, eval_every=100, max_steps=200), root)
    return root


def test_pair_traces_are_an_arviz_tree_whose_pairs_average_to_the_observed_loss(trained_run, tmp_path):
    import pandas as pd

    from grokslt.cli import main
    from grokslt.estimation.pair_traces import load_pair_traces, pair_log_likelihoods
    from grokslt.training.runs import load_run

    out, traces = str(tmp_path / "llc.csv"), str(tmp_path / "traces")
    main(["llc", "--run", str(trained_run), "--steps", "200", "--num-draws", "60", "--num-burnin", "10",
          "--observe-every", "5", "--out", out, "--pair-traces", traces])  # fmt: skip
    row = pd.read_csv(tmp_path / "llc.csv").iloc[0]
    tree = load_pair_traces(tmp_path / "traces" / "step000200.nc")
    train, val = pair_log_likelihoods(tree)
    assert train.shape == (3, 12, tree.attrs["n_train"]) and val.shape[:2] == (3, 12)
    assert tree.attrs["beta"] == pytest.approx(row["nbeta"] / tree.attrs["n_train"])
    np.testing.assert_allclose(-train.mean(axis=-1), tree["posterior"]["loss"].values, rtol=1e-5)
    params = load_run(trained_run).load(200)
    centre = QuadraticNetLoss.training_set(load_run(trained_run).data).observe({k: v[None] for k, v in params.items()})
    at_centre = tree["constant_data"]["train_loss_at_centre"].values.mean()
    assert at_centre == pytest.approx(float(centre["loss"][0]), rel=1e-5)  # float32 sums over the pairs
    answers = tree["constant_data"]["val_answer"].values
    a, b = tree["constant_data"]["val_a"].values, tree["constant_data"]["val_b"].values
    assert ((a + b) % 7 == answers).all()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--backend", "devinterp"], "backend = 'devinterp': only the native backend keeps per-pair traces"),
        (["--data", "val"], "data = 'val': per-pair traces are kept for the training set's posterior only"),
    ],
)
def test_pair_traces_that_cannot_be_kept_are_refused_before_work(trained_run, tmp_path, capsys, flags, message):
    from grokslt.cli import main

    with pytest.raises(SystemExit):
        main(["llc", "--run", str(trained_run), "--steps", "200", *flags, "--out", str(tmp_path / "x.csv"),
              "--pair-traces", str(tmp_path / "t")])  # fmt: skip
    assert message in capsys.readouterr().err and not (tmp_path / "x.csv").exists()


def test_a_residue_outside_the_field_is_refused_before_work(trained_run, tmp_path, capsys):
    from grokslt.cli import main

    with pytest.raises(SystemExit):
        main(["llc", "--run", str(trained_run), "--steps", "200", "--data", "residue:9", "--out", str(tmp_path / "x")])
    assert "data = 'residue:9': residue 9 outside 0..6 (p = 7)" in capsys.readouterr().err


def test_locality_of_a_refined_estimate_is_measured_on_the_whole_network_s_scale():
    """The zero function's training loss is the scale for every group and subset: a residue subset, whose
    common target the centring removes, would otherwise have a zero scale and never be local."""
    from grokslt.estimation.refined import zero_function_loss

    data, W, V = tiny_net()
    settings = sampler_settings("paper_code", num_draws=40, num_burnin=10, data="residue:2", weights="atoms:rest")
    [(result, _)] = estimate_checkpoints(data, [(0, {"W": W, "V": V})], settings, 16, 0)
    summary = result.summary()
    assert summary["zero_loss"] == pytest.approx(zero_function_loss(data)) and summary["zero_loss"] > 0.3
    assert math.isfinite(summary["loss_excess_fraction"])


def test_the_expected_init_loss_of_a_full_batch_sampler_is_l_n():
    from grokslt.estimation.llc import initial_losses

    data, W, V = tiny_net()
    loss_fn = QuadraticNetLoss.training_set(data)
    params = {"W": W[None], "V": V[None]}
    generator = torch.Generator().manual_seed(0)
    mala = SamplerSettings(sampler="mala", init_loss="expected")
    expected, _ = initial_losses(loss_fn, params, data.n_train, mala, 16, generator)
    full, _ = initial_losses(loss_fn, params, data.n_train, mala.replace(init_loss="full"), 16, generator)
    assert expected.item() == full.item()


def test_an_empty_group_or_a_used_traces_directory_is_refused_before_work(trained_run, tmp_path, capsys):
    from grokslt.cli import main

    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "step100.nc").write_bytes(b"")
    with pytest.raises(SystemExit):
        main(["llc", "--run", str(trained_run), "--steps", "200", "--out", str(tmp_path / "x.csv"),
              "--pair-traces", str(tmp_path / "t")])  # fmt: skip
    assert "holds trace files already" in capsys.readouterr().err and not (tmp_path / "x.csv").exists()
    with pytest.raises(SystemExit):
        main(["llc", "--run", str(trained_run), "--steps", "transitions", "--chunk", "0/2", "--out", "x"])
    assert "--steps transitions: give it without --chunk" in capsys.readouterr().err
