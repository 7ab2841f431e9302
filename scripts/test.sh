#!/usr/bin/env bash
# Set up from nothing, build the documentation site strictly and run the whole test suite (slow end-to-end tests
# and the tutorial included; `--paper` adds the tests that train at the paper's scale).
# The tests sit in a folder per stage of the package (tests/training, estimation, analysis, figures, workflow,
# package, docs) and tests/e2e for what starts Snakemake or the commands end to end; helpers in tests/support.
# The SLURM tests mostly wait on the cluster's scheduler: they run beside the rest, which runs on two
# pytest workers (three were slower on two cores), one test file per worker at a time (module fixtures are
# built once per file); every process shares one finished run of the tiny workflow. The slowest 30 are
# listed: the suite must stay under 15 minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
marks="(slow or not slow) and not paper"
if [[ "${1:-}" == "--paper" ]]; then
    marks="slow or not slow"
elif [[ $# -gt 0 ]]; then
    echo "scripts/test.sh: unknown argument '$1'; expected nothing or --paper" >&2
    exit 2
fi
bash scripts/setup.sh --test
. .venv/bin/activate
# the static checks run beside the tests (each is one process on one core): ruff, snakefmt, Snakemake's lint, and
# the documentation site, where a broken link, anchor, page or tutorial include fails
static_log=$(mktemp)
site=$(mktemp -d)
(
    ruff check src tests benchmarks examples scripts
    snakefmt --check Snakefile workflow/rules
    snakemake --lint > /dev/null
    NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "$site"
) > "$static_log" 2>&1 &
static=$!
slurm_log=$(mktemp)
slurm_tmp=$(mktemp -d)
# the tiny workflow's finished run, made once by whichever test process asks first (tests/conftest.py)
GROKSLT_TEST_SHARED=$(mktemp -d)
export GROKSLT_TEST_SHARED
python -m pytest -q -m "slow or not slow" --basetemp "$slurm_tmp" tests/e2e/test_slurm.py > "$slurm_log" 2>&1 &
slurm=$!
status=0
python -m pytest -q -n 2 --dist loadfile --durations=30 -m "$marks" --ignore=tests/e2e/test_slurm.py tests || status=$?
wait "$slurm" || status=$?
wait "$static" || status=$?
echo "--- tests/e2e/test_slurm.py"
cat "$slurm_log"
echo "--- ruff, snakefmt, snakemake --lint, mkdocs build --strict"
cat "$static_log"
rm -rf "$slurm_log" "$slurm_tmp" "$GROKSLT_TEST_SHARED" "$static_log" "$site"
exit "$status"
