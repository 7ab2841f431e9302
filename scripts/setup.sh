#!/usr/bin/env bash
# Create .venv and install grokslt with its workflow; `--test` adds the test and documentation tools.
# torch is installed first and pinned: letting the installer choose would pull a multi-GB CUDA build.
# uv installs (downloads and unpacks in parallel): 15 s where pip took 55 s from a cold cache. It reads no pip
# configuration, so pip's wheel folders (where this machine keeps the CPU build of torch), constraints and
# certificate are passed on.
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
python -m pip install -q --disable-pip-version-check "uv==0.13.10"
pip_setting() { python -m pip config get "$1" 2>/dev/null || true; }
# --compile-bytecode: every job imports torch, pandas and matplotlib; without .pyc files (pip writes them, uv only
# when asked) each start compiles their sources anew, 2.5 CPU-s a figure job
options=(--compile-bytecode)
for folder in ${PIP_FIND_LINKS:-$(pip_setting global.find-links)}; do
    options+=(--find-links "$folder")
done
for file in ${PIP_CONSTRAINT:-$(pip_setting global.constraint)}; do
    options+=(--constraint "$file")
done
if [[ -n "${PIP_CERT:-}" && -z "${SSL_CERT_FILE:-}" ]]; then
    export SSL_CERT_FILE="$PIP_CERT"
fi
uv pip install -q "${options[@]}" "torch==2.13.0"
uv pip install -q "${options[@]}" -e ".[$extras]"
# the project's own bytecode, where PYTHONDONTWRITEBYTECODE keeps Python from writing it
python -m compileall -q src
python - <<'PY'
import torch
assert torch.__version__.startswith("2.13.0"), f"torch {torch.__version__} replaced the pinned 2.13.0"
PY
