"""README is a page that points into docs/: every relative link it gives names a file that exists and, where it names
a heading, a heading of that page (the site itself is checked by `mkdocs build --strict` in scripts/test.sh)."""

import re

import pytest
import yaml
from workflow_support import REPO

LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchor(heading: str) -> str:
    """The anchor Python-Markdown's toc extension (as mkdocs uses it) gives a heading."""
    text = re.sub(r"[^\w\s-]", "", heading.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page) -> set[str]:
    return {heading_anchor(line.lstrip("#")) for line in page.read_text().splitlines() if line.startswith("#")}


def relative_links(text: str) -> list[str]:
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


@pytest.mark.parametrize("target", relative_links((REPO / "README.md").read_text()))
def test_every_relative_link_of_the_readme_resolves(target):
    path, _, anchor = target.partition("#")
    assert (REPO / path).exists(), f"README links to {path}, which does not exist"
    if anchor:
        assert anchor in anchors(REPO / path), f"README links to #{anchor}, not a heading of {path}"


def test_the_heading_anchor_is_mkdocs_own():
    assert heading_anchor("What the local preset estimates") == "what-the-local-preset-estimates"
    assert heading_anchor("Preset (`config/paper_local.yaml`) and x") == "preset-configpaper_localyaml-and-x"


def test_every_docs_page_is_in_the_sites_navigation():
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    listed = {page for entry in nav for page in entry.values()}
    assert listed == {path.name for path in (REPO / "docs").glob("*.md")}
