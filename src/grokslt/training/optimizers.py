"""The optimizers of training, Adam, AdamW and SGD with momentum, each a call of torch's fused kernel per step made
as torch.optim's `fused=True` path makes it: the same update bit for bit, and the same `state_dict` layout (a
resume.pt of either reads into the other). torch.optim's classes are not used because their methods import
torch._dynamo at first use, 1.6 CPU-s in every training job of the workflow."""

from __future__ import annotations

from collections.abc import Iterable

import torch

BETAS, EPS = (0.9, 0.999), 1e-8  # torch.optim.Adam's defaults, as the authors train
KINDS = ("adam", "adamw", "sgd")


class FusedOptimizer:
    """Adam (weight decay added to the gradient), AdamW (decoupled) or SGD (coupled, with `momentum`)."""

    def __init__(self, params: Iterable[torch.Tensor], kind: str, lr: float, weight_decay: float,
                 momentum: float = 0.0):  # fmt: skip
        if kind not in KINDS:
            raise ValueError(f"optimizer {kind!r}: expected one of {KINDS}")
        self.params = list(params)
        self.kind, self.lr, self.weight_decay, self.momentum = kind, lr, weight_decay, momentum
        self.state: list[dict[str, torch.Tensor]] = [{} for _ in self.params]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for param in self.params:
            param.grad = None

    @torch.no_grad()
    def step(self) -> None:
        stepped = [i for i, param in enumerate(self.params) if param.grad is not None]
        groups: dict[tuple, list[int]] = {}  # a fused kernel takes tensors of one device and dtype
        for i in stepped:
            groups.setdefault((self.params[i].device, self.params[i].dtype), []).append(i)
        first = self.momentum != 0 and all("momentum_buffer" not in self.state[i] for i in stepped)
        for indices in groups.values():
            if self.kind == "sgd":
                self._sgd(indices, first)
            else:
                self._adam(indices)

    def _adam(self, indices: list[int]) -> None:
        params, states = [self.params[i] for i in indices], [self.state[i] for i in indices]
        for param, state in zip(params, states, strict=True):
            if not state:
                state["step"] = torch.zeros((), dtype=torch.float32, device=param.device)
                state["exp_avg"] = torch.zeros_like(param, memory_format=torch.preserve_format)
                state["exp_avg_sq"] = torch.zeros_like(param, memory_format=torch.preserve_format)
        steps = [state["step"] for state in states]
        torch._foreach_add_(steps, 1)
        kernel = torch._fused_adamw_ if self.kind == "adamw" else torch._fused_adam_
        kernel(params, [param.grad for param in params], [s["exp_avg"] for s in states],
               [s["exp_avg_sq"] for s in states], [], steps, amsgrad=False, lr=self.lr, beta1=BETAS[0],
               beta2=BETAS[1], weight_decay=self.weight_decay, eps=EPS, maximize=False, grad_scale=None,
               found_inf=None)  # fmt: skip

    def _sgd(self, indices: list[int], first: bool) -> None:
        params = [self.params[i] for i in indices]
        grads = [param.grad for param in params]
        buffers = []
        if self.momentum != 0:
            for i, grad in zip(indices, grads, strict=True):
                if first:  # torch.optim leaves the first step's buffers uninitialised: the kernel sets them
                    self.state[i]["momentum_buffer"] = torch.empty_like(grad)
            buffers = [self.state[i]["momentum_buffer"] for i in indices]
        torch._fused_sgd_(params, grads, buffers, weight_decay=self.weight_decay, momentum=self.momentum,
                          lr=self.lr, dampening=0.0, nesterov=False, maximize=False, is_first_step=first,
                          grad_scale=None, found_inf=None)  # fmt: skip

    def state_dict(self) -> dict:
        """torch.optim's layout: per-parameter state by index, and one parameter group."""
        group = {"kind": self.kind, "lr": self.lr, "weight_decay": self.weight_decay, "momentum": self.momentum,
                 "params": list(range(len(self.params)))}  # fmt: skip
        return {"state": {i: dict(state) for i, state in enumerate(self.state) if state}, "param_groups": [group]}

    def load_state_dict(self, saved: dict) -> None:
        self.state = [{} for _ in self.params]
        for index, state in saved["state"].items():
            param = self.params[int(index)]
            self.state[int(index)] = {
                key: value.to(param.device) if key == "step" else value.to(param.device, param.dtype)
                for key, value in state.items()
            }
