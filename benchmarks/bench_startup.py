"""CPU seconds to start a `grokslt` process (every workflow job is one) against the floor, a Python that
imports torch alone, and against the imports it avoids (ArviZ's array functions, matplotlib): subprocesses
of this process, each timed from its rusage, the median of a few.

    python benchmarks/bench_startup.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys

STARTS = {
    "floor: python -c 'import torch'": "import torch",
    "grokslt --help (builds every command's parser)": "from grokslt.cli import main; main(['--help'])",
    "avoided: + ArviZ's array functions": "import torch; from arviz_stats.base import array_stats",
    "avoided: + matplotlib.pyplot": "import torch; import matplotlib.pyplot",
}


def cpu_seconds(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    medians = {name: statistics.median(cpu_seconds(c) for _ in range(args.repeats)) for name, c in STARTS.items()}
    floor = next(iter(medians.values()))
    for name, seconds in medians.items():
        print(f"{name:50s} {seconds:5.2f} CPU-s  {seconds / floor:4.2f}x the floor")


if __name__ == "__main__":
    main()
