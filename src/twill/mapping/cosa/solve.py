"""The CoSA front function: check → build → solve → decode → verify → evaluate.

:func:`solve` maps the layer of a :class:`~twill.mapping.problems.LayerMappingProblem` with
CoSA's MIP under :class:`~twill.options.SolverOptions` (CoSA's knobs in ``options.cosa``, a
:class:`CoSASettings`)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from twill.mapping.arch import Arch
from twill.mapping.cosa.decode import decode_solution, repair_capacity
from twill.mapping.cosa.mip import CosaIndex, CosaModelOptions, CosaWeights, build_cosa_model
from twill.mapping.cosa.model import LinearModel, Solution, solve_model
from twill.mapping.cost.analytical import evaluate
from twill.mapping.problems import LayerMappingProblem
from twill.mapping.result import (
    COSA_OBJECTIVE,
    Controls,
    MappedLayer,
    finished,
    method_settings,
)
from twill.mapping.workload import Layer
from twill.options import MethodSettings, SolverOptions
from twill.registry import register_solver
from twill.results import SolveResult, Status, Timings
from twill.validation import check_instance, check_int, check_real

__all__ = ["CoSASettings", "configure", "incumbent_events", "run", "solve", "start"]

log = logging.getLogger(__name__)

#: The shortest MIP limit given (s): past the deadline the backend still returns at once.
_MIN_SOLVE_S = 0.01


@dataclass(frozen=True)
class CoSASettings(CosaModelOptions, MethodSettings, slot="cosa"):
    """The settings of one CoSA run, ``options.cosa`` (defaults listed here once): the model
    (the fields of :class:`~twill.mapping.cosa.mip.CosaModelOptions`) and how it is solved.

    Attributes
    ----------
    backend
        ``"cpsat"`` (OR-Tools CP-SAT, objective coefficients scaled to integers; default),
        ``"scip"`` (SCIP via PySCIPOpt in a child process, floating point), ``"highs"``
        (HiGHS via highspy in a child process, when installed) or ``"cbc"`` (CBC through
        PuLP; weak on the 56×56 layers).
    time_limit, threads, seed
        Solver limits; on a timeout the best feasible solution is returned (FEASIBLE).
        :func:`solve` takes ``threads`` and ``seed`` from the options, and ``time_limit``
        too when the options set one (then it bounds the whole call).
    weights, halo, symmetry, reduce_units, gb_order, no_bypass_refetch, register_reuse
        The model (:class:`~twill.mapping.cosa.mip.CosaModelOptions`): CoSA's by default;
        ``no_bypass_refetch`` and ``register_reuse`` restrict it (not CoSA's model; OPTIMAL
        then means optimal for the restricted MIP).
    extra
        Backend-specific settings passed through untouched.
    metric, polish
        ``cosa-rerank`` only: how its candidates are ranked (``lex``: cycles, then energy;
        ``cycles``, ``energy``, ``edp``) and whether each candidate's loop orders are polished.
    n_random, generations
        ``cosa-edp`` only: valid random starts of its evolutionary search beside CoSA's
        mapping, and the search's generations (:mod:`twill.mapping.search.evolve`).
    """

    backend: str = "cpsat"
    time_limit: float = 60.0
    threads: int = 1
    seed: int = 0
    extra: dict[str, Any] | None = None
    metric: str = "lex"
    polish: bool = True
    n_random: int = 300
    generations: int = 30

    def model_options(self) -> CosaModelOptions:
        """The model these settings build (:func:`~twill.mapping.cosa.mip.build_cosa_model`)."""
        return CosaModelOptions(**self.model_fields())

    def model_fields(self) -> dict[str, Any]:
        """The fields of :meth:`model_options`, by name."""
        keys = ("halo", "symmetry", "reduce_units", "gb_order", "no_bypass_refetch")
        keys += ("register_reuse", "weights")
        return {k: getattr(self, k) for k in keys}

    def to_dict(self) -> dict[str, Any]:
        """The ``settings`` recorded in the result (seed and ``extra`` travel separately)."""
        out = {"backend": self.backend, "time_limit": self.time_limit, "threads": self.threads}
        out.update(self.model_fields())
        out["weights"] = list((self.weights or CosaWeights()).__dict__.values())
        return out


@register_solver("cosa", problems=(LayerMappingProblem,), settings=CoSASettings, default=True)
def solve(problem: LayerMappingProblem, options: SolverOptions | None = None) -> SolveResult:
    """Map the problem's layer with CoSA's MIP.

    Parameters
    ----------
    problem
        The layer and the accelerator.
    options
        ``time_limit`` bounds the call (the MIP gets what is left after building it; on a
        timeout the best feasible mapping is returned, FEASIBLE); ``threads`` and ``seed``
        go to the MIP solver, ``extra`` to the backend; ``cosa`` holds a
        :class:`CoSASettings` (backend, weights, model variants; its ``time_limit`` applies
        when the options set none); ``on_progress`` receives a
        :class:`~twill.progress.ProgressEvent` per incumbent (CP-SAT) and a last ``"done"``.

    Returns
    -------
    SolveResult
        The solution is a :class:`~twill.mapping.result.MappedLayer`; ``objective`` is the
        MIP objective of the decoded solution, ``bound`` the proven bound. OPTIMAL means
        optimal for CoSA's objective (not the cost model's), with a proof from the backend.

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> p = LayerMappingProblem(Layer("fc", {"C": 64, "K": 32}), simba_arch())
    >>> r = solve(p, SolverOptions(time_limit=20))
    >>> r.status.value, p.verify(r.solution).ok
    ('optimal', True)
    """
    check_instance(problem, "problem", LayerMappingProblem)
    controls, cfg = start(problem, options, "cosa")
    res = run(problem.layer, problem.arch, cfg, incumbent_events(controls), controls.stop)
    return finished(controls, res)


def start(
    problem: LayerMappingProblem, options: SolverOptions | None, method: str
) -> tuple[Controls, CoSASettings]:
    """The first steps of every CoSA-family call: the controls (the clock starts here),
    ``problem.check()`` and the settings of ``options.cosa`` with the options' seed,
    threads, time limit (when set) and extras."""
    options = SolverOptions.of(options)
    controls = Controls.of(options, method)
    problem.check()
    return controls, configure(method_settings(options, "cosa", CoSASettings), options, {})


def run(
    layer: Layer,
    arch: Arch,
    cfg: CoSASettings,
    on_incumbent: Callable[[float, float, float], None] | None = None,
    stop: float = math.inf,
) -> SolveResult:
    """Build, solve, decode, repair, verify and evaluate one CoSA MIP (inputs checked); the
    MIP's limit is ``cfg.time_limit``, cut to what is left before ``stop`` (a
    ``perf_counter`` value) once the model is built.

    Objective: CoSA's weighted log-domain proxy (compute, utilisation, traffic), not the cost
    model's latency or energy. OPTIMAL means optimal for that objective with a proof from the
    backend; a capacity repair or a timeout gives FEASIBLE; no solution within the limit
    gives UNKNOWN; a model without any placement, INFEASIBLE. Every returned mapping passed
    :func:`~twill.mapping.mapping.verify_mapping`."""
    t0, c0 = time.perf_counter(), time.process_time()
    model, ix, terms = build_cosa_model(layer, arch, cfg.model_options())
    t_build = time.perf_counter() - t0
    sol = solve_model(
        model,
        cfg.backend,
        time_limit=min(cfg.time_limit, max(stop - time.perf_counter(), _MIN_SOLVE_S)),
        threads=cfg.threads,
        seed=cfg.seed,
        extra=cfg.extra,
        on_incumbent=on_incumbent,
    )
    return _map_result(layer, arch, cfg, (model, ix, terms), sol, t_build, c0)


def _map_result(
    layer: Layer,
    arch: Arch,
    cfg: CoSASettings,
    built: tuple[LinearModel, CosaIndex, dict[str, dict[str, float]]],
    sol: Solution,
    t_build: float,
    c0: float,
) -> SolveResult:
    """The solved MIP as a result: decoded, capacity-repaired and verified mapping with its
    cost, or the backend's status without one."""
    model, ix, terms = built
    t1 = time.perf_counter()
    stats: dict[str, Any] = {**model.size, **sol.stats}

    def result(status: Status, timings: Timings, found: MappedLayer | None = None) -> SolveResult:
        stats["cpu_seconds"] = time.process_time() - c0  # SCIP/HiGHS children not included
        objective = None if not sol.status.has_solution else sol.objective
        return SolveResult(status, found, objective, COSA_OBJECTIVE[1], sol.bound,
                           timings=timings, stats=stats, seed=cfg.seed,
                           settings={"method": "cosa", **cfg.to_dict()})  # fmt: skip

    if not sol.status.has_solution:
        return result(sol.status, Timings(t_build, sol.seconds))
    stats["terms"] = _term_values(model, terms, sol.values)
    mapping, moves, left = repair_capacity(layer, arch, decode_solution(sol.values, ix, arch))
    stats["repair_moves"] = moves
    timings = Timings(t_build, sol.seconds, time.perf_counter() - t1)
    if left:
        stats["violations"] = [str(v) for v in left]
        stats["mip_objective"] = sol.objective
        log.warning("cosa mapping of %s failed verification: %s", layer.name, left)
        return result(Status.ERROR, timings)
    status = sol.status if moves == 0 else Status.FEASIBLE
    return result(status, timings, MappedLayer(layer.name, mapping, evaluate(layer, arch, mapping)))


def configure(
    settings: CoSASettings | None, options: SolverOptions | None, overrides: dict[str, Any]
) -> CoSASettings:
    """The run's settings: ``settings``, then ``overrides``, then the shared ``options``."""
    cfg = replace(settings or CoSASettings(), **overrides)
    if options is not None:
        extra = {**(cfg.extra or {}), **options.extra} or None
        limit = {} if options.time_limit is None else {"time_limit": options.time_limit}
        cfg = replace(cfg, extra=extra, seed=options.seed, threads=options.threads, **limit)
    check_real(cfg.time_limit, "time_limit")
    check_int(cfg.threads, "threads")
    check_int(cfg.seed, "seed", minimum=0)
    return cfg


def incumbent_events(controls: Controls) -> Callable[[float, float, float], None] | None:
    """CP-SAT's incumbent callback sending a ``"mip"`` :class:`~twill.progress.ProgressEvent`
    (objective and bound) through ``controls`` (``None`` without a progress callback)."""
    if controls.on_progress is None:
        return None

    def on_incumbent(objective: float, bound: float, elapsed: float) -> None:
        controls.emit("mip", incumbent=objective, bound=bound)

    return on_incumbent


def _term_values(
    model: LinearModel, terms: dict[str, dict[str, float]], values: dict[str, float]
) -> dict[str, float]:
    """The value of each named objective term (compute, utilisation, traffic) at ``values``."""
    return {
        name: model.value({k: c for k, c in expr.items() if k != "__const__"}, values)
        + expr.get("__const__", 0.0)
        for name, expr in terms.items()
    }
