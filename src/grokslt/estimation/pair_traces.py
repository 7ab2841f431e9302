"""Per-pair posterior traces of one checkpoint, as an ArviZ DataTree in NetCDF.

At every full-batch observation (`grokslt.estimation.observables`) the sampled network's loss on each training
and each validation pair is kept: l_i(w_t), the pair's row of the residual centred over its own set (the
training pairs over the training set, the validation pairs over the validation set), so that the mean over a
set is that set's centred loss (transductive for the validation pairs: their own mean residual is removed, as in
the logged validation loss, where a predictive would remove the training pairs'). They are stored as
log-likelihoods, ll_i = -l_i: the posterior exp(-nbeta L_n) = prod_i exp(-l_i)^beta is the likelihood of a
unit-variance Gaussian model at inverse temperature beta = nbeta / n (its constant -(p/2) log 2 pi per pair left
out; minibatch samplers see nbeta times the batch-centring factor, 0.7% less on the baseline). One file holds:

- `posterior`: `loss` (L_n(w_t)), `distance_sq` (||w_t - w*||^2), `accuracy`, each (chain, draw);
- `log_likelihood`: `train` (chain, draw, train_pair) and `val` (chain, draw, val_pair), float32;
- `constant_data`: each pair's operands and answer (`train_a`, `train_b`, `train_answer`, `val_*`), its loss at
  w* (`train_loss_at_centre`, `val_loss_at_centre`), and w* itself (`W` [input, neuron], `V` [output, neuron]);
- attributes: `nbeta`, `beta`, `n_train`, `p`, `step`, `weights`, `data`, `sampler`, `step_size`,
  `localization`, `observed_every`.

Load one in a notebook with `xarray.open_datatree(path)` (or `arviz_base.convert_to_datatree(path)`).
"""

from __future__ import annotations

import numpy as np

from grokslt.artefacts import seal, unsealed
from grokslt.estimation.llc import LLCResult
from grokslt.estimation.samplers import SamplerSettings
from grokslt.io import atomic_path, file_sha256
from grokslt.training.data import ModularArithmetic
from grokslt.training.families import Network
from grokslt.training.loss import pair_losses

PAIR_SETS = ("train", "val")
KEPT_ATTRIBUTES = ("weights", "data", "sampler", "step_size", "localization")


def pair_trace_tree(result: LLCResult, data: ModularArithmetic, params: dict, step: int, settings: SamplerSettings,
                    network: Network | None = None):  # fmt: skip
    """The DataTree of one checkpoint's estimate, which observed the per-pair losses of PAIR_SETS; `network`: the
    run's (None: the quadratic network with the centred loss, whose W* and V* the tree also holds)."""
    from arviz_base import from_dict

    kept = ~result.diverged
    posterior = {name: result.observations[name][kept] for name in ("loss", "distance_sq", "accuracy")
                 if name in result.observations}  # fmt: skip
    likelihood = {name: -result.observations[f"pairs_{name}"][kept].astype(np.float32) for name in PAIR_SETS}
    constant, dims = {}, {}
    network = network or Network.paper(data.p, params["W"].shape[1])
    centre = {name: value.detach().double().cpu() for name, value in params.items()}
    for name in PAIR_SETS:
        a, b, c = data.subset(name)
        constant |= {f"{name}_a": a.numpy(), f"{name}_b": b.numpy(), f"{name}_answer": c.numpy()}
        constant[f"{name}_loss_at_centre"] = pair_losses(network.loss, network.forward(centre, a, b), c).numpy()
        dims |= {key: [f"{name}_pair"] for key in (name, f"{name}_a", f"{name}_b", f"{name}_answer",
                                                      f"{name}_loss_at_centre")}  # fmt: skip
    if network.model == "quadratic":
        constant |= {"W": centre["W"].float().numpy(), "V": centre["V"].float().numpy()}
        dims |= {"W": ["input", "neuron"], "V": ["output", "neuron"]}
    tree = from_dict({"posterior": posterior, "log_likelihood": likelihood, "constant_data": constant}, dims=dims)
    tree.attrs.update(
        nbeta=result.nbeta,
        beta=result.nbeta / data.n_train,
        n_train=data.n_train,
        p=data.p,
        step=int(step),
        model=network.model,
        loss=network.loss,
        observed_every=int(result.observed_every),
        **{name: getattr(settings, name) for name in KEPT_ATTRIBUTES},
    )
    return tree


def save_pair_traces(path, tree, run: str | None = None) -> None:
    """Write the tree to `path` (NetCDF 4 through h5netcdf), atomically, sealed as `run`'s."""
    with atomic_path(path) as tmp:
        tree.to_netcdf(tmp, engine="h5netcdf")
        digest = file_sha256(tmp)
    seal(path, digest, "grokslt llc --pair-traces", run)


def load_pair_traces(path):
    """The tree at `path`, refused unless it is the file `grokslt llc` sealed."""
    import io

    import xarray

    data, _ = unsealed(path)
    return xarray.open_datatree(io.BytesIO(data), engine="h5netcdf")


def pair_log_likelihoods(tree) -> tuple[np.ndarray, np.ndarray]:
    """(train [C, D, N], val [C, D, M]) log-likelihood arrays of a loaded tree, in float64."""
    group = tree["log_likelihood"]
    return tuple(np.asarray(group[name].values, dtype=np.float64) for name in PAIR_SETS)


def trace_name(step: int) -> str:
    """A checkpoint's trace file name, zero-padded so that sorting the names sorts the steps: step000600.nc."""
    return f"step{step:06d}.nc"


def trace_step(path) -> int:
    """The step a trace file holds (written by `trace_name`; unpadded names of earlier versions read too)."""
    from pathlib import Path

    return int(Path(path).stem.removeprefix("step"))


def check_pair_traces(settings: SamplerSettings, backend: str, directory) -> None:
    """Per-pair traces need the native backend and the training set's posterior (WAIC's n and beta are the
    training set's), and a directory without earlier traces (`grokslt waic` reads every file there)."""
    from pathlib import Path

    from grokslt.errors import BadInput

    if any(Path(directory).glob("step*.nc")):
        raise BadInput(f"--pair-traces {directory}: holds trace files already; give an empty or new directory")
    if backend != "native":
        raise BadInput(f"backend = {backend!r}: only the native backend keeps per-pair traces (--pair-traces)")
    if settings.data != "train":
        raise BadInput(f"data = {settings.data!r}: per-pair traces are kept for the training set's posterior only")
