"""The main LLC chains as an ArviZ DataTree: its per-chain means are the table's llc_chain_<i>."""

import numpy as np
import pandas as pd
import pytest

from grokslt.errors import BadInput
from grokslt.estimation.llc_chains import load_llc_chains


def write_chunk(llc_dir, name, steps, rng):
    loss = 0.01 + 0.001 * rng.random((len(steps), 3, 20))
    init = np.full(len(steps), 0.01)
    nbeta = np.full(len(steps), 9.2)
    np.savez(llc_dir / f"{name}.npz", steps=np.array(steps), loss_trace=loss.astype(np.float32),
             observed_loss=loss[:, :, ::4], centre_loss=init)  # fmt: skip
    chains = {f"llc_chain_{i}": nbeta * (loss[:, i].astype(np.float32).astype(float).mean(axis=1) - init)
              for i in range(3)}  # fmt: skip
    pd.DataFrame({"step": steps, "nbeta": nbeta, "init_loss": init, **chains}).to_csv(llc_dir / f"{name}.csv")


def test_the_tree_holds_every_chunk_in_step_order_and_its_means_are_the_tables(tmp_path):
    rng = np.random.default_rng(0)
    (tmp_path / "llc").mkdir()
    write_chunk(tmp_path / "llc", "chunk1of2", [300, 400], rng)
    write_chunk(tmp_path / "llc", "chunk0of2", [100, 200], rng)
    tree = load_llc_chains(tmp_path)
    llc = tree["posterior"]["llc"]
    assert llc.dims == ("chain", "draw", "step") and list(llc["step"].values) == [100, 200, 300, 400]
    table = pd.concat([pd.read_csv(tmp_path / "llc" / f"chunk{i}of2.csv") for i in range(2)]).set_index("step")
    for chain in range(3):
        means = llc.sel(chain=chain).mean("draw").values
        np.testing.assert_allclose(means, table[f"llc_chain_{chain}"].loc[[100, 200, 300, 400]], rtol=1e-5)
    assert tree["observations"]["loss"].sizes["draw"] == 5


def test_a_run_without_traces_is_named(tmp_path):
    (tmp_path / "llc").mkdir()
    with pytest.raises(BadInput, match="no chunk\\*.npz LLC traces"):
        load_llc_chains(tmp_path)
