"""The LLC of a run's network through devinterp 1.3.2, as the authors computed it for the quadratic network.

`estimate_learning_coeff_with_summary` with devinterp's SGLD (or SGNHT), a shuffled DataLoader over a
TensorDataset of the training set (batch size B), the run's loss as `evaluate`, and nbeta
defaulting to B / ln B. With `init_loss="batches"` devinterp measures L_init itself. devinterp 1.3.2
has no RMSProp-SGLD or MALA sampler, and its SGNHT no localization.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset

from grokslt.errors import BadInput
from grokslt.estimation.llc import LLCResult, chain_statistics
from grokslt.estimation.samplers import SamplerSettings
from grokslt.training.data import ModularArithmetic
from grokslt.training.families import Network, NetworkModule
from grokslt.training.loss import sample_loss
from grokslt.training.model import QuadraticNet

SUPPORTED = ("sgld", "sgnht")


def check_supported(settings: SamplerSettings, pair_sets=()) -> None:
    """Refuse settings that devinterp 1.3.2 cannot run (here), naming them."""
    if settings.sampler not in SUPPORTED:
        raise BadInput(
            f"sampler = {settings.sampler!r}: devinterp 1.3.2 has only {list(SUPPORTED)}; use --backend native"
        )
    if settings.weights != "all":
        raise BadInput(f"weights = {settings.weights!r}: devinterp samples every weight; use --backend native")
    if settings.data != "train":
        raise BadInput(f"data = {settings.data!r}: the devinterp backend samples the training loss; use native")
    if pair_sets:
        raise BadInput("pair traces: the devinterp backend cannot keep per-pair losses; use --backend native")
    if settings.sampler == "sgnht" and (settings.localization or settings.weight_decay):
        raise BadInput(
            f"localization = {settings.localization!r}, weight_decay = {settings.weight_decay!r}: devinterp's SGNHT "
            "has neither; set them to 0 or use --backend native"
        )


def optimizer(settings: SamplerSettings, nbeta: float):
    """devinterp's sampler class and its keyword arguments for these settings."""
    if settings.sampler == "sgnht":
        from devinterp.optim.sgnht import SGNHT

        diffusion = settings.diffusion_factor if settings.diffusion_factor is not None else 0.01
        return SGNHT, dict(lr=settings.step_size, diffusion_factor=diffusion, nbeta=nbeta)
    from devinterp.optim.sgld import SGLD

    kwargs = dict(lr=settings.step_size, localization=settings.localization, nbeta=nbeta)
    return SGLD, kwargs | dict(weight_decay=settings.weight_decay)


def run_devinterp(
    model,
    loader,
    evaluate,
    settings: SamplerSettings,
    nbeta: float,
    seed: int,
    device="cpu",
    init_loss: float | None = None,
) -> dict:
    """devinterp 1.3.2's `estimate_learning_coeff_with_summary` with its sampler at these settings."""
    from devinterp.slt.sampler import estimate_learning_coeff_with_summary

    check_supported(settings)
    method, kwargs = optimizer(settings, nbeta)
    torch.manual_seed(seed)  # devinterp's loader shuffles and its L_init batches use the global RNG
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimate_learning_coeff_with_summary(
            model,
            loader=loader,
            evaluate=evaluate,
            sampling_method=method,
            optimizer_kwargs=kwargs,
            num_chains=settings.num_chains,
            num_draws=settings.num_draws,
            num_burnin_steps=settings.num_burnin,
            num_steps_bw_draws=1,
            init_loss=init_loss,
            seed=seed % 2**32,
            device=device,
            online=False,
            verbose=False,
        )


def devinterp_estimate(
    data: ModularArithmetic,
    params: dict[str, torch.Tensor],
    settings: SamplerSettings,
    batch_size: int,
    seed: int,
    device: str | torch.device = "cpu",
    network: Network | None = None,
) -> LLCResult:
    """The estimate at w* = params of the run's `network` (None: the quadratic network, centred loss)."""
    network = network or Network.paper(data.p, params["W"].shape[1])
    if network.model == "quadratic":
        model = QuadraticNet.from_params(params).to(device)
    else:
        model = NetworkModule(network, params).to(device)
    loss = network.loss
    a, b, c = data.subset("train")
    loader = DataLoader(TensorDataset(a, b, c), batch_size=batch_size, shuffle=True)

    def evaluate(net, batch):
        x_a, x_b, target = batch
        out = net(x_a, x_b)
        return sample_loss(loss, out, target), {"output": out}

    nbeta = settings.resolved_nbeta(batch_size)
    init_loss = None
    if settings.init_loss_mode in ("full", "expected"):
        with torch.no_grad():
            init_loss = evaluate(model, (a.to(device), b.to(device), c.to(device)))[0].item()
        init_loss *= settings.init_loss_factor(len(a), batch_size, loss)
    result = run_devinterp(model, loader, evaluate, settings, nbeta, seed, device, init_loss)
    trace = np.asarray(result["loss/trace"], dtype=np.float64)
    llc_per_chain = np.array([result[f"llc-chain/{i}"] for i in range(settings.num_chains)])
    init = float(np.mean(trace.mean(axis=1) - llc_per_chain / nbeta))  # recover devinterp's L_init
    stderr = (
        0.0 if init_loss is not None else init_loss_stderr(model, loader, evaluate, settings.num_chains, seed, device)
    )
    return chain_statistics(trace, init, nbeta, noise="devinterp", init_loss_stderr=stderr)


@torch.no_grad()
def init_loss_stderr(model, loader, evaluate, count: int, seed: int, device) -> float:
    """The standard error of devinterp's L_init, the mean loss of `count` minibatches at w*: the spread
    of `count` other minibatch losses there over sqrt(count) (devinterp does not return its own)."""
    torch.manual_seed(seed + 1)
    batches = iter(loader)
    count = min(count, len(loader))
    losses = [evaluate(model, [t.to(device) for t in next(batches)])[0].item() for _ in range(count)]
    return float(np.std(losses, ddof=1) / np.sqrt(len(losses))) if len(losses) > 1 else float("nan")
