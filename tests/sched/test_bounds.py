"""ResMII, RecMII without circuit enumeration, ASAP (Rau, MICRO-27 1994)."""

from __future__ import annotations

import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twill.errors import InvalidProblemError
from twill.kernels import flash_attention_forward_blackwell, flash_attention_forward_simplified
from twill.sched.bounds import asap, has_positive_cycle, mii, rec_mii, res_mii
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription

M = MachineDescription("m", {"A": 2, "B": 1, "U": -1})


class TestResMII:
    def test_empty_and_one_node(self):
        assert res_mii(DependenceGraph("e", (), (), M)) == 1
        g = DependenceGraph("o", (Instruction("a", 3, {"B": (1, 1, 1)}),), (), M)
        assert res_mii(g) == 3

    def test_capacity_and_unlimited(self):
        ins = tuple(Instruction(f"x{i}", 1, {"A": (1,)}) for i in range(5))
        ins += tuple(Instruction(f"u{i}", 1, {"U": (1,)}) for i in range(9))
        assert res_mii(DependenceGraph("g", ins, (), M)) == 3  # ceil(5 / 2)

    def test_kernels(self):
        assert res_mii(flash_attention_forward_simplified()) == 2
        assert mii(flash_attention_forward_blackwell()) == 2


class TestRecMII:
    def test_fig1(self):
        assert rec_mii(flash_attention_forward_simplified()) == 1

    def test_ratio_rounds_up(self):
        ins = (Instruction("a", 1), Instruction("b", 1))
        g = DependenceGraph("g", ins, (Edge("a", "b", 4), Edge("b", "a", 3, 2)), M)
        assert rec_mii(g) == 4  # ceil(7 / 2)
        assert has_positive_cycle(g, 3) and not has_positive_cycle(g, 4)

    def test_zero_distance_cycle_with_delay_is_rejected(self):
        ins = (Instruction("a", 1), Instruction("b", 1))
        g = DependenceGraph("g", ins, (Edge("a", "b", 1), Edge("b", "a", 0)), M)
        with pytest.raises(InvalidProblemError, match="total distance 0 and positive delay"):
            rec_mii(g)


@st.composite
def cyclic_graphs(draw):
    n = draw(st.integers(1, 6))
    edges = []
    for _ in range(draw(st.integers(0, 10))):
        u, v = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        dist = draw(st.integers(0, 3)) if u < v else draw(st.integers(1, 3))
        edges.append(Edge(f"v{u}", f"v{v}", draw(st.integers(0, 9)), dist))
    ins = tuple(Instruction(f"v{i}", 1) for i in range(n))
    return DependenceGraph("r", ins, tuple(edges), M)


def rec_mii_by_enumeration(g: DependenceGraph) -> int:
    """max over elementary circuits of ceil(d/delta), via networkx (parallel edges kept)."""
    best = 1
    simple = nx.DiGraph()
    for e in g.edges:
        simple.add_edge(e.src, e.dst)
    for cycle in nx.simple_cycles(simple):
        arcs = list(zip(cycle, cycle[1:] + cycle[:1], strict=True))
        # the worst choice of parallel edge on every arc: enumerate all combinations
        options = [[e for e in g.edges if (e.src, e.dst) == a] for a in arcs]
        stack = [(0, 0, 0)]
        while stack:
            i, d, delta = stack.pop()
            if i == len(options):
                best = max(best, math.ceil(d / delta))
                continue
            for e in options[i]:
                stack.append((i + 1, d + e.delay, delta + e.distance))
    return best


@settings(max_examples=60, deadline=None)
@given(cyclic_graphs())
def test_rec_mii_matches_circuit_enumeration(g):
    assert rec_mii(g) == rec_mii_by_enumeration(g)


def test_asap():
    g = flash_attention_forward_simplified()
    assert asap(g) == {"S": 0, "P": 1, "O": 2}
    assert asap(g, 2) == {"S": 0, "P": 1, "O": 2}
    ins = (Instruction("a", 1), Instruction("b", 1))
    g2 = DependenceGraph("g", ins, (Edge("a", "b", 5), Edge("b", "a", 1, 1)), M)
    with pytest.raises(InvalidProblemError, match="below RecMII"):
        asap(g2, 5)
