"""The ``twill gaus`` run as one function: check, build the problem, solve, report.

Issue 51 (orchestration out of ``cli/``): :func:`run_gaus` takes a graph and a
:class:`GauSRun` (``twill gaus``'s flags), refuses what cannot be solved before any array is
built, builds the :class:`~twill.sched.gaus.problem.GauSProblem` and its options, runs GauS or
the chosen baseline through the registry, and returns the result with the JSON report
(``run_json`` plus what the objective measures and, in C, the capacities used). The command
parses, calls it and prints.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twill.deadline import Deadline
from twill.errors import InvalidProblemError
from twill.options import SolverOptions
from twill.sched.ir import DependenceGraph

__all__ = [
    "BASELINE_FORMULATIONS",
    "GauSOutcome",
    "GauSRun",
    "caps_of",
    "check_baseline",
    "objective_meaning",
    "options_for",
    "problem_for",
    "run_gaus",
]

#: The formulations each baseline implements (the others raise inside the baseline).
BASELINE_FORMULATIONS = {"list": "ABC", "force": "AC", "gumbel": "A", "exact": "ABC"}


@dataclass(frozen=True)
class GauSRun:
    """What to run: the formulation and its bounds (``D``, ``II``, ``cap`` on every resource,
    ``ratio`` of A), GauS or a ``baseline`` (``list``, ``force``, ``gumbel``, ``exact``), the
    seed, GauS's knobs (``polish``, ``lns_time``, ``device``, ``max_iters``), the Gumbel
    baseline's ``epochs``, and the seconds the run may take (``time_limit``; the exact
    baseline takes 60 without one) or the :class:`~twill.deadline.Deadline` it ends by
    (``deadline``: a command's, which started before the graph was read and checked)."""

    formulation: str = "A"
    D: int | None = None
    II: int | None = None
    cap: float | None = None
    ratio: float = 100.0
    baseline: str | None = None
    seed: int = 0
    polish: bool = True
    lns_time: float = 0.0
    device: str = "cpu"
    max_iters: int | None = None
    epochs: int | None = None
    time_limit: float | None = None
    deadline: Deadline | None = None


@dataclass(frozen=True)
class GauSOutcome:
    """The result, the JSON report, what the objective means (and its unit), the ``II`` run
    and the GauS view of the graph (its resources and capacities)."""

    result: Any
    report: dict[str, Any]
    meaning: str
    unit: str
    II: int | None
    view: Any


def run_gaus(graph: DependenceGraph, run: GauSRun, *, source: str = "",
             on_progress: Callable[[Any], None] | None = None,
             history: bool = False) -> GauSOutcome:  # fmt: skip
    """GauS (or ``run.baseline``) on ``graph``; ``source`` names the input in errors,
    ``on_progress`` receives the :class:`~twill.progress.ProgressEvent` stream, ``history``
    keeps the per-step histories in the report."""
    from dataclasses import replace

    from twill.registry import solver
    from twill.sched.gaus.bounds import default_II
    from twill.sched.gaus.graph import gaus_view
    from twill.sched.gaus.result import run_json
    from twill.sched.validate import check_graph

    check_baseline(run.baseline, run.formulation)
    check_graph(graph, model_size=False)
    g = gaus_view(graph)
    if g.n == 0:
        raise InvalidProblemError("the graph has no operations to schedule", source=source)
    if run.cap is not None:
        g = g.with_caps(run.cap)
    II = run.II
    if run.formulation == "C" and II is None:
        II = default_II(g)
    _check_size(g, II, run, source)
    options = replace(options_for(run), on_progress=on_progress)
    result = solver(run.baseline or "gaus")(problem_for(graph, run, II), options)
    report = run_json(result, history=history)
    meaning, unit = objective_meaning(run.formulation, g.weight_note, run.ratio)
    report.update(objective_meaning=meaning, objective_unit=unit)
    if run.formulation == "C":
        report.update(caps=caps_of(g), cap_source="--cap" if run.cap is not None else "graph")
    return GauSOutcome(result, report, meaning, unit, II, g)


def check_baseline(baseline: str | None, formulation: str) -> None:
    """Refuse a baseline that does not implement ``formulation``."""
    if baseline and formulation not in BASELINE_FORMULATIONS[baseline]:
        supported = ", ".join(BASELINE_FORMULATIONS[baseline])
        raise InvalidProblemError(
            f"--baseline {baseline} does not implement formulation {formulation} "
            f"(it implements: {supported})"
        )


def _check_size(g: Any, II: int | None, run: GauSRun, source: str) -> None:  # noqa: ANN401, N803
    """Refuse, before any array is built, a run whose time-indexed arrays (operations x
    steps) would exceed :data:`~twill.sched.validate.MAX_MODEL_CELLS`, and a capacity that
    no single operation fits in (no schedule can exist)."""
    import numpy as np

    from twill.sched.validate import MAX_MODEL_CELLS

    if run.cap is not None:
        peak = float(np.max(g.usage, initial=0.0))
        if peak > run.cap:
            raise InvalidProblemError(
                f"--cap {run.cap:g}: an operation uses {peak:g} units of a resource in one "
                "step, so no schedule fits; give a capacity of at least that",
                source=source,
            )
    steps = max(run.D or 0, II or 0)
    cells = g.n * steps
    if cells > MAX_MODEL_CELLS:
        raise InvalidProblemError(
            f"model too large: {g.n:,} operations x {steps:,} steps = about {cells:,} "
            f"(operation, step) pairs; the limit is {MAX_MODEL_CELLS:,} (lower --D/--II or "
            "raise --cap)",
            source=source,
        )


def problem_for(graph: DependenceGraph, run: GauSRun, II: int | None) -> Any:  # noqa: ANN401, N803
    """The :class:`~twill.sched.gaus.problem.GauSProblem` of ``run`` (``cap`` is its
    ``R_cap``)."""
    from twill.sched.gaus.problem import GauSProblem

    f = run.formulation
    ratio = run.ratio if f == "A" else 1.0
    return GauSProblem(graph, f, D=run.D, II=II if f == "C" else None, R_cap=run.cap,
                       ratio=ratio)  # fmt: skip


def options_for(run: GauSRun) -> SolverOptions:
    """The options of ``run``: its time limit (the exact baseline: 60 s without one), the seed
    (the Gumbel baseline: GS-Schedule's 30 when 0), GauS's settings and the Gumbel epochs."""
    from twill.sched.baselines.categorical import GumbelSettings
    from twill.sched.gaus.solver import default_settings

    limit = run.time_limit
    if run.baseline == "exact" and limit is None:
        limit = 60.0
    seed = (run.seed or 30) if run.baseline == "gumbel" else run.seed
    explicit: dict[str, Any] = {"polish": run.polish, "lns_time": run.lns_time,
                                "device": run.device}  # fmt: skip
    if run.max_iters is not None:
        explicit["max_iters"] = run.max_iters
    gaus = default_settings(run.formulation, **explicit)
    gumbel = GumbelSettings() if run.epochs is None else GumbelSettings(epochs=run.epochs)
    return SolverOptions(
        time_limit=limit, seed=seed, gaus=gaus, gumbel=gumbel, deadline=run.deadline
    )


def _memory_unit(weight_note: str) -> str:
    """The unit of a graph's memory weights, from the note its reader recorded: GML node
    weights, one value per AIGER node or operation, footprint bytes or result registers."""
    if weight_note.startswith("GS-Schedule"):
        return "node-weight units"
    if weight_note.startswith("AIGER"):
        return "values"
    if "memory weight = footprint" in weight_note:
        return "bytes"
    if "memory weight = regs" in weight_note:
        return "registers"
    return "values"


def objective_meaning(formulation: str, weight_note: str, ratio: float) -> tuple[str, str]:
    """``(meaning, unit)`` of a GauS objective (and of its bound) for one formulation."""
    if formulation == "A":
        return (
            f"{ratio:g} x (sum over resources of peak units used in one step) + sum over edges "
            "of communication weight x edge length in steps",
            "weighted units",
        )
    mem = _memory_unit(weight_note)
    if formulation == "B":
        return "peak memory: largest total memory weight of the values live at one step", mem
    return (
        "modulo peak memory (MaxLive): largest total memory weight of the values live in one "
        "congruence class modulo II, over overlapping iterations",
        mem,
    )


def caps_of(g: Any) -> dict[str, float | None]:  # noqa: ANN401
    """Each resource's capacity in the GauS view ``g`` (``None``: unlimited)."""
    return {
        r: (float(c) if math.isfinite(c) else None)
        for r, c in zip(g.resources, g.caps, strict=True)
    }
