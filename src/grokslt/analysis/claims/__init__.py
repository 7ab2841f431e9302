"""The paper's claims (`shared/CLAIMS.md`), each tested by a statistic with its uncertainty.

Every claim reads the run summary, the runs' loss tables and an LLC series per run for one preset:
`paper_code` (the runs' own LLC, at every checkpoint) or `certified` (the calibrated sampler at a subset
of checkpoints, `runs/RUN/certified.csv`). A verdict is `holds`, `fails` or `inconclusive` by the
thresholds written beside each claim in its module, never tuned to the result; where the data cannot decide
(too few runs, no run of the experiment) the verdict is `inconclusive` and `note` says why. Only local,
honestly converged estimates decide (`trust`); each claim is asked of the estimates and of lambda_Q beside them,
and a value or scaling claim is decided only where the estimand reaches a known coefficient (`reach`). Figures 1 and 2's
claims and K_eff's are also asked of r / 2, the data-rank truth, where the runs have coefficient tables (`data_rank`).

CLAIMS is the one list of claims: for each, the function that tests it ("module.function" here, called with the
`evidence.Evidence` and the preset, returning rows) and what it is asked of. `grokslt claims` (`table`) asks
every entry: adding a claim is its function in a family's module and one line here (a new input also needs its
flag in `cli.py` and the workflow's `claims_inputs`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    name: str
    test: str  # "module.function" in grokslt.analysis.claims
    families: bool = False  # asked of every model family in the summary, not only of the quadratic network
    per_preset: bool = True  # asked once per LLC preset; else once, of the estimates it reads itself
    reads_sensitivity: bool = False  # fits the sampler-sensitivity grid (paper_code), a point a cell
    recomputed: bool = True  # may be computed again without its untrusted estimates (`trust.decided`)
    value: bool = False  # about the coefficient's value or scaling: decided only where the estimand reaches (`reach`)
    data_rank: bool = False  # also asked of r / 2 where the runs have coefficient tables (`data_rank`)

    def function(self):
        module, name = self.test.split(".")
        return getattr(importlib.import_module(f"grokslt.analysis.claims.{module}"), name)


CLAIMS: dict[str, Claim] = {
    claim.name: claim
    for claim in [
        Claim("fig1a_linear_p", "scaling.fig1a_linear_p", value=True, data_rank=True),
        Claim("fig1b_linear_K", "scaling.fig1b_linear_K", value=True, data_rank=True),
        Claim(
            "fig2_peak_before_generalisation", "trajectory.peak_before_generalisation", families=True, data_rank=True
        ),  # fmt: skip
        Claim("fig2_mirrors_val_loss", "trajectory.mirrors_val_loss", families=True, data_rank=True),
        Claim(
            "fig2_trace_aligned_then_diverges", "trajectory.trace_aligned_then_diverges", families=True, data_rank=True
        ),  # fmt: skip
        Claim("fig9_gsm_falls_with_lr", "severity.fig9_gsm_falls_with_lr"),
        Claim("fig9_peak_llc_falls_with_lr", "severity.fig9_peak_llc_falls_with_lr"),
        Claim("b2_log_linear_gamma", "sensitivity.b2_log_linear_gamma", reads_sensitivity=True),
        Claim("keff_closed_form", "keff.keff_closed_form", value=True, data_rank=True),
        Claim("waic_predicts_val_loss", "waic.waic_predicts_val_loss", per_preset=False, recomputed=False),
    ]
}
