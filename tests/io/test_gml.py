"""GS-Schedule GML reader."""

from __future__ import annotations

import pytest

from twill.errors import InputFormatError, InvalidProblemError
from twill.io.gml import parse_gml, read_gml
from twill.sched.gaus.graph import gaus_view
from twill.sched.ir import DependenceGraph, Edge


def test_reads_benchmark(benchmark_data) -> None:
    g = gaus_view(read_gml(benchmark_data / "gs_schedule" / "rand_graph_sparse_1000_1.gml"))
    assert (g.n, g.num_edges) == (810, 946)
    assert int(g.comm.sum()) == 378 and int((g.usage[:, 0, 0] > 0).sum()) == 324


def test_small_graph() -> None:
    graph = parse_gml(
        "graph [ directed 1 node [ id 1 parameter 3 ] node [ id 0 parameter 0 ] "
        "edge [ source 1 target 0 parameter 0 ] ]"
    )
    # the reader builds the IR; the weights ride on it and reach GauS's array view
    assert isinstance(graph, DependenceGraph) and graph.memory_weight == "footprint"
    assert graph.edges == (Edge("1", "0", 0, comm=0.0),)
    g = gaus_view(graph)
    assert g is gaus_view(graph)  # computed once per graph
    assert g.names == ("0", "1") and g.comm.tolist() == [0.0] and g.delay.tolist() == [0]
    assert g.mem.tolist() == [0.0, 3.0] and g.usage[:, 0, 0].tolist() == [0.0, 3.0]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("node [ id 0 ]", "expected 'graph \\["),
        ("graph [ node [ id x ] ]", "id must be an integer"),
        ("graph [ node [ id 0 ] edge [ source 0 target 5 ] ]", "unknown node 5"),
        ("graph [ node [ id 0 ] node [ id 0 ] ]", "duplicate id"),
        (
            "graph [ node [ id 0 ] node [ id 1 ] edge [ source 0 target 1 ] "
            "edge [ source 1 target 0 ] ]",
            "cycle",
        ),
        ("graph [ ]", "no nodes"),
    ],
)
def test_bad_inputs(text: str, fragment: str) -> None:
    with pytest.raises(InvalidProblemError, match=fragment) as exc:
        parse_gml(text, source="bad.gml")
    assert "bad.gml" in str(exc.value)


def test_binary_file(tmp_path) -> None:
    p = tmp_path / "x.gml"
    p.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputFormatError, match="x.gml"):
        gaus_view(read_gml(p))
