"""Hostile names in generated code: user text never becomes a line of code (escaped comments,
sanitised identifiers without clashes)."""

from __future__ import annotations

import json
import re

from twill.codegen.cuda import generate_cuda
from twill.codegen.plan import comment_text, unique_idents
from twill.codegen.pseudo import generate_pseudocode
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription

EVIL = 'x\n#include "/etc/passwd"\nint pwned = 1; \\'


def _graph() -> DependenceGraph:
    ops = [
        Instruction(EVIL, 1, {"TC": (1,)}, unit="TC\n#define X 1", note="n\r\nsystem(1);"),
        Instruction("a.b", 1, {"TC": (1,)}),
        Instruction("a_b", 1, {"TC": (1,)}),
        Instruction("for", 1, {"TC": (1,)}),
    ]
    edges = [Edge(EVIL, "a.b", 1), Edge("a.b", "a_b", 1), Edge("a_b", "for", 1)]
    return DependenceGraph(f"g\n#pragma evil\n{EVIL}", ops, edges, MachineDescription())


def _schedule() -> dict[str, int]:
    return {EVIL: 0, "a.b": 1, "a_b": 2, "for": 3}


def _assert_no_injected_line(text: str) -> None:
    for line in text.splitlines():
        assert not line.lstrip().startswith(('#include "', "#pragma", "#define", "int pwned"))
        assert not line.rstrip().endswith("\\"), line
        assert "system(1);" not in line or "<U+000A>" in line, line


def _benign(g: DependenceGraph) -> tuple[DependenceGraph, dict[str, int]]:
    names = {v: f"v{i}" for i, v in enumerate(g.names)}
    ops = [Instruction(names[i.name], 1, {"TC": (1,)}) for i in g.instructions]
    edges = [Edge(names[e.src], names[e.dst], e.delay) for e in g.edges]
    sched = {names[v]: t for v, t in _schedule().items()}
    return DependenceGraph("g", ops, edges, MachineDescription()), sched


def test_cuda_names_cannot_inject_lines():
    src = generate_cuda(_graph(), _schedule(), None, 4, 4)
    _assert_no_injected_line(src)
    same = generate_cuda(*_benign(_graph()), None, 4, 4)
    assert len(src.splitlines()) == len(same.splitlines())  # no line added by a name
    assert [ln for ln in src.splitlines() if ln.startswith("#include")] == ["#include <cstdint>"]
    defs = re.findall(r"void (op_\w+)\(int it\)", src)
    assert len(defs) == 4 and len(set(defs)) == 4, defs  # a.b and a_b do not clash
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", d) for d in defs)
    assert re.search(r"^namespace [A-Za-z0-9_]+ {$", src, re.M)


def test_pseudocode_names_cannot_inject_lines():
    text = generate_pseudocode(_graph(), _schedule(), None, 4, 4)
    _assert_no_injected_line(text)
    same = generate_pseudocode(*_benign(_graph()), None, 4, 4)
    assert len(text.splitlines()) == len(same.splitlines())
    assert "x<U+000A>#include" in text


def test_comment_text_and_unique_idents():
    assert comment_text("a\nb\\?") == "a<U+000A>b<U+005C><U+003F>"
    assert unique_idents(["a.b", "a_b", "a_b_2", "", "1x", "int"]) == {
        "a.b": "a_b",
        "a_b": "a_b_2",
        "a_b_2": "a_b_2_2",
        "": "op_",
        "1x": "op_1x",
        "int": "op_int",
    }


def test_cli_codegen_file_with_hostile_op_name(tmp_path):
    from twill.cli import main

    graph = {
        "format": "twill-graph/1",
        "name": "evil",
        "machine": {"functional_units": {"TC": 1}},
        "instructions": [
            {"name": EVIL, "cycles": 1, "reservation": {"TC": [1]}},
            {"name": "b", "cycles": 1, "reservation": {"TC": [1]}},
        ],
        "edges": [{"src": EVIL, "dst": "b", "delay": 1}],
    }
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(graph))
    for lang in ("cuda", "pseudo"):
        out = tmp_path / f"out.{lang}"
        assert main(["codegen", str(path), "--lang", lang, "-o", str(out)]) == 0
        _assert_no_injected_line(out.read_text())
