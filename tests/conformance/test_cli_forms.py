"""Issue 40: the CLI way of the conformance suite for the solvers that the other module's
CLI checks leave out.

Each case runs one registered ``solve(problem, options)`` and its command-line form on the
same instance and settings, and compares status, objective and solution. Solvers with no
command of their own are listed in :data:`LIBRARY_ONLY` with the reason; a test keeps the
three lists (here, ``test_conformance``'s, and the library-only one) covering the registry.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conformance.test_conformance import _CLI, _GUARD_S, _MAP_CLI, SOLVERS, _shared, _solved

#: Registered solvers that have no command of their own, and the command that reaches them.
LIBRARY_ONLY = {
    "phase1-cbc": "one I of Phase 1; `twill solve` runs it inside the minimum-I search",
    "phase1-cpsat": "one I of Phase 1; `twill solve` runs it inside the minimum-I search",
    "phase2": "one (I, L) point; `twill solve` runs it inside Algorithm 1",
    "algorithm1": "`twill solve` runs it after the minimum-I search (the 'twill' entry)",
    "pinned": "`twill compile` runs it with the pins that Triton's pipeliner fixes",
    "fadiff": "`twill fuse` runs it after the layer-wise baseline, on a whole network",
}


@pytest.fixture(scope="module")
def _cache() -> dict[str, tuple[Any, Any]]:
    return {}


def _api(name: str, cache: dict[str, tuple[Any, Any]]) -> tuple[Any, Any]:
    entry = next(e for e in SOLVERS if e.name == name)
    problem, native = _solved(entry, cache)
    return problem, _shared(native)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    from twill.cli import main

    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    return out


def test_every_solver_has_a_cli_check_or_a_reason() -> None:
    here = {"search-min-ii", "gumbel", "hybrid", "exhaustive", "cosa-edp"}
    covered = here | set(_CLI) | set(_MAP_CLI) | {"twill"} | set(LIBRARY_ONLY)
    assert covered == {e.name for e in SOLVERS}


def test_solve_no_phase2_is_the_minimum_I_search(
    _cache: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    _, api = _api("search-min-ii", _cache)
    cli = _run(["solve", "flash_attention_forward_hopper", "--no-phase2", "--max-I", "6",
                "--json"], capsys)  # fmt: skip
    assert (cli["status"], cli["objective"], cli["solution"]) == (
        api.status.value,
        api.objective,
        api.solution,
    )


def test_gaus_baseline_gumbel(
    _cache: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from twill.gaus_solver import generate_random_dag
    from twill.io.graph_json import write_graph

    _, api = _api("gumbel", _cache)
    path = tmp_path / "dag.json"
    write_graph(generate_random_dag(14, 0.2, 0, seed=11), path)
    argv = ["--D", "10", "--formulation", "A", "--baseline", "gumbel", "--epochs", "5", "--seed"]
    argv += ["1", "--time-limit", str(_GUARD_S), "--json"]
    cli = _run(["gaus", str(path), *argv], capsys)
    assert (cli["status"], cli["objective"], cli["schedule"]) == (
        api.status.value,
        api.objective,
        api.solution,
    )


def _map_cli(problem: Any, method: str, extra: list[str], tmp_path: Path,
             capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:  # fmt: skip
    """``twill map --json`` of ``problem``'s layer on the shipped Gemmini."""
    from twill.io.timeloop import layer_yaml

    path = tmp_path / "layer.yaml"
    path.write_text(yaml.safe_dump(layer_yaml(problem.layer)), encoding="utf-8")
    argv = ["--arch", "gemmini", "--method", method, "--seed", "1", "--time-limit", str(_GUARD_S)]
    return _run(["map", str(path), *argv, "--json", *extra], capsys)


def _same_mapping(cli: dict[str, Any], api: Any) -> None:
    assert (cli["status"], cli["objective"], cli["mapping"]) == (
        api.status.value,
        api.objective,
        api.solution.to_dict()["mapping"],
    )


def test_map_hybrid(_cache: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    problem, api = _api("hybrid", _cache)
    _same_mapping(_map_cli(problem, "hybrid", ["--n-valid", "64"], tmp_path, capsys), api)


def test_map_exhaustive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The registry's tiny instance uses a 4x4 Gemmini that no shipped YAML describes; the
    same 4x4x4 GEMM on the shipped Gemmini is as small for the enumeration."""
    from twill.mapping.arch import gemmini_arch
    from twill.mapping.problems import LayerMappingProblem
    from twill.mapping.search.exhaustive import solve
    from twill.mapping.workload import Layer
    from twill.options import SolverOptions

    problem = LayerMappingProblem(Layer.gemm(4, 4, 4), gemmini_arch())
    api = solve(problem, SolverOptions(time_limit=_GUARD_S, seed=1))
    _same_mapping(_map_cli(problem, "exhaustive", [], tmp_path, capsys), api)


def test_map_cosa_edp_with_its_default_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The registry runs cosa-edp with 20 random samples for speed; the command has no knob
    for that, so both sides here run the method's defaults (300 samples, about a second)."""
    from twill.mapping.cosa.edp import solve
    from twill.options import SolverOptions

    problem, _ = _api("cosa-edp", {})
    api = solve(problem, SolverOptions(time_limit=_GUARD_S, seed=1))
    _same_mapping(_map_cli(problem, "cosa-edp", [], tmp_path, capsys), api)
