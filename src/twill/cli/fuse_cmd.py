"""``twill fuse NETWORK``: FADiff joint mapping + layer fusion of a network (``docs/fadiff.md``).

Prints a per-layer table (or ``--json``), writes the verified plan (``-o plan.yaml``) and the
pictures (``--plot FILE``: loss/EDP curve, network with fused groups, per-layer energy).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from twill.cli._args import (
    atomic_output,
    bounded_int,
    check_output_path,
    check_outputs_distinct,
    nonnegative_float,
    seconds_since_command_start,
    seed_int,
    write_output,
)
from twill.cli._console import stdout_console
from twill.errors import InvalidProblemError

__all__ = ["DEFAULT_TIME_LIMIT", "grace_stop", "map_layer_shapes", "register"]

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
    p.add_argument(
        "--time-limit",
        type=nonnegative_float,
        default=DEFAULT_TIME_LIMIT,
        help=f"seconds for the command, reading the model included (default "
        f"{DEFAULT_TIME_LIMIT:g}; 0 = no limit); mapping the layer shapes is not cut (a big "
        "network or a loaded machine can outlast a small limit there): after the layer "
        "shapes are mapped and grouped by the group search, the layer-wise gradient gets a "
        "third of what is left "
        "and FADiff the rest; at the limit each returns its best verified plan so far, never "
        "worse than the layer-wise plan (--json: stopped = 'time_limit'); the group search "
        "and the fusion bound get at least a tenth of the limit each",
    )
    p.set_defaults(func=_run)


def _network(args: argparse.Namespace, load_network: Any) -> Any:
    """A built-in network by name, or the graph of an ONNX file / ``--model`` network."""
    from twill.cli.mapping_cmds import input_shape, model_options, model_source

    source = model_source(args, "network")
    if not args.model and not source.lower().endswith(".onnx"):
        return load_network(source, args.workloads)
    from twill.io.onnx_model import import_model

    return import_model(source, input_shape(args), **model_options(args)).network


def _run(args: argparse.Namespace) -> int:
    from twill.cli.mapping_cmds import resolve_arch
    from twill.io.networks import load_network
    from twill.mapping.fadiff.fusion import check_gemmini

    limit = args.time_limit or math.inf
    deadline = time.perf_counter() - seconds_since_command_start() + limit
    _check_fuse_outputs(args)
    net = _network(args, load_network)
    arch = resolve_arch(args.arch)
    bad = check_gemmini(arch)
    if bad:
        raise InvalidProblemError([f"{arch.name}: {b}" for b in bad], source="--arch")
    res, lw_plan, lw_rep = _fadiff_with_progress(args, net, arch, deadline)
    stopped = "time_limit" if time.perf_counter() >= deadline else None
    gain = {**_gain(net, arch, res, lw_plan, lw_rep, grace_stop(deadline, limit)),
            "stopped": stopped}  # fmt: skip
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

        print(json.dumps({**_fuse_json(net, arch, res), **gain, "units": REPORT_UNITS}, indent=1))
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
    from twill.io.onnx_model import onnx_input_files

    model_file = []
    if args.network and Path(args.network).is_file():  # an ONNX file and its external weights
        model_file = onnx_input_files(args.network, (args.output, args.plot))
    root = Path(args.workloads) if args.workloads else default_workload_root()
    inputs = [*sorted(root.rglob("*.yaml")), *model_file]
    inputs += arch_input_files(args.arch)
    check_output_path(args.output, "-o", inputs)
    check_output_path(args.plot, "--plot", inputs, (".png", ".pdf", ".svg"))
    check_outputs_distinct(("-o", args.output), ("--plot", args.plot))


def _share(deadline: float, seed: int, part: float = 1.0) -> Any:  # noqa: ANN401
    """Options with ``seed`` whose time limit is ``part`` of the time left to ``deadline``
    (at least 0.01 s: a started call still returns its best plan so far)."""
    from twill.options import SolverOptions

    if math.isinf(deadline):
        return None
    left = max(0.01, part * (deadline - time.perf_counter()))
    return SolverOptions(time_limit=left, seed=seed)


def map_layer_shapes(args: argparse.Namespace, net: Any, arch: Any) -> Any:  # noqa: ANN401
    """Every unique layer shape of ``net`` mapped by ``--layer-method`` in a process pool of
    ``--workers`` (what ``map-network`` does with that method): the
    :class:`~twill.mapping.pipeline.NetworkResult` the layer-wise plan is built from."""
    from twill.io.onnx_model import unique_layers
    from twill.mapping.pipeline import map_network
    from twill.options import SolverOptions

    method = args.layer_method
    opts = SolverOptions(seed=args.seed) if method != "cosa" else SolverOptions()
    return map_network(unique_layers(net.layers), arch, methods=[method],
                       options={method: opts}, workers=args.workers)  # fmt: skip


def _layerwise(args: argparse.Namespace, net: Any, arch: Any, err: Any,
               deadline: float = math.inf, mapped: Any = None) -> Any:  # fmt: skip  # noqa: ANN401
    """The best layer-wise plan and the first fused plan: every layer shape mapped by
    ``--layer-method`` (:func:`map_layer_shapes`, unless ``mapped`` holds its result), the
    group search on those mappings (the step that finds most of the fusion gain, seconds
    of CPU: it runs first, with at least a tenth of the limit, :func:`grace_stop`), then the
    layer-wise gradient (FADiff without fusion) from them within a third of the time left
    to ``deadline``. Returns ``(plan, report)`` of the better layer-wise plan and of the
    group search's plan."""
    from twill.mapping.fadiff.baselines import layerwise_plan
    from twill.mapping.fadiff.fusion import evaluate_plan
    from twill.mapping.fadiff.groups import group_search

    if mapped is None:
        err.print(f"[dim]mapping every layer shape with {args.layer_method} ...[/dim]")
        mapped = map_layer_shapes(args, net, arch)
    base = layerwise_plan(net, arch, mapped.mappings(args.layer_method), args.layer_method)
    base = base.solution
    err.print("[dim]group search on the layer-wise mappings ...[/dim]")
    stop = grace_stop(deadline, args.time_limit or math.inf)
    first = group_search(net, arch, base.plan.with_fused(()), stop=stop)
    first = replace(first, method="fadiff")  # FADiff's discrete phase, run first
    first_rep = evaluate_plan(net, arch, first)
    err.print("[dim]layer-wise gradient (no fusion) ...[/dim]")
    lg = _fadiff(args, net, arch, _share(deadline, args.seed, 1 / 3), fusion=False,
                 init=base.plan, candidates=(base.plan,)).solution  # fmt: skip
    best = min((base.plan, base.report), (lg.plan, lg.report), key=lambda x: x[1].edp)
    return best, (first, first_rep)


def _fadiff(args: argparse.Namespace, net: Any, arch: Any, timed: Any, **problem: Any) -> Any:  # noqa: ANN401
    """FADiff (:func:`twill.mapping.fadiff.train.solve`) on ``net`` with the command line's
    ``--steps``, ``--seed`` and ``--device``, under ``timed`` (options with a time limit, from
    :func:`_share`, or ``None``); ``problem``: fusion, start plan, candidates, and
    ``on_progress``."""
    from twill.mapping.fadiff.train import FADiffSettings, solve
    from twill.mapping.problems import NetworkMappingProblem
    from twill.options import SolverOptions

    on_progress = problem.pop("on_progress", None)
    cfg = FADiffSettings(steps=args.steps, device=args.device)
    options = replace(timed or SolverOptions(seed=args.seed), fadiff=cfg, on_progress=on_progress)
    return solve(NetworkMappingProblem(net, arch, **problem), options)


def _fadiff_with_progress(args: argparse.Namespace, net: Any, arch: Any,  # noqa: ANN401
                          deadline: float = math.inf, mapped: Any = None) -> Any:  # fmt: skip
    """FADiff started from the best layer-wise plan, with a progress bar, both ending by
    ``deadline`` (a ``perf_counter`` value); ``mapped``: :func:`map_layer_shapes`'s result
    when already computed. Returns the FADiff result (the better of FADiff's plan and the
    first group search's, never worse than the layer-wise plan: it is a candidate) and the
    layer-wise plan and report."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from twill.mapping.fadiff.plan import NetworkPlan

    err = Console(stderr=True)
    (lw_plan, lw_rep), (first, first_rep) = _layerwise(args, net, arch, err, deadline, mapped)
    init = lw_plan if args.init != "none" else None
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

        res = _fadiff(args, net, arch, _share(deadline, args.seed), init=init,
                      candidates=(lw_plan,), on_progress=on_step)  # fmt: skip
    for plan, rep, source in ((first, first_rep, f"group-search({args.layer_method})"),
                              (lw_plan, lw_rep, "layer-wise plan")):  # fmt: skip
        if rep.valid and rep.edp < res.solution.report.edp:  # never worse than these
            res = replace(res, solution=NetworkPlan(plan, rep, source), objective=rep.edp)
    return res, lw_plan, lw_rep


def grace_stop(deadline: float, limit: float) -> float:
    """When a short step worth finishing stops (``perf_counter``): the ``deadline``, but at
    least a tenth of the time ``limit`` from now (never with no limit). The two such steps,
    the first group search and the fusion bound, then keep the command within 1.2 times
    its limit even when the mapping alone has used it up (a loaded machine)."""
    return max(deadline, time.perf_counter() + 0.1 * limit)


def _gain(net: Any, arch: Any, res: Any, lw_plan: Any, lw_rep: Any,
          stop: float = math.inf) -> dict[str, Any]:  # fmt: skip  # noqa: ANN401
    """``layerwise_edp``, ``edp``, ``gain_vs_layerwise`` (layer-wise EDP / FADiff's, ≥ 1) and
    ``bound_gain``: the most any fusion plan could gain over the layer-wise plan's EDP (its
    EDP over the capacity bound, docs/fadiff.md "Bounds"), ``None`` if not computable, with
    ``bound_note`` saying why; the group-consistent part of the bound stops at ``stop``
    (a ``perf_counter`` value; then the note says the per-layer bound is used)."""
    from twill.mapping.fadiff.bounds import fusion_bounds

    bound_gain, note = None, None
    names = {lv.name for lv in arch.levels}
    if not {"Registers", "Accumulator", "Scratchpad"} <= names:
        # the floors are Gemmini's: registers, an accumulator, one scratchpad for weights
        # and inputs (Simba's per-PE weight, input and accumulation buffers have none yet)
        note = f"the bounds model Gemmini's memory levels; {arch.name} has other levels"
    else:
        try:
            bounds = fusion_bounds(net, arch, lw_plan, stop=stop)
            bound = bounds.capacity_edp
            bound_gain = lw_rep.edp / bound if bound > 0 else None
            if not bounds.group_floor:
                note = (
                    "the group-consistent bound was not computed (over its state budget, or "
                    "out of --time-limit): bound_gain is the per-layer capacity bound"
                )
        except Exception as exc:  # noqa: BLE001 - a bound is extra information, never a failure
            note = f"bound not computed: {type(exc).__name__}: {exc}"
    return {
        "layerwise_edp": lw_rep.edp,
        "edp": res.solution.report.edp,
        "gain_vs_layerwise": lw_rep.edp / res.solution.report.edp,
        "bound_gain": bound_gain,
        "bound_note": note,
    }


def _fuse_json(net: Any, arch: Any, res: Any) -> dict[str, Any]:  # noqa: ANN401
    """The ``--json`` object: the result's :meth:`~twill.results.SolveResult.to_dict` (the
    top-level keys every method's JSON has; the per-step ``history`` and ``evals`` of its
    statistics left out), then the totals, source, fused edges and fusion groups by layer
    name."""
    from twill.mapping.fadiff.fusion import fusion_groups

    rep = res.solution.report
    shared = res.to_dict()
    shared["stats"] = {k: v for k, v in shared["stats"].items() if k not in ("history", "evals")}
    return {
        **shared,
        "network": net.name,
        "method": res.solution.plan.method,
        **rep.summary(),
        "seconds": res.timings.total,
        "source": res.solution.source,
        "fused": res.solution.plan.to_dict(net, arch)["fused"],
        "groups": [[net.layers[j].name for j in g] for g in fusion_groups(net, rep.fused)],
    }


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
