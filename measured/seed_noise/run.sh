#!/usr/bin/env bash
# Figure 2's baseline seeds 0-5 trained to step 6,500 (the checkpoints up to there are the full runs'), then the
# authors' sampler (paper_code) at every checkpoint from 3,000 to 6,500, each run drawing its own sampler noise.
set -euo pipefail
G=/work/main/.venv/bin/grokslt
OUT=/work/seeds5/runs
one() {
  s=$1; run=$OUT/p53_K1024_s$s
  [ -f $run/run.json ] && grep -q '"status": "max_steps"' $run/run.json || \
    $G train --p 53 --train-frac 0.4 --seed $s --split authors --hidden 1024 --optimizer adam --lr 0.0001 \
      --weight-decay 1e-05 --batch-size 128 --max-steps 6500 --eval-every 100 --no-early-stop --threads 1 --out $run
  $G llc --run $run --preset paper_code --backend native --seed 0 --steps $(seq -s, 3000 100 6500) --device cpu \
    --threads 1 --laplace-probes 0 --out $run/llc_3000_6500.csv
}
for s in "$@"; do one $s; done
