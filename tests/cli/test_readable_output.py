"""Output a person can read, and the same units everywhere (issue 38): ``map-network`` takes
``--method`` (``--methods`` kept) and ``-o``; layer shapes are decoded; every mapping JSON
names its units, and the DOSA dataset's EDP target gets a twin in the unit of ``edp``."""

from __future__ import annotations

import json

import pytest

from twill.cli import main
from twill.cli.mapping_cmds import layer_shape_text
from twill.mapping.workload import Dim, Layer

LAYER = "problem: {R: 3, S: 3, P: 8, Q: 8, C: 16, K: 16, N: 1}\n"


def test_layer_shapes_are_decoded():
    dims = {Dim.R: 3, Dim.S: 3, Dim.P: 112, Dim.Q: 112, Dim.C: 1, Dim.K: 1, Dim.N: 1}
    depthwise = Layer("3_3_112_112_1_1_1_1_1_1_1_g32", dims, groups=32)
    assert layer_shape_text(depthwise) == "3x3 filter, 112x112 out, 1→1 channels, 32 groups"
    strided = Layer("x", {**dims, Dim.C: 3, Dim.K: 64, Dim.N: 2}, w_stride=2, h_stride=2)
    assert layer_shape_text(strided) == "3x3 filter, 112x112 out, 3→64 channels, batch 2, stride 2"


@pytest.mark.parametrize("spelling", ["--method", "--methods"])
def test_map_network_method_and_output(capsys, tmp_path, spelling):
    net = tmp_path / "net"
    net.mkdir()
    (net / "a.yaml").write_text(LAYER)
    (net / "layers.yaml").write_text("- a\n")
    out = tmp_path / "r.json"
    argv = ["map-network", str(net), "--arch", "simba", spelling, "random", "--executor",
            "serial", "-o", str(out)]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "3x3 filter, 8x8 out, 16→16 channels" in text
    assert f"JSON result written to {out}" in text
    d = json.loads(out.read_text())
    assert d["units"]["edp"].startswith("µJ·cycles") and d["layers"][0]["random"]["edp"] > 0
    assert main(["map-network", str(net), "--arch", "simba", "-o", str(net / "a.yaml")]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_dataset_edp_targets_in_one_unit(capsys, tmp_path, benchmark_data):
    csv = benchmark_data / "dosa" / "timeloop_sample.csv"
    out = tmp_path / "d.json"
    assert main(["map-eval", "--dataset", str(csv), "--limit", "2", "--json", "-o", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    row = printed["rows"][0]
    assert row["target_edp_uJ_cycles"] == pytest.approx(row["edp"], rel=1e-2)  # same unit
    assert row["target_edp"] == pytest.approx(row["target_edp_uJ_cycles"] * 1e-6)
    assert "J·cycles" in printed["units"]["target_edp"]
