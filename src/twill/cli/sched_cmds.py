"""``twill kernels``, ``twill bounds`` and ``twill solve`` (Twill Phases 1 and 2).

``solve`` prints the problem it solved (``modulo``, or ``modulo+warp-specialisation`` for a
machine with warps or with ``--phase2``), I (proven optimal or not), the schedule, L, the
certificate and a text picture of the modulo reservation table; ``--json`` prints one object:
the keys every solver's :meth:`~twill.results.SolveResult.to_dict` has (``objective``,
``objective_unit``, ``bound``, ``solution``, ``timings``, ...), then those of
:meth:`twill.sched.exact.pipeline.TwillResult.to_dict` (fields ``problem``, ``status``,
``I``, ``lower_bound``, ``gap``, ``optimal``, ``L``, ``schedule``, ``certificate``,
``incumbent``, ``seconds``, ...). On a terminal, a status line on stderr follows the search
(the I under test, its verdict, the proven lower bound, the incumbent's I and the gap, the
elapsed time), and an interrupt leaves its last state on stderr (terminal or not). Exit
codes: 0 schedule found, 1 no schedule (infeasible up to ``--max-I`` or time limits), 2 bad
input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from twill.cli._args import (
    add_threads,
    add_time_limit,
    atomic_output,
    check_output_and_plot,
    check_output_path,
    positive_int,
    thread_count,
    time_limit_arg,
    write_output,
)
from twill.cli._console import stdout_console
from twill.errors import InvalidProblemError

if TYPE_CHECKING:  # scheduling stack and rich are imported per command, not at CLI start-up
    from rich.status import Status as RichStatus

    from twill.options import SolverOptions
    from twill.sched.front import DependenceGraph, OnProgress, ProgressEvent

__all__ = ["register"]

# What --plot can write (matplotlib picks the format from the suffix).
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def register(subparsers: Any) -> None:
    """Add the ``kernels``, ``bounds`` and ``solve`` sub-commands."""
    p = subparsers.add_parser("kernels", help="list the built-in example kernels")
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=cmd_kernels)

    p = subparsers.add_parser("bounds", help="ResMII, RecMII and MII of a graph")
    _add_graph_args(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", metavar="FILE", help="also write the JSON result to FILE")
    p.set_defaults(func=cmd_bounds)

    p = subparsers.add_parser(
        "solve",
        help="minimum-I modulo schedule with a certificate (plus warp specialisation on GPUs)",
    )
    _add_graph_args(p)
    from twill.cli.triton_cmd import add_kernel_args, add_normalize_arg

    add_kernel_args(p)
    add_normalize_arg(p)
    _add_search_args(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="every certificate entry; the reservation table however wide")  # fmt: skip
    p.add_argument("-o", "--output", metavar="FILE", help="also write the JSON result to FILE")
    p.add_argument(
        "--compare-triton",
        action="store_true",
        help="also price Triton's default schedule of a FILE.py:KERNEL in Twill's model and "
        "print its I and L beside Twill's (key 'triton' with --json)",
    )
    _add_phase2_args(p)
    p.set_defaults(func=cmd_solve)  # fmt: skip


DEFAULT_TOTAL_TIME_LIMIT = 600.0  # seconds; every exact solve from the CLI is bounded
DEFAULT_PHASE2_TIME_LIMIT = 60.0  # seconds per Phase-2 (I, L) point


def _add_search_args(p: argparse.ArgumentParser) -> None:
    """``twill solve``'s search limits: the Phase-1 backend, the largest I, the time limits,
    solver threads and worker processes."""
    p.add_argument(
        "--backend",
        choices=("cbc", "cpsat"),
        default=None,
        help="exact Phase-1 solver (default: cpsat for a Triton kernel or TTGIR file given "
        "with --arch, whose fine-grained graphs CBC is slow on; else cbc)",
    )
    p.add_argument(
        "--max-I",
        dest="max_I",
        type=positive_int,
        default=None,
        metavar="N",
        help="largest initiation interval to try",
    )
    add_time_limit(p, DEFAULT_TOTAL_TIME_LIMIT, "seconds for the whole command, reading the "
                   "input and Phases 1 and 2 included (default %(default)g); when it runs out, "
                   "the best verified schedule is reported ('feasible', with its lower bound "
                   "and gap) or 'unknown' without one")  # fmt: skip
    p.add_argument(
        "--solve-time-limit",
        dest="solve_time_limit",
        type=time_limit_arg,
        default=None,
        metavar="S",
        help="seconds per Phase-1 solve, inside --time-limit (a hit makes I unproven)",
    )
    add_threads(
        p,
        "solver threads (default 1, at most 1,024) of each Phase-1 solve; same "
        "proven I and L, possibly another schedule",
    )
    p.add_argument("--heuristic-only", dest="heuristic_only", action="store_true",
                   help="no exact solve: the heuristic schedule alone (iterative modulo "
                   "scheduling, then slack scheduling below it), verified, with MII as its "
                   "lower bound; Phase 1 only")  # fmt: skip
    p.add_argument("--workers", type=thread_count, default=1, metavar="N",
                   help="worker processes (default 1): with Phase 2 and the cpsat backend, "
                   "that many initiation intervals examined at once; the same answer as "
                   "one worker")  # fmt: skip


def _add_phase2_args(p: argparse.ArgumentParser) -> None:
    """Phase 2 options: warp specialisation on or off, probe mode, picture."""
    p.add_argument(
        "--phase2",
        dest="phase2",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="add (or, with --no-phase2, skip) Phase 2, warp specialisation; default: only "
        "when the machine has warps (the GPU kernels), so an HLS loop is a modulo problem",
    )
    p.add_argument(
        "--probe",
        action="store_true",
        help="Phase 2 only on the window at the Phase-1 optimal I (implies --phase2)",
    )
    p.add_argument(
        "--phase2-time-limit",
        dest="phase2_time_limit",
        type=time_limit_arg,
        default=None,
        metavar="S",
        help=f"seconds per Phase-2 (I, L) point (default {DEFAULT_PHASE2_TIME_LIMIT:g}; implies "
        "--phase2; a hit is 'unknown')",
    )
    p.add_argument("--plot", metavar="FILE.png|FILE.svg", default=None,
                   help="draw the pipeline (one lane per warp) to FILE")  # fmt: skip


def _add_graph_args(p: argparse.ArgumentParser) -> None:
    from twill.cli.triton_cmd import add_arch_arg

    p.add_argument(
        "graph",
        metavar="FILE|KERNEL",
        help="kernel name (see `twill kernels`), .json/.yaml graph, HatScheT .graphml, "
        "Triton FILE.py:KERNEL (with --arch) or .ttgir",
    )
    p.add_argument("--resource-model", dest="resource_model", metavar="FILE", default=None,
                   help="HatScheT resource model (default: NAME_RM.xml or NAMERM.xml)")  # fmt: skip
    add_arch_arg(p, "target of a Triton FILE.py:KERNEL (a .ttgir is read for its own ttg.target; "
                 "another --arch is refused)")  # fmt: skip


def _load(args: argparse.Namespace) -> DependenceGraph:
    from twill.io import load_graph

    return load_graph(args.graph, args.resource_model, getattr(args, "arch", None))


def cmd_kernels(args: argparse.Namespace) -> int:
    from twill.sched.front import KERNELS

    rows = []
    for name, factory in KERNELS.items():
        g = factory()
        doc = (factory.__doc__ or "").strip().splitlines()[0]
        rows.append({"name": name, "ops": len(g.instructions), "edges": len(g.edges),
                     "machine": g.machine.name, "description": doc})  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.table import Table

    table = Table(title="twill kernels")
    for col in ("name", "ops", "edges", "machine", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], str(r["ops"]), str(r["edges"]), r["machine"], r["description"])
    stdout_console().print(table)
    return 0


def cmd_bounds(args: argparse.Namespace) -> int:
    from twill.io import graph_input_files
    from twill.sched.front import rec_mii, res_mii, total_usage

    check_output_path(args.output, "-o", graph_input_files(args.graph, args.resource_model))
    g = _load(args)
    caps = g.machine.functional_units
    usage = {fu: {"used": u, "capacity": caps.get(fu, -1)} for fu, u in total_usage(g).items()}
    out = {"graph": g.name, "ops": len(g.instructions), "edges": len(g.edges),
           "res_mii": res_mii(g), "rec_mii": rec_mii(g), "units": usage}  # fmt: skip
    out["mii"] = max(out["res_mii"], out["rec_mii"])
    out.update(_time_unit_fields(g))
    if args.output:
        write_output(args.output, json.dumps(out, indent=2) + "\n")
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{g.name}: {out['ops']} ops, {out['edges']} edges")
    print(f"  ResMII = {out['res_mii']}  RecMII = {out['rec_mii']}  MII = {out['mii']}")
    for fu, u in usage.items():
        cap = "unlimited" if u["capacity"] < 0 else u["capacity"]
        word = "cycles" if out["time_unit"] == "cycles" else "time units"
        print(f"  {fu}: {u['used']} {word} of use per iteration, capacity {cap}")
    if "sm_clocks_per_unit" in out:
        print(f"  time: normalised units, 1 unit = {out['sm_clocks_per_unit']:,g} SM clocks")
    if args.output:
        print(f"  JSON result written to {args.output}")
    return 0


def _progress_callback() -> tuple[OnProgress | None, RichStatus | None]:
    """A rich status line on stderr that follows the solver's progress events (only when
    stderr is a terminal, so that pipes and logs get no control characters)."""
    if not sys.stderr.isatty():
        return None, None
    from rich.console import Console

    status = Console(stderr=True).status("Phase 1: searching I ...")
    status.start()

    def on_progress(event: ProgressEvent) -> None:
        status.update(event.describe())

    return on_progress, status


def _phase2_choice(args: argparse.Namespace) -> bool | None:
    """``--phase2``/``--no-phase2``, with ``--probe`` and ``--phase2-time-limit`` implying
    Phase 2 (``None``: the machine decides)."""
    wants = args.probe or args.phase2_time_limit is not None
    if wants and args.phase2 is False:
        raise InvalidProblemError("--probe and --phase2-time-limit need Phase 2; drop --no-phase2")
    if args.heuristic_only:
        if wants or args.phase2:
            raise InvalidProblemError("--heuristic-only is Phase 1 alone; drop the Phase-2 flags")
        return False
    return True if wants else args.phase2


def _shared_fields(result: Any, options: SolverOptions) -> dict[str, Any]:
    """The keys every method's ``--json`` has (:meth:`~twill.results.SolveResult.to_dict`),
    with the settings and seed the search ran under."""
    from twill.sched.front import with_run_settings

    return with_run_settings(result.as_result(), options).to_dict()


def _options(args: argparse.Namespace, backend: str, phase2: bool | None) -> SolverOptions:
    """The command's flags as one :class:`~twill.options.SolverOptions`, its deadline
    anchored when the command began (``--time-limit`` counts reading the input)."""
    from twill.options import SolverOptions
    from twill.sched.front import TwillSettings

    settings = TwillSettings(backend=backend, solve_time_limit=args.solve_time_limit, phase2=phase2,
                             probe=args.probe, point_time_limit=args.phase2_time_limit
                             or DEFAULT_PHASE2_TIME_LIMIT,
                             exact=not args.heuristic_only)  # fmt: skip
    return SolverOptions(time_limit=args.time_limit, threads=args.threads, deadline=args.deadline,
                         workers=args.workers, twill=settings)  # fmt: skip


@contextmanager
def _followed(args: argparse.Namespace, options: SolverOptions) -> Iterator[SolverOptions]:
    """``options`` with the command's progress line as their callback; on Ctrl-C the last
    line (the I under test, the lower bound, the incumbent and the time) is kept for the CLI's
    one interrupt line, on a terminal or not (a log then still says where the search stood).
    The command hands these options straight to :func:`twill.sched.exact.pipeline.run`, so
    the flags reach the solvers in as few calls as possible (docs/architecture.md)."""
    from dataclasses import replace

    on_progress, status = _progress_callback()
    seen: list[str] = []

    def follow(event: ProgressEvent) -> None:  # the last line outlives an interrupt
        seen[:] = [event.describe()]
        if on_progress is not None:
            on_progress(event)

    try:
        yield replace(options, on_progress=follow)
    except KeyboardInterrupt:
        if seen:  # where the search stood, named in the CLI's one interrupt line
            args.interrupted_at = seen[0]
        raise
    finally:
        if status is not None:
            status.stop()


def _default_backend(args: argparse.Namespace) -> str:
    """CP-SAT for a Triton kernel, its TTGIR, or a graph that records its Triton ``arch``."""
    from twill.cli.triton_cmd import is_triton_spec

    if args.backend:
        return args.backend
    if getattr(args, "arch", None) or is_triton_spec(str(args.graph)):
        return "cpsat"
    return "cpsat" if _records_arch(args) else "cbc"


def _records_arch(args: argparse.Namespace) -> bool:
    """Whether the input is a graph file written by ``import-triton`` (it records ``arch``)."""
    if not str(args.graph).lower().endswith((".json", ".yaml", ".yml")):
        return False
    from twill.io.graph_json import recorded_arch

    return recorded_arch(args.graph) is not None


def _refuse_unfit_loops(
    kernel: Any,  # noqa: ANN401 (a TritonImport, or None for a graph file)
    args: argparse.Namespace,
    graph: DependenceGraph | None = None,
) -> None:
    """Exit 2 before any search when a loop to be solved provably has no schedule at any I
    for want of registers (:func:`~twill.triton.register_conflict`): its tiles are outside
    Twill's model, which has no register spilling (docs/triton.md, Limitations). A graph
    file written by ``import-triton`` (``graph``) is refused as its kernel is, so that both
    give the same answer."""
    from twill.errors import InvalidProblemError
    from twill.triton import register_conflict

    if kernel is None:
        warps = _cta_warps(args, None)
        loops = [(f"graph {graph.name!r}", graph, warps)] if graph is not None else []
    else:
        picked = kernel.loops if args.loop is None else [kernel.picked]
        loops = [(f"loop at line {lp.line}", lp.graph, lp.num_warps) for lp in picked]
    more = kernel is not None and len(kernel.loops) > 1
    for where, g, warps in loops:
        proof = register_conflict(g, warps if getattr(args, "phase2", None) is not False else None)
        if proof is not None:
            raise InvalidProblemError(
                f"{where}: {proof}. Twill does not model register spilling "
                "(docs/triton.md, Limitations: no register spilling)"
                + ("; --loop LINE solves another loop" if more else ""),
                source=str(args.graph),
            )


def _kernel_and_graph(
    args: argparse.Namespace, deadline: float | None = None
) -> tuple[Any, DependenceGraph]:
    """The Triton kernel (``None`` for another input) and the graph to solve: the kernel's
    costliest loop (or ``--loop``), else the graph file. Loops with a register proof are
    refused first, for a graph that ``import-triton`` wrote as for its kernel."""
    from twill.cli.triton_cmd import is_triton_spec, load_kernel, refuse_kernel_flags

    if not is_triton_spec(str(args.graph)):
        refuse_kernel_flags(args, str(args.graph))
        graph = _load(args)
        if _records_arch(args):
            _refuse_unfit_loops(None, args, graph)
        return None, graph
    kernel = load_kernel(args, args.graph, normalize=args.normalize, deadline=deadline)
    _refuse_unfit_loops(kernel, args)
    return kernel, kernel.picked.graph


def _cta_warps(args: argparse.Namespace, kernel: Any) -> int | None:  # noqa: ANN401
    """The CTA's warps of a Triton kernel's loop (the kernel's ``num_warps``, or the one a
    graph written by ``import-triton`` records): the problem is then the union with one
    partition (:mod:`twill.sched.exact.single`); ``None`` for any other input."""
    if kernel is not None:
        return kernel.picked.num_warps
    if not _records_arch(args):
        return None
    from twill.io.graph_json import recorded_num_warps

    return recorded_num_warps(args.graph)


def cmd_solve(args: argparse.Namespace) -> int:
    from twill.cli.compile_cmd import check_compare_args
    from twill.io import graph_input_files
    from twill.sched.front import WarpSpecProblem, run
    from twill.visualization.text import format_result

    inputs = graph_input_files(args.graph, args.resource_model)
    check_output_and_plot(args, inputs, PLOT_SUFFIXES)
    phase2 = _phase2_choice(args)
    check_compare_args(args)
    options = _options(args, _default_backend(args), phase2)  # the deadline runs from here:
    kernel, graph = _kernel_and_graph(args, options.deadline)  # reading counts
    warps = _cta_warps(args, kernel) if phase2 is not False else None
    with _followed(args, options) as followed:  # a kernel: the union with one partition
        result = run(WarpSpecProblem(graph, max_II=args.max_I,
                                     single_partition_warps=warps), followed)  # fmt: skip
    loops_text = ""
    extra: dict[str, Any] = {}
    if kernel is not None:
        from twill.cli.triton_cmd import format_loops, loop_entry
        from twill.triton import explain_joint_I, register_conflict

        entries = []
        for lp in kernel.loops:
            solved = result if lp is kernel.picked else None
            if solved is None and args.loop is None:
                one = WarpSpecProblem(
                    lp.graph,
                    max_II=args.max_I,
                    single_partition_warps=lp.num_warps if warps else None,
                )
                with _followed(args, options) as followed:
                    solved = run(one, followed)
            if solved is not None:
                entries.append(loop_entry(lp, solved))  # the same deadline:
                entries[-1]["why_I"] = explain_joint_I(lp.graph, solved, deadline=options.deadline)
                if solved.I is None:  # say why, a proof for every I first
                    proof = register_conflict(lp.graph, lp.num_warps if warps else None)
                    entries[-1]["why_I"] = proof or entries[-1]["why_I"]
        extra = {"arch": kernel.arch, "loop": kernel.picked.line, "loops": entries,
                 "notes": list(kernel.notes)}  # fmt: skip
        done = [e["I_clk"] for e in entries if e.get("I_clk") is not None]
        extra["total_I_clk"] = sum(done) if len(done) == len(entries) else None
        loops_text = format_loops(entries, kernel.notes)
    shared = _shared_fields(result, options)  # every method's top-level keys, then Twill's
    payload = {**shared, **result.to_dict(), **_time_unit_fields(graph), **extra}
    if args.compare_triton:
        from twill.cli.compile_cmd import compare_triton

        payload["triton"] = compare_triton(args, result.I, result.L)
    text = json.dumps(payload, indent=2)
    if args.output:
        write_output(args.output, text + "\n")
    if args.json:
        print(text)
    else:
        print(format_result(result, graph, verbose=args.verbose, width=_terminal_width()))
        if loops_text:
            print(loops_text)
        if args.compare_triton:
            from twill.cli.compile_cmd import print_comparison

            print_comparison(payload["triton"])
        if args.output:
            print(f"  JSON result written to {args.output}")
    if args.plot and result.I is not None:
        from twill.sched.front import WarpSchedule
        from twill.visualization.plots import plot_pipeline

        ws = result.warp_schedule or WarpSchedule.of(
            graph, result.schedule, None, result.I, result.L
        )
        with atomic_output(args.plot) as tmp:
            plot_pipeline(ws, path=str(tmp))
        if not args.json:
            print(f"  picture written to {args.plot}")
    return 0 if result.I is not None else 1


def _terminal_width() -> int:
    """Columns of the terminal on stdout (``COLUMNS``, else 120 when stdout is not one)."""
    import shutil

    return shutil.get_terminal_size((120, 24)).columns


def _time_unit_fields(graph: DependenceGraph) -> dict[str, Any]:
    """``time_unit`` of every I, L and start time in the JSON (``"cycles"`` or ``"units"``)
    and, for normalised costs, ``sm_clocks_per_unit``."""
    from twill.visualization.text import clocks_per_unit

    scale = clocks_per_unit(graph)
    if scale is None:
        return {"time_unit": "cycles"}
    return {"time_unit": "units", "sm_clocks_per_unit": round(scale, 3)}
