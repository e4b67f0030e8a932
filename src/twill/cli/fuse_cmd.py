"""``twill fuse NETWORK``: FADiff joint mapping + layer fusion of a whole network (FADiff spec).

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
    atomic_output,
    bounded_int,
    check_output_path,
    check_outputs_distinct,
    seed_int,
    write_output,
)
from twill.cli._console import stdout_console
from twill.errors import InvalidProblemError

__all__ = ["register"]


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
        help="start from CoSA's layer-wise plan (and never return worse)",
    )
    p.set_defaults(func=_run)


def _network(args: argparse.Namespace, load_network: Any) -> Any:
    """A built-in network by name, or the graph of an ONNX file / ``--model`` network."""
    from twill.cli.mapping_cmds import _input_shape, _model_source

    source = _model_source(args, "network")
    if not args.model and not source.lower().endswith(".onnx"):
        return load_network(source, args.workloads)
    from twill.io.onnx_model import import_model

    return import_model(source, _input_shape(args), exporter=args.exporter).network


def _run(args: argparse.Namespace) -> int:
    from twill.cli.mapping_cmds import _arch
    from twill.io.networks import load_network
    from twill.mapping.fadiff.fusion import check_gemmini

    _check_fuse_outputs(args)
    net = _network(args, load_network)
    arch = _arch(args.arch)
    bad = check_gemmini(arch)
    if bad:
        raise InvalidProblemError([f"{arch.name}: {b}" for b in bad], source="--arch")
    res = _fadiff_with_progress(args, net, arch)
    rep = res.report
    if args.output:
        import yaml

        plan = {**res.plan.to_dict(net, arch), **rep.summary()}
        write_output(args.output, yaml.safe_dump(plan, sort_keys=False))
    if args.plot:
        from twill.visualization.fadiff_plots import plot_fadiff

        with atomic_output(args.plot) as tmp:
            plot_fadiff(net, res, str(tmp))
    if args.json:
        print(json.dumps(_fuse_json(net, arch, res), indent=1))
    else:
        _print_fuse_table(net, arch, res)
    return 0


def _check_fuse_outputs(args: argparse.Namespace) -> None:
    """Refuse ``-o``/``--plot`` paths that name a file the command reads, or each other."""
    from twill.cli.mapping_cmds import _arch_files
    from twill.io.networks import default_workload_root

    model_file = [Path(args.network)] if args.network and Path(args.network).is_file() else []
    root = Path(args.workloads) if args.workloads else default_workload_root()
    inputs = [*sorted(root.rglob("*.yaml")), *model_file]
    inputs += _arch_files(args.arch)
    check_output_path(args.output, "-o", inputs)
    check_output_path(args.plot, "--plot", inputs, (".png", ".pdf", ".svg"))
    check_outputs_distinct(("-o", args.output), ("--plot", args.plot))


def _fadiff_with_progress(args: argparse.Namespace, net: Any, arch: Any) -> Any:  # noqa: ANN401
    """FADiff (started from CoSA's layer-wise plan with ``--init cosa``) with a progress bar."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from twill.mapping.fadiff.train import fadiff

    err = Console(stderr=True)
    init = None
    if args.init == "cosa":
        from twill.mapping.fadiff.baselines import layerwise_cosa

        err.print("[dim]mapping every layer with CoSA ...[/dim]")
        init = layerwise_cosa(net, arch).plan
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

        def on_step(step: int, rec: dict) -> None:
            prog.update(
                task, completed=step + 1, description=f"{net.name} best EDP {rec['best_edp']:.4g}"
            )

        return fadiff(net, arch, steps=args.steps, seed=args.seed, device=args.device, init=init,
                      candidates=[init] if init is not None else [], on_step=on_step)  # fmt: skip


def _fuse_json(net: Any, arch: Any, res: Any) -> dict[str, Any]:  # noqa: ANN401
    """The ``--json`` object: totals, source, fused edges and fusion groups by layer name."""
    from twill.mapping.fadiff.fusion import fusion_groups

    rep = res.report
    return {
        "network": net.name,
        "method": res.plan.method,
        **rep.summary(),
        "seconds": res.seconds,
        "source": res.source,
        "fused": res.plan.to_dict(net, arch)["fused"],
        "groups": [[net.layers[j].name for j in g] for g in fusion_groups(net, rep.fused)],
    }


def _print_fuse_table(net: Any, arch: Any, res: Any) -> None:  # noqa: ANN401
    """Per-layer energy, cycles, DRAM traffic and fused outputs, then the network totals."""
    from rich.table import Table

    rep = res.report
    t = Table(title=f"FADiff on {net.name} ({arch.name})")
    for col in ("layer", "energy uJ", "cycles", "DRAM KB", "fused out"):
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
        f"EDP {rep.edp:.4g} uJ*cycles, energy {rep.energy_uj:.1f} uJ, "
        f"{rep.cycles:.0f} cycles, DRAM {rep.dram_bytes / 1e6:.2f} MB, "
        f"{len(rep.fused)} fused boundaries, {res.seconds:.1f} s (source: {res.source})"
    )
    sys.stdout.flush()
