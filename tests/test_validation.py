"""Numeric options of the public API are checked as the CLI checks them: a NaN, zero, negative
or string time limit is refused with a message, never turned into a false proof."""

from __future__ import annotations

import math

import pytest

from tests.mapping.mappers import mapped
from twill.errors import InvalidProblemError
from twill.gaus_solver import gaus_solve_twill_graph, generate_random_dag
from twill.kernels import flash_attention_forward_hopper, flash_attention_forward_simplified
from twill.options import SolverOptions
from twill.sched.exact.phase1 import solve_phase1
from twill.sched.exact.settings import TwillSettings
from twill.sched.gaus.alm import GauSSettings
from twill.sched.gaus.solver import GauSSolver
from twill.twill_solver import twill_solve
from twill.validation import check_int, check_real, check_time_limit

BAD_LIMITS = [
    (math.nan, InvalidProblemError),
    (math.inf, InvalidProblemError),
    (-1, InvalidProblemError),
    (0, InvalidProblemError),
    ("1", TypeError),
    (True, TypeError),
]


@pytest.mark.parametrize(("value", "error"), BAD_LIMITS)
def test_twill_solve_refuses_bad_time_limits(value, error):
    g = flash_attention_forward_hopper()
    for key in ("time_limit", "total_time_limit", "phase2_time_limit"):
        with pytest.raises(error, match=f"{key} must be a finite number > 0 or None, found"):
            twill_solve(g, **{key: value})


def test_nan_time_limit_was_a_false_infeasibility_proof():
    g = flash_attention_forward_hopper()
    with pytest.raises(InvalidProblemError, match="found nan"):
        twill_solve(g, time_limit=math.nan)
    with pytest.raises(InvalidProblemError, match="found nan"):
        solve_phase1(g, 4, SolverOptions(twill=TwillSettings(solve_time_limit=math.nan)))
    r = twill_solve(flash_attention_forward_simplified(), time_limit=5.0, phase2=False)
    assert r.status.value == "optimal" and r.I is not None  # a valid limit still works


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"max_I": 0}, InvalidProblemError),
        ({"max_I": 2.0}, TypeError),
        ({"threads": 0}, InvalidProblemError),
        ({"backend": "gurobi"}, InvalidProblemError),
        ({"backend": None}, TypeError),
    ],
)
def test_twill_solve_refuses_bad_options(kwargs, error):
    with pytest.raises(error, match=f"{next(iter(kwargs))} must be"):
        twill_solve(flash_attention_forward_simplified(), **kwargs)


def test_gaus_api_refuses_bad_numbers():
    g = generate_random_dag(8, 0.3, 0, seed=1)
    with pytest.raises(InvalidProblemError, match="time_limit"):
        GauSSettings(time_limit=math.nan)
    with pytest.raises(TypeError, match="max_iters must be an integer >= 1, found '5'"):
        GauSSettings(max_iters="5")
    with pytest.raises(InvalidProblemError, match="lr must be a finite number > 0"):
        GauSSolver(g, lr=-0.1)
    with pytest.raises(InvalidProblemError, match="D must be"):
        GauSSolver(g, D=0)
    with pytest.raises(InvalidProblemError, match="target_II must be"):
        gaus_solve_twill_graph(g, target_II=-3)
    with pytest.raises(InvalidProblemError, match="R_cap must be"):
        GauSSolver(g).solve_modulo(2, R_cap=math.nan)


def test_cosa_map_refuses_bad_numbers():
    from twill.mapping.arch import simba_arch
    from twill.mapping.workload import Layer

    layer = Layer("fc", {"C": 8, "K": 8})
    with pytest.raises(InvalidProblemError, match="time_limit"):
        mapped("cosa", layer, simba_arch(), time_limit=math.nan)
    with pytest.raises(InvalidProblemError, match="threads"):
        mapped("cosa", layer, simba_arch(), threads="2")


def test_validators_messages():
    assert check_time_limit(None) is None and check_time_limit(3) == 3.0
    assert check_int(None, "x", none=True) is None
    with pytest.raises(InvalidProblemError, match=r"x must be an integer in \[1, 4\], found 5"):
        check_int(5, "x", maximum=4)
    with pytest.raises(InvalidProblemError, match="y must be a finite number >= 0, found -1"):
        check_real(-1, "y", strict=False)


def test_random_dag_arguments_are_typed_errors():
    with pytest.raises(
        TypeError, match=r"num_nodes must be an integer in \[1, 10000000\], found None"
    ):
        generate_random_dag(None, 0.1)
    with pytest.raises(InvalidProblemError, match="edge_density must be a finite number >= 0"):
        generate_random_dag(5, math.nan)
    with pytest.raises(InvalidProblemError, match="num_back_edges"):
        generate_random_dag(5, 0.1, -1)
