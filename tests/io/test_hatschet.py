"""HatScheT reader: semantics, resource-model lookup, malformed upstream files."""

from __future__ import annotations

import shutil

import pytest

from twill.errors import InputFormatError, InvalidProblemError
from twill.io import load_graph
from twill.io.hatschet import find_resource_model, read_hatschet
from twill.sched.bounds import rec_mii, res_mii


def test_iir_biqu_semantics(benchmark_data):
    g = read_hatschet(benchmark_data / "hatschet" / "cTest" / "iir_biqu.graphml")
    assert (len(g.instructions), len(g.edges)) == (14, 17)
    caps = dict(g.machine.functional_units)
    assert caps["AddAdd"] == 1 and caps["Product"] == 1 and caps["Constant"] == -1
    add = g.instruction("Sum2")
    assert add.cycles == 1 and add.reservation == {"AddAdd": (1,)}
    # delay = latency(src) + edge delay: AddAdd has latency 5, Product 1, Constant 0
    delays = {(e.src, e.dst): e.delay for e in g.edges}
    assert all(d == 5 for (s, _), d in delays.items() if s.startswith("Sum"))
    assert all(d == 1 for (s, _), d in delays.items() if s.startswith("Product"))
    assert (res_mii(g), rec_mii(g)) == (4, 11)


def test_namespaced_machsuite_file(benchmark_data):
    path = benchmark_data / "hatschet" / "MachSuite" / "aes2" / "graph1.graphml"
    assert find_resource_model(path).name == "graph1_RM.xml"
    g = load_graph(path)
    assert len(g.instructions) == 33 and g.name == "graph1"


def test_old_edge_keys(benchmark_data):
    g = read_hatschet(benchmark_data / "hatschet" / "cTest" / "MoovacExample.graphml")
    assert len(g.edges) == 7 and all(e.distance == 0 for e in g.edges)


def test_van_dongen_is_malformed(benchmark_data):
    path = benchmark_data / "hatschet" / "cTest" / "vanDongen.graphml"
    with pytest.raises(InputFormatError) as info:
        read_hatschet(path)
    msg = str(info.value)
    assert msg.startswith(str(path)) and "malformed XML" in msg and "line 108" in msg


def test_missing_resource_model(tmp_path, benchmark_data):
    src = benchmark_data / "hatschet" / "cTest" / "iir_biqu.graphml"
    shutil.copy(src, tmp_path / "x.graphml")
    with pytest.raises(InputFormatError, match=r"looked for x_RM.xml and xRM.xml"):
        read_hatschet(tmp_path / "x.graphml")
    g = read_hatschet(tmp_path / "x.graphml", src.with_name("iir_biquRM.xml"))
    assert g.name == "x" and len(g.instructions) == 14


def test_unknown_resource_and_dangling_edge(tmp_path):
    (tmp_path / "bad.graphml").write_text(
        '<graphml><graph edgedefault="directed">'
        '<node id="1"><data key="name">a</data><data key="uses_resource">Mul</data></node>'
        '<node id="2"><data key="name">b</data><data key="uses_resource">Add</data></node>'
        '<edge source="1" target="9"><data key="distance">0</data><data key="delay">x</data>'
        "</edge></graph></graphml>"
    )
    (tmp_path / "badRM.xml").write_text(
        '<ModelInformation><Resources><Resource name="Add" latency="1" blockingTime="1" '
        'limit="1"/></Resources></ModelInformation>'
    )
    with pytest.raises(InvalidProblemError) as info:
        read_hatschet(tmp_path / "bad.graphml")
    text = "\n".join(info.value.defects)
    assert "node[0] id='1' name='a': resource 'Mul' is not in badRM.xml" in text
    assert "delay: expected an integer, found 'x'" in text
    assert "unknown target node id '9'" in text
    assert str(info.value).startswith(str(tmp_path / "bad.graphml"))


def test_bad_resource_model(tmp_path):
    (tmp_path / "rm.xml").write_text(
        '<ModelInformation><Resources><Resource name="Add" latency="-1" blockingTime="1" '
        'limit="-3"/></Resources></ModelInformation>'
    )
    from twill.io.hatschet import read_resource_model

    with pytest.raises(InvalidProblemError) as info:
        read_resource_model(tmp_path / "rm.xml")
    assert info.value.defects == [
        "Resource[0] 'Add'.latency: expected an integer from 0 to at most 100,000, found -1",
        "Resource[0] 'Add'.limit: expected an integer from -1 to at most 1,000,000, found -3",
    ]


def test_repeated_node_names_are_renamed_without_clashes(tmp_path):
    # names a, a, a#2: the two "a" would both want "a#<id>"; id 2's rename must not clash with
    # the node really called "a#2"
    nodes = [("1", "a"), ("2", "a"), ("3", "a#2"), ("4", "b")]
    edges = [("1", "2", 0), ("2", "3", 0), ("3", "4", 0), ("4", "1", 1)]
    (tmp_path / "dup.graphml").write_text(
        '<graphml><graph edgedefault="directed">'
        + "".join(
            f'<node id="{i}"><data key="name">{n}</data><data key="uses_resource">Add</data></node>'
            for i, n in nodes
        )
        + "".join(
            f'<edge source="{s}" target="{t}"><data key="distance">{d}</data>'
            '<data key="delay">0</data></edge>'
            for s, t, d in edges
        )
        + "</graph></graphml>"
    )
    (tmp_path / "dupRM.xml").write_text(
        '<ModelInformation><Resources><Resource name="Add" latency="1" blockingTime="1" '
        'limit="2"/></Resources></ModelInformation>'
    )
    g = read_hatschet(tmp_path / "dup.graphml")
    assert g.names == ["a#1", "a#2.2", "a#2", "b"]
    assert [(e.src, e.dst, e.distance) for e in g.edges] == [
        ("a#1", "a#2.2", 0), ("a#2.2", "a#2", 0), ("a#2", "b", 0), ("b", "a#1", 1)
    ]  # fmt: skip
    from twill.twill_solver import twill_solve

    r = twill_solve(g, phase2=False)
    assert r.status.value == "optimal" and r.I == 4  # the 4-op circuit, latency 1, distance 1
