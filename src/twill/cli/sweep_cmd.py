"""``twill sweep SPACE.yaml --networks A,B -o DIR``: every architecture of a design space against
one or more networks (``docs/mapping.md``, "Design-space sweeps").

Everything is checked before any work (the space, the networks' names, the output folder, the
Ray address). The folder gets the store (``pairs.jsonl``, appended as each pair finishes; the
same command again resumes), the table (``table.csv``, ``sweep.json``) and the plot
(``edp_area.png``). ``--json`` prints the document of ``sweep.json``; otherwise the frontier of
each network prints as a table.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

from twill.cli._args import (
    atomic_output,
    positive_float,
    same_file,
    seed_int,
    write_output,
)
from twill.cli._console import stdout_console
from twill.errors import InvalidProblemError

__all__ = ["register", "OUTPUT_FILES"]

#: What the command writes in the output folder, besides the store ``pairs.jsonl``.
OUTPUT_FILES = {"table": "table.csv", "json": "sweep.json", "plot": "edp_area.png"}
_FIRST_COLUMNS = (
    "arch",
    "network",
    "energy_uJ",
    "cycles",
    "edp",
    "area_mm2",
    "on_frontier",
    "layers",
    "unmapped",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``twill sweep``."""
    from twill.cli.mapping_cmds import add_executor_args
    from twill.mapping.front import MAPPERS, OBJECTIVES

    what = "map networks onto every architecture of a design space (EDP vs area)"
    p = subparsers.add_parser("sweep", help=what, description=what + "; docs/mapping.md")
    p.add_argument(
        "space",
        help="design space YAML (template: gemmini|simba, lists or ranges), or a shipped one: "
        "gemmini (64 points), simba (16 points)",
    )
    p.add_argument(
        "--networks",
        required=True,
        metavar="NET,NET,...",
        help="comma-separated: DOSA workloads (dosa_bert, dosa_resnet50, ...), zoo models "
        "(mobilenet_v2, resnet50, bert-base, llama-tiny:decode, ...), .onnx files, layer folders",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="output folder: store, table, plot (created; an existing store resumes)",
    )
    p.add_argument(
        "--mapper",
        choices=MAPPERS,
        default="cosa",
        help="mapper of every pair (default cosa: CoSA's MIP)",
    )
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="edp",
        help="the frontier's axis besides area, and what search mappers rank by",
    )
    add_executor_args(p)
    p.add_argument(
        "--time-limit",
        type=positive_float,
        default=60.0,
        help="seconds per (architecture, layer) pair (default 60)",
    )
    p.add_argument("--seed", type=seed_int, default=0, help="the mappers' seed")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from twill.cli.mapping_cmds import check_executor
    from twill.io.sweep_inputs import parse_networks, read_design_space, read_networks, space_path
    from twill.mapping.front import SweepSettings, sweep

    check_executor(args)
    args.space = str(space_path(args.space))
    space = read_design_space(args.space)
    specs = parse_networks(args.networks)
    out = _check_output_folder(args, specs)
    executor = f"ray:{args.ray_address or 'local'}" if args.executor == "ray" else args.executor
    settings = SweepSettings(
        args.mapper, args.objective, executor, args.workers, args.seed, args.time_limit
    )
    settings.check()
    points = space.points()
    if args.executor == "ray":  # the cluster answers now, or exit 2 in bounded time
        from twill.mapping.front import connect

        connect(args.ray_address or "local")
    networks = read_networks(specs)
    out.mkdir(parents=True, exist_ok=True)
    result = _sweep_with_progress(
        args, lambda tick: sweep(points, networks, out, settings, on_pair=tick)
    )
    payload = result.to_dict()
    _write_outputs(out, payload, settings.objective)
    if args.json:
        text = json.dumps(payload, indent=2, allow_nan=False)
        sys.stdout.write(text + "\n")
    else:
        _print_frontier(payload, out)
    return 0 if all(r["edp"] is not None for r in payload["rows"]) else 1


def _check_output_folder(args: argparse.Namespace, specs: list[Any]) -> Path:
    """``-o DIR``: a folder (made later) that is no input, holds no input, and lies in no
    input folder."""
    from twill.io.sweep_inputs import network_input_paths

    if not args.output.strip():
        raise InvalidProblemError("-o: empty folder name")
    out = Path(args.output)
    resolved = out.resolve()
    for given in (Path(args.space), *network_input_paths(specs)):
        if not given.exists():
            continue
        path = given.resolve()
        inside = given.is_dir() and (resolved == path or path in resolved.parents)
        if inside or same_file(out, given) or resolved in path.parents:
            raise InvalidProblemError(
                f"-o {args.output}: is, holds or lies inside the input {str(given)!r}; give "
                "the results a folder of their own"
            )
    if out.exists() and not out.is_dir():
        raise InvalidProblemError(f"-o {args.output}: exists and is not a folder")
    return out


def _sweep_with_progress(args: argparse.Namespace, run: Any) -> Any:  # noqa: ANN401
    """``run(tick)`` with a progress bar on stderr (a terminal only); the last count is kept
    for the interrupt message."""
    from twill.cli._console import stderr_progress

    with stderr_progress() as progress:
        task = progress.add_task("sweep pairs", total=None)

        def tick(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)
            args.interrupted_at = (
                f"pair {done} of {total} (the finished pairs are kept in "
                f"{args.output}/pairs.jsonl: the same command resumes)"
            )

        return run(tick)


def _write_outputs(out: Path, payload: dict[str, Any], objective: str) -> None:
    from twill.visualization.sweep_plot import plot_sweep

    rows = payload["rows"]
    columns = list(_FIRST_COLUMNS) + [k for k in rows[0] if k not in _FIRST_COLUMNS]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_output(out / OUTPUT_FILES["table"], buf.getvalue())
    write_output(out / OUTPUT_FILES["json"], json.dumps(payload, indent=2, allow_nan=False) + "\n")
    with atomic_output(out / OUTPUT_FILES["plot"]) as tmp:
        plot_sweep(rows, tmp, {"energy": "energy_uJ"}.get(objective, objective))


def _print_frontier(payload: dict[str, Any], out: Path) -> None:
    from rich.table import Table

    console = stdout_console()
    table = Table(
        title=f"Pareto frontier (area vs {payload['objective']}), {len(payload['rows'])} rows"
    )
    for col in ("network", "arch", "area mm²", "energy µJ", "cycles", "EDP µJ·cycles"):
        table.add_column(col, justify="left" if col in ("network", "arch") else "right")
    for r in payload["frontier"]:
        table.add_row(
            r["network"],
            r["arch"],
            f"{r['area_mm2']:.3f}",
            f"{r['energy_uJ']:.4g}",
            f"{r['cycles']:,}",
            f"{r['edp']:.4g}",
        )
    console.print(table)
    console.print(
        f"{payload['pairs']} pairs: {payload['computed']} mapped now, {payload['reused']} "
        f"from the store, {payload['recomputed']} recomputed; {payload['seconds']:.1f} s "
        f"({payload['mapper']}, {payload['executor']}). Table, plot and store in {out}",
        markup=False,
        highlight=False,
    )
