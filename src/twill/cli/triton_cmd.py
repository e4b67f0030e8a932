"""``twill import-triton``: a Triton kernel (or saved TTGIR) -> dependence graph JSON."""

from __future__ import annotations

import argparse
from typing import Any

from twill.cli._args import check_output_path

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "import-triton",
        help="extract the loop body of a Triton kernel as a dependence graph",
        description="Compile FILE.py:KERNEL with Triton (num_stages=1) for --arch, take its "
        "innermost loop from the TTGIR and write the dependence graph (normalised costs, U = "
        "300) as JSON. A saved .ttgir file works without Triton. Needs the triton extra: "
        "pip install -e '.[triton]'.",
    )
    p.add_argument("kernel", metavar="FILE.py:KERNEL|FILE.ttgir")
    p.add_argument("--arch", required=True, choices=("sm_90a", "sm_100a"),
                   help="sm_90a (H100) or sm_100a (B200)")  # fmt: skip
    p.add_argument("--signature", action="append", metavar="ARG=TYPE",
                   help="argument type (*fp16, *bf16, fp32, i32); repeat per argument")  # fmt: skip
    p.add_argument("--constexpr", action="append", metavar="NAME=VALUE",
                   help="value of a tl.constexpr argument; repeat per argument")  # fmt: skip
    p.add_argument("--num-warps", type=int, choices=(1, 2, 4, 8, 16, 32), metavar="N",
                   help="Triton's num_warps (default: the YAML's, else 8)")  # fmt: skip
    p.add_argument("--no-normalize", dest="normalize", action="store_false",
                   help="keep SM clock cycles (no §5.2 normalisation)")  # fmt: skip
    p.add_argument("-o", "--output", metavar="FILE", help="write the graph here (default: stdout)")
    p.set_defaults(func=cmd_import_triton)


def cmd_import_triton(args: argparse.Namespace) -> int:
    from twill.io import graph_input_files
    from twill.io.graph_json import dumps_graph, write_graph  # write_graph is atomic
    from twill.triton import import_triton, parse_assignments

    # every file the import reads: the kernel (or TTGIR) and the option YAMLs beside a kernel
    check_output_path(args.output, "-o", graph_input_files(args.kernel))
    sig = parse_assignments(args.signature, "--signature", numeric=False)
    consts = parse_assignments(args.constexpr, "--constexpr", numeric=True)
    graph = import_triton(args.kernel, args.arch, sig, consts, normalize=args.normalize,
                         num_warps=args.num_warps)  # fmt: skip
    if args.output:
        write_graph(graph, args.output)
        print(f"{graph.name}: {len(graph.instructions)} ops, {len(graph.edges)} edges "
              f"-> {args.output}")  # fmt: skip
    else:
        print(dumps_graph(graph))
    return 0
