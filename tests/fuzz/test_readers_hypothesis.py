"""Property fuzzing of every reader: any input either reads or raises a
:class:`~twill.errors.TwillError` (the CLI's exit 2); nothing else escapes.

Inputs are valid files with one field replaced by a hostile value (wrong type, negative,
huge, NaN, nested), or token soups in the reader's own syntax. Example counts are small so
that the suite stays fast; the hand-written cases in ``test_hostile_cases.py`` cover the
known worst inputs.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twill.errors import TwillError

DATA = Path(__file__).resolve().parents[2] / "data"
FUZZ = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**31, 2**63, 10**12]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(-3, 3), max_size=2),
)


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path into nested dicts/lists (leaves and inner nodes)."""
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(data: Any, path: tuple, value: Any) -> Any:
    new = copy.deepcopy(data)
    node = new
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return new


def _read_or_twill_error(read: Any, *args: Any) -> None:
    try:
        read(*args)
    except TwillError:
        pass
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        pass


def _mutation_test(base: dict, name: str, read: Any) -> Any:
    paths = _paths(base)

    @FUZZ
    @given(index=st.integers(0, len(paths) - 1), value=HOSTILE)
    def run(tmp_path: Path, index: int, value: Any) -> None:
        p = tmp_path / name
        p.write_text(yaml.safe_dump(_mutate(base, paths[index], value), sort_keys=False))
        _read_or_twill_error(read, p)

    return run


GRAPH = yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "data" / "circt_canis14_fig2.yaml").read_text()
)


def test_graph_yaml_mutations(tmp_path: Path) -> None:
    from twill.io.graph_json import read_graph

    _mutation_test(GRAPH, "g.yaml", read_graph)(tmp_path)


def test_layer_mutations(tmp_path: Path) -> None:
    from twill.io.timeloop import read_layer

    base = {"problem": {"R": 3, "S": 3, "P": 8, "Q": 8, "C": 4, "K": 16, "N": 1, "Wstride": 1}}
    _mutation_test(base, "l.yaml", read_layer)(tmp_path)


@pytest.mark.parametrize("arch", ["cosa/arch/simba.yaml", "dosa/hw/gemmini/arch/arch.yaml"])
def test_arch_mutations(tmp_path: Path, arch: str) -> None:
    from twill.io.timeloop import read_arch

    base = yaml.safe_load((DATA / arch).read_text())
    _mutation_test(base, "a.yaml", read_arch)(tmp_path)


def test_mapping_mutations(tmp_path: Path) -> None:
    from twill.io.timeloop import read_arch, read_mapping

    arch = read_arch(DATA / "cosa/arch/simba.yaml")
    base = {
        "mapping": [
            {"target": "DRAM", "type": "temporal", "factors": "K=4 C=2", "permutation": "KC"},
            {"target": "GlobalBuffer", "type": "spatial", "factors": "K=2"},
            {"target": "Registers", "type": "bypass", "keep": ["Weights"]},
        ]
    }
    _mutation_test(base, "m.yaml", lambda p: read_mapping(p, arch))(tmp_path)


GML_TOKENS = st.sampled_from(
    ["graph", "[", "]", "node", "edge", "id", "source", "target", "parameter", "directed",
     "label", '"x"', "0", "1", "2", "-5", "1e9", "9" * 30, "nan"]
)  # fmt: skip


@FUZZ
@given(tokens=st.lists(GML_TOKENS, max_size=60))
def test_gml_token_soup(tokens: list[str]) -> None:
    from twill.io.gml import parse_gml

    _read_or_twill_error(parse_gml, "graph [ " + " ".join(tokens), "soup.gml")


@FUZZ
@given(
    header=st.lists(st.integers(-2, 2**40), min_size=5, max_size=5),
    body=st.binary(max_size=64),
)
def test_aiger_headers_and_bodies(header: list[int], body: bytes) -> None:
    from twill.io.aiger import parse_aiger

    text = ("aig " + " ".join(map(str, header)) + "\n").encode() + body
    _read_or_twill_error(parse_aiger, text, "f.aig")


DOSA_COLUMNS = [
    "mapping.mapping", "arch.meshX", "arch.mem1_instances", "arch.mem1_depth",
    "arch.mem2_entries", "prob.R", "prob.S", "prob.P", "prob.Q", "prob.C", "prob.K", "prob.N",
    "target.cycle",
]  # fmt: skip
CELL = st.one_of(
    st.sampled_from(["1", "16", "0", "-4", "nan", "inf", "1e308", "abc", "", "9" * 400]),
    st.integers(-10, 10**6).map(str),
)


@FUZZ
@given(cells=st.lists(CELL, min_size=len(DOSA_COLUMNS) - 1, max_size=len(DOSA_COLUMNS) - 1))
def test_dosa_rows(tmp_path: Path, cells: list[str]) -> None:
    from twill.io.timeloop import read_dosa_dataset

    p = tmp_path / "d.csv"
    p.write_text(",".join(DOSA_COLUMNS) + "\nL2[W] K1 - L0[O] C1," + ",".join(cells) + "\n")
    _read_or_twill_error(read_dosa_dataset, p)


@FUZZ
@given(
    cells=st.lists(CELL, min_size=len(DOSA_COLUMNS) - 1, max_size=len(DOSA_COLUMNS) - 1),
    mapping=st.sampled_from(["L3[WIO] K2 - L2[WI] N1 K2X - L1[O] C2 - L0[W] P2", "L3[WIO] Z9",
                             "L3[WIO] K2 K2 - L2[WI] - L1[O] - L0[W]", "L1[W] K2 - L0[O]"]),
)  # fmt: skip
def test_dosa_columns_read_as_the_rows(tmp_path: Path, cells: list[str], mapping: str) -> None:
    """read_dosa_columns on a fuzzed row (after a good one) reads what columns_from_rows of
    read_dosa_dataset reads, or raises the same error."""
    import numpy as np

    from twill.io.timeloop import read_dosa_columns, read_dosa_dataset
    from twill.mapping.cost.dataset import columns_from_rows

    good = ["L3[WIO] K4 - L2[WI] K2X - L1[O] C2 - L0[W] P2", "16", "16", "64", "1024", "1", "1",
            "2", "1", "2", "8", "1", "100"]  # fmt: skip
    p = tmp_path / "d.csv"
    p.write_text(
        "\n".join([",".join(DOSA_COLUMNS), ",".join(good), ",".join([mapping, *cells])]) + "\n"
    )
    try:
        slow = columns_from_rows(read_dosa_dataset(p))
    except TwillError as exc:
        with pytest.raises(TwillError) as info:
            read_dosa_columns(p)
        assert str(info.value) == str(exc)
        return
    fast = read_dosa_columns(p)
    assert fast.error == slow.error and fast.archs == slow.archs
    assert [ly.key for ly in fast.layers] == [ly.key for ly in slow.layers]
    for name in ("layer_of", "arch_of"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert np.array_equal(fast.target_cycles, slow.target_cycles, equal_nan=True)
    for name in ("temporal", "spatial", "order", "keeps", "group_temporal"):
        assert np.array_equal(getattr(fast.mappings, name), getattr(slow.mappings, name)), name


@FUZZ
@given(
    latency=st.sampled_from(["1", "-1", "2", "1e9", "99999999999999", "x", ""]),
    blocking=st.sampled_from(["1", "0", "-2", "100001", "abc"]),
    limit=st.sampled_from(["1", "-1", "-2", "0", "2000000"]),
    delay=st.sampled_from(["0", "1", "-1", "9" * 20, "nan"]),
)
def test_hatschet_values(tmp_path: Path, latency: str, blocking: str, limit: str, delay: str):
    from twill.io.hatschet import read_hatschet

    (tmp_path / "l.graphml").write_text(
        '<graphml><graph><node id="1"><data key="name">a</data><data key="uses_resource">A'
        '</data></node><node id="2"><data key="name">b</data><data key="uses_resource">A'
        f'</data></node><edge source="1" target="2"><data key="delay">{delay}</data></edge>'
        '<edge source="2" target="1"><data key="distance">1</data></edge></graph></graphml>'
    )
    (tmp_path / "lRM.xml").write_text(
        f'<M><Resources><Resource name="A" limit="{limit}" latency="{latency}" '
        f'blockingTime="{blocking}"/></Resources></M>'
    )
    _read_or_twill_error(read_hatschet, tmp_path / "l.graphml")
