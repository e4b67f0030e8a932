"""GauS front end: check -> initialise -> ALM + Adam -> legalise -> verify (GauS paper).

:class:`GauSSolver` holds a graph and settings; ``solve_resource`` (formulation A),
``solve_memory`` (B) and ``solve_modulo`` (C) each return a new frozen
:class:`~twill.sched.gaus.result.SolveResult`.

What it optimises, what it guarantees, how it fails:

* Objective: A ``ratio * sum_k peak_k + sum_e c_e (t_v - t_u)``; B peak live memory;
  C modulo MaxLive under resource caps and recurrences at a fixed ``II``.
* Guarantee: heuristic (no optimality claim). Every returned schedule passed the independent
  verifier :func:`twill.sched.verify.verify_start_steps` (through
  :func:`twill.sched.gaus.verify.schedule_violations`).
* Failure: ``INFEASIBLE`` only with a proof (critical path longer than ``D``; ``II`` below
  ResMII or RecMII; recurrences push an op past ``D - 1``); ``UNKNOWN`` when legalisation found
  no schedule (not a proof).
"""

from __future__ import annotations

import functools
import logging
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from typing import Any, TypeVar

import numpy as np

from twill.deadline import NO_DEADLINE, Deadline
from twill.errors import (
    ArgumentTypeError,
    BackendUnavailableError,
    ConvergenceWarning,
    InvalidProblemError,
    VerificationError,
)
from twill.options import SolverOptions
from twill.progress import OnProgress
from twill.registry import register_solver
from twill.results import SolveResult, Status
from twill.sched.gaus.alm import ALMHooks, ALMOutcome, GauSSettings, StartingPoint, optimise
from twill.sched.gaus.bounds import modulo_asap, rec_mii, res_mii
from twill.sched.gaus.graph import (
    GauSGraph,
    asap_alap,
    gaus_view,
    topological_generations,
)
from twill.sched.gaus.legalise import legalise_modulo, legalise_regular
from twill.sched.gaus.problem import GauSProblem, schedule_defects
from twill.sched.gaus.result import GauSSchedule, run_result
from twill.sched.gaus.verify import discrete_objective, schedule_violations
from twill.sched.ir import DependenceGraph
from twill.validation import (
    check_bool,
    check_callable,
    check_instance,
    check_int,
    check_time_limit,
)

__all__ = [
    "FORMULATION_DEFAULTS",
    "GauSProblem",
    "GauSSolver",
    "default_settings",
    "solve",
    "verify_result_schedule",
    "resolve_device",
]

log = logging.getLogger(__name__)
_Method = TypeVar("_Method", bound=Callable[..., Any])


def _logged(method: _Method) -> _Method:
    """Run a solve method under :func:`_verbose_logging` (``self.verbose``)."""

    @functools.wraps(method)
    def wrapper(self: GauSSolver, *args: Any, **kwargs: Any) -> Any:
        with _verbose_logging(self.verbose):
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


#: Settings that differ by formulation unless given explicitly. A (GS-Schedule data, delay 0)
#: starts from the ASAP/ALAP midpoint, where every op shares one step, so it needs wide
#: distributions and large moves to spread the load: measured on rand_graph_1000_1, this gives
#: 8.0e6 against 1.7e7 with the C settings. B and C start from a legal schedule and refine it
#: locally: wide sigmas there raise the expected dependency violation and spread the ops
#: (longer lifetimes), measured 1013 vs 1048+ MaxLive on the 1000-node seed example.
FORMULATION_DEFAULTS: dict[str, dict[str, Any]] = {
    "A": {"lr": 0.2, "sigma_max": 2.0, "init": "asap_alap", "early_readouts": (25, 50)},
    "B": {},
    "C": {},
}


def resolve_device(device: str) -> str:
    """``"cpu"`` or ``"cuda"`` (error when CUDA is asked for and not available)."""
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise InvalidProblemError(f"device must be 'cpu' or 'cuda', found {device!r}")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise BackendUnavailableError(
                f"device {device!r} requested but torch.cuda.is_available() is False"
            )
    return device


def verify_result_schedule(g: GauSGraph, t: np.ndarray, D: int, II: int | None) -> None:
    """Raise :class:`VerificationError` unless ``t`` is legal."""
    bad = schedule_defects(g, t, D, II)
    if bad:
        raise VerificationError(bad, what=f"GauS schedule of {g.name}")


def default_settings(formulation: str, **explicit: Any) -> GauSSettings:
    """The settings GauS uses for ``formulation`` when none are given: the
    :class:`GauSSettings` defaults, then :data:`FORMULATION_DEFAULTS`, then ``explicit``."""
    return GauSSettings(**{**FORMULATION_DEFAULTS.get(formulation, {}), **explicit})


@register_solver("gaus", problems=(GauSProblem,), settings=GauSSettings, default=True)
def solve(problem: GauSProblem, options: SolverOptions | None = None) -> SolveResult:
    """GauS on ``problem``: check -> initialise -> ALM + Adam -> legalise -> polish -> verify.

    Parameters
    ----------
    problem
        The graph, formulation (A, B or C), latency bound, II, caps and ratio.
    options
        ``time_limit`` bounds the whole call (a deadline: the gradient phase and every local
        search after it stop at it, and the best legal schedule so far is returned);
        ``seed``, ``threads`` (torch threads; above 1 they replace the ``threads`` setting),
        ``on_progress`` (one :class:`~twill.progress.ProgressEvent` per Adam step) and ``gaus`` (a
        :class:`GauSSettings`; ``None``: :func:`default_settings` of the formulation).

    Returns
    -------
    SolveResult
        FEASIBLE with a verified schedule (a :class:`~twill.sched.gaus.result.GauSSchedule`,
        op -> step; heuristic, never OPTIMAL), INFEASIBLE only with a proof (critical path
        longer than ``D``; ``II`` below ResMII or RecMII), UNKNOWN when no legal schedule was
        found in time. ``stats`` is the run record (histories, step timings, the local
        searches; :data:`~twill.sched.gaus.result.RUN_STATS`), also read as attributes.

    Examples
    --------
    >>> from twill.gaus_solver import generate_random_dag
    >>> p = GauSProblem(generate_random_dag(30, 0.1, 0, seed=1), "B")
    >>> r = solve(p, SolverOptions(gaus=default_settings("B", max_iters=50)))
    >>> r.status.value, p.verify(r.solution).ok
    ('feasible', True)
    """
    check_instance(problem, "problem", GauSProblem)
    start = time.perf_counter()  # the deadline counts from the call
    options = SolverOptions.of(options).start()  # a caller's deadline is kept
    problem.check()
    settings = options.gaus or default_settings(problem.formulation)
    if not isinstance(settings, GauSSettings):
        raise InvalidProblemError(
            f"options.gaus must be a GauSSettings, found {type(settings).__name__}"
        )
    if options.threads > 1:  # the options' solver threads, else the settings' own
        settings = replace(settings, threads=options.threads)
    return _solve(_setup(problem, settings, options, start))


class GauSSolver:
    """Differentiable scheduler with Gaussian start times (the promised front door; the
    work is :func:`solve` on a :class:`GauSProblem`).

    Parameters
    ----------
    graph
        A :class:`~twill.sched.ir.DependenceGraph` (checked now; ``self.graph`` is its
        cached array view).
    D
        Latency bound in steps (``None``: :func:`twill.sched.gaus.bounds.default_D`).
    lr
        Adam learning rate (see :class:`GauSSettings`); ``None`` uses the formulation's
        default (:data:`FORMULATION_DEFAULTS`).
    device
        ``"cpu"`` (default) or ``"cuda"``.
    seed
        Seeds torch (GauS itself is deterministic given its initialisation).
    verbose
        Log progress at INFO on the ``twill.sched.gaus`` logger during each solve (a stderr
        handler is added if the logger has none); the logger is restored afterwards.
    on_progress
        Called with a :class:`~twill.progress.ProgressEvent` after each Adam step.
    total_time_limit
        Seconds for each whole solve (a deadline: the best legal schedule so far when it
        passes); the ``time_limit`` setting bounds the gradient phase only. The keywords
        become the :class:`~twill.options.SolverOptions` of :func:`solve`; code that holds
        options calls :func:`solve` on a :class:`GauSProblem` itself.
    **settings
        Any other field of :class:`GauSSettings` (``max_iters``, ``inner_steps``, ``tau``, ...).

    Examples
    --------
    >>> from twill.gaus_solver import generate_random_dag
    >>> r = GauSSolver(generate_random_dag(30, 0.1, 0, seed=1), max_iters=50).solve_memory()
    >>> r.legal
    True
    """

    def __init__(
        self,
        graph: DependenceGraph,
        D: int | None = None,
        lr: float | None = None,
        *,
        device: str = "cpu",
        seed: int = 0,
        verbose: bool = False,
        on_progress: OnProgress | None = None,
        total_time_limit: float | None = None,
        **settings: Any,
    ) -> None:
        check_int(D, "D", none=True)
        check_int(seed, "seed", minimum=0)
        check_time_limit(total_time_limit, "total_time_limit")
        check_bool(verbose, "verbose")
        check_callable(on_progress, "on_progress")
        if not isinstance(graph, DependenceGraph):
            raise ArgumentTypeError(
                f"graph must be a DependenceGraph, found {type(graph).__name__}"
            )
        from twill.sched.validate import check_graph

        check_graph(graph, model_size=False)
        self.source = graph
        self.graph = gaus_view(graph)
        self.D = D
        self.verbose = verbose
        known = {f.name for f in dataclass_fields(GauSSettings)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ArgumentTypeError(
                f"GauSSolver got unknown option(s) {', '.join(map(repr, unknown))}; the options "
                f"are GauSSettings' fields: {', '.join(sorted(known))}"
            )
        self.explicit = {**settings, "device": device}
        if lr is not None:
            self.explicit["lr"] = lr
        self.settings = GauSSettings(**self.explicit)  # checked now
        self.options = SolverOptions(time_limit=total_time_limit, seed=seed,
                                     on_progress=on_progress)  # fmt: skip

    @property
    def seed(self) -> int:
        """The seed of every solve."""
        return self.options.seed

    @property
    def on_progress(self) -> OnProgress | None:
        """The progress callback of every solve."""
        return self.options.on_progress

    # -- public entry points -----------------------------------------------------------------

    def solve_resource(self, *, ratio: float = 100.0, max_iters: int | None = None) -> SolveResult:
        """Formulation A: ``ratio * peak resource + communication`` under the latency bound.

        ``ratio = 100`` is GS-Schedule's README setting. A ratio that is not a
        finite number >= 0 raises :class:`~twill.errors.InvalidProblemError`.
        """
        return self._solve("A", None, None, ratio, max_iters)

    def solve_memory(self, *, max_iters: int | None = None) -> SolveResult:
        """Formulation B: peak live memory under the latency bound."""
        return self._solve("B", None, None, 1.0, max_iters)

    def solve_modulo(
        self,
        II: int,
        R_cap: float | None = None,
        max_iters: int | None = None,
    ) -> SolveResult:
        """Formulation C: modulo MaxLive at ``II`` under resource caps and recurrences.

        Parameters
        ----------
        II
            Initiation interval.
        R_cap
            Capacity applied to every resource type (``None``: the graph's own capacities).
        max_iters
            Override of ``settings.max_iters``.
        """
        check_int(II, "II")
        return self._solve("C", II, R_cap, 1.0, max_iters)

    def solve(
        self,
        formulation: str = "A",
        *,
        II: int | None = None,
        R_cap: float | None = None,
        ratio: float = 100.0,
        max_iters: int | None = None,
    ) -> SolveResult:
        """Dispatch on ``formulation`` (``"A"``, ``"B"`` or ``"C"``; C without ``II``: MII)."""
        if formulation not in ("A", "B", "C"):
            raise InvalidProblemError(f"formulation must be A, B or C, found {formulation!r}")
        return self._solve(formulation, II if formulation == "C" else None, R_cap,
                           ratio if formulation == "A" else 1.0, max_iters)  # fmt: skip

    @_logged
    def _solve(
        self,
        formulation: str,
        II: int | None,
        R_cap: float | None,
        ratio: float,
        max_iters: int | None,
    ) -> SolveResult:
        """One :func:`solve` of the problem these arguments describe."""
        check_int(max_iters, "max_iters", none=True)
        problem = GauSProblem(self.source, formulation, self.D, II, R_cap, ratio)
        explicit = self.explicit if max_iters is None else {**self.explicit,
                                                             "max_iters": max_iters}  # fmt: skip
        settings = default_settings(formulation, **explicit)
        return solve(problem, replace(self.options, gaus=settings))


def _solve(run: _SolveRun) -> SolveResult:
    """One run: prove infeasibility where it can, initialise the Gaussians, run the ALM
    loop, then polish and verify the best legal schedule."""
    gens = topological_generations(run.g)
    asap, alap, refused = _proof_or_window(run, gens)
    if refused is not None:
        return refused
    settings = run.settings
    make_model = _model_factory(run, asap, alap)
    mu0, sigma0 = _initial_gaussians(settings, asap, alap)
    searched = (
        _CheckpointSearch(run.g, run.D, run.ratio, run.start, settings, run.deadline)
        if run.formulation == "A" and settings.polish
        else None
    )
    legalise = _Legaliser(run, gens, asap, alap)
    mu0 = _starting_means(run, mu0, asap, legalise)
    t_opt = time.perf_counter()
    hooks = ALMHooks(legalise, on_progress=run.on_progress, start_time=run.start,
                     deadline=run.deadline,
                     # the search skips the starting point (far from a good optimum)
                     on_readout=searched.offer if searched is not None else None)  # fmt: skip
    begin = StartingPoint(mu0, sigma0, asap - 0.5, alap + 0.5)
    out = optimise(make_model, begin, settings, hooks, ratio=run.ratio, seed=run.seed)
    timings = {"optimise": time.perf_counter() - t_opt}
    hist = _history(out, timings)
    if out.best_t is None:
        return _no_schedule(run, out, gens, hist)
    best_t, msg = _improve(run, out.best_t, f"legal; {out.message}", searched, timings, hist)
    return run.finish(Status.FEASIBLE, best_t, msg, **hist)


def _setup(
    problem: GauSProblem, settings: GauSSettings, options: SolverOptions, start: float
) -> _SolveRun:
    """What one run fixes up front: the device, the capped graph, ``D``, ``II``, the
    deadline (the options' :class:`~twill.deadline.Deadline`, as a ``perf_counter`` stop)
    and the record of the settings."""
    device = resolve_device(settings.device)
    g, D, II = problem.arrays, problem.steps, problem.modulo_II
    ratio = problem.ratio if problem.formulation == "A" else 1.0
    record = {**settings.to_dict(), "ratio": ratio, "R_cap": problem.R_cap, "device": device}
    clock = options.clock
    deadline = clock.perf_stop() if clock.limited else None  # the loops compare perf_counter
    if deadline is not None:
        record["deadline_s"] = options.time_limit
    return _SolveRun(formulation=problem.formulation, g=g, D=D, II=II, ratio=ratio,
                     settings=settings, device=device, record=record, start=start,
                     seed=options.seed, deadline=deadline, clock=clock,
                     on_progress=options.on_progress)  # fmt: skip


class _CheckpointSearch:
    """The local search of :mod:`twill.sched.gaus.polish` run on legalised checkpoints
    (setting ``polish_share``) and on the final best one; keeps the best schedule and the
    any-time curve of the searches, ``(seconds from start, best searched objective so far)``
    (the unsearched checkpoints are GauS's own ``objective_history``)."""

    def __init__(
        self,
        g: GauSGraph,
        D: int,
        ratio: float,
        start: float,
        settings: GauSSettings,
        deadline: float | None = None,
    ) -> None:
        self.g, self.D, self.ratio, self.start = g, D, ratio, start
        self.deadline = deadline
        self.share = settings.polish_share
        self.radius = settings.polish_radius
        deep = D > 2 * settings.polish_radius + 1
        self.batch = settings.polish_batch_deep if deep else settings.polish_batch
        self.final_batch = settings.polish_batch_deep if deep else 1
        self.max_iters = settings.max_iters
        self.time_limit = settings.time_limit
        self.borrowed = False  # the first search may use the projected run time's share
        self.best_t: np.ndarray | None = None
        self.best_obj = np.inf
        self.raw_best = np.inf  # best unsearched checkpoint offered so far
        self.spent = 0.0
        self.runs = 0
        self.moves = 0
        self.history: list[tuple[float, float]] = []
        # the last input searched with batch 1 to a local optimum (the final search's own)
        self._done: bytes | None = None

    def _run(self, t: np.ndarray, limit: float | None, batch: int | None = None) -> None:
        from twill.sched.gaus.polish import MoveRule, polish_resource

        t0 = time.perf_counter()
        if self.deadline is not None:  # never past the call's deadline
            limit = max(0.0, min(np.inf if limit is None else limit, self.deadline - t0))
            if limit <= 0:
                return
        trace: list[tuple[float, float]] = []
        cand, moves = polish_resource(
            self.g,
            t,
            self.D,
            self.ratio,
            time_limit=limit,
            trace=trace,
            rule=MoveRule(self.final_batch if batch is None else batch, self.radius),
        )
        self.spent += time.perf_counter() - t0
        self.runs += 1
        self.moves += moves
        if batch is None and (limit is None or time.perf_counter() - t0 <= limit):
            # only the best-improvement descent stands in for the final search
            self._done = t.tobytes()
        for s, obj in trace:
            if obj < self.best_obj:
                self.best_obj = obj
                self.history.append((s - self.start, obj))
        if trace and trace[-1][1] <= self.best_obj:
            self.best_t = cand

    def offer(self, t: np.ndarray, obj: float, steps: int) -> None:
        """A legal checkpoint after ``steps`` Adam steps: searched if it improves the raw best
        and allowance is left (see ``GauSSettings.polish_share``)."""
        if steps <= 0 or obj >= self.raw_best:
            return
        self.raw_best = obj
        elapsed = time.perf_counter() - self.start
        allowance = self.share * elapsed - self.spent
        if not self.borrowed:
            # The first search borrows against the run time projected from the steps so far:
            # it usually reaches its local optimum (a good incumbent early), and the later
            # checkpoints wait until the elapsed time has caught up with the share. Batched
            # moves make it faster; the later searches keep the plain descent (batched, they
            # ended 0.1 % worse on rand_graph_1000_1, 0.1 % better on rand_graph_1000_2).
            self.borrowed = True
            projected = elapsed * self.max_iters / steps
            if self.time_limit is not None:
                projected = min(projected, self.time_limit)
            allowance = max(allowance, self.share * projected - self.spent)
            if allowance > 0:
                self._run(t, allowance, self.batch)
        elif allowance > 0:
            self._run(t, allowance)

    def final(self, t: np.ndarray, obj: float, limit: float | None) -> None:
        """The search on GauS's best legalised schedule (skipped if already run to the end)."""
        if obj < self.best_obj:
            self.best_obj, self.best_t = obj, t  # already on objective_history
        if self._done != t.tobytes():
            if limit is None:
                limit = max(30.0, time.perf_counter() - self.start)
            self._run(t, limit)


@dataclass
class _SolveRun:
    """What one :meth:`GauSSolver._solve` run fixes up front, shared by its steps."""

    formulation: str
    g: GauSGraph
    D: int
    II: int | None
    ratio: float
    settings: GauSSettings
    device: str
    record: dict[str, Any]
    start: float
    seed: int
    deadline: float | None = None
    clock: Deadline = NO_DEADLINE  # the same end, for the searches that take a Deadline
    on_progress: OnProgress | None = None

    def left(self, limit: float | None = None) -> float | None:
        """``limit`` seconds, cut to the time left before the deadline (``None``: neither)."""
        if self.deadline is None:
            return limit
        rest = max(0.0, self.deadline - time.perf_counter())
        return rest if limit is None else min(limit, rest)

    @property
    def modulo_II(self) -> int | None:
        """``II`` for formulation C, else ``None`` (the other formulations ignore it)."""
        return self.II if self.formulation == "C" else None

    def finish(
        self, status: Status, t: np.ndarray | None, message: str, **stats: Any
    ) -> SolveResult:
        """The result for schedule ``t`` (``None``: none), verified and with its objective;
        A and C schedules are shifted to start at step 0 (both are shift-invariant).
        ``stats`` join the run record (a ``bound`` becomes the result's)."""
        g, formulation, D, II = self.g, self.formulation, self.D, self.II
        obj, solution = None, None
        if t is not None:
            if formulation != "B":  # A and C are shift-invariant: report from step 0
                t = t - (t.min() if t.size else 0)
            verify_result_schedule(g, t, D, self.modulo_II)
            obj = discrete_objective(g, t, formulation, D=D, II=II, ratio=self.ratio)
            solution = GauSSchedule(g.schedule_dict(t), formulation, D, self.modulo_II)
        bound = stats.pop("bound", None)
        record = {"method": "gaus", "formulation": formulation, "graph": g.name,
                  "II": self.modulo_II, "D": D, "message": message, **stats}  # fmt: skip
        return run_result(status, solution, obj, record, bound=bound, settings=self.record,
                          seconds=time.perf_counter() - self.start, seed=self.seed)  # fmt: skip


def _proof_or_window(
    run: _SolveRun, gens: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, SolveResult | None]:
    """``(asap, alap, None)``: each op's window (for C raised by the modulo ASAP), or an
    ``INFEASIBLE`` result as third item when a bound proves there is no schedule (critical
    path longer than ``D``; ``II`` below ResMII or RecMII; recurrences past ``D - 1``)."""
    g, D, II = run.g, run.D, run.II
    asap, alap = asap_alap(g, D, gens)

    def infeasible(why: str, cause: str) -> tuple[np.ndarray, np.ndarray, Any]:
        return asap, alap, run.finish(Status.INFEASIBLE, None, why, infeasible_cause=cause)

    if np.any(asap > alap):
        return infeasible(
            f"infeasible at D={D}: the critical path needs {int(asap.max()) + 1} steps", "D"
        )
    if run.formulation == "C":
        assert II is not None
        rm, cm = res_mii(g), rec_mii(g)
        if II < rm:
            return infeasible(f"infeasible at II={II}: ResMII = {rm}", "II")
        if II < cm:
            return infeasible(f"infeasible at II={II}: RecMII = {cm}", "II")
        masap = modulo_asap(g, II)
        if masap is not None and masap.max(initial=0) > D - 1:
            why = f"recurrences push an op to step {int(masap.max())}"
            return infeasible(f"infeasible at D={D}, II={II}: {why}", "D")
        asap = np.maximum(asap, masap) if masap is not None else asap
    return asap, alap, None


def _model_factory(
    run: _SolveRun, asap: np.ndarray, alap: np.ndarray
) -> Callable[[tuple[int, int] | None], Any]:
    """The loss-model builder for the ALM loop: per-op windows (sparse) or dense, recorded
    in ``run.record["loss_model"]``."""
    from twill.sched.gaus.losses import LossModel, LossSpec
    from twill.sched.gaus.sparse import SparseLossModel

    settings, g, D = run.settings, run.g, run.D
    # Per-op windows save nothing when the widest possible window spans D anyway (the
    # GS-Schedule graphs: D <= 22); the dense model's closed-form gradient is faster there.
    widest = 2.0 * (settings.window_k * settings.sigma_max + settings.window_slack) + 2.0
    use_sparse = settings.sparse and widest < D
    run.record["loss_model"] = "per-op windows" if use_sparse else "dense"

    def make_model(window: tuple[int, int] | None) -> LossModel | SparseLossModel:
        spec = LossSpec(run.formulation, D, run.II, settings.tau)
        if use_sparse:
            bounds = (asap, np.maximum(alap, asap))
            return SparseLossModel.build(g, spec, bounds=bounds, device=run.device)
        return LossModel.build(g, spec, window=window, device=run.device)

    return make_model


def _initial_gaussians(
    settings: GauSSettings, asap: np.ndarray, alap: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Initial means (``settings.init``: ASAP or window midpoint) and standard deviations
    (``kappa`` times the slack, clipped to ``[sigma_min, sigma_max]``)."""
    slack = (alap - asap).astype(np.float64)
    if settings.init in ("asap", "naive"):
        mu0 = asap.astype(np.float64)
    elif settings.init in ("asap_alap", "legal_midpoint"):
        mu0 = 0.5 * (asap + alap).astype(np.float64)
    else:
        raise InvalidProblemError(
            f"init must be legal_midpoint, asap_alap or asap, found {settings.init!r}"
        )
    sigma0 = np.clip(
        settings.kappa * slack, settings.sigma_min, max(settings.sigma_max, settings.sigma_min)
    )
    return mu0, sigma0


class _Legaliser:
    """Means -> ``(legal schedule or None, discrete objective or None)`` for one run.

    Legalisation reads only the rounded means (except the perturbed restarts of tiny modulo
    graphs), so an unchanged rounding reuses the last answer (graphs over 64 ops)."""

    def __init__(
        self, run: _SolveRun, gens: list[np.ndarray], asap: np.ndarray, alap: np.ndarray
    ) -> None:
        self.run, self.gens, self.asap, self.alap = run, gens, asap, alap
        self.cache: dict[bytes, tuple[np.ndarray | None, float | None]] = {}

    def __call__(self, mu: np.ndarray) -> tuple[np.ndarray | None, float | None]:
        key = np.rint(mu).astype(np.int64).tobytes() if self.run.g.n > 64 else None
        if key is not None and key in self.cache:
            return self.cache[key]
        self.cache.clear()
        out = self._legalise(mu)
        if key is not None:
            self.cache[key] = out
        return out

    def _legalise(self, mu: np.ndarray) -> tuple[np.ndarray | None, float | None]:
        """Legalise without the cache, verify, and evaluate the objective."""
        run = self.run
        g, D, II = run.g, run.D, run.II
        if run.formulation == "C":
            t, _ = legalise_modulo(g, mu, II, D, gens=self.gens,  # type: ignore[arg-type]
                                   deadline=run.deadline)  # fmt: skip
        else:
            t = legalise_regular(g, mu, D, gens=self.gens, bounds=(self.asap, self.alap))
        if t is None or schedule_violations(g, t, D, run.modulo_II):
            return None, None
        return t, discrete_objective(g, t, run.formulation, D=D, II=II, ratio=run.ratio)


def _starting_means(
    run: _SolveRun, mu0: np.ndarray, asap: np.ndarray, legalise: _Legaliser
) -> np.ndarray:
    """The means the ALM loop starts from: with ``legal_midpoint`` the legalised midpoint
    (B: or a better list schedule); for A with a wide window, a better legal start."""
    settings, formulation, g, D = run.settings, run.formulation, run.g, run.D
    if settings.init == "legal_midpoint":
        t_mid, _ = legalise(mu0)
        if t_mid is None and formulation == "C":
            # Deep graphs: the midpoint of a wide window can leave too little room after it
            # for the modulo repair; the earliest starts (the list scheduler's lower bounds)
            # leave the most. Measured on EPFL priority (D = 314, II = 8): no legal
            # schedule in 2000 steps from the midpoint, legal from the start this way.
            t_mid, _ = legalise(asap.astype(np.float64))
        if t_mid is not None:
            mu0 = t_mid.astype(np.float64)
        if formulation == "B":
            mu0 = _better_start(g, "B", mu0, t_mid, D, legalise)
    elif formulation == "A" and D > settings.lr * settings.max_iters:
        mu0 = _better_start(g, "A", mu0, None, D, legalise, run.ratio)
    return mu0


def _history(out: ALMOutcome, timings: dict[str, float]) -> dict[str, Any]:
    """The ALM loop's histories and the step timings, as run statistics."""
    return {
        "iterations": out.iterations,
        "expected_violation": out.expected_violation,
        "loss_history": tuple(out.loss_history),
        "violation_history": tuple(out.violation_history),
        "objective_history": tuple(out.objective_history),
        "steps_seconds": timings,
    }


def _no_schedule(
    run: _SolveRun, out: ALMOutcome, gens: list[np.ndarray], hist: dict[str, Any]
) -> SolveResult:
    """``UNKNOWN`` result (with a :class:`ConvergenceWarning`) when no read-out was legal;
    for C the modulo legalisation of the final means is tried once more: a schedule it finds
    is returned (verified, FEASIBLE; its words said "legal" beside status *unknown*, issue 49),
    else the message says why it failed."""
    g = run.g
    msg = ""
    if run.formulation == "C":
        t, msg = legalise_modulo(g, out.mu, run.II, run.D, gens=gens,  # type: ignore[arg-type]
                                 deadline=run.deadline)  # fmt: skip
        if t is not None:
            return run.finish(Status.FEASIBLE, t, f"{msg}, from the final means", **hist)
    warnings.warn(
        f"GauS found no legal schedule for {g.name} after {out.iterations} steps "
        f"(expected violation {out.expected_violation:.3g})",
        ConvergenceWarning,
        stacklevel=4,  # as from _solve at level 3: past this helper and _logged
    )
    return run.finish(Status.UNKNOWN, None, msg or "no legal schedule found", **hist)


def _improve(
    run: _SolveRun,
    best_t: np.ndarray,
    msg: str,
    searched: _CheckpointSearch | None,
    timings: dict[str, float],
    hist: dict[str, Any],
) -> tuple[np.ndarray, str]:
    """The steps after the ALM loop: the local searches (A: :func:`_polish_a`, B:
    :func:`_polish_b`) and, for A and C, the list schedule when it is better. Each step
    starts only while time is left before the deadline, and its budget is cut to it."""
    g, D, formulation = run.g, run.D, run.formulation
    if formulation == "A" and run.settings.polish and _cut_to_deadline(run):
        assert searched is not None
        best_t, msg = _polish_a(run, best_t, msg, searched, timings, hist)
    if formulation == "B" and run.settings.polish and _cut_to_deadline(run):
        best_t, note = _polish_b(run, best_t, timings, hist)
        msg += note
    if formulation in ("A", "C") and run.left() != 0.0:
        best_t, msg = _keep_list_if_better(g, formulation, best_t, msg, D, run.II, run.ratio)
    if run.settings.lns_time > 0 and _cut_to_deadline(run):
        best_t, msg = _lns(run, best_t, msg, timings, hist)
    if run.left() == 0.0:
        msg += "; deadline reached (best legal schedule so far)"
    return best_t, msg


def _cut_to_deadline(run: _SolveRun) -> bool:
    """Cut the local searches' budgets in ``run.settings`` (``polish_time``, its default
    ``max(30 s, elapsed)``, and ``lns_time``) to the time left; False when none is left."""
    left = run.left()
    if left is None:
        return True
    if left <= 1e-3:
        return False
    s = run.settings
    polish = s.polish_time
    if polish is None:
        polish = max(30.0, time.perf_counter() - run.start)
    run.settings = replace(s, polish_time=min(polish, left), lns_time=min(s.lns_time, left))
    return True


def _lns(
    run: _SolveRun,
    best_t: np.ndarray,
    msg: str,
    timings: dict[str, float],
    hist: dict[str, Any],
) -> tuple[np.ndarray, str]:
    """The large-neighbourhood search (:func:`twill.sched.gaus.polish_lns.lns_search`) for
    ``lns_time`` seconds; its schedule is kept when legal and no worse. The lower bound its
    LP proves in A, if any, becomes the result's ``bound``, and its improvements join
    ``polish_history`` (seconds from the call start), so that the any-time curve covers it."""
    from twill.sched.gaus.polish_lns import LNSProblem, best_so_far, lns_search

    problem = LNSProblem(run.g, run.formulation, run.D, run.II, run.ratio)
    t0 = time.perf_counter()
    before = problem.objective(best_t)
    cand, rep, start = lns_search(problem, best_t, time_limit=run.settings.lns_time,
                                  seed=run.seed, deadline=run.clock)  # fmt: skip
    timings["lns"] = time.perf_counter() - t0
    if rep.lower_bound is not None:
        hist["bound"] = rep.lower_bound
    after = problem.objective(cand)
    if after >= before or not problem.legal(cand):
        return best_t, msg
    offset = t0 - run.start  # the search's start schedule was held from then on
    found = [(offset, before), *((offset + s, obj) for s, obj in rep.history)]
    hist["polish_history"] = tuple(best_so_far([*hist.get("polish_history", ()), *found]))
    return cand, (
        f"{msg}; large-neighbourhood search from the {start} schedule "
        f"({rep.rounds} neighbourhoods): {before:.6g} -> {after:.6g}"
    )


def _polish_a(
    run: _SolveRun,
    best_t: np.ndarray,
    msg: str,
    searched: _CheckpointSearch,
    timings: dict[str, float],
    hist: dict[str, Any],
) -> tuple[np.ndarray, str]:
    """Formulation A: the final local search on GauS's best schedule (kept when no worse
    than it), then the push moves on graphs with delays (:func:`_push_a`)."""
    g, D, ratio = run.g, run.D, run.ratio
    t_pol = time.perf_counter()
    before = discrete_objective(g, best_t, "A", D=D, ratio=ratio)
    searched.final(best_t, before, run.settings.polish_time)
    timings["polish"] = time.perf_counter() - t_pol
    timings["polish_checkpoints"] = searched.spent - timings["polish"]
    hist["gaus_objective"] = before
    cand = searched.best_t
    if cand is not None and not schedule_violations(g, cand, D):
        after = discrete_objective(g, cand, "A", D=D, ratio=ratio)
        if after <= before:
            best_t = cand
            msg += (
                f"; local search ({searched.runs} runs, {searched.moves} moves): "
                f"{before:.6g} -> {after:.6g}"
            )
            hist["polish_history"] = tuple(searched.history)
    if np.any(g.delay[g.forward] > 0):
        best_t, note = _push_a(run, best_t, timings)
        msg += note
    return best_t, msg


def _keep_list_if_better(
    g: GauSGraph,
    formulation: str,
    t: np.ndarray,
    msg: str,
    D: int,
    II: int | None,
    ratio: float,
) -> tuple[np.ndarray, str]:
    """The list schedule instead of GauS's when it is legal and strictly better (A, C).

    B starts from it and its local search starts from it too, so B is covered already; A
    and C start from the ASAP/ALAP midpoint on shallow windows, where GauS has always been
    better on the EPFL suite, but nothing proves it, so the cheap list schedule (linear
    time) is checked last and GauS is never worse than it.
    """
    t_list = _list_t(g, formulation, D, II, ratio)
    if t_list is None or schedule_violations(g, t_list, D, II if formulation == "C" else None):
        return t, msg
    ours = discrete_objective(g, t, formulation, D=D, II=II, ratio=ratio)
    theirs = discrete_objective(g, t_list, formulation, D=D, II=II, ratio=ratio)
    if theirs < ours:
        log.info("GauS keeps the list schedule (%s < %s)", theirs, ours)
        return t_list, f"{msg}; the list schedule kept ({theirs:.6g} < GauS's {ours:.6g})"
    return t, msg


def _push_a(run: _SolveRun, t: np.ndarray, timings: dict[str, float]) -> tuple[np.ndarray, str]:
    """Formulation A with delays: push-move descents (:mod:`twill.sched.gaus.polish_push`)
    after the single-move search, alternating the objective-first key with the peak-first
    key three times and ending objective-first; the best legal schedule seen is kept.

    Why: with delays a chain only moves as a whole, and single moves stop at once (EPFL
    router: 3565 -> 3257 and 3316; cavlc 9944 -> 9684). The graphs without delays
    (GS-Schedule data, where ops share steps freely) keep the single-move search alone.
    """
    from twill.sched.gaus.polish_push import PushMoves, polish_push_resource

    g, D, ratio = run.g, run.D, run.ratio
    t0 = time.perf_counter()
    limit = run.settings.polish_time
    if limit is None:
        limit = max(30.0, t0 - run.start)
    before = discrete_objective(g, t, "A", D=D, ratio=ratio)
    best, best_obj, cur, moves = t, before, t, 0
    for peak_first in (False, True, False, True, False, True, False):
        left = limit - (time.perf_counter() - t0)
        if left <= 0:
            break
        cur, m = polish_push_resource(g, cur, D, ratio, time_limit=left, deadline=run.clock,
                                      moves=PushMoves(peak_first=peak_first))  # fmt: skip
        moves += m
        obj = discrete_objective(g, cur, "A", D=D, ratio=ratio)
        if obj < best_obj and not schedule_violations(g, cur, D):
            best, best_obj = cur, obj
    timings["push"] = time.perf_counter() - t0
    if best_obj >= before:
        return t, ""
    return best, f"; push moves ({moves}): {before:.6g} -> {best_obj:.6g}"


def _polish_b(
    run: _SolveRun, t: np.ndarray, timings: dict[str, float], hist: dict[str, Any]
) -> tuple[np.ndarray, str]:
    """Formulation B: the memory local search (:mod:`twill.sched.gaus.polish_memory`) from
    GauS's best schedule and from the list schedule; the best legal result is kept when it
    is not worse than GauS's. Returns it and a message suffix.

    Why both: the search ends in different local optima, and neither start dominates
    (EPFL adder: 246 bits from GauS's schedule, 10 from the list schedule; priority: 43
    against 79).
    """
    from twill.sched.gaus.polish_memory import polish_memory

    g, D = run.g, run.D
    t0 = time.perf_counter()
    limit = run.settings.polish_time
    if limit is None:
        limit = max(30.0, t0 - run.start)
    before = discrete_objective(g, t, "B", D=D)
    hist["gaus_objective"] = before
    starts = [("GauS", t)]
    t_list = _list_t(g, "B", D)
    if t_list is not None:
        starts.append(("list", t_list))
    best, best_obj, note = t, before, ""
    for k, (name, t_start) in enumerate(starts):
        left = limit - (time.perf_counter() - t0)
        cand, moves = polish_memory(g, t_start, D, time_limit=left / (len(starts) - k),
                                    deadline=run.clock)  # fmt: skip
        if schedule_violations(g, cand, D):
            continue
        obj = discrete_objective(g, cand, "B", D=D)
        if obj < best_obj or (obj == best_obj and name == "GauS"):
            best, best_obj = cand, obj
            note = (
                f"; local search from the {name} schedule ({moves} moves): "
                f"{before:.6g} -> {obj:.6g}"
            )
    timings["polish"] = time.perf_counter() - t0
    return best, note


def _better_start(
    g: GauSGraph,
    formulation: str,
    mu0: np.ndarray,
    t_mid: np.ndarray | None,
    D: int,
    legalise: Callable[[np.ndarray], tuple[np.ndarray | None, float | None]],
    ratio: float = 100.0,
) -> np.ndarray:
    """The list schedule when its objective is below the (legalised) midpoint's.

    B: on deep netlists (EPFL ``router``: 68 against 93 bits) the midpoint spreads each value's
    consumers and lengthens lifetimes. A on deep windows: the midpoint piles every op of a
    level onto one step and a few thousand Adam steps cannot spread thousands of steps' worth
    of ops (a 25,000-node, depth-5,000 network: 3.8e6 from the midpoint against 1.0e6 for list
    scheduling). "Deep" means ``D > lr * max_iters``, the farthest Adam can move a mean (400
    steps with the A defaults); on shallower windows the midpoint does better (EPFL
    ``router``, D = 69: 3565 against 3724). The optimiser and the local search then only keep
    improvements, so GauS is never worse than list scheduling there.
    """
    t_list = _list_t(g, formulation, D, ratio=ratio)
    if t_list is None:
        return mu0
    _, obj_list = legalise(t_list.astype(np.float64))
    _, obj_mid = legalise(mu0)
    if obj_list is not None and (obj_mid is None or obj_list < obj_mid):
        log.info("GauS starts from the list schedule (%s < %s)", obj_list, obj_mid)
        return t_list.astype(np.float64)
    return mu0


def _list_t(
    g: GauSGraph, formulation: str, D: int, II: int | None = None, ratio: float = 100.0
) -> np.ndarray | None:
    """The list schedule's start steps (``None`` when it found no legal schedule)."""
    from twill.sched.baselines import list_sched

    return list_sched.start_steps(g, formulation, D, II, ratio)


@contextmanager
def _verbose_logging(enabled: bool) -> Iterator[None]:
    """INFO logging on ``twill.sched.gaus`` for one solve (a stderr handler when it has none);
    the logger's level and handlers are restored afterwards, so later calls stay quiet."""
    if not enabled:
        yield
        return
    logger = logging.getLogger("twill.sched.gaus")
    level, handler = logger.level, None
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(level)
        if handler is not None:
            logger.removeHandler(handler)
