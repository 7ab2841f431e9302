import pytest
import torch

from grokslt.analysis.hessian import exact_trace, hutchinson_trace, network_loss
from grokslt.training.data import make_dataset
from grokslt.training.families import Network
from grokslt.training.model import QuadraticNet


def small_problem(p=5, hidden=6, scale=3.0):
    torch.manual_seed(0)
    params = {k: scale * v.double() for k, v in QuadraticNet(p, hidden).params().items()}
    a, b, c = make_dataset(p, 0.6, 0).subset("train")
    return params, a, b, c, network_loss(a, b, c, Network.paper(p, hidden))


def full_hessian_trace(loss_fn, params):
    shapes = {k: v.shape for k, v in params.items()}
    sizes = [v.numel() for v in params.values()]

    def flat_loss(x):
        parts = dict(zip(shapes, x.split(sizes), strict=True))
        return loss_fn({k: parts[k].reshape(shapes[k]) for k in shapes})

    flat = torch.cat([v.flatten() for v in params.values()])
    return torch.func.hessian(flat_loss)(flat).trace().item()


def test_closed_form_trace_equals_the_full_hessian():
    params, a, b, _, loss_fn = small_problem()
    assert exact_trace(params["W"], params["V"], a, b) == pytest.approx(full_hessian_trace(loss_fn, params), rel=1e-10)


def test_hutchinson_is_within_its_standard_error_of_the_exact_trace():
    params, a, b, _, loss_fn = small_problem()
    exact = full_hessian_trace(loss_fn, params)
    estimate = hutchinson_trace(loss_fn, params, 400, torch.Generator().manual_seed(1), chunk_size=64)
    assert abs(estimate.mean - exact) < 4 * estimate.stderr
    assert estimate.samples.shape == (400,)


def test_hutchinson_at_full_size_against_the_closed_form():
    """The baseline architecture (p = 53, K = 1024) at a random point."""
    torch.manual_seed(0)
    params = QuadraticNet(53, 1024).params()
    params = {"W": 20 * params["W"], "V": 20 * params["V"]}
    a, b, c = make_dataset(53, 0.4, 0).subset("train")
    loss_fn = network_loss(a, b, c, Network.paper(53, 1024))
    estimate = hutchinson_trace(loss_fn, params, 24, torch.Generator().manual_seed(0), chunk_size=8)
    exact = exact_trace(params["W"], params["V"], a, b)
    assert abs(estimate.mean - exact) < 4 * estimate.stderr
    assert estimate.stderr < 0.05 * exact


def test_bad_probe_counts_are_rejected():
    params, *_, loss_fn = small_problem()
    with pytest.raises(ValueError, match="num_probes = 0"):
        hutchinson_trace(loss_fn, params, 0, torch.Generator())
