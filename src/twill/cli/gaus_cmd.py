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

__all__ = ["register", "run_gaus", "schedule_summary"]

BASELINES = ("list", "force", "gumbel", "exact")


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


def gaus_run(args: argparse.Namespace) -> Any:  # noqa: ANN401
    """The :class:`~twill.sched.gaus.pipeline.GauSRun` of the command line: it ends by the
    command's deadline (``--time-limit`` from the command's start), so reading and checking
    the graph and building the problem count against it."""
    from twill.sched.front import GauSRun

    return GauSRun(formulation=args.formulation, D=args.D, II=args.II, cap=args.cap,
                   ratio=args.ratio, baseline=args.baseline, seed=args.seed,
                   polish=not args.no_polish, lns_time=args.lns_time, device=args.device,
                   max_iters=args.max_iters, epochs=args.epochs,
                   time_limit=args.deadline.within(), deadline=args.deadline)  # fmt: skip


def run_gaus(args: argparse.Namespace) -> int:
    from twill.io import graph_input_files, load_graph
    from twill.sched.front import check_baseline

    check_baseline(args.baseline, args.formulation)  # before the file is read
    inputs = graph_input_files(args.file)
    check_output_and_plot(args, inputs, (".png", ".svg", ".pdf"))
    graph = load_graph(args.file, arrays=True)
    out = _solve(args, graph)
    result, report = out.result, out.report
    if args.plot:
        with atomic_output(args.plot) as tmp:
            _plot(result, str(tmp))
    if args.output:
        write_output(args.output, json.dumps(report, indent=1))
    if args.json:
        report.pop("loss_history", None)
        report.pop("violation_history", None)
        print(json.dumps(report))
        return 0 if result.legal else 1
    _table(result, out.meaning, out.unit)
    con = stdout_console()
    if args.formulation == "C":
        con.print(_cap_note(out.view, args.cap, out.II), markup=False)
    for option, what in ((args.output, "JSON result"), (args.plot, "picture")):
        if option:
            con.print(f"{what} written to {option}", markup=False, highlight=False)
    return 0 if result.legal else 1


def _cap_note(g: Any, cap: float | None, II: int | None) -> str:  # noqa: ANN401, N803
    from twill.sched.front import caps_of

    caps = ", ".join(f"{r} {'unlimited' if c is None else f'{c:g}'}" for r, c in caps_of(g).items())
    if cap is not None:
        return f"capacities: --cap {cap:g} on every resource ({caps}); II = {II}"
    return (
        f"capacities: no --cap given, so the graph's own are used ({caps}); II = {II}. "
        "Give --cap N to limit every resource to N units per step."
    )


def _solve(args: argparse.Namespace, graph: Any) -> Any:  # noqa: ANN401
    """:func:`twill.sched.gaus.pipeline.run_gaus` under a progress bar on stderr that
    follows the :class:`~twill.progress.ProgressEvent` stream."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from twill.sched.front import options_for, run_gaus

    run = gaus_run(args)
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
        task = bar.add_task(label, total=options_for(run).gaus.max_iters, line="")

        def progress(event: Any) -> None:  # noqa: ANN401 (a ProgressEvent)
            step = event.step or 0
            if step % 10 == 0 or step == event.total or event.method != "gaus":
                best = "-" if event.incumbent is None else f"{event.incumbent:.6g}"
                line = f"{event.message} best {best}".strip()
                bar.update(task, completed=step, total=event.total or step, line=line)

        return run_gaus(graph, run, source=args.file, on_progress=progress,
                        history=bool(args.output))  # fmt: skip


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
