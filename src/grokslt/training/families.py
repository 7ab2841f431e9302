"""Model families: the networks a run may train, by name (`MODELS`), each a pure function of its parameters.

A family gives the shapes of its parameters, their initialisation (drawn from torch's global RNG right
after `torch.manual_seed(seed)`, in a fixed order) and `forward(params, a, b, settings) -> logits [n, p]` on
unbatched parameters. Everything downstream (training, the LLC's samplers through `torch.func.vmap`, the
Hessian trace) needs only these, so adding a family is one entry here.

- `quadratic`: the paper's two-layer network V sigma(W^T x), sigma(z) = z^2 (`grokslt.training.model`, which keeps
  its hand-derived gradient and compiled CPU path).
- `mlp`: devinterp's grokking example (examples/grokking.ipynb, reference/devinterp_grokking/SETTINGS.md): one
  embedding [p, e] shared by both operands, a linear layer e -> K with bias for each operand, their sum through
  GELU (or ReLU), a bias-free linear layer K -> p. Initialised as the notebook's modules are, in its order:
  nn.Embedding (N(0, 1)), the linear layer of b, that of a, the output layer (Kaiming-uniform weights, uniform
  biases).
- `transformer`: Nanda et al. (2023)'s one-layer transformer: tokens `a b =` (`=` is token p), learned token
  and position embeddings of width d = `embed`, one attention layer of `heads` heads of width d / heads
  (causal), a ReLU MLP of width K with biases, no LayerNorm, and an unembedding read at `=`. Their
  initialisation: every matrix N(0, 1/d), the unembedding N(0, 1/p), biases zero. With one layer only the
  `=` position's residual stream reaches the output, so only its query is computed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from grokslt.training.model import forward_pairs

Params = dict[str, torch.Tensor]
ACTIVATIONS = {"gelu": torch.nn.functional.gelu, "relu": torch.relu}


@dataclass(frozen=True)
class Family:
    """A model family: what its settings default to, its parameter shapes, initialisation and forward pass."""

    name: str
    summary: str
    defaults: dict  # the family's own settings (`TrainConfig` fields) and their values when not given
    shapes: Callable[[int, int, dict], dict[str, tuple[int, ...]]]  # (p, hidden, settings) -> shapes
    init: Callable[[int, int, dict], Params]
    forward: Callable[[Params, torch.Tensor, torch.Tensor, dict], torch.Tensor]


# -- quadratic ------------------------------------------------------------------------------------------------


def _quadratic_shapes(p: int, hidden: int, settings: dict) -> dict:
    return {"W": (2 * p, hidden), "V": (p, hidden)}


def _quadratic_init(p: int, hidden: int, settings: dict) -> Params:
    from grokslt.training.model import QuadraticNet

    return QuadraticNet(p, hidden).params()


def _quadratic_forward(params: Params, a, b, settings: dict) -> torch.Tensor:
    return forward_pairs(params["W"], params["V"], a, b)


# -- mlp ------------------------------------------------------------------------------------------------------


def _mlp_shapes(p: int, hidden: int, settings: dict) -> dict:
    e = settings["embed"]
    return {
        "embedding": (p, e),
        "left": (hidden, e),
        "left_bias": (hidden,),
        "right": (hidden, e),
        "right_bias": (hidden,),
        "output": (p, hidden),
    }


def _mlp_init(p: int, hidden: int, settings: dict) -> Params:
    embedding = nn.Embedding(p, settings["embed"])
    right = nn.Linear(settings["embed"], hidden)  # the notebook creates linear1r (for b) before linear1l (for a)
    left = nn.Linear(settings["embed"], hidden)
    output = nn.Linear(hidden, p, bias=False)
    modules = {"embedding": embedding.weight, "left": left.weight, "left_bias": left.bias, "right": right.weight}
    modules |= {"right_bias": right.bias, "output": output.weight}
    return {name: tensor.detach().clone() for name, tensor in modules.items()}


def _mlp_forward(params: Params, a, b, settings: dict) -> torch.Tensor:
    embedding = params["embedding"]
    left = embedding[a] @ params["left"].transpose(-1, -2) + params["left_bias"]
    right = embedding[b] @ params["right"].transpose(-1, -2) + params["right_bias"]
    return ACTIVATIONS[settings["activation"]](left + right) @ params["output"].transpose(-1, -2)


# -- transformer ----------------------------------------------------------------------------------------------


def _transformer_shapes(p: int, hidden: int, settings: dict) -> dict:
    d, heads = settings["embed"], settings["heads"]
    width = d // heads
    return {
        "token_embedding": (p + 1, d),
        "position_embedding": (3, d),
        "query": (heads, d, width),
        "key": (heads, d, width),
        "value": (heads, d, width),
        "attention_output": (heads, width, d),
        "mlp_in": (d, hidden),
        "mlp_in_bias": (hidden,),
        "mlp_out": (hidden, d),
        "mlp_out_bias": (d,),
        "unembedding": (d, p),
    }


def _transformer_init(p: int, hidden: int, settings: dict) -> Params:
    d = settings["embed"]
    params = {}
    for name, shape in _transformer_shapes(p, hidden, settings).items():
        scale = 0.0 if name.endswith("bias") else 1 / math.sqrt(p if name == "unembedding" else d)
        params[name] = torch.randn(shape) * scale
    return params


def _transformer_forward(params: Params, a, b, settings: dict) -> torch.Tensor:
    equals = torch.full_like(a, params["token_embedding"].shape[0] - 1)
    tokens = torch.stack([a, b, equals], dim=-1)  # [n, 3]
    stream = params["token_embedding"][tokens] + params["position_embedding"]  # [n, 3, d]
    last = stream[:, -1]  # [n, d]: the `=` position, the only one that reaches the output
    query = torch.einsum("nd,hdw->nhw", last, params["query"])
    key = torch.einsum("nsd,hdw->nhsw", stream, params["key"])
    value = torch.einsum("nsd,hdw->nhsw", stream, params["value"])
    scores = torch.einsum("nhw,nhsw->nhs", query, key) / math.sqrt(query.shape[-1])
    mixed = torch.einsum("nhs,nhsw->nhw", scores.softmax(dim=-1), value)  # `=` attends to all three tokens
    last = last + torch.einsum("nhw,hwd->nd", mixed, params["attention_output"])
    neurons = torch.relu(last @ params["mlp_in"] + params["mlp_in_bias"])
    last = last + neurons @ params["mlp_out"] + params["mlp_out_bias"]
    return last @ params["unembedding"]


MODELS: dict[str, Family] = {
    "quadratic": Family(
        "quadratic", "the paper's V (W^T x)^2", {}, _quadratic_shapes, _quadratic_init, _quadratic_forward
    ),
    "mlp": Family(
        "mlp",
        "devinterp's grokking MLP: shared embedding, per-operand linear layers, activation, output layer",
        {"embed": 12, "activation": "gelu"},
        _mlp_shapes,
        _mlp_init,
        _mlp_forward,
    ),
    "transformer": Family(
        "transformer",
        "Nanda et al.'s one-layer transformer without LayerNorm on `a b =`",
        {"embed": 64, "heads": 4},
        _transformer_shapes,
        _transformer_init,
        _transformer_forward,
    ),
}
FAMILY_SETTINGS = ("embed", "activation", "heads")  # settings that belong to some families only


@dataclass(frozen=True)
class Network:
    """A run's network: its family with the settings it takes (defaults filled in) and the loss it trains with,
    what every later stage evaluates. `paper_model`: the quadratic network with the centred MSE, the model
    the paper's closed forms (and the hand-derived gradients) are for."""

    model: str
    p: int
    hidden: int
    loss: str
    settings: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, config) -> Network:
        """The network of a `TrainConfig` (or anything with its fields)."""
        family = MODELS[config.model]
        settings = {key: getattr(config, key) if getattr(config, key) is not None else value
                    for key, value in family.defaults.items()}  # fmt: skip
        return cls(config.model, config.p, config.hidden, config.loss, tuple(sorted(settings.items())))

    @classmethod
    def paper(cls, p: int, hidden: int) -> Network:
        """The paper's network: quadratic, trained with the centred MSE."""
        return cls("quadratic", p, hidden, "centred_mse")

    @property
    def family(self) -> Family:
        return MODELS[self.model]

    @property
    def paper_model(self) -> bool:
        return self.model == "quadratic" and self.loss == "centred_mse"

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return self.family.shapes(self.p, self.hidden, dict(self.settings))

    def init(self) -> Params:
        return self.family.init(self.p, self.hidden, dict(self.settings))

    def forward(self, params: Params, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.family.forward(params, a, b, dict(self.settings))

    def n_params(self) -> int:
        return sum(math.prod(shape) for shape in self.shapes().values())


class NetworkModule(nn.Module):
    """A network's parameters as an nn.Module (for torch's optimizers and devinterp): forward(a, b) -> logits."""

    def __init__(self, network: Network, params: Params):
        super().__init__()
        self.network = network
        self.weights = nn.ParameterDict({name: nn.Parameter(value.detach().clone()) for name, value in params.items()})

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.network.forward(dict(self.weights), a, b)

    def params(self) -> Params:
        return {name: tensor.detach() for name, tensor in self.weights.items()}

    def load_params(self, params: Params) -> NetworkModule:
        with torch.no_grad():
            for name, tensor in self.weights.items():
                tensor.copy_(params[name])
        return self
