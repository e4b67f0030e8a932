"""docs/benchmarks.md is the results page of every script in benchmarks/: its index names each
script once, in the order of the sections, and each index entry links to a section that exists.
A new script without a section (command, machine, table, reading) fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
NOT_A_BENCHMARK = {"fetch_data.py"}  # downloads the data sets (`make data`)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _index() -> list[tuple[str, str]]:
    """(script, anchor) of each row of the index table."""
    return re.findall(r"^\| `([\w.]+\.py)` \| \[[^\]]+\]\(#([\w-]+)\) \|", DOC.read_text(), re.M)


def test_every_script_has_one_index_entry() -> None:
    scripts = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py"))
    listed = [script for script, _ in _index()]
    assert sorted(listed) == sorted(set(scripts) - NOT_A_BENCHMARK)


def test_index_links_resolve_in_section_order() -> None:
    headings = [_slug(h) for h in re.findall(r"^## (.*)$", DOC.read_text(), re.M)]
    anchors = [anchor for _, anchor in _index()]
    assert all(a in headings for a in anchors), set(anchors) - set(headings)
    assert anchors == sorted(anchors, key=headings.index), "index and sections in one order"
