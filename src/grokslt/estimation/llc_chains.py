"""A run's main LLC chains (`runs/RUN/llc/chunk<i>of<n>.npz`, written by `grokslt llc --traces`) as an ArviZ
DataTree, for the ArviZ user: `arviz_stats` diagnostics and `xarray` selection work on it as on any posterior.

- `posterior`: `llc` = nbeta (L_t - L_init), the per-draw LLC of each chain (chain, draw, step) whose mean over
  draws is the table's `llc_chain_<i>`, and `minibatch_loss` L_t itself;
- `observations`: the full-batch observations the honest diagnostics read (`loss`, `distance_sq`, `accuracy`:
  chain, observation, step), thinned every `observed_every` draws;
- `constant_data`: per step, L_init (`init_loss`), nbeta and L_n(w*) (`centre_loss`).

The chunk's CSV beside each .npz gives nbeta and L_init.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from grokslt.errors import BadInput


def load_llc_chains(run_dir):
    """The DataTree of a run's LLC chains, every chunk's steps in order."""
    from arviz_base import from_dict

    chunks = sorted(Path(run_dir, "llc").glob("chunk*.npz"))
    if not chunks:
        raise BadInput(f"{Path(run_dir) / 'llc'}: no chunk*.npz LLC traces (written by grokslt llc --traces)")
    arrays, table = read_chunks(chunks)
    order = np.argsort(arrays["steps"])
    steps = arrays["steps"][order]
    table = table.set_index("step").loc[steps]
    loss = arrays["loss_trace"][order].astype(np.float64)  # [step, chain, draw]
    nbeta, init = table["nbeta"].to_numpy(), table["init_loss"].to_numpy()
    llc = nbeta[:, None, None] * (loss - init[:, None, None])
    posterior = {"llc": np.moveaxis(llc, 0, -1), "minibatch_loss": np.moveaxis(loss, 0, -1)}
    observed = {name.removeprefix("observed_"): np.moveaxis(values[order], 0, -1)
                for name, values in arrays.items() if name.startswith("observed_")}  # fmt: skip
    constant = {"init_loss": init, "nbeta": nbeta}
    if "centre_loss" in arrays:
        constant["centre_loss"] = arrays["centre_loss"][order]
    groups = {"posterior": posterior, "constant_data": constant}
    if observed:
        groups["observations"] = observed
    dims = {name: ["step"] for name in [*posterior, *observed, *constant]}
    tree = from_dict(groups, dims=dims, coords={"step": steps})
    tree.attrs["run"] = Path(run_dir).name
    return tree


def read_chunks(chunks: list[Path]) -> tuple[dict[str, np.ndarray], pd.DataFrame]:
    """The chunks' arrays, concatenated along the steps, and their CSVs' rows (nbeta, L_init per step)."""
    parts, tables = [], []
    for path in chunks:
        table_path = path.with_suffix(".csv")
        if not table_path.exists():
            raise BadInput(f"{table_path}: missing; the LLC table beside {path.name} gives nbeta and L_init")
        with np.load(path) as arrays:
            parts.append({name: arrays[name] for name in arrays.files})
        tables.append(pd.read_csv(table_path, usecols=["step", "nbeta", "init_loss"]))
    names = [name for name in parts[0] if all(name in part for part in parts)]
    return {name: np.concatenate([part[name] for part in parts]) for name in names}, pd.concat(tables)
