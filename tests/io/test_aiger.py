"""AIGER reader (binary and ASCII)."""

from __future__ import annotations

import pytest

from twill.errors import InputFormatError
from twill.io.aiger import parse_aiger, read_aiger
from twill.sched.gaus.graph import gaus_view, longest_path_nodes


@pytest.mark.parametrize(
    "name, nodes, edges, depth",
    [("ctrl", 181, 348, 10), ("dec", 312, 608, 3), ("router", 317, 514, 54)],
)
def test_epfl_statistics(benchmark_data, name, nodes, edges, depth) -> None:
    g = gaus_view(read_aiger(benchmark_data / "epfl" / f"{name}.aig"))
    assert (g.n, g.num_edges, longest_path_nodes(g) - 1) == (nodes, edges, depth)
    assert g.names[0] == "i0" and all(int(x) % 2 == 0 for x in g.names if x[0] != "i")


def test_tiny_and_gate() -> None:
    # aig M=3 I=2 L=0 O=1 A=1: gate 6 = AND(2, 4): deltas 6-4=2, 4-2=2
    g = gaus_view(parse_aiger(b"aig 3 2 0 1 1\n6\n\x02\x02"))
    assert g.names == ("i0", "i1", "6") and sorted(g.src.tolist()) == [0, 1]


def test_ascii_and_aiger_1_9_headers_read_like_the_binary_file() -> None:
    binary = gaus_view(parse_aiger(b"aig 3 2 0 1 1\n6\n\x02\x02"))
    ascii_ = gaus_view(parse_aiger(b"aag 3 2 0 1 1\n2\n4\n6\n6 4 2\n"))
    # AIGER 1.9: one bad-state literal after the output, then the gates
    v19 = gaus_view(parse_aiger(b"aig 3 2 0 1 1 1 0 0 0\n6\n7\n\x02\x02"))
    for g in (ascii_, v19):
        assert g.names == binary.names
        assert sorted(zip(g.src.tolist(), g.dst.tolist(), strict=True)) == [(0, 2), (1, 2)]


@pytest.mark.parametrize(
    "data, fragment",
    [
        (b"aag 3 2 0 1 1\n", "input 0"),
        (b"aag 3 1 0 1 2\n2\n6\n4 6 2\n6 4 2\n", "cycle"),
        (b"aag 4 2 0 1 1\n2\n4\n6\n6 8 2\n", "not defined"),
        (b"xyz 3 2 0 1 1\n", "'aig' or 'aag'"),
        (b"aig 3 2\n", "M I L O A"),
        (b"aig 3 2 1 1 0\n", "latches"),
        (b"aig 4 2 0 1 1\n", "M = 4"),
        (b"aig 3 2 0 1 1\n6\n\x02", "ends inside"),
        (b"aig x 2 0 1 1\n", "integers"),
    ],
)
def test_bad_headers(data: bytes, fragment: str) -> None:
    with pytest.raises(InputFormatError, match=fragment) as exc:
        parse_aiger(data, source="bad.aig")
    assert "bad.aig" in str(exc.value)
