import pytest
import torch

from grokslt.training.data import make_dataset, one_hot_inputs, one_hot_targets
from grokslt.training.loss import authors_logged_loss, centred_loss
from grokslt.training.model import (
    QuadraticNet,
    atom_norms,
    atoms,
    centred_loss_and_grad,
    forward_dense,
    forward_pairs,
)


@pytest.fixture
def net_and_data():
    torch.manual_seed(0)
    net = QuadraticNet(7, 16)
    data = make_dataset(7, 0.6, 0)
    return net, data


def test_gather_forward_equals_dense_forward(net_and_data):
    net, data = net_and_data
    a, b, _ = data.subset("train")
    dense = net.forward_dense(one_hot_inputs(a, b, 7))
    assert torch.allclose(net(a, b), dense, rtol=1e-5, atol=1e-7)


def test_functional_forward_broadcasts_over_chains(net_and_data):
    net, data = net_and_data
    a, b, _ = data.subset("val")
    W = torch.stack([net.W, 2 * net.W])
    V = torch.stack([net.V, -net.V])
    out = forward_pairs(W, V, a.expand(2, -1), b.expand(2, -1))
    assert torch.allclose(out[0], net(a, b), atol=1e-7)
    assert torch.allclose(out[1], -4 * net(a, b), atol=1e-6)
    assert torch.allclose(forward_dense(W, V, one_hot_inputs(a, b, 7)), out, atol=1e-6)


def test_atoms_sum_to_the_quadratic_forms(net_and_data):
    net, data = net_and_data
    W, V = net.W.detach().double(), net.V.detach().double()
    Q = atoms(W, V).sum(dim=0)  # [p, 2p, 2p]
    x = one_hot_inputs(*data.subset("train")[:2], 7).double()
    via_Q = torch.einsum("ni,kij,nj->nk", x, Q, x)
    assert torch.allclose(via_Q, forward_dense(W, V, x), atol=1e-12)
    norms = atoms(W, V).flatten(1).norm(dim=1)
    assert torch.allclose(atom_norms(W, V), norms, atol=1e-12)


def test_centred_loss_equals_projection_matrix_form():
    torch.manual_seed(1)
    pred, target = torch.randn(9, 4, dtype=torch.float64), torch.randn(9, 4, dtype=torch.float64)
    n = 9
    P_perp = torch.eye(n, dtype=torch.float64) - torch.ones(n, n, dtype=torch.float64) / n
    explicit = 0.5 * torch.linalg.matrix_norm(P_perp @ (target - pred)) ** 2 / n
    assert torch.allclose(centred_loss(pred, target), explicit)


def test_centred_loss_ignores_a_constant_per_class_offset():
    torch.manual_seed(2)
    pred, target = torch.randn(9, 4), torch.randn(9, 4)
    shifted = pred + torch.randn(4)
    assert torch.allclose(centred_loss(pred, target), centred_loss(shifted, target), atol=1e-6)


def test_authors_logged_loss_of_a_zero_network():
    p = 53
    target = one_hot_targets(torch.arange(p), p)
    loss = authors_logged_loss(torch.zeros(p, p), target)
    assert loss.item() == pytest.approx(0.5 * (1 - 1 / p) / p)


def test_hand_gradient_equals_autograd(net_and_data):
    net, data = net_and_data
    a, b, c = data.subset("train")
    W = net.W.detach().double().expand(3, -1, -1).clone()
    V = net.V.detach().double().expand(3, -1, -1).clone()
    W += 0.1 * torch.randn_like(W)
    idx = torch.stack([torch.randperm(len(a))[:8] for _ in range(3)])
    loss, grad_W, grad_V = centred_loss_and_grad(W, V, a[idx], b[idx], c[idx])
    W.requires_grad_(True)
    V.requires_grad_(True)
    x = torch.stack([one_hot_inputs(a[i], b[i], 7).double() for i in idx])
    reference = centred_loss(forward_dense(W, V, x), one_hot_targets(c[idx], 7).double())
    reference.sum().backward()
    assert torch.allclose(loss, reference.detach(), atol=1e-12)
    assert torch.allclose(grad_W, W.grad, atol=1e-12)
    assert torch.allclose(grad_V, V.grad, atol=1e-12)


def test_initialisation_follows_nn_linear_order():
    torch.manual_seed(5)
    first = torch.nn.Linear(6, 4, bias=False)
    second = torch.nn.Linear(4, 3, bias=False)
    torch.manual_seed(5)
    net = QuadraticNet(3, 4)
    assert torch.equal(net.W, first.weight.t())
    assert torch.equal(net.V, second.weight)
