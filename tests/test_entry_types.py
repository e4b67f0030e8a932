"""Issue 49: every public entry checks its arguments once, at the entry, and a wrong type is a
``TypeError`` (a wrong value a ``ValueError``) naming the argument, never an
``AttributeError`` from deep inside a solver."""

from __future__ import annotations

import importlib
import math

import pytest

from twill.errors import InvalidProblemError
from twill.kernels import flash_attention_forward_simplified
from twill.mapping.arch import gemmini_arch
from twill.mapping.pipeline import map_layer, map_network
from twill.mapping.workload import Layer
from twill.options import SolverOptions
from twill.registry import solvers
from twill.sched.problems import WarpSpecProblem

#: Every public ``solve(problem, options)``: each registered solver, and the front doors that
#: are not registered (module, function).
SOLVERS = [(s.module, "solve") for s in solvers()] + [
    ("twill.sched.exact.search", "run"),
    ("twill.sched.exact.pipeline", "run"),
    ("twill.sched.exact.algorithm1", "run"),
]


@pytest.mark.parametrize(("module", "name"), SOLVERS)
@pytest.mark.parametrize("problem", [None, "g.json", 3, [1]])
def test_every_solve_refuses_a_problem_of_the_wrong_type(module, name, problem):
    solve = getattr(importlib.import_module(module), name)
    with pytest.raises(TypeError, match=r"^problem must be a \w+Problem, found"):
        solve(problem, SolverOptions())


@pytest.mark.parametrize("options", ["fast", {"time_limit": 1}, 10, [SolverOptions()]])
def test_options_of_the_wrong_type_are_named(options):
    from twill import solve
    from twill.sched.exact import pipeline

    problem = WarpSpecProblem(flash_attention_forward_simplified())
    with pytest.raises(TypeError, match="^options must be a twill.options.SolverOptions or None"):
        pipeline.solve(problem, options)
    with pytest.raises(TypeError, match="^options must be a SolverOptions or None"):
        solve(problem, options)


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("time_limit", "600", TypeError),
        ("time_limit", math.nan, InvalidProblemError),
        ("time_limit", math.inf, InvalidProblemError),
        ("time_limit", -1, InvalidProblemError),
        ("time_limit", True, TypeError),
        ("threads", 0, InvalidProblemError),
        ("threads", True, TypeError),
        ("threads", 2.0, TypeError),
        ("threads", 10**6, InvalidProblemError),
        ("workers", 0, InvalidProblemError),
        ("workers", "2", TypeError),
        ("seed", 1.5, TypeError),
        ("seed", None, TypeError),
        ("extra", [("a", 1)], TypeError),
        ("extra", "x", TypeError),
        ("on_progress", 1, TypeError),
    ],
)
def test_solver_options_check_every_field(field, value, error):
    with pytest.raises(error, match=f"^{field} must be"):
        SolverOptions(**{field: value})


def test_map_layer_and_map_network_check_their_arguments():
    layer, arch = Layer("b", {"C": 16, "K": 16}), gemmini_arch()
    with pytest.raises(TypeError, match="^problem must be a LayerMappingProblem"):
        map_layer(None)
    with pytest.raises(TypeError, match="^options must map method names"):
        map_network([layer], arch, methods=("random",), options="fast")
    with pytest.raises(TypeError, match=r"^options\['random'\] must be a SolverOptions"):
        map_network([layer], arch, methods=("random",), options={"random": 1})
    for bad, error in ((0, InvalidProblemError), (-2, InvalidProblemError), (1.5, TypeError)):
        with pytest.raises(error, match="^workers must be an integer"):
            map_network([layer], arch, methods=("random",), workers=bad)
    with pytest.raises(TypeError, match="^methods must be a sequence"):
        map_network([layer], arch, methods="random")
    with pytest.raises(TypeError, match=r"^layers\[0\] must be a Layer"):
        map_network(["conv"], arch)
    with pytest.raises(TypeError, match="^arch must be a Arch"):
        map_network([layer], "gemmini")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"config": "1"}, TypeError, "^config must be an integer >= 0"),
        ({"config": -1}, InvalidProblemError, "^config must be an integer >= 0"),
        ({"num_warps": 3}, InvalidProblemError, "^num_warps must be one of 1, 2, 4"),
        ({"num_warps": 0}, InvalidProblemError, "^num_warps must be one of 1, 2, 4"),
        ({"loop": "12"}, TypeError, "^loop must be an integer"),
        ({"signature": ["x"]}, TypeError, "^signature must be a mapping"),
        ({"total_time_limit": "600"}, TypeError, "^total_time_limit must be a finite number"),
        ({"total_time_limit": math.nan}, InvalidProblemError, "^total_time_limit must be"),
    ],
)
def test_triton_compile_summary_checks_its_arguments_first(kwargs, error, match):
    from twill.triton import compile_summary

    with pytest.raises(error, match=match):  # refused before the file is even looked for
        compile_summary("missing.py:k", "sm_90a", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"config": "1"}, TypeError, r"^GauSSolver got unknown option\(s\) 'config'"),
        ({"total_time_limit": "600"}, TypeError, "^total_time_limit must be"),
        ({"total_time_limit": math.nan}, InvalidProblemError, "^total_time_limit must be"),
        ({"verbose": "yes"}, TypeError, "^verbose must be True or False"),
        ({"polish": "no"}, TypeError, "^polish must be True or False"),
        ({"window": -1}, TypeError, "^window must be True or False"),
        ({"device": "tpu"}, InvalidProblemError, "^device must be one of 'cpu', 'cuda'"),
        ({"init": "random"}, InvalidProblemError, "^init must be one of"),
        ({"early_readouts": 5}, TypeError, "^early_readouts must be a tuple"),
        ({"on_progress": "print"}, TypeError, "^on_progress must be a callable"),
        ({"D": 0}, InvalidProblemError, "^D must be an integer"),
        ({"seed": -1}, InvalidProblemError, "^seed must be an integer"),
    ],
)
def test_gaus_entries_check_their_arguments(kwargs, error, match):
    from twill.gaus_solver import GauSSolver, gaus_solve_twill_graph

    g = flash_attention_forward_simplified()
    with pytest.raises(error, match=match):
        GauSSolver(g, **kwargs)
    with pytest.raises(error, match=match):
        gaus_solve_twill_graph(g, **kwargs)
    with pytest.raises(TypeError, match="^graph must be a DependenceGraph, found None"):
        GauSSolver(None)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"verbose": 1}, "^verbose must be True or False"),
        ({"tie_break": "x"}, "^tie_break must be True or False"),
        ({"probe": "yes"}, "^probe must be True or False"),
        ({"max_I": True}, "^max_I must be an integer"),
        ({"threads": 1.5}, "^threads must be an integer"),
        ({"backend": None}, "^backend must be one of 'cbc', 'cpsat'"),
    ],
)
def test_twill_solve_refuses_wrong_types_by_name(kwargs, match):
    from twill.twill_solver import twill_solve

    with pytest.raises(TypeError, match=match):
        twill_solve(flash_attention_forward_simplified(), **kwargs)


def test_twill_settings_of_the_wrong_type_are_a_type_error():
    from twill.sched.exact.settings import TwillSettings

    with pytest.raises(TypeError, match="probe must be True or False"):
        TwillSettings(probe="yes")
    with pytest.raises(TypeError, match="solve_time_limit must be finite seconds"):
        TwillSettings(solve_time_limit="600")
    with pytest.raises(InvalidProblemError, match="solve_time_limit must be finite seconds"):
        TwillSettings(solve_time_limit=math.nan)
