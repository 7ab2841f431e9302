#!/usr/bin/env bash
# Figure 2's baseline seeds 0-5 trained to step 7,500, then the local preset (nbeta = gamma = 1e4, SGLD 1e-5,
# 4 chains x 2,000 draws) at the three checkpoints around its peak (5,100, 6,100, 7,100), each run drawing its
# own sampler noise.
set -euo pipefail
G=/work/main/.venv/bin/grokslt
OUT=/work/seeds7/runs
one() {
  s=$1; run=$OUT/p53_K1024_s$s
  [ -f $run/run.json ] && grep -q '"status": "max_steps"' $run/run.json || \
    $G train --p 53 --train-frac 0.4 --seed $s --split authors --hidden 1024 --optimizer adam --lr 0.0001 \
      --weight-decay 1e-05 --batch-size 128 --max-steps 7500 --eval-every 100 --no-early-stop --threads 1 --out $run
  [ "${2:-}" = train ] && return
  $G llc --run $run --preset local --seed 0 --steps 5100,6100,7100 --device cpu --threads 1 --laplace-probes 0 \
    --out $run/local_peak.csv
}
stage=$1; shift
for s in "$@"; do one $s $stage; done
