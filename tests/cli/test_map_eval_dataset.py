"""``map-eval --dataset FILE.csv`` on CSVs as users' tools write them (issue 49): a UTF-8
byte-order mark (spreadsheet exports) is accepted; a field over the csv module's size limit,
duplicated columns, and options of the single-mapping mode beside ``--dataset`` are refused
with exit 2, one line naming the file (and the line), the CSV unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile import twill_child
from twill.cli import main


@pytest.fixture
def sample(benchmark_data: Path) -> list[str]:
    """The header and the first two rows of the shipped DOSA sample."""
    return (benchmark_data / "dosa" / "timeloop_sample.csv").read_text().splitlines()[:3]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    if code == 2:
        assert out == "" and len(err.strip().splitlines()) == 1, err
    return code, out, err


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_byte_order_mark_is_accepted(capsys, tmp_path, sample, newline):
    csv = tmp_path / "bom.csv"
    csv.write_bytes(b"\xef\xbb\xbf" + newline.join(sample).encode() + newline.encode())
    before = csv.read_bytes()
    code, out, err = _run(capsys, "map-eval", "--dataset", str(csv), "--json")
    assert code == 0, err
    assert len(json.loads(out)["rows"]) == 2 and csv.read_bytes() == before


def _hostile(sample: list[str], shape: str) -> str:
    head, row = sample[0], sample[1]
    if shape == "a field over the size limit":
        return "\n".join([head, row, row.replace(",", ',"' + "x" * 200_000 + '",', 1)]) + "\n"
    if shape == "a header field over the size limit":
        return "\n".join([head + "," + "y" * 200_000, row]) + "\n"
    if shape == "a column twice":
        return "\n".join([head + ",mapping.mapping", row + ",x"]) + "\n"
    if shape == "an unknown column twice":
        return "\n".join([head + ",extra,extra", row + ",1,2"]) + "\n"
    raise AssertionError(shape)


@pytest.mark.parametrize(
    ("shape", "words"),
    [
        ("a field over the size limit", ["line 3", "131,072 characters"]),
        ("a header field over the size limit", ["line 1", "131,072 characters"]),
        ("a column twice", ["line 1", "duplicate columns: 'mapping.mapping'"]),
        ("an unknown column twice", ["line 1", "duplicate columns: 'extra'"]),
    ],
)
def test_a_csv_the_reader_cannot_take_is_refused(capsys, tmp_path, sample, shape, words):
    csv = tmp_path / "d.csv"
    csv.write_text(_hostile(sample, shape))
    before = csv.read_bytes()
    code, _, err = _run(capsys, "map-eval", "--dataset", str(csv), "--json")
    assert code == 2 and str(csv) in err, err
    for word in words:
        assert word in err, err
    assert csv.read_bytes() == before


@pytest.mark.parametrize(
    "extra",
    [["--mapping", "L3[WIO] K2"], ["--mapping-file", "m.yaml"], ["--layer", "l.yaml"],
     ["--arch", "gemmini"], ["--full"]],
)  # fmt: skip
def test_options_of_one_mapping_are_refused_beside_a_dataset(capsys, tmp_path, sample, extra):
    csv = tmp_path / "d.csv"
    csv.write_text("\n".join(sample) + "\n")
    code, _, err = _run(capsys, "map-eval", "--dataset", str(csv), *extra, "-o",
                        str(tmp_path / "r.json"))  # fmt: skip
    assert code == 2 and f"drop {extra[0]}" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]


def test_limit_without_a_dataset_and_both_mapping_options_are_refused(capsys):
    code, _, err = _run(capsys, "map-eval", "--arch", "gemmini", "--limit", "3")
    assert code == 2 and "--limit counts --dataset rows" in err
    code, _, err = _run(capsys, "map-eval", "--arch", "gemmini", "--layer", "l.yaml",
                        "--mapping", "x", "--mapping-file", "m.yaml")  # fmt: skip
    assert code == 2 and "--mapping or --mapping-file, not both" in err


def test_the_refusal_holds_from_outside(tmp_path, sample):
    (tmp_path / "d.csv").write_text(_hostile(sample, "a field over the size limit"))
    done = twill_child(tmp_path, tmp_path / "tmp", "map-eval", "--dataset", "d.csv", "-o",
                       "r.json")  # fmt: skip
    assert done.returncode == 2 and "line 3" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "tmp"]


def test_unnamed_trailing_columns_are_no_duplicates(capsys, tmp_path, sample):
    """A spreadsheet export's empty trailing columns (``,,``) have no name to repeat."""
    csv = tmp_path / "d.csv"
    csv.write_text("\n".join(line + ",," for line in sample) + "\n")
    code, out, err = _run(capsys, "map-eval", "--dataset", str(csv), "--json")
    assert code == 0 and len(json.loads(out)["rows"]) == 2, err
