#!/usr/bin/env bash
# Figure 2's claims at paper scale with each run's own sampler noise: the runs of config/paper_local.yaml's
# baseline and seeds that its workflow (at commit b2fc247, where every run's LLC seed is its own) had finished,
# summarised and decided by `grokslt summary` and `grokslt claims` over those runs alone, and their peaks against
# the shared-noise estimates (scripts/summarise_own_noise.py).
#   bash measured/paper_local/own_noise/make.sh RESULTS   (RESULTS: that workflow's results/paper_local)
set -euo pipefail
results=$1
here=$(cd "$(dirname "$0")" && pwd)
prefix=p53_K1024_adam_lr1e-04_wd1e-05_bs128_s
runs=() loss=() certified=() seeds=()
for seed in 0 1 2 3 4 5; do
    run=$results/runs/$prefix$seed
    [[ -f $run/summary.csv && -f $run/certified.csv ]] || continue
    runs+=("$run")
    loss+=("$run/loss_data.csv")
    certified+=("$run/certified.csv")
    [[ $seed -gt 0 ]] && seeds+=("$prefix$seed")
done
members=$(
    IFS=,
    echo "${seeds[*]}"
)
grokslt summary --runs "${runs[@]}" --experiment "baseline=${prefix}0" "seeds=$members" --out "$here/runs.csv"
grokslt claims --summary "$here/runs.csv" --loss-data "${loss[@]}" --certified "${certified[@]}" --out "$here/claims.csv"
python "$here/../../../scripts/summarise_own_noise.py" "$results/runs" "$here/peaks.csv"
