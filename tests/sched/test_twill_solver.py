"""The public entry point: README example verbatim, result object, verbose summary."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from twill.errors import InvalidProblemError
from twill.results import Status
from twill.sched.ir import Instruction
from twill.twill_solver import (
    PROBLEM_WARP_SPECIALISATION,
    TwillResult,
    format_mrt,
    format_result,
    twill_solve,
)


def test_readme_example_verbatim(capsys):
    from twill.kernels import flash_attention_forward_simplified
    from twill.twill_solver import twill_solve

    graph = flash_attention_forward_simplified()
    result = twill_solve(graph, max_I=5, verbose=True)  # I=2, S@0, P@2, O@3
    assert result.I == 2 and result.optimal and result.L == 4
    assert result.schedule == {"S": 0, "P": 2, "O": 3}
    out = capsys.readouterr().out
    claim = "proven optimal for modulo scheduling with warp specialisation, each operation on"
    assert f"I = 2 units ({claim} its given warp groups)" in out
    assert "1 unit = 1,024 SM clocks" in out
    assert "problem: modulo+warp-specialisation" in out
    assert "schedule: S@0, P@2, O@3" in out
    assert "certificate: I = 1 excluded: ResMII 2" in out
    assert "TC (cap 1)  | S | O" in out


def test_readme_python_block_runs_as_written(capsys):
    """The first Python block of README.md, executed exactly as printed there."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert "twill_solve(" in block and "result.warps" in block
    env: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), env)
    result = env["result"]
    assert set(result.warps) == set(result.schedule) and result.optimal
    assert twill_solve(env["graph"], max_I=5, phase2=False).warps is None


def test_quiet_by_default(capsys):
    from twill.kernels import flash_attention_forward_simplified

    twill_solve(flash_attention_forward_simplified())
    assert capsys.readouterr().out == ""


def test_result_is_frozen_and_serialisable():
    from twill.kernels import flash_attention_forward_simplified

    r = twill_solve(flash_attention_forward_simplified(), backend="cpsat")
    assert isinstance(r, TwillResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.I = 3  # type: ignore[misc]
    d = json.loads(json.dumps(r.to_dict()))
    assert {"I", "optimal", "L", "schedule", "certificate", "seconds", "status"} <= set(d)
    assert d["certificate"] == [{"I": 1, "verdict": "below_bound", "by": "ResMII", "seconds": 0.0}]


def test_not_found_within_max_i(capsys):
    from twill.kernels import flash_attention_forward_hopper

    r = twill_solve(flash_attention_forward_hopper(), max_I=3, verbose=True)
    assert r.I is None and not r.optimal and r.status.value == "infeasible"
    assert "no schedule with I <= 3" in capsys.readouterr().out


def test_invalid_graph_is_rejected_before_solving():
    from twill.kernels import flash_attention_forward_simplified

    g = flash_attention_forward_simplified()
    bad = g.replace(instructions=g.instructions + (Instruction("S", 1),))
    with pytest.raises(InvalidProblemError, match="duplicate name"):
        twill_solve(bad)


def test_mrt_picture_multi_row():
    from twill.sched.ir import DependenceGraph, MachineDescription

    g = DependenceGraph(
        "g", (Instruction("a", 2, {"U": (1, 1)}),), (), MachineDescription("m", {"U": 1})
    )
    text = format_mrt(g, {"a": 1}, 2)
    assert "a[1]" in text.splitlines()[2] and "a[0]" in text.splitlines()[2]


def test_phase2_unknown_is_reported_as_such(capsys):
    """A Phase-2 time limit must not read as 'no schedule with I <= (Phase-1 bound)'."""
    from twill.kernels import flash_attention_forward_simplified

    graph = flash_attention_forward_simplified()
    phase1 = twill_solve(graph, max_I=5, phase2=False)
    result = dataclasses.replace(
        phase1,
        status=Status.UNKNOWN,
        I=None,
        L=None,
        schedule=None,
        optimal=False,
        problem=PROBLEM_WARP_SPECIALISATION,
        extra={"points": [{"I": 2, "L": 4, "answer": "unknown", "seconds": 1.0},
                          {"I": 3, "L": 3, "answer": "unknown", "seconds": 1.0}],
               "phase1_I": 2},
    )  # fmt: skip
    text = format_result(result, graph)
    assert "no warp-specialised schedule with I <= 3: a time limit was hit" in text
    assert "Phase 1 alone, without warps: I = 2" in text and "optimal" not in text
    assert "(I=3, L=3): unknown" in text


def test_kernel_name_or_path_like_the_cli():
    assert twill_solve("simple_gemm_pipeline").I == 2
    data = Path(__file__).resolve().parents[1] / "data" / "circt_canis14_fig2.yaml"
    r = twill_solve(data)
    assert (r.I, r.problem) == (3, "modulo") and twill_solve(str(data)).schedule == r.schedule
    with pytest.raises(InvalidProblemError, match="no_such_kernel"):
        twill_solve("no_such_kernel")


@pytest.mark.parametrize("bad", [None, 3, ["simple_gemm_pipeline"]])
def test_wrong_graph_type_is_a_clear_type_error(bad):
    with pytest.raises(TypeError, match="expects a DependenceGraph, a kernel name .* found"):
        twill_solve(bad)


def test_repr_is_short():
    r = twill_solve("flash_attention_forward_hopper")
    text = repr(r)
    assert text.startswith("TwillResult(graph='flash_attention_forward_hopper'")
    assert "problem='modulo+warp-specialisation'" in text and "I=4" in text
    assert len(text) < 200 and "certificate" not in text and "LOAD_K" not in text
