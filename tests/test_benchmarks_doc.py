"""docs/benchmarks.md is the results page of every script in benchmarks/: its index names each
script once, in the order of the sections, and each index entry links to a section that exists.
A new script without a section (command, machine, table, reading) fails here."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
# downloads the data sets (`make data`); reruns the others and compares with this page
NOT_A_BENCHMARK = {"fetch_data.py", "check_results.py"}


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


def _check_results():  # noqa: ANN202 - a module loaded from benchmarks/
    spec = importlib.util.spec_from_file_location(
        "check_results", ROOT / "benchmarks" / "check_results.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve the module's annotations through it
    spec.loader.exec_module(mod)
    return mod


def test_every_results_check_finds_its_table_and_keys_its_rows() -> None:
    """benchmarks/check_results.py compares against tables of this page: a renamed heading or a
    moved table must fail here, not silently compare nothing."""
    cr = _check_results()
    checks = [c for check in cr.CHECKS for c in (check, *check.extra)]
    assert len(checks) >= 12
    for c in checks:
        rows = cr.doc_table(c.heading, c.table)
        assert rows, c.name
        keys = [c.key(dict(r)) for r in rows]
        assert len(set(keys)) == len(keys), (c.name, keys)


@pytest.mark.parametrize(
    ("cell", "value", "expected"),
    [
        ("2.776e+11", 2.7764e11, True),
        ("2.776e+11", 2.7772e11, False),
        ("19,345,061", 19345061, True),
        ("19,345,061", 19345062, False),
        ("**1.042×**", 1.0423, True),
        ("14349.3", 14349.36, False),
        ("3449 (bound 2533)", 3449.0, True),
        ("yes", True, True),
        ("NO", False, True),
        ("yes", False, False),
        ("-", None, True),
        ("(5,10):sat (5,9):sat", "(5,10):sat (5,9):sat", True),
    ],
)
def test_results_check_compares_at_the_printed_precision(cell: str, value, expected: bool) -> None:  # noqa: ANN001
    assert _check_results().same(cell, value) is expected


def test_device_script_without_a_gpu_says_so_and_keeps_json_on_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``benchmarks/triton_device.py`` on a machine without a GPU: exit 0, "no GPU found", and
    with ``--json`` stdout is still JSON (no rows), the sentence on stderr."""
    import json

    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the script would run the kernels")
    spec = importlib.util.spec_from_file_location(
        "triton_device", ROOT / "benchmarks" / "triton_device.py"
    )
    script = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(script)  # type: ignore[union-attr]
    monkeypatch.setattr(sys, "argv", ["triton_device.py"])
    assert script.main() == 0 and "no GPU found" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", ["triton_device.py", "--json"])
    assert script.main() == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [] and "no GPU found" in err


#: issue 51: the pages under docs/ together, so a reader can still hold them.
DOCS_MAX_LINES = 3000


def test_docs_stay_within_their_line_budget() -> None:
    """``docs/*.md`` hold current results and reference, not run logs: at most 3,000 lines in
    all (``wc -l docs/*.md``). Replace stale text rather than add."""
    counts = {p.name: len(p.read_text().splitlines()) for p in sorted(DOC.parent.glob("*.md"))}
    total = sum(counts.values())
    assert total <= DOCS_MAX_LINES, f"docs/ has {total} lines: {counts}"
