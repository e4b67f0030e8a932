"""No source text cites a rule that lives outside the repository.

A docstring or comment that says "(house rule 5)" or "(style 3.5)" sends the reader to a
document they do not have. The reason is stated in place instead, or the text points to a
page that ships (``docs/decisions.md``, ``docs/architecture.md``). Numbered rules are allowed
only where their source is named and ships: the fusion rules of
:mod:`twill.mapping.fadiff.fusion` ("fusion rule 4", "the verifier's rule 3").
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "tests", "benchmarks", "demos")
OUTSIDE = re.compile(
    r"house[ -]?(rules?|style)"  # the project's house rules
    r"|(?<![-\w])style(\.md|\s*§?\s*\d)"  # the style guide and its sections
    r"|\bhabits?\s*\d"  # numbered habits of another project
    r"|\bDEVELOPERS(\.md)?\b|developer'?s? guide",
    re.IGNORECASE,
)
NUMBERED = re.compile(r"(?<![\w'])rules?\s+\d+(\.\d+)?", re.IGNORECASE)
NAMED_SOURCE = ("fusion ", "verifier's ")


def _files() -> list[Path]:
    files = [ROOT / "demo.py"] if (ROOT / "demo.py").exists() else []
    for top in SCANNED:
        files += sorted((ROOT / top).rglob("*.py"))
    return [f for f in files if f.resolve() != Path(__file__).resolve()]


def _citations(text: str) -> list[str]:
    """Each outside citation of ``text`` as ``line: excerpt``."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        hits = [m.group(0) for m in OUTSIDE.finditer(line)]
        for m in NUMBERED.finditer(line):
            if not line[: m.start()].lower().endswith(NAMED_SOURCE):
                hits.append(m.group(0))
        found += [f"{number}: {hit!r} in {line.strip()[:90]!r}" for hit in hits]
    return found


def test_no_source_cites_a_rule_kept_outside_the_repository() -> None:
    bad = {
        str(f.relative_to(ROOT)): cites
        for f in _files()
        if (cites := _citations(f.read_text(encoding="utf-8", errors="replace")))
    }
    assert not bad, f"cite the reason, or a page under docs/, instead: {bad}"


def test_no_page_cites_the_house_rules() -> None:
    """README, Makefile and docs/ name no outside rule book either (numbered fusion rules are
    defined in docs/fadiff.md, so only the outside sources are checked here)."""
    pages = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").glob("*.md"))]
    bad = [str(p.relative_to(ROOT)) for p in pages if OUTSIDE.search(p.read_text(encoding="utf-8"))]
    assert not bad, bad


def test_the_check_finds_each_kind_of_citation() -> None:
    """The patterns catch what they are meant to, and let named in-repo rules pass."""
    cited = [
        "(house rule 6)",
        "(style 3.5)",
        "see style.md",
        "(CIRCT habit 5)",
        "(rule 14)",
        "rules 7.1, 7.2",
        "DEVELOPERS.md",
        "network report (style §1.3)",
    ]
    for text in cited:
        assert _citations(text), text
    for text in ("(fusion rule 4)", "the verifier's rule 3", "a ruler 30 cm", "LEB128-style 7-bit"):
        assert not _citations(text), text
