"""The commands that read and write tables only start without torch (its import is most of a short job's time)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grokslt.cli import COMMANDS

PROBE = """\
import sys
from grokslt import cli
try:
    cli.main({argv!r})
except SystemExit as exit:
    print("exit", exit.code, file=sys.stderr)
print("torch" in sys.modules, file=sys.stderr)
"""
# each run until it fails on its missing input, past every import its computation makes
MISSING_INPUT = {
    "figure": ["figure", "fig1a", "--summary", "absent.csv", "--out", "absent"],
    "claims": ["claims", "--summary", "absent.csv", "--loss-data", "absent.csv", "--out", "absent.csv"],
    "summary": ["summary", "--runs", "absent", "--out", "absent.csv"],
}


def imports_torch(argv: list[str], cwd) -> tuple[bool, str]:
    probe = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True, cwd=cwd)
    return probe.stderr.strip().splitlines()[-1] == "True", probe.stderr


@pytest.mark.parametrize("command", sorted(MISSING_INPUT))
def test_a_table_command_runs_to_its_input_without_torch(command, tmp_path):
    imported, stderr = imports_torch(MISSING_INPUT[command], tmp_path)
    assert "exit 2" in stderr and "absent" in stderr, stderr  # it got as far as reading its input
    assert not imported, stderr


def test_the_table_commands_are_the_ones_marked_without_tensors():
    assert {name for name, entry in COMMANDS.items() if not entry.tensors} == set(MISSING_INPUT)


def test_a_computing_command_configures_torch(tmp_path):
    imported, stderr = imports_torch(["hessian", "--run", "absent", "--out", "absent.csv"], tmp_path)
    assert "exit 2" in stderr and imported, stderr
