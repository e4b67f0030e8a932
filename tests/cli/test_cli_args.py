"""Output-path and number checks of the ``twill`` sub-commands (``twill.cli._args``).

Each case is a real bad command line; all must exit 2 with one message naming the option, the
path and the problem, never a traceback, and never touch a file the user gave as input.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from twill.cli import main
from twill.cli._args import check_output_path
from twill.errors import InvalidProblemError

GRAPH = """\
machine: {functional_units: {TC: 1}}
instructions:
  - {name: A, cycles: 1, reservation: {TC: [1]}}
  - {name: B, cycles: 1, reservation: {TC: [1]}}
edges:
  - {src: A, dst: B, delay: 1}
"""


@pytest.fixture
def graph(tmp_path: Path) -> Path:
    path = tmp_path / "g.yaml"
    path.write_text(GRAPH, encoding="utf-8")
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse rejects bad option values itself
        code = int(exc.code)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize(
    "command", [("solve",), ("solve", "--plot"), ("codegen",), ("gaus",), ("gaus", "--plot")]
)
def test_never_overwrites_the_input(capsys, tmp_path, command):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(yaml.safe_load(GRAPH)), encoding="utf-8")
    before = path.read_bytes()
    option = command[1] if len(command) > 1 else "-o"
    code, _, err = run(capsys, command[0], str(path), option, str(tmp_path / "." / "g.json"))
    assert code == 2 and "refusing to overwrite the input file" in err and option in err
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("solve", "{g}", "--plot", "{d}"), "is a directory"),
        (("solve", "{g}", "--plot", "{d}/p.txt"), "unsupported file type '.txt'"),
        (("solve", "{g}", "-o", "{d}/no/such/r.json"), "does not exist"),
        (("codegen", "{g}", "-o", "{d}"), "is a directory"),
        (("codegen", "{g}", "--max-I", "0"), "argument --max-I: expected an integer >= 1"),
        (("gaus", "{g}", "--II", "-1"), "argument --II: expected an integer >= 1"),
        (("gaus", "{g}", "--cap", "0"), "argument --cap: expected a number > 0"),
        (("gaus", "{g}", "--D", "-4"), "argument --D: expected an integer >= 1"),
        (("gaus", "{g}", "--max-iters", "-1"), "argument --max-iters"),
        (("gaus", "{g}", "--time-limit", "nan"), "argument --time-limit"),
    ],
)
def test_bad_outputs_and_numbers_exit_2(capsys, tmp_path, graph, argv, needle):
    argv = tuple(a.format(g=graph, d=tmp_path) for a in argv)
    code, out, err = run(capsys, *argv)
    assert code == 2 and needle in err, err
    assert "I = " not in out  # refused before solving


def test_gaus_reads_twill_graph_json(capsys, tmp_path):
    path = tmp_path / "g.json"
    path.write_text(json.dumps(yaml.safe_load(GRAPH)), encoding="utf-8")
    code, out, _ = run(capsys, "gaus", str(path), "--json", "--max-iters", "20")
    assert code == 0 and json.loads(out)["legal"] is True


def test_gaus_bad_json_is_a_clear_error(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{bad", encoding="utf-8")
    code, _, err = run(capsys, "gaus", str(path))
    assert code == 2 and "bad.json: not valid JSON" in err


def test_existing_output_file_is_replaced(tmp_path, graph):
    out = tmp_path / "r.json"
    out.write_text("old", encoding="utf-8")
    check_output_path(str(out), "-o", (graph,))  # allowed, like cc -o
    with pytest.raises(InvalidProblemError, match="refusing"):
        check_output_path(str(graph), "-o", (str(out), str(graph)))


@pytest.mark.parametrize(("baseline", "formulation"), [("force", "B"), ("gumbel", "C")])
def test_gaus_baseline_without_the_formulation(capsys, graph, baseline, formulation):
    code, _, err = run(
        capsys, "gaus", str(graph), "--baseline", baseline, "--formulation", formulation
    )
    assert code == 2 and f"does not implement formulation {formulation}" in err


def test_map_checks_arch_and_output_first(capsys, tmp_path, benchmark_data):
    layer = tmp_path / "layer.yaml"
    src = benchmark_data / "cosa" / "workloads" / "alexnet_graph" / "_outputs_input.2.yaml"
    layer.write_bytes(src.read_bytes())
    code, _, err = run(capsys, "map", str(layer), "--arch", "nosuch")
    assert code == 2 and "--arch nosuch: neither a built-in architecture" in err
    code, _, err = run(capsys, "map", str(layer), "--arch", "simba", "-o", str(layer))
    assert code == 2 and "refusing to overwrite the input file" in err
    assert layer.read_bytes() == src.read_bytes()
    code, _, err = run(capsys, "map", str(layer), "--arch", "simba", "--threads", "0")
    assert code == 2 and "argument --threads" in err


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("-o", "{d}", "is a directory"),
        ("--plot", "{d}/p.txt", "'.txt'"),
        ("--steps", "0", "--steps"),
    ],
)
def test_fuse_checks_outputs_before_training(capsys, tmp_path, option, value, needle):
    code, out, err = run(capsys, "fuse", "bert", option, value.format(d=tmp_path))
    assert code == 2 and needle in err and "FADiff on" not in out


def test_never_overwrites_the_resource_model_found_beside_a_graphml(capsys, tmp_path):
    (tmp_path / "g.graphml").write_text("<graphml/>", encoding="utf-8")
    rm = tmp_path / "gRM.xml"
    rm.write_text("<ResourceModel/>", encoding="utf-8")
    code, _, err = run(capsys, "solve", str(tmp_path / "g.graphml"), "-o", str(rm))
    assert code == 2 and "refusing to overwrite the input file" in err
    assert rm.read_text(encoding="utf-8") == "<ResourceModel/>"


def test_gaus_reads_twill_graph_yaml(capsys, graph):
    code, out, _ = run(capsys, "gaus", str(graph), "--json", "--max-iters", "20")
    assert code == 0 and json.loads(out)["graph"] == "g"


@pytest.mark.parametrize(
    "argv",
    [
        ["import-onnx", "{d}/m.onnx", "-o", "{d}/out", "--seq", "64"],
        ["map-network", "{d}/m.onnx", "--arch", "gemmini", "--input", "1x3x32x32"],
        ["map-network", "dosa_resnet50", "--arch", "gemmini", "--phase", "decode"],
        ["fuse", "{d}/m.onnx", "--exporter", "dynamo"],
    ],
)
def test_zoo_options_without_a_zoo_model_are_refused(capsys, tmp_path, argv):
    """``--input``/``--seq``/``--phase``/``--exporter`` build a ``--model`` network; given
    with an ONNX file (or a layer folder) they were silently ignored, so the shapes mapped
    were not the ones asked for."""
    (tmp_path / "m.onnx").write_bytes(b"not read")
    code, _, err = run(capsys, *[a.format(d=tmp_path) for a in argv])
    assert code == 2 and "to --model only" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
