#!/usr/bin/env bash
# The claims of config/paper_local.yaml at paper scale with each run's own sampler noise: its workflow's 31 runs
# (the code of commit b2fc247, where every run's LLC seed is its own), summarised and decided by `grokslt summary`
# and `grokslt claims` over those runs alone (not its refined study), each claim's figure drawn by `grokslt figure`,
# and the runs against their shared-noise estimates (scripts/summarise_own_noise.py).
#   bash measured/paper_local/own_noise/make.sh RESULTS   (RESULTS: that workflow's results/paper_local)
set -euo pipefail
results=${1:?usage: bash make.sh RESULTS, the results/paper_local folder of the workflow}
here=$(cd "$(dirname "$0")" && pwd)
sweep=_adam_lr1e-02_wd1e-05_bs64_s0_es0.95x3
seen=" " runs=() loss=() certified=() coefficient=() seeds=() vary_p=() vary_K=()

# add RUN: the run's tables join the lists, once; a run not finished (trained, tabled, certified) stops the script
add() {
    local run=$results/runs/$1
    if [[ ! -f $run/summary.csv || ! -f $run/certified.csv || ! -f $run/loss_data.csv ]]; then
        echo "make.sh: $1 is not finished under $results" >&2
        exit 1
    fi
    if [[ $seen == *" $1 "* ]]; then return; fi
    seen+="$1 "
    runs+=("$run")
    loss+=("$run/loss_data.csv")
    certified+=("$run/certified.csv")
    if [[ -f $run/coefficient.csv ]]; then coefficient+=("$run/coefficient.csv"); fi
}
joined() {
    local IFS=,
    echo "$*"
}

add p53_K1024_adam_lr1e-04_wd1e-05_bs128_s0
for seed in 1 2 3 4 5; do
    add p53_K1024_adam_lr1e-04_wd1e-05_bs128_s$seed
    seeds+=(p53_K1024_adam_lr1e-04_wd1e-05_bs128_s$seed)
done
for p in 53 59 61 67 71 73 79 83 89 97 101 103 107; do
    add p${p}_K1024$sweep
    vary_p+=(p${p}_K1024$sweep)
done
for K in 128 256 512 1024 2048; do for p in 53 71 97; do
    add p${p}_K$K$sweep
    vary_K+=(p${p}_K$K$sweep)
done; done
if ((${#coefficient[@]} != 25)); then
    echo "make.sh: ${#coefficient[@]} of the 25 finals' coefficient tables under $results" >&2
    exit 1
fi

grokslt summary --runs "${runs[@]}" --out "$here/runs.csv" --experiment "baseline=p53_K1024_adam_lr1e-04_wd1e-05_bs128_s0" \
    "seeds=$(joined "${seeds[@]}")" "vary_p=$(joined "${vary_p[@]}")" "vary_K=$(joined "${vary_K[@]}")"
grokslt claims --summary "$here/runs.csv" --loss-data "${loss[@]}" --certified "${certified[@]}" \
    --coefficient "${coefficient[@]}" --out "$here/claims.csv"
tables=(--summary "$here/runs.csv" --loss-data "${loss[@]}" --certified "${certified[@]}" --coefficient "${coefficient[@]}")
grokslt figure claim_fig1a "${tables[@]}" --experiment vary_p --out "$here/claim_fig1a"
grokslt figure claim_fig1b "${tables[@]}" --experiment vary_K --out "$here/claim_fig1b"
grokslt figure claim_fig2 "${tables[@]}" --experiment baseline --out "$here/claim_fig2"
grokslt figure claim_keff "${tables[@]}" --experiments vary_p vary_K --out "$here/claim_keff"
rm -f "$here"/claim_*.pdf
# the sampler-free estimands at the baseline's local estimates (11 min of one core; made once)
baseline=$results/runs/p53_K1024_adam_lr1e-04_wd1e-05_bs128_s0
at_estimates=$results/baseline_coefficient_at_estimates.csv
if [[ ! -f $at_estimates ]]; then
    steps=$(cut -d, -f1 "$baseline/certified.csv" | tail -n +2 | paste -sd, -)
    grokslt coefficient --run "$baseline" --steps "$steps" --out "$at_estimates"
fi
python "$here/../../../scripts/summarise_own_noise.py" "$results/runs" "$here" --baseline-coefficient "$at_estimates"
