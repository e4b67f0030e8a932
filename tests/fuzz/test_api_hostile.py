"""Hostile values through the Python API: typed errors (:class:`InvalidProblemError`), never
a TypeError from a comparison or a result that calls a NaN objective legal."""

from __future__ import annotations

import math

import pytest

from twill.errors import InputFormatError, InvalidProblemError
from twill.yaml_safe import MAX_YAML_DEPTH, load_yaml_text, short_repr


@pytest.mark.parametrize(
    "args",
    [(None, 0.1), ("5", 0.1), (True, 0.1), (0, 0.1), (5, math.nan), (5, 2.0), (5, 0.1, -1)],
)
def test_generate_random_dag_typed_errors(args: tuple) -> None:
    from twill.gaus_solver import generate_random_dag

    with pytest.raises(InvalidProblemError, match="generate_random_dag: "):
        generate_random_dag(*args)


@pytest.mark.parametrize("ratio", [math.nan, math.inf, -1.0, "1"])
def test_gaus_ratio_must_be_finite(ratio: object) -> None:
    from twill.gaus_solver import generate_random_dag
    from twill.sched.gaus.solver import GauSSolver

    solver = GauSSolver(generate_random_dag(6, 0.3, seed=1))
    with pytest.raises(InvalidProblemError, match="ratio must be a finite number"):
        solver.solve_resource(ratio=ratio)  # type: ignore[arg-type]


class TestBoundedYaml:
    def test_alias_bomb_refused_without_expanding(self) -> None:
        bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
            for i in range(8)
        )
        with pytest.raises(InputFormatError, match=r"f.yaml: .*more than 1,000,000 values"):
            load_yaml_text(bomb, "f.yaml")

    def test_small_aliases_are_fine(self) -> None:
        assert load_yaml_text("a: &x [1, 2]\nb: *x\n", "f.yaml") == {"a": [1, 2], "b": [1, 2]}

    def test_depth_limit(self) -> None:
        ok = "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1)
        load_yaml_text(ok, "f.yaml")
        deep = "[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1)
        with pytest.raises(InputFormatError, match=f"deeper than {MAX_YAML_DEPTH}"):
            load_yaml_text(deep, "f.yaml")

    def test_duplicate_key_names_line(self) -> None:
        with pytest.raises(
            InputFormatError, match=r"duplicate key 'a' at line 3 \(first at line 1"
        ):
            load_yaml_text("a: 1\nb: 2\na: 3\n", "f.yaml")

    def test_huge_integer_message_is_short(self) -> None:
        with pytest.raises(InputFormatError) as info:
            load_yaml_text("a: " + "9" * 5000, "f.yaml")
        assert len(str(info.value)) < 300


def test_short_repr_bounds_length() -> None:
    assert len(short_repr("x" * 10_000)) < 100
    assert short_repr(list(range(10**5))) == "a list of 100000 items"
    assert "digits" in short_repr(10**5000)
