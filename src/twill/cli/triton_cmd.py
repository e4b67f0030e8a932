"""``twill import-triton``: a Triton kernel (or saved TTGIR) -> dependence graph JSON; and the
kernel options and per-loop report that ``twill solve FILE.py:KERNEL`` shares with it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from twill.cli._args import check_output_path

if TYPE_CHECKING:
    from twill.triton import TritonImport
    from twill.triton.extract import ExtractedLoop

__all__ = [
    "TRITON_ARCHES",
    "register",
    "add_arch_arg",
    "add_build_args",
    "add_kernel_args",
    "add_normalize_arg",
    "is_triton_spec",
    "load_kernel",
    "loop_entry",
    "format_loops",
]

#: The targets a Triton kernel is compiled for: H100 and B200.
TRITON_ARCHES = ("sm_90a", "sm_100a")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "import-triton",
        help="extract the loop body of a Triton kernel as a dependence graph",
        description="Compile FILE.py:KERNEL with Triton for --arch (pipelining and warp "
        "specialisation off), find every loop in the TTGIR, and write the dependence graph of "
        "the costliest one (or --loop LINE) as JSON (normalised costs, U = 300). Every loop is "
        "listed. A saved .ttgir file works without Triton. Needs the triton extra: "
        "pip install -e '.[triton]'.",
    )
    p.add_argument("kernel", metavar="FILE.py:KERNEL|FILE.ttgir")
    add_arch_arg(
        p,
        "sm_90a (H100) or sm_100a (B200); needed for FILE.py:KERNEL, a .ttgir file is read for "
        "the target it was compiled for",
    )
    add_kernel_args(p)
    add_normalize_arg(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write the graph here (default: stdout)")
    p.set_defaults(func=cmd_import_triton)


def add_arch_arg(p: argparse.ArgumentParser, help: str, *, required: bool = False) -> None:
    """``--arch``, the GPU target of a Triton kernel (shared by ``import-triton``,
    ``compile`` and ``solve``; ``help`` says what each does with it)."""
    p.add_argument("--arch", required=required, default=None, choices=TRITON_ARCHES, help=help)


def add_normalize_arg(p: argparse.ArgumentParser) -> None:
    """``--no-normalize`` (shared by ``import-triton`` and ``solve``)."""
    p.add_argument(
        "--no-normalize",
        dest="normalize",
        action="store_false",
        help="keep SM clock cycles (no cost normalisation, Twill paper §5.2)",
    )


def add_kernel_args(p: argparse.ArgumentParser) -> None:
    """The options of a Triton ``FILE.py:KERNEL`` (shared by ``import-triton`` and ``solve``):
    how to compile it (:func:`add_build_args`), which autotune config and which loop."""
    add_build_args(p)
    p.add_argument(
        "--config",
        type=int,
        default=None,
        metavar="N",
        help="which @triton.autotune config supplies constexprs and num_warps "
        "(default: the first, 0)",
    )
    p.add_argument(
        "--loop",
        type=int,
        default=None,
        metavar="LINE",
        help="the loop at this kernel source line (default: every loop, the "
        "costliest one described at the top)",
    )


def add_build_args(p: argparse.ArgumentParser) -> None:
    """How to compile a Triton ``FILE.py:KERNEL``: argument types, constexprs and warps
    (shared by ``import-triton``, ``solve`` and ``compile``)."""
    p.add_argument(
        "--signature",
        action="append",
        metavar="ARG=TYPE",
        help="argument type (*fp16, *bf16, fp32, i32); repeat per argument",
    )
    p.add_argument(
        "--constexpr",
        action="append",
        metavar="NAME=VALUE",
        help="value of a tl.constexpr argument (a number, true/false, None, a Triton dtype "
        "such as fp16 or tl.bfloat16, or a string); repeat per argument",
    )
    p.add_argument(
        "--num-warps",
        type=int,
        choices=(1, 2, 4, 8, 16, 32),
        metavar="N",
        help="Triton's num_warps (default: the autotune config's, else the YAML's, else 8)",
    )


def is_triton_spec(spec: str) -> bool:
    """``FILE.py:KERNEL`` or a ``.ttgir`` file."""
    return spec.lower().endswith(".ttgir") or (
        ":" in spec and spec.rpartition(":")[0].endswith(".py")
    )


#: The options :func:`add_kernel_args` adds, as (attribute, flag): they shape a Triton kernel only.
_KERNEL_FLAGS = (
    ("signature", "--signature"),
    ("constexpr", "--constexpr"),
    ("num_warps", "--num-warps"),
    ("config", "--config"),
    ("loop", "--loop"),
)


def refuse_kernel_flags(args: argparse.Namespace, spec: str) -> None:
    """A kernel option given with an input that is not a Triton kernel is refused: it would
    be ignored silently (``twill solve g.yaml --loop 12`` solves the whole graph)."""
    from twill.errors import InvalidProblemError

    given = [flag for name, flag in _KERNEL_FLAGS if getattr(args, name, None) not in (None, [])]
    given += ["--no-normalize"] if getattr(args, "normalize", True) is False else []
    if given:
        raise InvalidProblemError(
            f"{', '.join(given)} only apply to a Triton FILE.py:KERNEL or .ttgir input",
            source=spec,
        )


def load_kernel(
    args: argparse.Namespace, spec: str, normalize: bool = True, deadline: float | None = None
) -> TritonImport:
    """Every loop of the kernel named on the command line (with its kernel options); the
    command's ``deadline`` bounds the cost normalisation."""
    from twill.triton.extract import normalisation_deadline

    with normalisation_deadline(deadline):
        return _import_loops(args, spec, normalize)


def _import_loops(args: argparse.Namespace, spec: str, normalize: bool) -> TritonImport:
    from twill.triton import import_triton_loops, parse_assignments

    sig = parse_assignments(args.signature, "--signature", numeric=False)
    consts = parse_assignments(args.constexpr, "--constexpr", numeric=True)
    return import_triton_loops(
        spec,
        args.arch,
        sig,
        consts,
        normalize=normalize,
        num_warps=args.num_warps,
        loop=args.loop,
        config=args.config,
    )


def loop_entry(loop: ExtractedLoop, result: Any = None) -> dict[str, Any]:  # noqa: ANN401
    """One entry of the ``loops`` list: the loop and, when solved, its answer."""
    out: dict[str, Any] = {"line": loop.line, "ops": loop.ops, "reductions": loop.reductions}
    if result is not None:
        i_clk = round(result.I / loop.scale) if result.I is not None else None
        out.update(
            I=result.I,
            L=result.L,
            optimal=result.optimal,
            warps=result.warps,
            assignment=result.assignment,
            status=result.status.value,
            problem=result.problem,
            seconds=round(result.seconds, 3),
            I_clk=i_clk,
        )
    out.update(
        cycles=loop.cycles, context=[c.to_dict() for c in loop.context], notes=list(loop.notes),
        calls=list(loop.calls), ttgir_line=loop.ttgir_line,
    )  # fmt: skip
    return out


def format_loops(entries: list[dict[str, Any]], notes: tuple[str, ...]) -> str:
    """Text lines: every loop with its numbers, its context and notes, and a total."""
    lines = [f"  note: {n}" for n in notes]
    lines.append(f"  loops ({len(entries)}):")
    for e in entries:
        solved = ""
        if "I" in e and e["I"] is None:  # solved, no schedule: say the status, not "I = None"
            solved = f", no schedule ({e['status']})"
        elif "I" in e:
            opt = "optimal" if e["optimal"] else "not proven optimal"
            slots = {w for ws in (e.get("assignment") or {}).values() for w in ws}
            warps = len(slots) if slots else "-"  # an op may span several slots
            solved = (
                f", I = {e['I']} ({opt}, about {e['I_clk']} SM clocks), L = {e['L']}, "
                f"warp slots used {warps}"
            )
        via = "".join(f" (called at line {c})" for c in e.get("calls", []))
        lines.append(
            f"    line {e['line']}{via}: {e['ops']} ops, {e['reductions']} reductions, "
            f"{e['cycles']} SM clocks one after another{solved}"
        )
        for c in e["context"]:
            lines.append(
                f"      inside the loop at line {c['line']}: its body outside this "
                f"loop has {c['ops']} ops, {c['cycles']} SM clocks (not scheduled)"
            )
        lines += [f"      {n}" for n in e["notes"]]
        if e.get("why_I"):
            lines.append(f"      {e['why_I']}")
    done = [e["I_clk"] for e in entries if e.get("I_clk") is not None]
    if done:
        lines.append(f"  total: about {sum(done)} SM clocks for one iteration of each loop")
    return "\n".join(lines)


def cmd_import_triton(args: argparse.Namespace) -> int:
    import sys

    from twill.io import graph_input_files
    from twill.io.graph_json import dumps_graph, write_graph  # write_graph is atomic

    # every file the import reads: the kernel (or TTGIR) and the option YAMLs beside a kernel
    check_output_path(args.output, "-o", graph_input_files(args.kernel))
    imported = load_kernel(args, args.kernel, normalize=args.normalize)
    graph = imported.picked.graph
    report = format_loops([loop_entry(lp) for lp in imported.loops], imported.notes)
    if args.output:
        write_graph(graph, args.output, arch=imported.arch, num_warps=imported.picked.num_warps)
        print(report)
        print(
            f"{graph.name} (loop at line {imported.picked.line}): {len(graph.instructions)} "
            f"ops, {len(graph.edges)} edges -> {args.output}"
        )
    else:
        print(report, file=sys.stderr)
        print(dumps_graph(graph, arch=imported.arch, num_warps=imported.picked.num_warps))
    return 0
