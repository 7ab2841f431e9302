"""The fused optimizers of training make torch.optim's fused update bit for bit, and their state dicts read into
each other, so a run resumes the same whichever wrote its resume.pt."""

from __future__ import annotations

import pytest
import torch

from grokslt.training.optimizers import FusedOptimizer

SETTINGS = {
    "adam": (lambda p: torch.optim.Adam(p, lr=3e-3, weight_decay=1e-3, fused=True), {}),
    "adamw": (lambda p: torch.optim.AdamW(p, lr=3e-3, weight_decay=1e-1, fused=True), {}),
    "sgd": (lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, weight_decay=1e-3, fused=True), {"momentum": 0.9}),
    "sgd_plain": (lambda p: torch.optim.SGD(p, lr=1e-2, weight_decay=1e-3, fused=True), {}),
}
OURS = {"adam": ("adam", 3e-3, 1e-3), "adamw": ("adamw", 3e-3, 1e-1), "sgd": ("sgd", 1e-2, 1e-3),
        "sgd_plain": ("sgd", 1e-2, 1e-3)}  # fmt: skip


def parameters(seed: int = 0) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(5, 7, generator=generator), torch.randn(3, generator=generator)]


def run(optimizer, params: list[torch.Tensor], steps: range) -> None:
    for step in steps:
        generator = torch.Generator().manual_seed(100 + step)
        for param in params:
            param.grad = torch.randn(param.shape, generator=generator)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def ours(name: str, params) -> FusedOptimizer:
    kind, lr, weight_decay = OURS[name]
    return FusedOptimizer(params, kind, lr, weight_decay, **SETTINGS[name][1])


@pytest.mark.parametrize("name", SETTINGS)
def test_the_update_is_torch_optims_fused_one_bit_for_bit(name):
    reference, mine = parameters(), parameters()
    run(SETTINGS[name][0](reference), reference, range(25))
    run(ours(name, mine), mine, range(25))
    assert all(torch.equal(a, b) for a, b in zip(reference, mine, strict=True))
    assert not torch.equal(reference[0], parameters()[0])  # the parameters moved


@pytest.mark.parametrize("name", SETTINGS)
@pytest.mark.parametrize("first_by", ["torch", "ours"])
def test_a_state_dict_of_either_resumes_the_other(name, first_by):
    straight = parameters()
    run(ours(name, straight), straight, range(20))
    resumed = parameters()
    make = {"torch": SETTINGS[name][0], "ours": lambda p: ours(name, p)}
    first = make[first_by](resumed)
    run(first, resumed, range(10))
    second = make["ours" if first_by == "torch" else "torch"](resumed)
    saved = first.state_dict()
    if first_by == "ours":  # torch.optim keeps its own parameter groups; the per-parameter state is one layout
        saved = {"state": saved["state"], "param_groups": second.state_dict()["param_groups"]}
    second.load_state_dict(saved)
    run(second, resumed, range(10, 20))
    assert all(torch.equal(a, b) for a, b in zip(straight, resumed, strict=True))


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="expected one of"):
        FusedOptimizer(parameters(), "lion", 1e-3, 0.0)
