"""``twill gaus FILE``: GauS (or a baseline) on a graph file (``docs/gaus.md``).

Inputs by extension: ``.gml`` (GS-Schedule), ``.aig`` (binary AIGER), ``.graphml`` (HatScheT),
``.json``/``.yaml`` (twill graph). ``--json`` prints one object with ``schedule``, ``legal``,
``objective``, ``II``, ``D``, ``seconds`` (and more); the progress bar goes to stderr.

Every number says what it is: ``objective_meaning`` and ``objective_unit`` say what the
objective (and its ``bound``, in the same unit) measures, e.g. peak memory in the graph's memory
weights (bytes of footprint, AIGER values, GS-Schedule node weights). Formulation C says which
resource capacities it used (``caps``, ``cap_source``): ``--cap`` or the graph's own.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from twill.cli._args import (
    add_time_limit,
    atomic_output,
    bounded_int,
    check_output_and_plot,
    nonnegative_float,
    positive_float,
    positive_int,
    seed_int,
    write_output,
)
from twill.cli._console import stdout_console
from twill.errors import InvalidProblemError

__all__ = ["register", "run_gaus", "schedule_summary"]

BASELINES = ("list", "force", "gumbel", "exact")
# The formulations each baseline implements (the others raise inside the baseline).
BASELINE_FORMULATIONS = {"list": "ABC", "force": "AC", "gumbel": "A", "exact": "ABC"}


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "gaus",
        help="differentiable scheduling with Gaussian start times (GauS) or a baseline",
        description="Schedule FILE (.gml, .aig, .graphml, .json, .yaml) with GauS under "
        "formulation A (resource peak + communication), B (peak memory) or C (modulo: II, caps, "
        "memory).",
    )
    p.add_argument(
        "file", help="graph file: .gml, .aig, .graphml, or twill .json/.yaml; or a kernel name"
    )
    p.add_argument("--formulation", choices=("A", "B", "C"), default="A")
    p.add_argument(
        "--D",
        type=positive_int,
        default=None,
        help="latency bound (default: from the "
        "critical path; GS-Schedule data: nodes on the longest path)",
    )
    p.add_argument(
        "--II", type=positive_int, default=None, help="initiation interval (C; default MII)"
    )
    p.add_argument(
        "--cap", type=positive_float, default=None, help="capacity of every resource (C)"
    )
    p.add_argument("--ratio", type=nonnegative_float, default=100.0, help="resource weight in A")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("-o", "--output", default=None, help="write the JSON result to this file")
    p.add_argument(
        "--plot",
        default=None,
        help="save the loss curve and the any-time curve (best legal objective against "
        "seconds) to this PNG/SVG/PDF",
    )
    p.add_argument("--baseline", choices=BASELINES, default=None, help="run a baseline instead")
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument(
        "--no-polish",
        action="store_true",
        help="A: skip the local search after legalisation (report GauS proper only)",
    )
    p.add_argument(
        "--lns-time",
        type=nonnegative_float,
        default=0.0,
        metavar="S",
        help="then S seconds of large-neighbourhood search with CP-SAT (default 0: off; "
        "for designs of up to a few thousand ops, when a time budget is to be filled)",
    )
    p.add_argument(
        "--max-iters", type=bounded_int(10_000_000), default=None, help="cap on Adam steps"
    )
    p.add_argument(
        "--epochs",
        type=bounded_int(10_000_000),
        default=None,
        metavar="N",
        help="the Gumbel baseline's training epochs (default 100)",
    )
    add_time_limit(p, None, "seconds for the whole command, reading the graph included: GauS "
                   "returns its best legal schedule so far (default: no limit; the exact "
                   "baseline: 60)")  # fmt: skip
    p.set_defaults(func=run_gaus)


def _check_size(g: Any, II: int | None, args: argparse.Namespace) -> None:  # noqa: N803
    """Refuse, before any array is built, a run whose time-indexed arrays (operations x
    steps) would exceed :data:`~twill.sched.validate.MAX_MODEL_CELLS`, and a capacity that
    no single operation fits in (no schedule can exist)."""
    import numpy as np

    from twill.sched.validate import MAX_MODEL_CELLS

    if args.cap is not None:
        peak = float(np.max(g.usage, initial=0.0))
        if peak > args.cap:
            raise InvalidProblemError(
                f"--cap {args.cap:g}: an operation uses {peak:g} units of a resource in one "
                "step, so no schedule fits; give a capacity of at least that",
                source=args.file,
            )
    steps = max(args.D or 0, II or 0)
    cells = g.n * steps
    if cells > MAX_MODEL_CELLS:
        raise InvalidProblemError(
            f"model too large: {g.n:,} operations x {steps:,} steps = about {cells:,} "
            f"(operation, step) pairs; the limit is {MAX_MODEL_CELLS:,} (lower --D/--II or "
            "raise --cap)",
            source=args.file,
        )


def run_gaus(args: argparse.Namespace) -> int:
    from twill.sched.gaus.graph import gaus_view
    from twill.sched.validate import check_graph

    if args.baseline and args.formulation not in BASELINE_FORMULATIONS[args.baseline]:
        supported = ", ".join(BASELINE_FORMULATIONS[args.baseline])
        raise InvalidProblemError(
            f"--baseline {args.baseline} does not implement formulation {args.formulation} "
            f"(it implements: {supported})"
        )
    from twill.io import graph_input_files, load_graph

    inputs = graph_input_files(args.file)
    check_output_and_plot(args, inputs, (".png", ".svg", ".pdf"))
    graph = load_graph(args.file, arrays=True)
    check_graph(graph, model_size=False)
    g = gaus_view(graph)
    if g.n == 0:
        raise InvalidProblemError("the graph has no operations to schedule", source=args.file)
    if args.cap is not None:
        g = g.with_caps(args.cap)
    II = args.II
    if args.formulation == "C" and II is None:
        from twill.sched.gaus.bounds import default_II

        II = default_II(g)
    _check_size(g, II, args)
    result = _solve(args, graph, II)
    from twill.sched.gaus.result import run_json

    out = run_json(result, history=bool(args.output))
    meaning, unit = objective_meaning(args.formulation, g.weight_note, args.ratio)
    out.update(objective_meaning=meaning, objective_unit=unit)
    if args.formulation == "C":
        out.update(caps=_caps(g), cap_source="--cap" if args.cap is not None else "graph")
    if args.plot:
        with atomic_output(args.plot) as tmp:
            _plot(result, str(tmp))
    if args.output:
        write_output(args.output, json.dumps(out, indent=1))
    if args.json:
        out.pop("loss_history", None)
        out.pop("violation_history", None)
        print(json.dumps(out))
        return 0 if result.legal else 1
    _table(result, meaning, unit)
    con = stdout_console()
    if args.formulation == "C":
        con.print(_cap_note(g, args.cap, II), markup=False)
    for option, what in ((args.output, "JSON result"), (args.plot, "picture")):
        if option:
            con.print(f"{what} written to {option}", markup=False, highlight=False)
    return 0 if result.legal else 1


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


def _caps(g: Any) -> dict[str, float | None]:
    return {
        r: (float(c) if math.isfinite(c) else None)
        for r, c in zip(g.resources, g.caps, strict=True)
    }


def _cap_note(g: Any, cap: float | None, II: int | None) -> str:
    caps = ", ".join(f"{r} {'unlimited' if c is None else f'{c:g}'}" for r, c in _caps(g).items())
    if cap is not None:
        return f"capacities: --cap {cap:g} on every resource ({caps}); II = {II}"
    return (
        f"capacities: no --cap given, so the graph's own are used ({caps}); II = {II}. "
        "Give --cap N to limit every resource to N units per step."
    )


def _problem(args: argparse.Namespace, graph: Any, II: int | None) -> Any:
    """The :class:`~twill.sched.gaus.problem.GauSProblem` the arguments describe (``--cap``
    is its ``R_cap``)."""
    from twill.sched.gaus.problem import GauSProblem

    f = args.formulation
    ratio = args.ratio if f == "A" else 1.0
    return GauSProblem(graph, f, D=args.D, II=II if f == "C" else None, R_cap=args.cap,
                       ratio=ratio)  # fmt: skip


def _options(args: argparse.Namespace) -> Any:
    """The :class:`~twill.options.SolverOptions` of the run: ``--time-limit`` bounds the whole
    run (GauS returns its best legal schedule so far; the exact baseline defaults to 60 s),
    ``--seed`` (the Gumbel baseline: GS-Schedule's 30 when 0), ``--epochs`` (the Gumbel
    baseline's), and GauS's own settings."""
    from twill.options import SolverOptions
    from twill.sched.baselines.categorical import GumbelSettings
    from twill.sched.gaus.solver import default_settings

    limit = args.deadline.within()  # what reading and checking the graph left of the command
    if args.baseline == "exact" and limit is None:
        limit = 60.0
    seed = (args.seed or 30) if args.baseline == "gumbel" else args.seed
    explicit: dict[str, Any] = {"polish": not args.no_polish, "lns_time": args.lns_time,
                                "device": args.device}  # fmt: skip
    if args.max_iters is not None:
        explicit["max_iters"] = args.max_iters
    gaus = default_settings(args.formulation, **explicit)
    gumbel = GumbelSettings() if args.epochs is None else GumbelSettings(epochs=args.epochs)
    return SolverOptions(time_limit=limit, seed=seed, gaus=gaus, gumbel=gumbel)


def _solve(args: argparse.Namespace, graph: Any, II: int | None) -> Any:
    """GauS or the chosen baseline's ``solve(problem, options)``, under a progress bar on
    stderr that follows the :class:`~twill.progress.ProgressEvent` stream."""
    from dataclasses import replace

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from twill.progress import ProgressEvent

    runner = _runner(args.baseline)
    options = _options(args)
    label = args.baseline or "GauS"
    with Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} {task.fields[line]}"),
        TimeElapsedColumn(),
        console=_stderr_console(),
        transient=True,
        disable=not sys.stderr.isatty(),  # a log gets no bar (and no stray blank line)
    ) as bar:
        task = bar.add_task(label, total=options.gaus.max_iters, line="")

        def progress(event: ProgressEvent) -> None:
            step = event.step or 0
            if step % 10 == 0 or step == event.total or event.method != "gaus":
                best = "-" if event.incumbent is None else f"{event.incumbent:.6g}"
                line = f"{event.message} best {best}".strip()
                bar.update(task, completed=step, total=event.total or step, line=line)

        return runner(_problem(args, graph, II), replace(options, on_progress=progress))


def _runner(baseline: str | None) -> Any:
    """The registered ``solve(problem, options)`` of GauS or of a baseline (the CLI's
    ``--baseline`` names are the registry's names or aliases: ``force``, ``exact``)."""
    from twill.registry import solver

    return solver(baseline or "gaus")


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(file=sys.stderr)


def _table(result: Any, meaning: str, unit: str) -> None:
    from rich.table import Table

    t = Table(title=f"{result.method} on {result.graph} (formulation {result.formulation})")
    modulo = result.II is not None  # formulation C: an initiation interval; A and B have none
    cols = ["status", "legal", f"objective ({unit})", "bound", "D steps"]
    cols += ["II", "iterations", "seconds"] if modulo else ["iterations", "seconds"]
    for col in cols:
        t.add_column(col)
    row = [
        result.status.value,
        str(result.legal),
        "-" if result.objective is None else f"{result.objective:,.6g}",
        "-" if result.bound is None else f"{result.bound:,.6g}",
        str(result.D),
    ]
    row += [str(result.II)] if modulo else []
    t.add_row(*row, str(result.iterations), f"{result.seconds:.2f}")
    con = stdout_console()
    con.print(t)
    con.print(f"objective: {meaning}; bound in the same unit", markup=False)
    con.print(schedule_summary(dict(result.solution or {})), markup=False)
    if result.message:
        con.print(result.message, markup=False)


def schedule_summary(schedule: dict[str, int], shown: int = 12) -> str:
    """``schedule: 6 ops in steps 0..3; a@0, b@0, c@1, ...`` (the first ``shown`` by start
    step; the rest are in ``--json`` and ``-o``)."""
    if not schedule:
        return "schedule: none (no legal schedule found)"
    order = sorted(schedule, key=lambda n: (schedule[n], n))
    first, last = schedule[order[0]], schedule[order[-1]]
    text = ", ".join(f"{n}@{schedule[n]}" for n in order[:shown])
    more = len(order) - shown
    tail = f", ... ({more:,} more: --json or -o lists all)" if more > 0 else ""
    return f"schedule: {len(order):,} ops starting in steps {first}..{last}; {text}{tail}"


def _plot(result: Any, path: str) -> None:
    from twill.visualization.gaus_plots import plot_gaus_run

    plot_gaus_run(result, path)
