"""Issue 40: ``options.time_limit`` is a deadline for the whole call of every exact scheduler.

Each check gives ``T`` seconds to an instance that needs far more and asserts the call returns
UNKNOWN or FEASIBLE (never INFEASIBLE, never a proof it did not finish) within
``T + 5 % + 1 s``: Phase 1 at one ``I`` (CBC and CP-SAT), the minimum-I search, Phase 2 at
one point, Algorithm 1, the pinned search, the Twill pipeline through the API, and
``twill solve --total-time-limit``. Solver libraries are imported before the clock starts
(their one-time import, 1-2 s on a loaded machine, is the interpreter's start-up, not the
solver's time; ``docs/decisions.md``).

Issue 51: every command's ``--time-limit`` is the whole command's wall time; each command is
timed from outside (process start to exit, imports included) on an input that needs far more.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.deadline import deadline_bound
from twill.options import SolverOptions
from twill.results import SolveResult, Status
from twill.sched.exact.settings import TwillSettings
from twill.sched.problems import ModuloProblem, WarpSpecProblem

T = 3.0
ROOT = Path(__file__).resolve().parents[2]
FA_FWD = ROOT / "src" / "twill" / "data" / "triton" / "fa_fwd.sm_90a.ttgir"
FA_PLAIN = ROOT / "src" / "twill" / "data" / "triton" / "fa_fwd_plain.sm_100a.ttgir"


@pytest.fixture(scope="module", autouse=True)
def _imported() -> None:
    import ortools.sat.python.cp_model  # noqa: F401
    import pulp  # noqa: F401
    import z3  # noqa: F401


@pytest.fixture(scope="module")
def aes2(benchmark_data: Path) -> Any:
    """aes2/graph4 unrolled 3 times: 675 ops, MII 60, the heuristic's I 97. CP-SAT proves
    ``I = 70`` infeasible in 3-4 s (too close to ``T``), but ``I = 93`` only after 52 s of CPU
    (one thread; 100-225 s of wall time at load 4-9), about 13 ``T`` on a machine 1.3 times
    faster; CBC has no answer at ``I = 93`` after 300 s of wall time (load 5-10), and the
    minimum-I search is still FEASIBLE (I 96, bound 60) after 600 s."""
    from twill.io import load_graph
    from twill.sched.generate import unroll

    return unroll(
        load_graph(benchmark_data / "hatschet" / "MachSuite" / "aes2" / "graph4.graphml"), 3
    )


@pytest.fixture(scope="module")
def fa_fwd() -> Any:
    """FlashAttention forward on sm_90a: Phase 1 proves ``(I, L) = (28, 43)``, the Phase-2
    point of the test below."""
    from twill.io import load_graph

    return load_graph(FA_FWD, None, "sm_90a")


@pytest.fixture(scope="module")
def fa_plain() -> Any:
    """FlashAttention forward without sub-tiling on sm_100a: Phase 1 gives I = 20 at once, and
    Algorithm 1 ends (INFEASIBLE at that I, the paper's ablation) only after 186 s of wall time
    at load 4-5; the pinned search is still *unknown* after 600 s (190 s of CPU). (The
    sub-tiled forward finishes its whole search in 3-6 s of CPU, too close to ``T``.)"""
    from twill.io import load_graph

    return load_graph(FA_PLAIN, None, "sm_100a")


def _timed(solve: Callable[[Any, SolverOptions], SolveResult], problem: Any,
           **settings: Any) -> tuple[SolveResult, float]:  # fmt: skip
    t0 = time.monotonic()
    r = solve(problem, SolverOptions(time_limit=T, twill=TwillSettings(**settings)))
    return r, time.monotonic() - t0


@pytest.mark.parametrize("backend", ["cbc", "cpsat"])
def test_phase1_at_one_I(aes2: Any, backend: str) -> None:
    from twill.sched.exact import phase1

    r, seconds = _timed(phase1.solve, ModuloProblem(aes2, min_II=93, max_II=93), backend=backend)
    assert seconds < deadline_bound(T), seconds
    assert r.status in (Status.UNKNOWN, Status.FEASIBLE)


def test_minimum_I_search(aes2: Any) -> None:
    from twill.sched.exact import search

    r, seconds = _timed(search.solve, ModuloProblem(aes2))
    assert seconds < deadline_bound(T), seconds
    assert r.status is Status.FEASIBLE and r.bound is not None and r.bound < r.objective
    assert ModuloProblem(aes2).verify(r.solution, r.objective).ok


def test_phase2_at_one_point(fa_fwd: Any) -> None:
    """Phase 1's answer on this kernel is ``(I, L) = (28, 43)``; the joint point there takes
    1-2 s to solve, so the limit here is 1 s: a schedule found within it, or UNKNOWN."""
    from twill.sched.exact import phase2

    problem = WarpSpecProblem(fa_fwd, min_II=28, max_II=28, L=43)
    t0 = time.monotonic()
    r = phase2.solve(problem, SolverOptions(time_limit=1.0))
    seconds = time.monotonic() - t0
    assert seconds < deadline_bound(1.0), seconds
    assert r.status in (Status.UNKNOWN, Status.FEASIBLE)


@pytest.mark.parametrize("module", ["algorithm1", "pipeline"])
def test_algorithm1_and_the_pipeline(fa_plain: Any, module: str) -> None:
    """The whole search, its own Phase 1 and Phase 2 included, inside one deadline."""
    import importlib

    solve = importlib.import_module(f"twill.sched.exact.{module}").solve
    r, seconds = _timed(solve, WarpSpecProblem(fa_plain), backend="cpsat")
    assert seconds < deadline_bound(T), seconds
    assert r.status in (Status.UNKNOWN, Status.FEASIBLE)
    if r.status is Status.FEASIBLE:
        assert WarpSpecProblem(fa_plain).verify(r.solution).ok


def test_pinned_search(fa_plain: Any) -> None:
    from twill.sched.exact import pinned

    r, seconds = _timed(pinned.solve, pinned.PinnedProblem(fa_plain))
    assert seconds < deadline_bound(T), seconds
    assert r.status in (Status.UNKNOWN, Status.FEASIBLE)


@pytest.mark.parametrize("as_graph", [True, False])
def test_twill_solve_total_time_limit(
    fa_plain: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], as_graph: bool
) -> None:
    """``twill solve --total-time-limit T``: the command, reading the input included, on the
    kernel as a graph file and as its TTGIR (reading a TTGIR normalises its costs with a
    solver first; since issue 49 those solves take the command's deadline too)."""
    from twill.cli import main
    from twill.io.graph_json import write_graph

    path = tmp_path / "fa_plain.json"
    write_graph(fa_plain, path)
    t0 = time.monotonic()
    code = main(["solve", str(path if as_graph else FA_PLAIN), "--backend", "cpsat",
                 "--total-time-limit", str(T), "--json"])  # fmt: skip
    seconds = time.monotonic() - t0
    d = json.loads(capsys.readouterr().out)
    assert seconds < deadline_bound(T), seconds
    assert d["status"] in ("unknown", "feasible") and code in (0, 1)


@pytest.mark.parametrize(("density", "back", "capacity"), [(0.002, 20, None), (0.01, 100, 2)])
def test_twill_solve_a_3000_op_graph_from_outside(
    tmp_path: Path, density: float, back: int, capacity: int | None
) -> None:
    """Issue 49: ``twill solve G --phase2 --total-time-limit 2`` on a 3,000-op graph, timed from
    outside (process start to exit), holds the bound. It took 11.7 s (54 s at load 7): graph
    lookups by name were linear scans (the sequential witness called them a million times),
    the register-aware order was built even when graph order had passed, and the liveness
    check counted every cycle of every live value (a sequential schedule of 3,000 cycles). The
    denser graph (45,000 edges, units of capacity 2, four warps) then spent 10 s in the reduced
    model's stage bounds at one I, which did not consult the deadline, and 5 s in the blocking
    check's pairwise scan."""
    import os
    import subprocess
    import sys
    from dataclasses import replace

    from twill.gaus_solver import generate_random_dag
    from twill.io.graph_json import write_graph

    path = tmp_path / "g3000.json"
    g = generate_random_dag(3000, density, num_back_edges=back, seed=1)
    if capacity is not None:
        units = {k: capacity for k in g.machine.functional_units}
        g = replace(g, machine=replace(g.machine, functional_units=units, warps=4))
    write_graph(g, path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    argv = [sys.executable, "-m", "twill", "solve", str(path), "--phase2", "--total-time-limit",
            "2", "--json"]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    seconds = time.monotonic() - t0
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["status"] in ("unknown", "feasible")
    assert seconds < deadline_bound(2.0), seconds


@pytest.mark.parametrize("name", ["adpcm/graph1", "aes/graph4"])
def test_twill_solve_a_chstone_loop_from_outside(chstone: Path, name: str) -> None:
    """Issue 50: ``twill solve LOOP --no-phase2 --total-time-limit T`` on the large CHStone
    loops (777 and 1,374 ops: the heuristics, the probes, CBC's search and the model builds),
    timed from outside, holds the bound; adpcm's I stays open at this limit."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    argv = [sys.executable, "-m", "twill", "solve", str(chstone / f"{name}.graphml"),
            "--no-phase2", "--total-time-limit", "10", "--json"]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    seconds = time.monotonic() - t0
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    d = json.loads(done.stdout)
    assert d["status"] in ("optimal", "feasible") and d["lower_bound"] <= d["I"]
    assert seconds < deadline_bound(10.0), seconds


def _from_outside(argv: list[str], limit: float, codes: tuple[int, ...] = (0, 1)) -> str:
    """Run ``twill ARGV --time-limit LIMIT`` as a user does (a new process), check it exits
    with one of ``codes`` and without a traceback within the bound; its stdout."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "twill", *argv, "--time-limit", str(limit)]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    seconds = time.monotonic() - t0
    assert done.returncode in codes and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert seconds < deadline_bound(limit), seconds
    return done.stdout


def test_twill_gaus_from_outside(tmp_path: Path) -> None:
    """``twill gaus`` on a 3,000-op graph with a step budget it never reaches: the best legal
    schedule at the limit (torch's import inside it)."""
    from twill.gaus_solver import generate_random_dag
    from twill.io.graph_json import write_graph

    path = tmp_path / "g3000.json"
    write_graph(generate_random_dag(3000, 0.002, 0, seed=1), path)
    out = _from_outside(["gaus", str(path), "--max-iters", "10000000", "--json"], 5.0, (0,))
    assert "deadline reached" in json.loads(out)["message"]


def test_twill_map_network_from_outside() -> None:
    """``twill map-network`` on ResNet-50's 24 layer shapes (CoSA-EDP, two workers): the
    layers not mapped by the limit are reported without a mapping (exit 1)."""
    out = _from_outside(["map-network", "dosa_resnet50", "--arch", "gemmini", "--workers", "2",
                         "--json"], 5.0)  # fmt: skip
    assert len(json.loads(out)["layers"]) == 24


@pytest.mark.parametrize("command", ["map-network", "fuse"])
def test_a_zoo_model_export_is_cut_by_the_limit(command: str) -> None:
    """``--model resnet50`` at 3 s: PyTorch's import, the model's construction and its export
    to ONNX take 4-25 s (idle to load 5) and cannot be cut, so the command stops waiting for
    them at the limit: no layer to map, said on stderr, exit 1 (it took 26.8 s at load 5
    with ``--time-limit 20`` before the export was awaited only until the deadline)."""
    import importlib.util
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("torch") is None:  # not imported here: 2-5 s of this test
        pytest.skip("needs torch")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    argv = [sys.executable, "-m", "twill", command, "--model", "resnet50", "--arch", "gemmini",
            "--json", "--time-limit", "3"]  # fmt: skip
    t0 = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    seconds = time.monotonic() - t0
    assert seconds < deadline_bound(3.0), seconds
    if done.returncode == 0:  # an idle, fast machine exported it in time: a whole answer
        assert json.loads(done.stdout)
    else:
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
        assert "time limit passed while building and exporting resnet50" in done.stderr


@pytest.mark.slow
def test_twill_fuse_from_outside() -> None:
    """``twill fuse`` on ResNet-50 (mapping the layer shapes alone takes longer than the
    limit): the best verified plan by the limit, never worse than the layer-wise one."""
    out = json.loads(_from_outside(["fuse", "dosa_resnet50", "--arch", "gemmini", "--workers",
                                    "2", "--json"], 10.0, (0,)))  # fmt: skip
    assert out["stopped"] == "time_limit" and out["gain_vs_layerwise"] >= 1.0


@pytest.mark.slow
def test_twill_compile_from_outside(tmp_path: Path) -> None:
    """``twill compile`` of the plain FlashAttention forward on sm_100a (Algorithm 1 needs
    minutes): Triton's import, the search and the final compile inside the limit."""
    pytest.importorskip("triton")
    kernels = ROOT / "src" / "twill" / "data" / "triton" / "kernels.py"
    _from_outside(["compile", f"{kernels}:fa_fwd", "--arch", "sm_100a", "--constexpr",
                   "SUBTILES=1", "-o", str(tmp_path / "out"), "--json"], 10.0)  # fmt: skip
