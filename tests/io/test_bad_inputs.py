"""Reader errors found by hand in review: each names the file and the item, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from twill.errors import InvalidProblemError
from twill.io.timeloop import read_dosa_dataset, read_network


def test_empty_network_folder_is_an_error(tmp_path: Path):
    with pytest.raises(InvalidProblemError, match="no layer YAML files"):
        read_network(tmp_path)


def test_dosa_row_with_missing_fields(tmp_path: Path, shared_benchmarks: Path):
    lines = (shared_benchmarks / "dosa" / "timeloop_sample.csv").read_text().splitlines()
    path = tmp_path / "s.csv"
    path.write_text("\n".join([*lines[:3], "1,2"]) + "\n", encoding="utf-8")
    with pytest.raises(InvalidProblemError) as info:
        read_dosa_dataset(path)
    assert "s.csv" in str(info.value) and "row 4: 2 fields, header has" in str(info.value)
