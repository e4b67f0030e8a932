"""``twill gaus FILE``: GauS (or a baseline) on a graph file (GauS spec; issue "GauS").

Inputs by extension: ``.gml`` (GS-Schedule), ``.aig`` (binary AIGER), ``.graphml`` (HatScheT),
``.json``/``.yaml`` (twill graph). ``--json`` prints one object with ``schedule``, ``legal``,
``objective``, ``II``, ``D``, ``seconds`` (and more); the progress bar goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from twill.cli._args import check_output_path, nonnegative_float, positive_float, positive_int
from twill.errors import InputFormatError, InvalidProblemError

__all__ = ["register", "load_any_graph", "run_gaus"]

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
    p.add_argument("file", help="graph file: .gml, .aig, .graphml, or twill .json/.yaml")
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
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--no-polish",
        action="store_true",
        help="A: skip the local search after legalisation (report GauS proper only)",
    )
    p.add_argument("--max-iters", type=positive_int, default=None, help="cap on Adam steps")
    p.add_argument("--time-limit", type=positive_float, default=60.0, help="exact baseline cap (s)")
    p.set_defaults(func=run_gaus)


def load_any_graph(path: str) -> Any:
    """A :class:`GauSGraph` or :class:`DependenceGraph` from any supported file."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(2, "no such file", str(p))
    ext = p.suffix.lower()
    if ext == ".gml":
        from twill.io.gml import read_gml

        return read_gml(p)
    if ext == ".aig":
        from twill.io.aiger import read_aiger

        return read_aiger(p)
    if ext in (".graphml", ".xml"):
        from twill.io.hatschet import read_hatschet

        return read_hatschet(p)
    if ext in (".json", ".yaml", ".yml"):
        from twill.io.graph_json import read_graph

        return read_graph(p)
    raise InputFormatError(
        f"unknown graph format {ext!r}: expected .gml, .aig, .graphml, .json or .yaml",
        source=str(p),
    )


def run_gaus(args: argparse.Namespace) -> int:
    from twill.sched.gaus.solver import as_gaus_graph

    if args.baseline and args.formulation not in BASELINE_FORMULATIONS[args.baseline]:
        supported = ", ".join(BASELINE_FORMULATIONS[args.baseline])
        raise InvalidProblemError(
            f"--baseline {args.baseline} does not implement formulation {args.formulation} "
            f"(it implements: {supported})"
        )
    check_output_path(args.output, "-o", (args.file,))
    check_output_path(args.plot, "--plot", (args.file,), (".png", ".svg", ".pdf"))
    graph = load_any_graph(args.file)
    g = as_gaus_graph(graph)
    if args.cap is not None:
        g = g.with_caps(args.cap)
    II = args.II
    if args.formulation == "C" and II is None:
        from twill.sched.gaus.bounds import default_II

        II = default_II(g)
    if args.baseline:
        result = _run_baseline(args, g, II)
    else:
        result = _run_gaus(args, graph if args.cap is None else g, II)
    out = result.to_dict(history=bool(args.output))
    if args.plot:
        _plot(result, args.plot)
    if args.output:
        Path(args.output).write_text(json.dumps(out, indent=1))
    if args.json:
        out.pop("loss_history", None)
        out.pop("violation_history", None)
        print(json.dumps(out))
    else:
        _table(result)
    return 0 if result.legal else 1


def _run_gaus(args: argparse.Namespace, graph: Any, II: int | None) -> Any:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from twill.sched.gaus.solver import GauSSolver

    with Progress(
        TextColumn("GauS"),
        BarColumn(),
        TextColumn(
            "{task.completed}/{task.total} loss {task.fields[loss]:.4g} "
            "violation {task.fields[viol]:.3g} best {task.fields[best]}"
        ),
        TimeElapsedColumn(),
        console=_stderr_console(),
        transient=True,
    ) as bar:
        task = bar.add_task("gaus", total=args.max_iters or 2000, loss=0.0, viol=0.0, best="-")

        def progress(step: int, total: int, loss: float, viol: float, best: float | None) -> None:
            if step % 10 == 0 or step == total:
                bar.update(
                    task,
                    completed=step,
                    total=total,
                    loss=loss,
                    viol=viol,
                    best="-" if best is None else f"{best:.6g}",
                )

        solver = GauSSolver(
            graph,
            D=args.D,
            device=args.device,
            seed=args.seed,
            on_progress=progress,
            polish=not args.no_polish,
        )
        return solver.solve(args.formulation, II=II, ratio=args.ratio, max_iters=args.max_iters)


def _run_baseline(args: argparse.Namespace, g: Any, II: int | None) -> Any:
    f = args.formulation
    if args.baseline == "list":
        from twill.sched.baselines.list_sched import list_schedule

        return list_schedule(g, f, D=args.D, II=II, ratio=args.ratio)
    if args.baseline == "force":
        from twill.sched.baselines.force_directed import force_directed_schedule

        return force_directed_schedule(g, f, D=args.D, II=II, ratio=args.ratio)
    if args.baseline == "gumbel":
        from twill.sched.baselines.categorical import gumbel_schedule

        return gumbel_schedule(g, f, D=args.D, ratio=args.ratio, seed=args.seed or 30)
    from twill.sched.baselines.exact import exact_schedule

    return exact_schedule(
        g, f, D=args.D, II=II, ratio=args.ratio, time_limit=args.time_limit, seed=args.seed
    )


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(file=sys.stderr)


def _table(result: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{result.method} on {result.graph} (formulation {result.formulation})")
    for col in ("status", "legal", "objective", "bound", "D", "II", "iterations", "seconds"):
        t.add_column(col)
    t.add_row(
        result.status.value,
        str(result.legal),
        f"{result.objective}",
        f"{result.bound}",
        str(result.D),
        str(result.II),
        str(result.iterations),
        f"{result.seconds:.2f}",
    )
    Console().print(t)
    if result.message:
        Console().print(result.message)


def _plot(result: Any, path: str) -> None:
    from twill.visualization.gaus_plots import plot_gaus_run

    plot_gaus_run(result, path)
