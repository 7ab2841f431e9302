#!/usr/bin/env bash
# Set up from nothing and run the whole test suite (slow end-to-end tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
ruff check src tests benchmarks examples
snakefmt --check Snakefile workflow/rules
snakemake --lint > /dev/null
python -m pytest -q -m "slow or not slow" tests
