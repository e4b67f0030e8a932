"""One conformance suite for every solver, mapper and baseline of both families.

Every entry of :data:`SOLVERS` runs through the same checks:

* result shape: the native result converts to :class:`twill.results.SolveResult`
  (``as_result()``), and a solution is present exactly when the status says so;
* status semantics: a tiny time limit gives UNKNOWN or a solution, never INFEASIBLE;
* the independent verifier accepts the solution;
* determinism: the same seed and inputs give the same status, solution and objective;
* ``to_dict()`` of both the native and the shared result goes through ``json.dumps``;
* the input is not modified;
* every entry point is ``solve(problem, options=None) -> SolveResult`` (``Entry.entry``;
  issue 40): that signature (read with ast), every module-level ``solve`` of ``twill.sched``
  and ``twill.mapping`` registered here, typed and picklable ``ProgressEvent``s, the same
  result and events in a spawned process with the options and callback pickled across, and
  the same result from the command line (``twill gaus --json``, ``twill map --json``,
  ``twill solve --json``; Phase 1, Phase 2 at a point, the minimum-I search, Algorithm 1
  and the pinned search have no command of their own: ``twill solve`` runs them inside the
  pipeline).

Adding a solver (or a mapper) is one :class:`Entry` in :data:`SOLVERS`: how to build its small
instance, how to run it under :class:`~twill.options.SolverOptions`, and how to verify a
solution with the problem's own verifier.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

from twill.options import SolverOptions
from twill.results import SolveResult, Status, Violation, WarpSchedule

_STATUSES = set(Status)


@dataclass(frozen=True)
class Entry:
    """One solver under test.

    Attributes
    ----------
    name
        Test id.
    instance
        Builds the (small) input; called once per check.
    run
        ``run(instance, options)``: the solver's native result (with ``as_result()`` and
        ``to_dict()``).
    verify
        ``verify(instance, result)``: the independent verifier's violations of
        ``result.solution`` (a :class:`SolveResult`).
    time_limited
        The solver honours ``options.time_limit`` (the tiny-limit check runs).
    known_gaps
        Checks this solver is known to fail today (run as strict xfail, so a fix shows up and
        the entry must then be removed), each with its reason.
    entry
        ``"module:function"`` of the solver's ``solve(problem, options=None) -> SolveResult``
        entry point (issue 40; empty for the solvers not moved to it yet). ``run`` calls it,
        and :func:`test_entry_points_take_problem_and_options` checks its signature.
    """

    name: str
    instance: Callable[[], Any]
    run: Callable[[Any, SolverOptions], Any]
    verify: Callable[[Any, SolveResult], list[Violation]]
    time_limited: bool = True
    known_gaps: tuple[tuple[str, str], ...] = ()
    entry: str = ""


# -- instances ------------------------------------------------------------------------------


def _simplified() -> Any:
    from twill.kernels import flash_attention_forward_simplified

    return flash_attention_forward_simplified()


def _hopper() -> Any:
    from twill.kernels import flash_attention_forward_hopper

    return flash_attention_forward_hopper()


def _small_dag() -> Any:
    from twill.gaus_solver import generate_random_dag

    return generate_random_dag(14, 0.2, 0, seed=11)


# -- the exact scheduling family: problems, verifiers and options ---------------------------


def _exact_problem(kernel: str, kind: str, **fields: Any) -> Callable[[], Any]:
    """A :class:`ModuloProblem` or :class:`WarpSpecProblem` (``kind``) of a shipped kernel."""

    def instance() -> Any:
        from twill.sched import problems

        graph = _hopper() if kernel == "hopper" else _simplified()
        return getattr(problems, kind)(graph, **fields)

    return instance


def _verify_exact(problem: Any, r: SolveResult) -> list[Violation]:
    """The problem's own verifier on any exact answer: a WarpSchedule, a Phase-2 point's
    ``{"schedule", "assignment"}`` at its fixed ``(I, L)``, or a modulo schedule at ``I``."""
    s = r.solution
    if isinstance(s, dict) and "assignment" in s:
        s = WarpSchedule.of(problem.graph, s["schedule"], s["assignment"], r.settings["I"],
                            r.settings["L"])  # fmt: skip
    if isinstance(s, WarpSchedule):
        return list(problem.verify(s).violations)
    return list(problem.verify(s, r.settings.get("II", r.objective)).violations)


def _exact_solver(path: str, **settings: Any) -> Callable[[Any, SolverOptions], Any]:
    """``solve(problem, options)`` at ``path`` with these :class:`TwillSettings`."""

    def run(problem: Any, o: SolverOptions) -> Any:
        from twill.sched.exact.settings import TwillSettings

        return _entry(path)(problem, replace(o, twill=TwillSettings(**settings)))

    return run


def _exact(name: str, path: str, instance: Callable[[], Any], **settings: Any) -> Entry:
    """The conformance entry of an exact ``solve(problem, options)``."""
    return Entry(name, instance, _exact_solver(path, **settings), _verify_exact, entry=path)


# -- runners: each solver's own call under the shared options --------------------------------


def _gaus_problem(formulation: str) -> Callable[[], Any]:
    """The GauS problem of one formulation on its small instance (C: the Hopper kernel)."""

    def instance() -> Any:
        from twill.sched.gaus.problem import GauSProblem

        if formulation == "C":
            return GauSProblem(_hopper(), "C", D=20, II=4)
        return GauSProblem(_small_dag(), formulation, D=10)

    return instance


def _method(path: str) -> str:
    """The registry's name of the solver defined at ``path`` (``"module:solve"``)."""
    from twill.registry import solvers

    module = path.split(":")[0]
    names = [s.name for s in solvers() if s.module == module]
    assert len(names) == 1, (path, names)
    return names[0]


def _entry(path: str) -> Callable[..., Any]:
    """The solver at ``path``, called as users call it: ``twill.solve`` with its method
    name, through the registry."""
    import twill

    method = _method(path)

    def run(problem: Any, options: SolverOptions | None = None) -> Any:
        return twill.solve(problem, replace(options or SolverOptions(), method=method))

    return run


def _problem_solver(path: str) -> Callable[[Any, SolverOptions], Any]:
    """``solve(problem, options)`` at ``path``, with GauS's and the Gumbel baseline's
    settings shrunk to the small instances."""

    def run(problem: Any, o: SolverOptions) -> Any:
        from twill.sched.baselines.categorical import GumbelSettings
        from twill.sched.gaus.solver import default_settings

        gaus = default_settings(problem.formulation, max_iters=150)
        return _entry(path)(problem, replace(o, gaus=gaus, gumbel=GumbelSettings(epochs=5)))

    return run


def _verify_problem(problem: Any, r: SolveResult) -> list[Violation]:
    return list(problem.verify(r.solution).violations)


def _scheduling(name: str, path: str, formulation: str = "A", **kw: Any) -> Entry:
    """The conformance entry of a GauS-family ``solve(problem, options)``."""
    return Entry(name, _gaus_problem(formulation), _problem_solver(path), _verify_problem,
                 entry=path, **kw)  # fmt: skip


# -- the mapping family ---------------------------------------------------------------------


def _tiny_layer_and_arch() -> Any:
    from twill.mapping.arch import gemmini_arch
    from twill.mapping.workload import Layer

    return Layer.gemm(4, 4, 4), gemmini_arch(4, 1, 1)


def _layer_and_arch() -> Any:
    from twill.mapping.arch import gemmini_arch
    from twill.mapping.workload import Layer

    return Layer("fc", {"P": 8, "C": 32, "K": 32}), gemmini_arch()


def _two_layer_net() -> Any:
    from twill.mapping.arch import gemmini_arch
    from twill.mapping.network import chain_network
    from twill.mapping.problems import NetworkMappingProblem
    from twill.mapping.workload import Layer

    a = Layer("a", {"P": 8, "Q": 8, "C": 16, "K": 16})
    b = Layer("b", {"R": 3, "S": 3, "P": 8, "Q": 8, "C": 16, "K": 16})
    return NetworkMappingProblem(chain_network([a, b]), gemmini_arch())


def _layer_problem(tiny: bool = False) -> Callable[[], Any]:
    def instance() -> Any:
        from twill.mapping.problems import LayerMappingProblem

        return LayerMappingProblem(*(_tiny_layer_and_arch() if tiny else _layer_and_arch()))

    return instance


def _mapping_solver(path: str, **small: Any) -> Callable[[Any, SolverOptions], Any]:
    """``solve(problem, options)`` at ``path`` with the method's settings shrunk to the small
    instances (``small``: fields of ``options.cosa`` for the CoSA family, of
    ``options.search`` for the searches)."""

    def run(problem: Any, o: SolverOptions) -> Any:
        from twill.mapping.cosa.solve import CoSASettings
        from twill.mapping.search.common import SearchSettings

        if ".cosa." in path:
            o = replace(o, cosa=CoSASettings(**small))
        else:
            o = replace(o, search=SearchSettings(**small))
        return _entry(path)(problem, o)

    return run


def _mapping(name: str, path: str, tiny: bool = False, **small: Any) -> Entry:
    """The conformance entry of a layer mapper's ``solve(problem, options)``."""
    return Entry(name, _layer_problem(tiny), _mapping_solver(path, **small), _verify_problem,
                 entry=path)  # fmt: skip


def _fadiff(problem: Any, o: SolverOptions) -> Any:
    from twill.mapping.fadiff.train import FADiffSettings, solve

    return solve(problem, replace(o, fadiff=FADiffSettings(steps=20, eval_every=10)))


def _pinned() -> Any:
    """The simplified kernel with O pinned a stage after S and P, on its own warp."""
    from twill.sched.exact.pinned import PinnedProblem, Pins

    return PinnedProblem(_simplified(), pins=Pins({"S": 0, "P": 0, "O": 1}, (), {"O": (1,)}))


_HOPPER_AT_4 = _exact_problem("hopper", "ModuloProblem", min_II=4, max_II=4)

SOLVERS: list[Entry] = [
    _exact("phase1-cbc", "twill.sched.exact.phase1:solve", _HOPPER_AT_4, backend="cbc"),
    _exact("phase1-cpsat", "twill.sched.exact.phase1:solve", _HOPPER_AT_4, backend="cpsat"),
    _exact(
        "search-min-ii",
        "twill.sched.exact.search:solve",
        _exact_problem("hopper", "ModuloProblem", max_II=6),
    ),
    _exact(
        "twill",
        "twill.sched.exact.pipeline:solve",
        _exact_problem("simplified", "WarpSpecProblem", max_II=5),
    ),
    _exact(
        "algorithm1",
        "twill.sched.exact.algorithm1:solve",
        _exact_problem("simplified", "WarpSpecProblem", max_II=5),
    ),
    _exact(
        "phase2",
        "twill.sched.exact.phase2:solve",
        _exact_problem("simplified", "WarpSpecProblem", min_II=2, max_II=2, L=4),
    ),
    _exact("pinned", "twill.sched.exact.pinned:solve", _pinned),
    _scheduling("gaus-A", "twill.sched.gaus.solver:solve", "A"),
    _scheduling("gaus-B", "twill.sched.gaus.solver:solve", "B"),
    _scheduling("gaus-C", "twill.sched.gaus.solver:solve", "C"),
    _scheduling("list", "twill.sched.baselines.list_sched:solve", time_limited=False),
    _scheduling("force-directed", "twill.sched.baselines.force_directed:solve", time_limited=False),
    _scheduling("gumbel", "twill.sched.baselines.categorical:solve"),
    _scheduling("exact-cpsat", "twill.sched.baselines.exact:solve"),
    _mapping("cosa", "twill.mapping.cosa.solve:solve"),
    _mapping("cosa-rerank", "twill.mapping.cosa.rerank:solve"),
    _mapping("cosa-edp", "twill.mapping.cosa.edp:solve", n_random=20),
    _mapping("random", "twill.mapping.search.random:solve", n_valid=20),
    _mapping("exhaustive", "twill.mapping.search.exhaustive:solve", tiny=True),
    _mapping("hybrid", "twill.mapping.search.hybrid:solve", n_valid=64),
    Entry(
        "fadiff", _two_layer_net, _fadiff, _verify_problem, entry="twill.mapping.fadiff.train:solve"
    ),  # fmt: skip
]


def _params(check: str, entries: list[Entry] = SOLVERS) -> list[Any]:
    """``entries`` as pytest parameters, with the known gaps of ``check`` as strict xfail."""
    out = []
    for e in entries:
        why = dict(e.known_gaps).get(check)
        marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
        out.append(pytest.param(e, id=e.name, marks=marks))
    return out


#: A guard, never reached: every entry ends on its own budget (iterations, steps, samples or
#: its proof) within 0.1-1.5 s here, 6 s with torch's first import. A limit that can be
#: reached makes the same-seed checks depend on speed: FADiff's gradient loop ends at 40 % of
#: it, and with 30 s that was 12 s, which a spawned process importing torch at load 20 needs.
_GUARD_S = 300
_OPTIONS = SolverOptions(time_limit=_GUARD_S, seed=1)


@pytest.fixture(scope="module")
def _cache() -> dict[str, tuple[Any, Any]]:
    return {}


def _solved(entry: Entry, cache: dict[str, tuple[Any, Any]]) -> tuple[Any, Any]:
    """(instance, native result) of one default run, shared by the checks of one entry."""
    if entry.name not in cache:
        instance = entry.instance()
        cache[entry.name] = (instance, entry.run(instance, _OPTIONS))
    return cache[entry.name]


def _shared(native: Any) -> SolveResult:
    """The shared result: what a ``solve(problem, options)`` entry returns, or the
    ``as_result()`` of a solver not moved to it yet."""
    return native if isinstance(native, SolveResult) else native.as_result()


_ENTRY_POINTS = [e for e in SOLVERS if e.entry]


@pytest.mark.parametrize("entry", _ENTRY_POINTS, ids=[e.name for e in _ENTRY_POINTS])
def test_entry_points_take_problem_and_options(entry: Entry) -> None:
    """Issue 40: every registered entry point is ``solve(problem, options=None) ->
    SolveResult`` (read from its source with ast, so a wrapper cannot hide the signature)."""
    module, name = entry.entry.split(":")
    tree = ast.parse(inspect.getsource(importlib.import_module(module)))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    a = fn.args
    assert [p.arg for p in a.posonlyargs + a.args] == ["problem", "options"], entry.entry
    assert not (a.vararg or a.kwarg or a.kwonlyargs), entry.entry
    assert len(a.defaults) == 1 and ast.literal_eval(a.defaults[0]) is None, entry.entry
    assert fn.returns is not None and ast.unparse(fn.returns) == "SolveResult", entry.entry


def test_every_registered_solver_is_under_test() -> None:
    """Issue 51: the solver list is the package's registry (:func:`twill.registry.solvers`),
    and every registered solver has an entry here, so it runs every check of this suite; a
    solver registered without one fails here."""
    from twill.registry import solvers

    registered = {s.name for s in solvers() if s.module.startswith("twill.")}
    assert len(registered) >= 18
    assert {_method(e.entry) for e in SOLVERS} == registered


def test_every_solve_in_sched_and_mapping_is_registered() -> None:
    """Issue 40: a module-level ``solve`` anywhere in ``twill.sched`` or ``twill.mapping`` is
    a solver entry point, so it must be registered and in :data:`SOLVERS` (and so runs every
    check here, the signature test above included); a new solver cannot escape the
    registry."""
    from pathlib import Path

    import twill

    src = Path(twill.__file__).parent
    found = set()
    for family in ("sched", "mapping"):
        for path in sorted((src / family).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(isinstance(n, ast.FunctionDef) and n.name == "solve" for n in tree.body):
                module = ".".join(path.relative_to(src.parent).with_suffix("").parts)
                found.add(f"{module}:solve")
    assert len(found) >= 18
    assert found <= {e.entry for e in SOLVERS}, sorted(found - {e.entry for e in SOLVERS})


@pytest.mark.parametrize("entry", _params("shape"))
def test_result_shape(entry: Entry, _cache: dict) -> None:
    _, native = _solved(entry, _cache)
    r = _shared(native)
    assert isinstance(r, SolveResult) and r.status in _STATUSES
    assert (r.solution is not None) == r.status.has_solution, (r.status, r.solution)
    assert r.status.has_solution, f"{entry.name} found nothing on its small instance"
    assert isinstance(r.objective_unit, str) and r.objective_unit
    assert r.timings.total >= 0


@pytest.mark.parametrize("entry", _params("verify"))
def test_solution_verifies(entry: Entry, _cache: dict) -> None:
    instance, native = _solved(entry, _cache)
    r = _shared(native)
    assert entry.verify(instance, r) == []


@pytest.mark.parametrize("entry", _params("to_dict"))
def test_to_dict_round_trips(entry: Entry, _cache: dict) -> None:
    _, native = _solved(entry, _cache)
    native_json = json.loads(json.dumps(native.to_dict()))
    assert native_json["status"] == native.status.value
    shared = json.loads(json.dumps(_shared(native).to_dict()))
    fields = {"status", "solution", "objective", "objective_unit", "bound", "certificate",
              "timings", "stats", "settings", "seed"}  # fmt: skip
    assert fields <= set(shared)


@pytest.mark.parametrize("entry", _params("seed"))
def test_seed_reproduces(entry: Entry, _cache: dict) -> None:
    instance, native = _solved(entry, _cache)
    again = _shared(entry.run(entry.instance(), _OPTIONS))
    first = _shared(native)
    assert (again.status, again.objective) == (first.status, first.objective)
    assert again.to_dict()["solution"] == first.to_dict()["solution"]


@pytest.mark.parametrize("entry", _params("input"))
def test_input_untouched(entry: Entry) -> None:
    instance = entry.instance()
    before = copy.deepcopy(instance)
    entry.run(instance, _OPTIONS)
    assert _same(instance, before)


def _same(a: Any, b: Any) -> bool:
    if hasattr(a, "__dict__") or hasattr(a, "__dataclass_fields__"):
        return all(_same(getattr(a, k), getattr(b, k)) for k in vars(a))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("entry", _params("time_limit", [e for e in SOLVERS if e.time_limited]))
def test_tiny_time_limit_is_never_infeasible(entry: Entry) -> None:
    r = _shared(entry.run(entry.instance(), SolverOptions(time_limit=1e-3, seed=1)))
    assert r.status is not Status.INFEASIBLE
    assert r.status in (Status.UNKNOWN, Status.FEASIBLE, Status.OPTIMAL)
    if r.status.has_solution:
        assert entry.verify(entry.instance(), r) == []


_METHODS = {"gaus", "list", "force", "gumbel", "exact", "cosa", "cosa-rerank", "cosa-edp",
            "random", "hybrid", "exhaustive", "fadiff", "layerwise-gradient", "twill"}  # fmt: skip


@pytest.mark.parametrize("entry", _ENTRY_POINTS, ids=[e.name for e in _ENTRY_POINTS])
def test_progress_events_are_typed_and_picklable(entry: Entry) -> None:
    """Issue 40: every registered solver reports through the one ``ProgressEvent``, ending
    with its ``"done"`` event or its step counter, and every event survives pickling."""
    import pickle

    from twill.progress import ProgressEvent

    events: list[Any] = []
    r = _shared(entry.run(entry.instance(), replace(_OPTIONS, on_progress=events.append)))
    assert events and all(isinstance(e, ProgressEvent) for e in events)
    assert {e.method for e in events} <= _METHODS
    assert all(pickle.loads(pickle.dumps(e)) == e for e in events)
    last = events[-1]
    if last.phase == "done":
        assert last.incumbent == r.objective and last.message == r.status.value
    assert [e.seconds for e in events] == sorted(e.seconds for e in events)


# -- three ways: the API, the command line and a spawned process ------------------------------


class _Collect:
    """A picklable progress callback that keeps the events it receives."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)


def _solve_in_this_process(names: list[str], options: SolverOptions) -> dict[str, Any]:
    """``name -> (result dict, events)`` of each entry, under ``options`` (whose callback
    came pickled when this runs in a spawned process)."""
    out = {}
    for name in names:
        entry = next(e for e in SOLVERS if e.name == name)
        collect = options.on_progress
        collect.events = []
        r = _shared(entry.run(entry.instance(), options))
        out[name] = (r.to_dict(), list(collect.events))
    return out


def _same_run(a: tuple[dict, list], b: tuple[dict, list]) -> None:
    """Same status, objective, solution and the same events (their clocks aside)."""
    (ra, ea), (rb, eb) = a, b
    assert (ra["status"], ra["objective"], ra["solution"]) == (
        rb["status"],
        rb["objective"],
        rb["solution"],
    )
    assert [replace(e, seconds=0.0) for e in ea] == [replace(e, seconds=0.0) for e in eb]


def test_api_and_a_spawned_process_see_the_same_runs_and_events() -> None:
    """Issue 40: every registered ``solve(problem, options)`` gives the same result and the
    same progress events in this process and in a spawned one, with the options (callback
    included) pickled across."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    names = [e.name for e in _ENTRY_POINTS]
    options = replace(_OPTIONS, on_progress=_Collect())
    here = _solve_in_this_process(names, options)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        there = pool.submit(_solve_in_this_process, names, options).result(timeout=300)
    for name in names:
        assert here[name][1], f"{name} sent no progress event"
        _same_run(here[name], there[name])


_CLI = {  # entry -> (formulation, --baseline or None); the Gumbel CLI has no --epochs
    "gaus-A": ("A", None),
    "gaus-B": ("B", None),
    "gaus-C": ("C", None),
    "list": ("A", "list"),
    "force-directed": ("A", "force"),
    "exact-cpsat": ("A", "exact"),
}


@pytest.mark.parametrize("name", sorted(_CLI))
def test_cli_gives_the_api_result(name: str, _cache: dict, tmp_path: Any, capsys: Any) -> None:
    """Issue 40: ``twill gaus --json`` on the same instance and settings gives the API's
    status, objective and schedule."""
    from twill.cli import main
    from twill.gaus_solver import generate_random_dag
    from twill.io.graph_json import write_graph

    formulation, baseline = _CLI[name]
    entry = next(e for e in SOLVERS if e.name == name)
    _, native = _solved(entry, _cache)
    api = _shared(native)
    if formulation == "C":
        argv = ["flash_attention_forward_hopper", "--D", "20", "--II", "4"]
    else:
        path = tmp_path / "dag.json"
        write_graph(generate_random_dag(14, 0.2, 0, seed=11), path)
        argv = [str(path), "--D", "10"]
    argv += ["--formulation", formulation, "--seed", "1", "--max-iters", "150", "--json"]
    argv += ["--time-limit", str(_GUARD_S)] + (["--baseline", baseline] if baseline else [])
    code = main(["gaus", *argv])
    cli = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (cli["status"], cli["objective"], cli["schedule"]) == (
        api.status.value,
        api.objective,
        api.solution,
    )


_MAP_CLI = {"cosa": [], "cosa-rerank": [], "random": ["--n-valid", "20"]}


@pytest.mark.parametrize("name", sorted(_MAP_CLI))
def test_map_cli_gives_the_api_result(name: str, _cache: dict, tmp_path: Any, capsys: Any) -> None:
    """Issue 40: ``twill map --json`` on the same layer, architecture and options gives the
    API's status, objective and mapping."""
    import yaml

    from twill.cli import main
    from twill.io.timeloop import layer_yaml

    entry = next(e for e in SOLVERS if e.name == name)
    problem, native = _solved(entry, _cache)
    api = _shared(native)
    path = tmp_path / "fc.yaml"
    path.write_text(yaml.safe_dump(layer_yaml(problem.layer)), encoding="utf-8")
    argv = [str(path), "--arch", "gemmini", "--method", name, "--seed", "1", "--json"]
    code = main(["map", *argv, "--time-limit", str(_GUARD_S), *_MAP_CLI[name]])
    cli = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (cli["status"], cli["objective"], cli["mapping"]) == (
        api.status.value,
        api.objective,
        api.solution.to_dict()["mapping"],
    )


def test_twill_solve_cli_gives_the_pipeline_result(_cache: dict, capsys: Any) -> None:
    """Issue 40: ``twill solve --json`` on the registry's Twill instance gives the API's
    status, objective and solution, under every solver's top-level keys."""
    from twill.cli import main

    entry = next(e for e in SOLVERS if e.name == "twill")
    _, native = _solved(entry, _cache)
    api = _shared(native).to_dict()
    code = main(["solve", "flash_attention_forward_simplified", "--max-I", "5", "--json"])
    cli = json.loads(capsys.readouterr().out)
    assert code == 0
    assert set(api) <= set(cli)
    assert (cli["status"], cli["objective"], cli["solution"]) == (
        api["status"],
        api["objective"],
        api["solution"],
    )
