"""check_graph: every defect is reported with the item and the problem (Twill paper §3.1)."""

from __future__ import annotations

import pytest

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.sched.kernels import KERNELS
from twill.sched.validate import check_graph, zero_distance_circuits

M = MachineDescription("m", {"TC": 1, "EXP": 1})


def _g(instructions, edges=(), machine=M):
    return DependenceGraph("g", tuple(instructions), tuple(edges), machine)


def _defects(graph) -> list[str]:
    with pytest.raises(InvalidProblemError) as info:
        check_graph(graph, source="g.yaml")
    assert str(info.value).startswith("g.yaml: ")
    return info.value.defects


class TestValid:
    def test_empty_graph(self):
        check_graph(_g([]))

    def test_one_node(self):
        check_graph(_g([Instruction("a", 1, {"TC": (1,)})]))

    @pytest.mark.parametrize("name", sorted(KERNELS))
    def test_kernels(self, name):
        check_graph(KERNELS[name]())


class TestDefects:
    def test_unknown_functional_unit(self):
        (d,) = _defects(_g([Instruction("a", 1, {"XU": (1,)})]))
        assert d == "instruction 'a': unknown functional unit 'XU' (machine has: EXP, TC)"

    def test_negative_cycles(self):
        (d,) = _defects(_g([Instruction("a", -1)]))
        assert d == "instruction 'a': cycles must be an integer from 0 to at most 100,000, found -1"

    def test_non_integer_delay(self):
        ins = [Instruction("a", 1), Instruction("b", 1)]
        (d,) = _defects(_g(ins, [Edge("a", "b", 1.5)]))
        assert d == (
            "edge a->b (distance 0): delay must be an integer from 0 to at most 100,000, found 1.5"
        )

    def test_negative_distance(self):
        ins = [Instruction("a", 1), Instruction("b", 1)]
        (d,) = _defects(_g(ins, [Edge("a", "b", 1, -1)]))
        assert "distance must be an integer from 0 to at most 10,000, found -1" in d

    def test_bool_is_not_an_integer(self):
        (d,) = _defects(_g([Instruction("a", True)]))
        assert "cycles must be an integer from 0 to at most 100,000, found True" in d

    def test_duplicate_names(self):
        (d,) = _defects(_g([Instruction("a", 1), Instruction("a", 1)]))
        assert d == "instruction 'a': duplicate name"

    def test_dangling_edge(self):
        (d,) = _defects(_g([Instruction("a", 1)], [Edge("a", "zz", 1)]))
        assert d == "edge a->zz (distance 0): unknown target instruction 'zz' (dangling edge)"

    def test_rrt_row_length(self):
        (d,) = _defects(_g([Instruction("a", 2, {"TC": (1,)})]))
        assert d == "instruction 'a': reservation['TC'] has 1 rows but cycles = 2"

    def test_row_needs_more_than_capacity(self):
        (d,) = _defects(_g([Instruction("a", 1, {"TC": (2,)})]))
        assert "needs 2 units but the capacity of 'TC' is 1" in d

    def test_bad_capacity(self):
        (d,) = _defects(_g([], machine=MachineDescription("m", {"TC": -2})))
        assert "functional unit 'TC': capacity must be an integer from 0 to at most 1,000,000" in d

    def test_zero_distance_circuit_names_its_nodes(self):
        ins = [Instruction(n, 1) for n in "abcd"]
        edges = [Edge("a", "b", 1), Edge("b", "c", 0), Edge("c", "a", 2), Edge("c", "d", 1)]
        (d,) = _defects(_g(ins, edges))
        assert d == (
            "circuit with total distance 0 through 'a', 'b', 'c': "
            "every dependence circuit needs distance >= 1"
        )

    def test_zero_distance_self_loop(self):
        (d,) = _defects(_g([Instruction("a", 1)], [Edge("a", "a", 0)]))
        assert "circuit with total distance 0 through 'a'" in d

    def test_every_defect_is_listed(self):
        ins = [Instruction("a", 1, {"XU": (1,)}), Instruction("a", -1)]
        defects = _defects(_g(ins, [Edge("a", "q", -3)]))
        assert len(defects) == 5

    def test_circuit_with_distance_is_fine(self):
        ins = [Instruction("a", 1), Instruction("b", 1)]
        check_graph(_g(ins, [Edge("a", "b", 1), Edge("b", "a", 1, 1)]))
        assert zero_distance_circuits(["a", "b"], [Edge("a", "b", 1), Edge("b", "a", 1, 1)]) == []
