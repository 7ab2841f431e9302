"""grokslt: grokking on modular arithmetic seen through singular learning theory: the paper's quadratic networks,
and MLPs and transformers through the same pipeline.

Where things are: the package is grouped by stage, in the order data flows; each folder imports only the
folders above it in this list, and no modules import each other in a cycle (tests/package/test_layers.py holds both).

- base: `errors` (the one-line BadInput), `io` (atomic writes, checkpoints), `settings` (the `setting(...)`
  fields every settings class is made of), `runtime` (threads, subnormal floats), `cpu_kernels` (the compiled
  C kernels in `kernels/`, shared by the model's forward pass and the samplers)
- `training/`: `data` (tasks and the train/validation split), `model` (the quadratic net in gather form),
  `families` (the model registry: quadratic, mlp, transformer), `loss` (the centred MSE, the cross-entropy),
  `train` (the loop, checkpoints, resume), `metrics` (accuracy, GSM, grokking step), `runs` (a trained run on
  disk, as every later stage reads it)
- `estimation/`: `samplers` (SGLD, RMSProp-SGLD, SGNHT, MALA), `llc` (the estimator, presets, bias-reduced LLC),
  `diagnostics` (R-hat, ESS, MCSE by ArviZ), `checkpoint_llc` (the native batched backend over checkpoints),
  `quadratic_loss` (the quadratic net's loss with its hand-derived gradient), `functional_loss` (any family's
  loss batched over chains by torch.func), `refined` (weight and data groups),
  `observables`, `locality`, `pair_traces`, `llc_chains` (the main LLC chains as an ArviZ DataTree),
  `linear_v` (V alone: the exact estimand), `laplace` (lambda_Q, the quadratic estimand beside every LLC, by Lanczos
  quadrature on Gauss-Newton products),
  `devinterp_backend` (the reference implementation), `exact` (exact MALA references), `calibration`
- `analysis/`: `hessian` (Hutchinson trace), `theory` (the closed forms and their rank checks), `coefficient` (the
  data-rank learning coefficient at interpolating checkpoints), `accuracy`
  (estimators against exact references and theory), `reference` (the authors' logs), `scorecard`, `llc_series`
  (a run's LLC series: trusted estimates, smoothed peak), `claims/` (the claims' registry, trust rule, reach rule
  and quadratic null, statistics and one module per claim family), `waic`, `influence` (Bayesian influence
  functions from per-pair traces)
- `figures/`: the figure registry (`FIGURES`), `drawing` (one figure from the command line) and one module per
  figure, drawn from tables alone
- `workflow/`: `config` (validation and the generated schema), `sections` (the schema's building blocks),
  `experiments` (sweeps into run ids), `tables` (per-run and summary tables), `columns` (what every output column
  means: docs/columns.md), `plan` (the cost planner), `studies` (the study registry: each study's config section,
  command, output, cost and columns), `commands` (each job's command line from the config)
- `cli`: the `grokslt` command; it parses arguments and calls the stages
"""

__version__ = "0.1.0"
