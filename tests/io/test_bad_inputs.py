"""Reader errors found by hand in review: each names the file and the item, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from twill.errors import InvalidProblemError
from twill.io.timeloop import read_dosa_dataset, read_network


def test_empty_network_folder_is_an_error(tmp_path: Path):
    with pytest.raises(InvalidProblemError, match="no layer YAML files"):
        read_network(tmp_path)


def test_dosa_row_with_missing_fields(tmp_path: Path, benchmark_data: Path):
    lines = (benchmark_data / "dosa" / "timeloop_sample.csv").read_text().splitlines()
    path = tmp_path / "s.csv"
    path.write_text("\n".join([*lines[:3], "1,2"]) + "\n", encoding="utf-8")
    with pytest.raises(InvalidProblemError) as info:
        read_dosa_dataset(path)
    assert "s.csv" in str(info.value) and "row 4: 2 fields, header has" in str(info.value)


@pytest.mark.parametrize("name", ["g.json", "g.yaml", "g.gml", "layer.yaml", "rows.csv"])
def test_binary_file_is_named_not_a_traceback(tmp_path: Path, name: str):
    from twill.errors import InputFormatError
    from twill.io import load_graph
    from twill.io.gml import read_gml
    from twill.io.timeloop import read_layer

    path = tmp_path / name
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    reader = {"g.gml": read_gml, "layer.yaml": read_layer, "rows.csv": read_dosa_dataset}
    with pytest.raises(InputFormatError, match="not a UTF-8 text file") as info:
        reader.get(name, load_graph)(path)
    assert name in str(info.value)
