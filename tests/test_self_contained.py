"""The repository is the whole product: nothing it ships names a folder beside the checkout, and
every data folder it ships carries its upstream licence and its source (issue 38)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("README.md", "Makefile", "demo.py", "docs", "src", "tests", "benchmarks", "demos")
# built from pieces so that this file does not match itself
_SIBLING = "shared"
FORBIDDEN = re.compile(r"\.\./" + _SIBLING + r"|parent\s*/\s*['\"]" + _SIBLING + r"['\"]")


def _text_files() -> list[Path]:
    out = []
    for name in CHECKED:
        path = ROOT / name
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        out += [p for p in files if "__pycache__" not in p.parts]
    return out


def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


def test_the_pattern_matches_what_it_must() -> None:
    for bad in (
        "../" + _SIBLING + "/x",
        "ROOT.parent / '" + _SIBLING + "'",
        'p.parent/"' + _SIBLING + '"',
    ):
        assert FORBIDDEN.search(bad), bad
    assert not FORBIDDEN.search("data/cosa/arch/simba.yaml")


def test_nothing_names_a_folder_beside_the_checkout() -> None:
    found = []
    for path in _text_files():
        data = path.read_bytes()
        if _is_binary(data):
            continue
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if FORBIDDEN.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "outside data named:\n" + "\n".join(found)


def test_every_data_folder_names_its_licence_and_source() -> None:
    folders = [p for p in sorted((ROOT / "data").iterdir()) if p.is_dir()]
    folders.append(ROOT / "src/twill/data/workloads/dosa")
    assert {p.name for p in folders} >= {"cosa", "dosa", "epfl", "gs_schedule", "hatschet"}
    for folder in folders:
        assert (folder / "LICENSE").is_file(), folder
        source = (folder / "SOURCE.md").read_text()
        assert re.search(r"github\.com/\S+ @ [0-9a-f]{7}", source), folder
