"""config/README.md's minimal config is a whole config: it checks, and what it leaves out is said one line each."""

import re
from pathlib import Path

import yaml

from grokslt.workflow.config import check_workflow

README = Path(__file__).resolve().parents[2] / "config" / "README.md"


def test_the_minimal_config_of_the_readme_checks_and_says_what_it_leaves_out():
    section = README.read_text().split("## A minimal config", 1)[1]
    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S)[1])
    checked = check_workflow(config)
    assert len(checked.runs) == 1
    assert "figures.fig1a: not drawn, its experiment 'vary_p' (the default) is not in this config" in checked.skipped
