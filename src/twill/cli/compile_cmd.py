"""``twill compile FILE.py:KERNEL --arch sm_90a|sm_100a -o DIR``: Twill's schedule, compiled.

Solves the kernel's loop with Twill (as ``twill solve``), writes Twill's stages and clusters
onto the loop between Triton's ``schedule_loops`` and its pipeliner, lets Triton finish, and
writes ``KERNEL.ttgir``, ``KERNEL.ptx``, ``KERNEL.cubin`` and ``summary.json`` into ``DIR``
(created if missing; checked before any work, then written all or nothing). Triton's cache
lives in a private temporary folder for the run. Exit codes: 0 written, 1 no Twill schedule
(nothing written), 2 bad input or Triton could not compile, 130 interrupted, 70 internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from twill._atomic import write_files
from twill.cli._args import add_time_limit
from twill.cli.triton_cmd import add_arch_arg, add_kernel_args
from twill.errors import InvalidProblemError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``compile`` sub-command."""
    p = subparsers.add_parser(
        "compile",
        help="solve a Triton kernel with Twill and compile it with Twill's schedule",
        description="Solve FILE.py:KERNEL with Twill, write Twill's stages and clusters onto "
        "its loop, let Triton 3.9 pipeline and compile it, and write DIR/KERNEL.ttgir, "
        "KERNEL.ptx, KERNEL.cubin and summary.json (I, L, stages, partitions, regs, "
        "smem_bytes, spills, and which of Twill's decisions Triton kept or changed).",
    )
    p.add_argument("kernel", metavar="FILE.py:KERNEL")
    add_arch_arg(p, "sm_90a (H100) or sm_100a (B200)", required=True)
    add_kernel_args(p)  # --config N (autotune), --loop LINE (default: the costliest loop)
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="folder for the TTGIR, PTX, cubin and summary.json (created if missing)",
    )
    add_time_limit(p, 600.0, "seconds for the whole command: reading the kernel, Twill's "
                   "search and the compile (default %(default)g)")  # fmt: skip
    p.add_argument(
        "--no-specialize",
        dest="specialize",
        action="store_false",
        help="do not assume pointer arguments divisible by 16 (default: assumed, as a Triton "
        "launch on aligned tensors specialises them; a signature hint *fp16:16, i32:16 or "
        "i32:1 applies either way)",
    )
    p.add_argument("--json", action="store_true", help="print summary.json on stdout")
    p.set_defaults(func=cmd_compile)


def check_output_dir(path: str, kernel: str) -> Path:
    """``DIR`` usable as the output folder of ``kernel`` (``FILE.py:KERNEL``), checked before
    any work: a folder or a new name in an existing, writable folder, and none of the files it
    would write (:func:`~twill.triton.peer.compile_file_names`) an input, a folder, a link
    or anything but a regular file."""
    from twill.io import graph_input_files
    from twill.triton.peer import compile_file_names

    if not path.strip():
        raise InvalidProblemError(f"-o {path!r}: empty folder name; give a folder")
    out = Path(path)
    if out.is_symlink() and not out.exists():
        raise InvalidProblemError(f"-o {path}: a symbolic link to nothing; give a folder")
    if out.exists() and not out.is_dir():
        raise InvalidProblemError(f"-o {path}: exists and is not a folder")
    parent = out if out.is_dir() else (out.parent if str(out.parent) else Path("."))
    if not parent.is_dir():
        raise InvalidProblemError(f"-o {path}: folder {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InvalidProblemError(f"-o {path}: folder {str(parent)!r} is not writable")
    if not out.is_dir():
        return out
    inputs = [p for p in graph_input_files(kernel) if p.exists()]
    for name in compile_file_names(kernel.rpartition(":")[2]):
        what = _unwritable(out / name, inputs)
        if what:
            raise InvalidProblemError(f"-o {path}: {out / name} is {what}; remove it or choose "
                                      "another folder")  # fmt: skip
    return out


def _unwritable(target: Path, inputs: list[Path]) -> str:
    """Why ``target`` must not be replaced by an output file ("" when it may)."""
    from twill.cli._args import same_file

    if target.is_symlink():
        return "a symbolic link"
    if target.is_dir():
        return "a folder"
    if target.exists() and not target.is_file():
        return "not a regular file"
    same = [p for p in inputs if target.exists() and same_file(target, p)]
    return f"the input file {str(same[0])!r} (a hard link)" if same else ""


def cmd_compile(args: argparse.Namespace) -> int:
    from twill.triton import parse_assignments

    out = check_output_dir(args.output, args.kernel)
    sig = parse_assignments(args.signature, "--signature", numeric=False)
    consts = parse_assignments(args.constexpr, "--constexpr", numeric=True)
    from twill.triton import compile_summary

    summary = compile_summary(
        args.kernel,
        args.arch,
        sig,
        consts,
        num_warps=args.num_warps,
        config=args.config,
        loop=args.loop,
        total_time_limit=args.deadline.within(),
        specialize=args.specialize,
    )
    if summary is None:
        print(
            f"twill compile: no Twill schedule for {args.kernel} within the limits; nothing "
            "written",
            file=sys.stderr,
        )
        return 1
    written = write_files(summary.files(), out)  # all or nothing; targets checked above
    if args.json:
        print(json.dumps(summary.data, indent=2))
        return 0
    print_summary(summary.data, written)
    return 0


def print_summary(d: dict[str, Any], written: list[Path]) -> None:
    """The text form of ``summary.json``: every decision of Twill's that Triton did not take
    is named (stages moved, ops not expressed, partitions not applied and why)."""
    parts = d["partitions"]
    proof = "proven" if d.get("optimal") else "NOT proven"
    print(
        f"{d['kernel']} ({d['arch']}), loop at line {d['loop']}: Twill I = {d['I']} ({proof} "
        f"optimal for {_problem_text(d.get('problem', ''))}), L = {d['L']}"
        f"{'' if d.get('L_optimal') else ' (not proven minimal)'}"
        f"; {d['max_stage'] + 1} stage(s); pipelined prologue depth "
        f"{d['prologue_depth']}; stages kept {len(d['kept']['stages'])}, changed "
        f"{len(d['changed']['stages'])}; partitions "
        f"{'applied' if parts['applied'] else 'NOT applied'}"
    )
    for v, c in d["changed"]["stages"].items():
        print(f"  stage of {v}: Twill {c['twill']}, Triton's pipeliner {c['triton']}")
    unexpressed = d["changed"]["not_expressed"]
    if unexpressed and d.get("route") == "gluon":
        print(f"  start times of {len(unexpressed)} op(s) not expressed: the template's order "
              "runs inside each partition, Twill's stages set the ring depth")  # fmt: skip
    elif unexpressed:
        print(f"  not expressed (no loop operation): {', '.join(unexpressed)}")
    if d.get("route") == "gluon":
        print(f"  Gluon route ({d['gluon']['problem']}): K/V ring {d['gluon']['kv_stages']} deep")
        for f in parts["functions"]:
            print(f"  slot {f['slot']} -> {f['function']}: {', '.join(f['roles'])} "
                  f"({f['warps']} warps, {f['regs']} registers)")  # fmt: skip
        for v, m in parts["moved_to_keep_roles_whole"].items():
            print(f"  {v}: Twill slot {m['twill']}, kept with its role on {m['gluon']}")
    elif not parts["applied"]:
        print(f"  partitions {parts['why']}")
    elif d["changed"]["partitions"]:
        print(f"  partitions regrouped by Triton: {', '.join(d['changed']['partitions'])}")
    for line, what in d["other_loops"].items():
        print(f"  loop at line {line}: {what}")
    if not d.get("triton_scheduled", True):
        print(
            "  Triton's schedule_loops left this loop unscheduled (no latencies): Twill's "
            "stages and clusters were written onto every op of it"
        )
    for note in d.get("assumed", []):
        print(f"  assumed: {note}")
    tries = d.get("registers", {}).get("tries", [])
    for t in tries[:-1]:  # each spilled and was solved again under a lower limit
        print(f"  ptxas spilled {t['spills']} bytes at I = {t['I']} (model peak "
              f"{t['model_peak']} of {t['registers_per_warp']} registers): solved again at "
              f"{t['model_peak'] - 1}")  # fmt: skip
    if tries and tries[-1].get("stopped"):
        print(f"  register model not corrected further: {tries[-1]['stopped']}")
    print(
        f"  regs {d['regs']}, spills {d['spills']} bytes, shared memory {d['smem_bytes']} "
        f"bytes{'' if d['runnable'] else '; NOT RUNNABLE: ' + d['why_not_runnable']}"
    )
    for f in written:
        print(f"  wrote {f}")


def _problem_text(problem: str) -> str:
    """The words for a summary's ``problem``, a register limit set from ptxas's spills
    (``...+registers<=N``) included."""
    from twill.sched.front import PROBLEM_TEXT

    base, _, limit = problem.partition("+registers<=")
    text = PROBLEM_TEXT.get(base, "its problem")
    return f"{text}, at most {limit} registers per thread" if limit else text


def check_compare_args(args: argparse.Namespace) -> None:
    """``solve --compare-triton`` needs a Triton ``FILE.py:KERNEL`` and ``--arch``, and Twill's
    warp-specialised answer: Triton's schedule is priced with its warp assignment, so a
    Phase-1-only I (``--no-phase2``) would put two problems in one ratio (checked before the
    solve)."""
    if not args.compare_triton:
        return
    if not str(args.graph).rpartition(":")[0].endswith(".py") or not args.arch:
        raise InvalidProblemError("--compare-triton needs a Triton FILE.py:KERNEL and --arch")
    if getattr(args, "phase2", None) is False:
        raise InvalidProblemError(
            "--compare-triton prices Triton's schedule with its warp assignment (modulo "
            "scheduling with warp specialisation) and compares it with Twill's answer to the "
            "same problem; drop --no-phase2"
        )


def compare_triton(args: argparse.Namespace, twill_I: int | None, twill_L: int | None) -> dict:
    """Triton's default schedule of the kernel priced in Twill's model, beside Twill's."""
    from twill.triton import kernel_spec, parse_assignments
    from twill.triton.build import private_cache
    from twill.triton.peer import price_triton

    ks = kernel_spec(
        args.graph,
        args.arch,
        parse_assignments(args.signature, "--signature", numeric=False),
        parse_assignments(args.constexpr, "--constexpr", numeric=True),
        args.num_warps,
        config=args.config,
        loop=args.loop,
    )
    with private_cache():
        peer = price_triton(ks, total_time_limit=args.deadline.within())
    out = peer.to_dict()
    out["twill_I"], out["twill_L"] = twill_I, twill_L
    tri = peer.pinned.objective
    out["predicted_speedup"] = round(tri / twill_I, 3) if tri and twill_I else None
    if tri is None and peer.pinned.stats["max_I"]:  # every I below is refuted: a lower bound
        out["I_lower_bound"] = peer.pinned.stats["lower_I"]
    return out


def print_comparison(c: dict) -> None:
    """The text form of :func:`compare_triton`."""
    if c["I"] is not None:
        tri = f"I = {c['I']}, L = {c['L']}" + ("" if c["optimal"] else " (not proven minimal)")
    elif c.get("I_lower_bound") is None:
        tri = "not priced (see the notes)"
    elif c["status"] == "infeasible":
        tri = f"infeasible in Twill's model up to I = {c.get('I_lower_bound')}"
    else:
        tri = f"unknown within the time limit (I >= {c.get('I_lower_bound')})"
    print(
        f"  Triton's default schedule (num_stages {c['num_stages']}, max stage "
        f"{c['max_stage']}) priced in Twill's model: {tri}"
    )
    print(
        f"  Twill: I = {c['twill_I']}, L = {c['twill_L']}; predicted steady-state speed-up "
        f"(Triton I / Twill I): {c['predicted_speedup'] or 'n/a'}"
    )
    for note in c["notes"]:
        print(f"  note: {note}")
