"""JSON / YAML round trip and reader messages (file, key path, what was found)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twill.errors import InputFormatError, InvalidProblemError
from twill.io import load_graph
from twill.io.graph_json import dumps_graph, graph_from_dict, graph_to_dict, read_graph, write_graph
from twill.kernels import KERNELS

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_round_trip(tmp_path, name, suffix):
    g = KERNELS[name]()
    path = tmp_path / f"{name}{suffix}"
    write_graph(g, path)
    assert read_graph(path) == g
    assert load_graph(path) == g


def test_dict_is_json_ready():
    d = graph_to_dict(KERNELS["flash_attention_forward_blackwell"]())
    assert json.loads(json.dumps(d)) == d
    assert d["format"] == "twill-graph/1"
    assert d["edges"][1]["blocking"] is True


def test_defaults_fill_in():
    ins = [{"name": "a", "cycles": 1, "reservation": {"TC": [1]}}]
    g = graph_from_dict({"machine": {"functional_units": {"TC": 1}}, "instructions": ins})
    assert g.name == "graph" and g.edges == () and g.instructions[0].warps == 1


def test_graph_defects_file():
    with pytest.raises(InvalidProblemError) as info:
        read_graph(DATA / "errors_graph_defects.yaml")
    msg = str(info.value)
    assert msg.startswith(f"{DATA / 'errors_graph_defects.yaml'}: 5 problems:")
    assert info.value.defects == [
        "instruction 'A': duplicate name",
        "instruction 'B': unknown functional unit 'XU' (machine has: TC)",
        "instruction 'C': reservation['TC'] has 1 rows but cycles = 2",
        "edge A->Z (distance 0): unknown target instruction 'Z' (dangling edge)",
        "circuit with total distance 0 through 'B', 'C': every dependence circuit needs "
        "distance >= 1",
    ]


def test_schema_file():
    with pytest.raises(InvalidProblemError) as info:
        read_graph(DATA / "errors_schema.yaml")
    assert info.value.defects == [
        "machine.functional_units.TC: expected an integer >= -1, found 'one' (str)",
        "instructions[0].cycles: expected an integer >= 0, found -1 (int)",
        "instructions[0].reservation.TC[0]: expected an integer >= 0, found 1.5 (float)",
        "instructions[1]: unknown key 'colour' (allowed: cycles, footprint, name, note, regs, "
        "reservation, spill_cost, streaming, unit, variable_latency, warps)",
        "instructions[1]: missing required key 'name'",
        "edges[0].distance: expected an integer >= 0, found 1.0 (float)",
    ]


def test_bad_yaml_and_json():
    with pytest.raises(InputFormatError, match=r"errors_bad_yaml.yaml: not valid YAML at line 3"):
        read_graph(DATA / "errors_bad_yaml.yaml")
    with pytest.raises(InputFormatError, match=r"errors_bad_json.json: not valid JSON at line 1"):
        read_graph(DATA / "errors_bad_json.json")


def test_top_level_not_a_mapping(tmp_path):
    p = tmp_path / "list.json"
    p.write_text("[1, 2]")
    with pytest.raises(InvalidProblemError, match=r"\(top level\): expected a mapping"):
        read_graph(p)


def test_load_graph_errors(tmp_path):
    with pytest.raises(InvalidProblemError, match="neither a file nor a known kernel"):
        load_graph("nope")
    other = tmp_path / "g.txt"
    other.write_text("x")
    with pytest.raises(InvalidProblemError, match="unsupported file type '.txt'"):
        load_graph(other)
    with pytest.raises(InvalidProblemError, match="only applies to HatScheT"):
        load_graph("flash_attention_forward_simplified", resource_model="x.xml")


def test_dumps_unknown_format():
    with pytest.raises(InvalidProblemError, match="format must be 'json' or 'yaml'"):
        dumps_graph(KERNELS["simple_gemm_pipeline"](), "xml")
