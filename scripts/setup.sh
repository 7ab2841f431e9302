#!/usr/bin/env bash
# Create .venv and install grokslt with its workflow; `--test` adds the test and documentation tools.
# torch is installed first and pinned: letting pip choose would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="workflow"
if [[ "${1:-}" == "--test" ]]; then
    extras="workflow,test"
elif [[ $# -gt 0 ]]; then
    echo "scripts/setup.sh: unknown argument '$1'; expected nothing or --test" >&2
    exit 2
fi
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[$extras]"
python - <<'PY'
import torch
assert torch.__version__.startswith("2.13.0"), f"torch {torch.__version__} replaced the pinned 2.13.0"
PY
