"""``twill codegen FILE|KERNEL --lang pseudo|cuda [--arch sm_90a|sm_100a] [-o FILE]`` (issue 3).

Solves the graph with Twill (Phase 1 + Phase 2, Algorithm 1) and prints pseudocode or a CUDA C++
skeleton of the warp-specialised pipelined loop. Exit codes: 0 written, 1 no schedule, 2 bad
input.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from twill.cli._args import check_output_path, positive_int, write_output

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``codegen`` sub-command."""
    p = subparsers.add_parser("codegen", help="pseudocode or CUDA skeleton of the Twill schedule")
    p.add_argument("graph", metavar="FILE|KERNEL", help="kernel name or graph file")
    p.add_argument("--resource-model", dest="resource_model", metavar="FILE", default=None,
                   help="HatScheT resource model")  # fmt: skip
    p.add_argument("--lang", choices=("pseudo", "cuda"), default="pseudo")
    p.add_argument("--arch", choices=("sm_90a", "sm_100a"), default=None,
                   help="target of the CUDA skeleton and of a Triton FILE.py:KERNEL input "
                   "(default: a .ttgir's own target, else sm_90a)")  # fmt: skip
    p.add_argument("--max-I", dest="max_I", type=positive_int, default=None, metavar="N",
                   help="largest initiation interval to try")  # fmt: skip
    p.add_argument("-o", "--output", metavar="FILE", default=None, help="write to FILE")
    p.set_defaults(func=cmd_codegen)


def cmd_codegen(args: argparse.Namespace) -> int:
    from twill.io import graph_input_files, load_graph
    from twill.twill_solver import twill_solve

    check_output_path(args.output, "-o", graph_input_files(args.graph, args.resource_model))
    graph = load_graph(args.graph, args.resource_model, args.arch)
    from twill.cli.sched_cmds import DEFAULT_PHASE2_TIME_LIMIT, DEFAULT_TOTAL_TIME_LIMIT

    result = twill_solve(  # bounded like `twill solve`: a hit is "unknown", never infeasible
        graph,
        max_I=args.max_I,
        total_time_limit=DEFAULT_TOTAL_TIME_LIMIT,
        phase2_time_limit=DEFAULT_PHASE2_TIME_LIMIT,
    )
    if result.I is None or result.schedule is None:
        print(f"twill codegen: no schedule for {graph.name} ({result.status.value})",
              file=sys.stderr)  # fmt: skip
        return 1
    from twill.sched.front import WarpSchedule

    ws = result.warp_schedule or WarpSchedule.of(graph, result.schedule, None, result.I, result.L)
    if args.lang == "cuda":
        from twill.codegen.cuda import generate_cuda

        text = generate_cuda(ws, arch=args.arch or _target_of(args.graph))
    else:
        from twill.codegen.pseudo import generate_pseudocode

        text = generate_pseudocode(ws)
    if args.output:
        write_output(args.output, text)
        kind = "CUDA skeleton" if args.lang == "cuda" else "pseudocode"
        print(f"{graph.name}: {kind} (I = {result.I}, L = {result.L}) written to {args.output}")
    else:
        print(text, end="")
    return 0


def _target_of(spec: str) -> str:
    """The skeleton's target without ``--arch``: a ``.ttgir`` input's own, else ``sm_90a``."""
    if str(spec).lower().endswith(".ttgir"):
        from twill.triton.extract import arch_of_ttgir, read_ttgir_file

        return arch_of_ttgir(read_ttgir_file(spec)) or "sm_90a"
    return "sm_90a"
