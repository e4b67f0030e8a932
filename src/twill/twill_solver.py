"""Public Twill entry point (``twill.twill_solver``): optimal software pipelining (paper §5).

:func:`twill_solve` is the keyword front door of :func:`twill.sched.exact.pipeline.run`,
which composes the steps of Algorithm 1 as a readable chain:

1. check the graph (:func:`twill.sched.validate.check_graph`);
2. Phase 1: search ``I = MII, MII+1, ...`` for the minimum initiation interval with an exact
   modulo scheduler and a certificate (:func:`twill.sched.exact.search.run`);
3. Phase 2, joint modulo scheduling and warp specialisation (Algorithm 1), when the problem
   has a warp model (:func:`has_warp_model`: the machine has more than one warp, as the GPU
   kernels do) or when asked for with ``phase2=True``;
4. verify the answer once, through the problem's ``verify``
   (:class:`twill.sched.problems.ModuloProblem`, :class:`~twill.sched.problems.WarpSpecProblem`),
   and package it as a frozen :class:`TwillResult`.

The result's ``problem`` says which problem its ``optimal`` refers to: ``"modulo"`` (the
minimum initiation interval of modulo scheduling, Phase 1 alone) or
``"modulo+warp-specialisation"`` (the minimum ``I`` of a joint schedule and warp assignment,
which can be larger than the modulo minimum).

Every schedule returned has passed the independent verifiers, once. Only this front door
prints, and only with ``verbose=True`` (:func:`format_result`); the solvers underneath log.

Examples
--------
>>> from twill.kernels import flash_attention_forward_simplified
>>> r = twill_solve(flash_attention_forward_simplified(), max_I=5)
>>> r.I, r.optimal, r.L, r.schedule
(2, True, 4, {'S': 0, 'P': 2, 'O': 3})
"""

from __future__ import annotations

import os
from typing import Any

from twill.options import SolverOptions
from twill.progress import OnProgress
from twill.sched.exact import pipeline
from twill.sched.exact.pipeline import TwillResult
from twill.sched.exact.settings import TwillSettings
from twill.sched.ir import DependenceGraph
from twill.sched.problems import (
    PROBLEM_MODULO,
    PROBLEM_WARP_SPECIALISATION,
    WarpSpecProblem,
    has_warp_model,
)

__all__ = [
    "PROBLEM_MODULO",
    "PROBLEM_WARP_SPECIALISATION",
    "TwillResult",
    "twill_solve",
    "has_warp_model",
]


def _as_graph(graph: Any) -> DependenceGraph:
    """The graph itself, or the graph a kernel name or file path names (as ``twill solve``)."""
    if isinstance(graph, DependenceGraph):
        return graph
    if isinstance(graph, str | os.PathLike):
        from twill.io import load_graph

        return load_graph(graph)
    raise TypeError(
        "twill_solve expects a DependenceGraph, a kernel name (see `twill kernels`) or the path "
        f"of a .json, .yaml or .graphml graph, found {type(graph).__name__}"
    )


def _check_options(
    max_I: object,
    backend: object,
    time_limit: object,
    threads: object,
    total_time_limit: object,
    phase2_time_limit: object,
) -> None:
    """The numeric and choice options of :func:`twill_solve`, checked as the CLI checks them."""
    from twill.sched.exact.phase1 import BACKENDS
    from twill.validation import MAX_THREADS, check_choice, check_int, check_time_limit

    check_int(max_I, "max_I", none=True)
    check_choice(backend, "backend", BACKENDS)
    check_int(threads, "threads", maximum=MAX_THREADS)
    for name, value in (("time_limit", time_limit), ("total_time_limit", total_time_limit),
                        ("phase2_time_limit", phase2_time_limit)):  # fmt: skip
        check_time_limit(value, name)


def twill_solve(
    graph: DependenceGraph | str | os.PathLike[str],
    max_I: int | None = None,
    verbose: bool = False,
    backend: str = "cbc",
    time_limit: float | None = None,
    *,
    tie_break: bool = True,
    threads: int = 1,
    total_time_limit: float | None = None,
    phase2: bool | None = None,
    probe: bool = False,
    phase2_time_limit: float | None = None,
    on_progress: OnProgress | None = None,
) -> TwillResult:
    """Minimum-I modulo schedule of ``graph`` with a proof of optimality.

    The keyword front door of :func:`twill.sched.exact.pipeline.run`: the keywords become a
    :class:`~twill.sched.problems.WarpSpecProblem` and :class:`~twill.options.SolverOptions`
    (with :class:`~twill.sched.exact.settings.TwillSettings`); code that holds options calls
    ``pipeline.solve(problem, options)`` itself.

    Parameters
    ----------
    graph
        The loop body and its machine (e.g. from :mod:`twill.kernels` or
        :func:`twill.io.load_graph`), or, as on the command line, a kernel name
        (``"simple_gemm_pipeline"``) or the path of a ``.json``, ``.yaml`` or ``.graphml``
        graph.
    max_I
        Largest initiation interval to try (``None``: until a schedule is certain to exist).
    verbose
        Print a readable summary (:func:`format_result`) to stdout.
    backend
        ``"cbc"`` (PuLP + CBC, the paper's solver) or ``"cpsat"`` (OR-Tools CP-SAT).
    time_limit
        Seconds per Phase-1 solve (``None``: no limit). A limit hit below the answer makes
        it "not proven optimal".
    tie_break
        Deterministic as-late-as-possible choice among schedules of minimum ``L``.
    threads
        Solver threads.
    total_time_limit
        Seconds for the whole call, Phase 1 and Phase 2 together (``None``: no limit): one
        deadline, from which every solver call takes the smaller of its own limit and the
        time left, so the call ends within about this time plus one solver's reaction time;
        it then returns the best verified answer found: the Phase-1 incumbent (FEASIBLE,
        with ``lower_bound`` and ``gap``) for a modulo problem, or UNKNOWN when Phase 2 found
        no joint schedule in time.
    phase2
        Run Phase 2 (joint SWP + warp specialisation, Algorithm 1); the result then carries
        ``extra["warps"]``, ``["points"]`` and ``["phase1_I"]``
        (:func:`twill.sched.exact.algorithm1.algorithm1`). ``None`` (default): decided by the
        problem, Phase 2 exactly when the machine has a warp model (:func:`has_warp_model`).
    probe
        Phase 2 only on the window at the Phase-1 optimal I.
    phase2_time_limit
        Seconds per Phase-2 ``(I, L)`` point (a hit is "unknown", never unsat).
    on_progress
        Called with a :class:`twill.progress.ProgressEvent` before and after every Phase-1
        solve and every Phase-2 point (the function itself never prints progress).

    Returns
    -------
    TwillResult

    Raises
    ------
    InvalidProblemError
        The graph or an option is invalid (every defect listed), or an unknown kernel name.
    TypeError
        ``graph`` is neither a graph, a kernel name nor a path; ``phase2`` is not a bool.

    Notes
    -----
    Objective: minimum ``I`` (paper §5) of the problem in ``result.problem``, then minimum
    ``L`` at that ``I``. Guarantee:
    ``optimal`` only with an unbroken chain of proofs below ``I``. Fails when ``max_I`` is too
    small (status INFEASIBLE) or time limits are hit (UNKNOWN).

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> twill_solve(flash_attention_forward_simplified(), max_I=5).schedule
    {'S': 0, 'P': 2, 'O': 3}
    """
    graph = _as_graph(graph)
    _check_options(max_I, backend, time_limit, threads, total_time_limit, phase2_time_limit)
    if phase2 is not None and not isinstance(phase2, bool):
        raise TypeError(f"phase2 must be None, True or False, found {phase2!r}")
    from twill.validation import check_bool

    for name, flag in (("verbose", verbose), ("tie_break", tie_break), ("probe", probe)):
        check_bool(flag, name)
    settings = TwillSettings(backend=backend, solve_time_limit=time_limit, tie_break=tie_break,
                             phase2=phase2, probe=probe,
                             point_time_limit=phase2_time_limit)  # fmt: skip
    options = SolverOptions(time_limit=total_time_limit, threads=threads,
                            on_progress=on_progress, twill=settings)  # fmt: skip
    result = pipeline.run(WarpSpecProblem(graph, max_II=max_I), options)
    if verbose:  # the front door shows; the solvers only log
        from twill.visualization.text import format_result

        print(format_result(result, graph))
    return result


def __getattr__(name: str) -> Any:  # noqa: ANN401 (one of the two formatters)
    """``format_result`` and ``format_mrt`` stay importable from here, loaded from
    :mod:`twill.visualization.text` on first use: the front door does not import the outer
    layer when it is imported."""
    if name in ("format_result", "format_mrt"):
        from twill.visualization import text

        return getattr(text, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
