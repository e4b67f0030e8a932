"""``twill map``, ``twill map-network`` and ``twill map-eval``: the JSON fields scripts rely on
(issue 5, item 8), exported mappings that read back, and bad inputs that end in exit code 2
with a one-line message naming the file and the item, never a traceback."""

from __future__ import annotations

import json

import pytest

from twill.cli import main
from twill.io.timeloop import read_layer, read_mapping
from twill.mapping.arch import simba_arch
from twill.mapping.mapping import verify_mapping

LAYER = """problem:
  R: 1
  S: 1
  P: 8
  Q: 8
  C: 16
  K: 16
  N: 1
  Wstride: 1
  Hstride: 1
  Wdilation: 1
  Hdilation: 1
  shape: cnn-layer
"""
MAPPING = "L5[WIO] P8 - L4[IO] Q8 - L3[I] - L2[W] - L1[O] C16 K16 - L0[W]"


@pytest.fixture
def layer_file(tmp_path):
    p = tmp_path / "l8.yaml"
    p.write_text(LAYER)
    return p


def _run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


class TestMap:
    def test_json_fields_and_exported_mapping(self, capsys, layer_file, tmp_path):
        out_yaml = tmp_path / "m.yaml"
        code, out, _ = _run(
            capsys,
            ["map", str(layer_file), "--arch", "simba", "--json", "-o", str(out_yaml)],
        )
        assert code == 0
        d = json.loads(out)
        assert {"mapping", "cycles", "energy_uJ", "seconds"} <= set(d)
        assert d["status"] == "optimal" and d["valid"] is True
        assert d["cycles"] >= 8 * 8 * 16 * 16 / 1024
        mapping = read_mapping(out_yaml, simba_arch())
        assert verify_mapping(read_layer(layer_file), simba_arch(), mapping) == []

    def test_text_names_the_objective_and_the_levels(self, capsys, layer_file):
        code, out, _ = _run(capsys, ["map", str(layer_file), "--arch", "simba"])
        assert code == 0
        assert "optimal for the CoSA objective (10*compute - 0.1*utilisation + traffic" in out
        assert "not the cost model's cycles or energy" in out and "log2 units" in out
        assert "L4 GlobalBuffer" in out and "L0 Registers" in out and "EDP µJ·cycles" in out
        code, out, _ = _run(capsys, ["map", str(layer_file), "--arch", "simba", "--json"])
        d = json.loads(out)
        assert d["objective_unit"] == "log2 units" and d["objective_meaning"].startswith("CoSA")
        assert [lv["name"] for lv in d["levels"]][:2] == ["DRAM", "GlobalBuffer"]
        assert {k: d["levels"][0][k] for k in ("level", "name", "keeps")} == {
            "level": 5,
            "name": "DRAM",
            "keeps": "WIO",
        }

    def test_baseline_names_its_metric(self, capsys, layer_file):
        argv = ["map", str(layer_file), "--arch", "simba", "--method", "random"]
        code, out, _ = _run(capsys, [*argv, "--metric", "energy", "--json"])
        d = json.loads(out)
        assert (d["objective_unit"], d["status"]) == ("pJ", "feasible")
        assert d["objective"] == pytest.approx(d["energy_uJ"] * 1e6)
        code, out, _ = _run(capsys, argv)
        assert "feasible, best found for the energy-delay product of the cost model" in out

    def test_baseline_method(self, capsys, layer_file):
        code, out, _ = _run(
            capsys,
            ["map", str(layer_file), "--arch", "simba", "--method", "random", "--json"],
        )
        assert code == 0 and json.loads(out)["method"] == "random"

    def test_cosa_rerank_method(self, capsys, layer_file):
        code, out, _ = _run(
            capsys,
            ["map", str(layer_file), "--arch", "gemmini", "--method", "cosa-rerank", "--json"],
        )
        d = json.loads(out)
        assert code == 0 and d["method"] == "cosa-rerank" and d["valid"] is True
        assert d["objective_unit"] == "cycles"
        assert d["status"] == "feasible" and d["stats"]["chosen"] in ("cosa", "no_bypass_refetch")

    def test_bad_layer_names_file_and_item(self, capsys, tmp_path):
        bad = tmp_path / "bad.yaml"
        bad.write_text("problem:\n  R: 1\n  S: -3\n  P: x\n")
        code, out, err = _run(capsys, ["map", str(bad), "--arch", "simba", "--json"])
        assert code == 2 and out == ""
        assert "bad.yaml" in err and "problem.S" in err and "-3" in err
        assert "Traceback" not in err

    def test_missing_arch_file(self, capsys, layer_file, tmp_path):
        code, _, err = _run(capsys, ["map", str(layer_file), "--arch", str(tmp_path / "no.yaml")])
        assert code == 2 and "no.yaml" in err and "Traceback" not in err


class TestMapEval:
    def test_one_mapping(self, capsys, layer_file):
        code, out, _ = _run(
            capsys,
            [
                "map-eval",
                "--arch",
                "simba",
                "--layer",
                str(layer_file),
                "--mapping",
                MAPPING,
                "--json",
            ],
        )
        assert code == 0
        d = json.loads(out)
        assert {"cycles", "energy_uJ", "edp", "valid"} <= set(d)
        assert d["valid"] is True and d["cycles"] == 8 * 8 * 16 * 16  # no spatial factor
        assert d["edp"] == pytest.approx(d["cycles"] * d["energy_uJ"], rel=1e-9)
        assert [lv["level"] for lv in d["levels"]] == [5, 4, 3, 2, 1, 0]

    def test_invalid_mapping_is_reported_not_raised(self, capsys, layer_file):
        code, out, _ = _run(
            capsys,
            [
                "map-eval",
                "--arch",
                "simba",
                "--layer",
                str(layer_file),
                "--mapping",
                "L5[WIO] P8 - L4[IO] Q4 - L3[I] - L2[W] - L1[O] C16 K16 - L0[W]",
                "--json",
            ],
        )
        d = json.loads(out)
        assert code == 1 and d["valid"] is False and d["violations"]

    def test_malformed_mapping_string(self, capsys, layer_file):
        code, _, err = _run(
            capsys,
            [
                "map-eval",
                "--arch",
                "simba",
                "--layer",
                str(layer_file),
                "--mapping",
                "L5[WIO] P8 - nonsense",
                "--json",
            ],
        )
        assert code == 2 and "Traceback" not in err and "nonsense" in err

    def test_dataset_rows_and_error_stats(self, capsys, benchmark_data):
        csv = benchmark_data / "dosa" / "timeloop_sample.csv"
        code, out, _ = _run(capsys, ["map-eval", "--dataset", str(csv), "--limit", "5", "--json"])
        assert code == 0
        d = json.loads(out)
        assert len(d["rows"]) == 5
        for row in d["rows"]:
            assert {"cycles", "energy_uJ", "valid"} <= set(row)
        assert {"cycles", "energy_uJ"} <= set(d["errors"])
        assert {"median", "p95", "max"} <= set(d["errors"]["energy_uJ"])
        assert d["errors"]["energy_uJ"]["median"] < 0.02  # target: median energy error < 2 %

    def test_dataset_bad_row_is_reported_per_row(self, capsys, benchmark_data, tmp_path):
        """A malformed mapping in one row marks that row invalid and names the defect; the
        other rows are still evaluated."""
        lines = (benchmark_data / "dosa" / "timeloop_sample.csv").read_text().splitlines()
        head = lines[0].split(",")
        row = lines[1].split(",")
        row[head.index("mapping.mapping")] = "L3[WIO] Z9"
        bad = tmp_path / "bad.csv"
        bad.write_text("\n".join([lines[0], ",".join(row), lines[2]]) + "\n")
        code, out, _ = _run(capsys, ["map-eval", "--dataset", str(bad), "--json"])
        assert code == 0
        rows = json.loads(out)["rows"]
        assert rows[0]["valid"] is False and "Z9" in rows[0]["error"]
        assert rows[1]["valid"] is True

    def test_missing_dataset_file(self, capsys, tmp_path):
        code, _, err = _run(capsys, ["map-eval", "--dataset", str(tmp_path / "x.csv"), "--json"])
        assert code == 2 and "x.csv" in err and "Traceback" not in err


class TestMapNetwork:
    def test_folder_table_and_json(self, capsys, tmp_path):
        net = tmp_path / "net"
        net.mkdir()
        (net / "a.yaml").write_text(LAYER)
        (net / "b.yaml").write_text(LAYER.replace("C: 16", "C: 8"))
        (net / "layers.yaml").write_text("- a\n- b\n- a\n")
        code, out, _ = _run(
            capsys,
            [
                "map-network",
                str(net),
                "--arch",
                "simba",
                "--methods",
                "cosa,random",
                "--executor",
                "serial",
                "--json",
            ],
        )
        assert code == 0
        d = json.loads(out)
        text = json.dumps(d)
        assert "cosa" in text and "random" in text and '"a"' in text and '"b"' in text

    def test_missing_folder(self, capsys, tmp_path):
        code, _, err = _run(
            capsys, ["map-network", str(tmp_path / "none"), "--arch", "simba", "--json"]
        )
        assert code == 2 and "none" in err and "Traceback" not in err


def test_wide_table_is_whole_when_piped(capsys, tmp_path):
    """stdout is not a terminal under capsys: no cell is cut to '…', no row wrapped."""
    net = tmp_path / "net"
    net.mkdir()
    long_name = "layer_with_a_rather_long_name_" + "x" * 30
    (net / f"{long_name}.yaml").write_text(LAYER)
    (net / "layers.yaml").write_text(f"- {long_name}\n")
    argv = ["map-network", str(net), "--arch", "simba", "--methods", "cosa,random,cosa-rerank"]
    code, out, _ = _run(capsys, [*argv, "--executor", "serial"])
    assert code == 0 and "…" not in out
    row = next(line for line in out.splitlines() if long_name in line)
    assert "cosa-rerank cycles" in out and row.count("│") == 13  # 12 columns on one line
