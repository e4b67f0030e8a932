"""``twill fuse NETWORK``: FADiff joint mapping + layer fusion of a network (``docs/fadiff.md``).

Prints a per-layer table (or ``--json``), writes the verified plan (``-o plan.yaml``) and the
pictures (``--plot FILE``: loss/EDP curve, network with fused groups, per-layer energy).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from twill.cli._args import (
    add_time_limit,
    atomic_output,
    bounded_int,
    check_output_and_plot,
    seed_int,
    write_output,
)
from twill.cli._console import stdout_console
from twill.deadline import Deadline

__all__ = ["DEFAULT_TIME_LIMIT", "fuse_settings", "fuse_with_progress", "register"]

#: ``--time-limit``'s default (seconds): the command, its bound included, within 2 minutes
DEFAULT_TIME_LIMIT = 100.0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("fuse", help="FADiff: joint mapping and layer fusion of a network")
    p.add_argument(
        "network",
        nargs="?",
        help="DOSA's workloads dosa_resnet50, dosa_bert, dosa_retinanet, dosa_unet (shipped; the "
        "names without dosa_ still work), fsrcnn (1080p), or MODEL.onnx; --model NAME for the "
        "model zoo",
    )
    from twill.cli.mapping_cmds import add_model_options

    add_model_options(p)
    p.add_argument(
        "--arch",
        default="gemmini",
        help="'gemmini' (default), 'simba_golden' ('simba'), 'simba_cosa', a shipped gemmini_* "
        "name (docs/mapping.md) or an "
        "architecture YAML whose outermost on-chip level keeps inputs and is bounded (it holds "
        "the fused intermediates)",
    )
    p.add_argument(
        "--workloads",
        metavar="DIR",
        help="DOSA's workloads folder for the named networks (default: $TWILL_WORKLOADS, else "
        "the copy shipped with twill)",
    )
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("-o", "--output", help="write the plan as YAML")
    p.add_argument("--plot", help="write the pictures to this PNG file")
    p.add_argument("--seed", type=seed_int, default=0)
    p.add_argument("--steps", type=bounded_int(100_000), default=300)
    p.add_argument(
        "--init",
        choices=["none", "cosa"],
        default="none",
        help="start the descent from the layer-wise plan (cosa) or cold (none); either way "
        "the result is never worse than the layer-wise plan",
    )
    p.add_argument(
        "--layer-method",
        choices=["cosa-edp", "cosa-rerank", "cosa"],
        default="cosa-edp",
        help="mapper of the layer-wise baseline (default cosa-edp; cosa = CoSA's objective)",
    )
    p.add_argument("--workers", type=bounded_int(1024), default=None, help="local pool size")
    add_time_limit(
        p,
        DEFAULT_TIME_LIMIT,
        f"seconds for the whole command, reading or exporting the model included (default "
        f"{DEFAULT_TIME_LIMIT:g}; 0 = no limit): the layer shapes are mapped until two "
        "tenths of the limit before its end (a shape not mapped by then keeps the all-DRAM "
        "mapping: unmapped_layers), the group search runs until a tenth before, the "
        "layer-wise gradient gets a third of what is left and FADiff the rest, each "
        "returning its best verified plan so far, never worse than the layer-wise plan "
        "(--json: stopped = 'time_limit'); the fusion bound gets the last tenth",
        zero_is_none=True,
    )
    p.set_defaults(func=_run)


def _network(args: argparse.Namespace, load_network: Any) -> Any:
    """A built-in network by name, or the graph of an ONNX file / ``--model`` network."""
    from twill.cli.mapping_cmds import input_shape, model_options, model_source

    source = model_source(args, "network")
    if not args.model and not source.lower().endswith(".onnx"):
        return load_network(source, args.workloads)
    from twill.onnx.model import import_model

    return import_model(source, input_shape(args), **model_options(args),
                        constant_folding=False,  # the same layers, faster (export_onnx)
                        deadline=args.deadline).network  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    from twill.cli.mapping_cmds import resolve_arch
    from twill.io.networks import load_network
    from twill.mapping.front import check_arch, fuse_json

    _check_fuse_outputs(args)
    net = _network(args, load_network)
    arch = resolve_arch(args.arch)
    check_arch(arch)
    out = fuse_with_progress(args, net, arch, args.deadline)
    res, gain = out.result, out.gain
    rep = res.solution.report
    if args.output:
        import yaml

        plan = {**res.solution.plan.to_dict(net, arch), **rep.summary()}
        write_output(args.output, yaml.safe_dump(plan, sort_keys=False))
    if args.plot:
        from twill.visualization.fadiff_plots import plot_fadiff

        with atomic_output(args.plot) as tmp:
            plot_fadiff(net, res, str(tmp))
    if args.json:
        from twill.cli.mapping_cmds import REPORT_UNITS

        print(json.dumps({**fuse_json(net, arch, res), **gain, "units": REPORT_UNITS}, indent=1))
        return 0
    _print_fuse_table(net, arch, res, gain)
    con = stdout_console()
    for path, what in ((args.output, "plan"), (args.plot, "picture")):
        if path:
            con.print(f"{what} written to {path}", markup=False, highlight=False)
    return 0


def _check_fuse_outputs(args: argparse.Namespace) -> None:
    """Refuse ``-o``/``--plot`` paths that name a file the command reads, or each other."""
    from twill.cli.mapping_cmds import arch_input_files
    from twill.io.networks import default_workload_root
    from twill.onnx.model import onnx_input_files

    model_file = []
    if args.network and Path(args.network).is_file():  # an ONNX file and its external weights
        model_file = onnx_input_files(args.network, (args.output, args.plot))
    root = Path(args.workloads) if args.workloads else default_workload_root()
    inputs = [*sorted(root.rglob("*.yaml")), *model_file]
    inputs += arch_input_files(args.arch)
    check_output_and_plot(args, inputs, (".png", ".pdf", ".svg"))


def fuse_settings(args: argparse.Namespace) -> Any:  # noqa: ANN401
    """The command line's :class:`~twill.mapping.fadiff.pipeline.FuseSettings`."""
    from twill.mapping.front import FuseSettings

    return FuseSettings(layer_method=args.layer_method, steps=args.steps, seed=args.seed,
                        device=args.device, init=args.init != "none", workers=args.workers,
                        grace_seconds=0.1 * (args.time_limit or 0.0))  # fmt: skip


def fuse_with_progress(args: argparse.Namespace, net: Any, arch: Any,  # noqa: ANN401
                       deadline: Deadline, mapped: Any = None) -> Any:  # fmt: skip
    """:func:`twill.mapping.fadiff.pipeline.fuse` with the command line's settings, its steps
    named on stderr and FADiff's progress bar; ``mapped``: the layer shapes' mappings when
    already computed. Returns the :class:`~twill.mapping.fadiff.pipeline.FuseOutcome`."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from twill.mapping.front import fuse

    err = Console(stderr=True)
    with Progress(
        TextColumn("[bold]fadiff[/bold] {task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not sys.stderr.isatty(),  # a log gets no bar (and no stray blank line)
    ) as prog:
        task = prog.add_task(net.name, total=args.steps)

        def on_step(event: Any) -> None:  # noqa: ANN401 (a ProgressEvent)
            if event.phase == "gradient":
                best = "-" if event.incumbent is None else f"{event.incumbent:.4g}"
                prog.update(task, completed=event.step, description=f"{net.name} best EDP {best}")

        return fuse(net, arch, fuse_settings(args), deadline, mapped=mapped, on_step=on_step,
                    say=lambda line: err.print(f"[dim]{line}[/dim]"))  # fmt: skip


def _print_fuse_table(net: Any, arch: Any, res: Any, gain: dict[str, Any]) -> None:  # noqa: ANN401
    """Per-layer energy, cycles, DRAM traffic and fused outputs, then the network totals."""
    from rich.table import Table

    rep = res.solution.report
    t = Table(title=f"FADiff on {net.name} ({arch.name})")
    for col in ("layer", "energy µJ", "cycles", "DRAM KB", "fused out"):
        t.add_column(col, justify="right" if col != "layer" else "left")
    fused_src = {net.edges[i].src for i in rep.fused}
    for j, ly in enumerate(net.layers):
        t.add_row(
            ly.name,
            f"{rep.layer_energy_pj[j] * 1e-6:.1f}",
            f"{rep.layer_cycles[j]:.0f}",
            f"{rep.layer_dram_bytes[j] / 1024:.0f}",
            "yes" if j in fused_src else "",
        )
    con = stdout_console()
    con.print(t)
    con.print(
        f"EDP {rep.edp:.4g} µJ·cycles, energy {rep.energy_uj:.1f} µJ, "
        f"{rep.cycles:.0f} cycles, DRAM {rep.dram_bytes / 1e6:.2f} MB, "
        f"{len(rep.fused)} fused boundaries, {res.timings.total:.1f} s "
        f"(source: {res.solution.source})"
    )
    bound = gain["bound_gain"]
    con.print(
        f"best layer-wise EDP {gain['layerwise_edp']:.4g} µJ·cycles; fused EDP {gain['edp']:.4g}: "
        f"gain {gain['gain_vs_layerwise']:.3f}x over layer-wise"
        + (f" (bound: no fusion plan gains more than {bound:.3f}x)" if bound else "")
    )
    if gain.get("bound_note"):
        con.print(f"no fusion bound: {gain['bound_note']}", markup=False, highlight=False)
    if gain.get("stopped"):
        con.print("stopped at --time-limit: the best verified plan found by then")
    sys.stdout.flush()
