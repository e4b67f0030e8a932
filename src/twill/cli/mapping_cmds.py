"""``twill map``, ``twill map-network`` and ``twill map-eval``: the accelerator-mapping commands.

``map`` maps one layer (CoSA MIP or a baseline), ``map-network`` a folder of layers with
several methods in parallel (progress bar, per-layer table, optional plot), ``map-eval``
evaluates a given mapping or a whole DOSA dataset with the cost model. ``--json`` prints one
JSON document on stdout; human output is a rich table.

Every number says what it is: ``map`` names the objective its status refers to ("optimal for
the CoSA objective" is CoSA's log-domain proxy, not cycles or energy) with its unit
(``objective_meaning``, ``objective_unit`` in JSON), and mapping levels print as ``L4
GlobalBuffer`` (``levels`` in JSON), not as bare numbers.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twill.cli._args import (
    add_threads,
    add_time_limit,
    atomic_output,
    bounded_int,
    check_output_and_plot,
    check_output_path,
    positive_int,
    seed_int,
    thread_count,
    time_limit_arg,
    write_output,
)
from twill.cli._console import stdout_console
from twill.errors import InvalidProblemError

if TYPE_CHECKING:  # the mapping stack is imported per command, not at CLI start-up
    from twill.mapping.front import Arch

__all__ = ["register", "resolve_arch", "arch_input_files", "model_source", "input_shape",
           "add_executor_args", "check_executor"]  # fmt: skip

#: ``--arch`` help: the names it accepts besides a file.
ARCH_HELP = (
    "architecture YAML, or a built-in name: 'simba_golden' (Simba with the golden Timeloop run's "
    "settings; 'simba' is its old name), 'simba_cosa' (Simba as CoSA's simba.yaml: dearer "
    "GlobalBuffer), 'gemmini' or a shipped gemmini_* name (docs/mapping.md)"
)


def resolve_arch(spec: str) -> Arch:
    from dataclasses import replace

    from twill.io.timeloop import read_arch, shipped_archs
    from twill.mapping.front import ARCH_ALIASES, BUILTIN_ARCHS, builtin_arch

    builtin = builtin_arch(spec)
    if builtin is not None:
        return builtin
    shipped = shipped_archs()
    if spec in shipped and not Path(spec).exists():
        return read_arch(shipped[spec])
    if not Path(spec).exists():
        names = (*BUILTIN_ARCHS, *ARCH_ALIASES, *shipped)
        raise InvalidProblemError(
            f"--arch {spec}: neither a built-in architecture ({', '.join(names)}) "
            "nor an existing file"
        )
    arch = read_arch(spec)
    if arch.name in (*BUILTIN_ARCHS, *ARCH_ALIASES):  # simba.yaml is not the built-in simba
        arch = replace(arch, name=Path(spec).name)
    return arch


def arch_input_files(spec: str) -> list[Path]:
    """The files ``--arch spec`` reads (none for a built-in architecture)."""
    from twill.io.timeloop import arch_input_files, shipped_archs
    from twill.mapping.front import builtin_arch

    if builtin_arch(spec) is not None or (spec in shipped_archs() and not Path(spec).exists()):
        return []
    return arch_input_files(spec)


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    return x


def _print_json(obj: Any) -> None:
    print(json.dumps(_jsonable(obj), indent=2))


#: The unit of every cost-model number in the JSON of ``map``, ``map-network`` and ``map-eval``
#: (printed beside them as ``units``): energies carry theirs in the key, ``edp`` does not.
REPORT_UNITS = {
    "cycles": "cycles",
    "energy_uJ": "µJ",
    "energy_pJ": "pJ",
    "edp": "µJ·cycles (energy_uJ × cycles)",
    "dram_bytes": "bytes",
    "seconds": "s",
}


def objective_meaning(res: Any) -> tuple[str, str]:  # noqa: ANN401 (a SolveResult)
    """``(meaning, unit)`` of a layer mapper's ``objective`` (and of its ``bound``)."""
    from twill.mapping.front import objective_meaning as meaning

    return meaning(str(res.settings.get("method")), str(res.settings.get("metric", "edp")))


def mapping_levels(mapping: Any, arch: Arch) -> list[dict[str, Any]]:
    """One entry per level, outermost first: number, name, kept tensors and loops (DOSA
    tokens, ``X`` = spatial), so that ``L4`` reads as ``L4 GlobalBuffer``."""
    from twill.mapping.front import OPERANDS

    keeps = mapping.keeps_for(arch)
    out = []
    for m in reversed(range(mapping.n_levels)):
        loops = [f"{d.value}{f}" for d, f in mapping.loops(m)]
        loops += [f"{d.value}{f}X" for d, f in mapping.spatial_loops(m)]
        kept = "".join(v.value for v in OPERANDS if v in keeps[m])
        out.append(
            {"level": m, "name": arch.levels[m].name, "keeps": kept, "loops": " ".join(loops)}
        )
    return out


def _level_lines(mapping: Any, arch: Arch) -> list[str]:
    rows = mapping_levels(mapping, arch)
    heads = [f"L{r['level']} {r['name']}" for r in rows]
    width = max(len(h) for h in heads)
    return [
        f"  {h.ljust(width)}  {'[' + r['keeps'] + ']':<5}  {r['loops'] or '-'}"
        for h, r in zip(heads, rows, strict=True)
    ]


def _status_line(res: Any) -> str:
    """``optimal for the CoSA objective (...): 183.34 log2 units, bound 183.34``."""
    meaning, unit = objective_meaning(res)
    claim = {"optimal": "optimal for", "feasible": "feasible, best found for"}.get(
        res.status.value, f"{res.status.value}, searched for"
    )
    line = f"{claim} the {meaning}"
    if res.objective is not None:
        line += f": {res.objective:,.6g} {unit}"
        if res.bound is not None:
            line += f", proven bound {res.bound:,.6g} {unit}"
    return line


def method_options(args: argparse.Namespace, method: str) -> Any:  # noqa: ANN401
    """The :class:`~twill.options.SolverOptions` of one mapping method from the command line:
    every method ends by the command's ``--time-limit`` (its deadline); the CoSA family gets
    ``--layer-time-limit`` per layer (``map``: ``--time-limit``, one layer), ``--threads``,
    ``--seed`` and ``--backend``; the searches ``--seed``, ``--metric`` and ``--n-valid``
    (default: random 5, random16k and hybrid 16,000); exhaustive ``--metric``."""
    from twill.mapping.front import CoSASettings, SearchSettings
    from twill.options import SolverOptions

    end = args.deadline
    if method in ("cosa", "cosa-rerank", "cosa-edp"):
        layer = getattr(args, "layer_time_limit", args.time_limit)
        return SolverOptions(time_limit=layer, threads=args.threads, seed=args.seed,
                             cosa=CoSASettings(backend=args.backend), deadline=end)  # fmt: skip
    if method in ("random", "random16k", "hybrid"):
        search = SearchSettings(n_valid=getattr(args, "n_valid", None), metric=args.metric)
        return SolverOptions(seed=args.seed, search=search, deadline=end)
    return SolverOptions(search=SearchSettings(metric=args.metric), deadline=end)


# ------------------------------------------------------------------------------ map
def _cmd_map(args: argparse.Namespace) -> int:
    from twill.io.timeloop import check_layer_fits, read_layer
    from twill.mapping.front import LayerMappingProblem, layer_json, map_layer, to_timeloop_yaml

    check_output_path(args.output, "-o", [Path(args.layer), *arch_input_files(args.arch)])
    layer = read_layer(args.layer)
    arch = resolve_arch(args.arch)
    check_layer_fits(layer, arch, source=args.layer)
    problem = LayerMappingProblem(layer, arch)
    res = map_layer(problem, args.method, method_options(args, args.method))
    found = res.solution
    if found is not None and args.output:
        write_output(args.output, to_timeloop_yaml(found.mapping, arch))
    if args.json:
        meaning, unit = objective_meaning(res)
        out = {**layer_json(res, layer.name), "objective_meaning": meaning,
               "objective_unit": unit, "units": REPORT_UNITS}  # fmt: skip
        if found is not None:
            out["levels"] = mapping_levels(found.mapping, arch)
        _print_json(out)
    else:
        _print_map(layer, arch, res)
    return 0 if found is not None else 1


def _print_map(layer: Any, arch: Arch, res: Any) -> None:
    from rich.table import Table

    method = res.settings.get("method")
    t = Table(title=f"{method}: {layer.describe()} on {arch.name}", title_justify="left")
    for col in ("status", "cycles", "energy µJ", "EDP µJ·cycles", "PE util", "seconds"):
        t.add_column(col)
    rep = res.solution.report if res.solution is not None else None
    t.add_row(
        res.status.value,
        f"{rep.cycles:,}" if rep else "-",
        f"{rep.energy_uj:.3f}" if rep else "-",
        f"{rep.edp:.4g}" if rep else "-",
        f"{rep.utilisation:.2f}" if rep else "-",
        f"{res.timings.total:.2f}",
    )
    con = stdout_console()
    con.print(t)
    con.print(_status_line(res), markup=False)
    if res.solution is not None:
        con.print(
            "mapping, outermost level first ([kept tensors] loops; X = spatial):", markup=False
        )
        con.print("\n".join(_level_lines(res.solution.mapping, arch)), markup=False)


# ---------------------------------------------------------------------- map-network
def add_executor_args(p: argparse.ArgumentParser) -> None:
    """``--executor``, ``--ray-address`` and ``--workers``: where the independent solves run
    (checked by :func:`check_executor`)."""
    p.add_argument(
        "--executor",
        choices=("serial", "local", "ray"),
        default="local",
        help="serial, local (process pool, default) or ray (tasks on a cluster)",
    )
    p.add_argument(
        "--ray-address",
        default=None,
        help="the Ray cluster's HOST:PORT (default: a Ray instance started in this process)",
    )
    p.add_argument(
        "--workers",
        type=thread_count,
        default=None,
        help="local pool size (at most 1,024)",
    )


def check_executor(args: argparse.Namespace) -> None:
    """``--ray-address`` only with ``--executor ray``, and of a form Ray accepts (checked
    before any work; the connection itself is bounded, :mod:`twill.mapping.ray_cluster`)."""
    if args.executor != "ray":
        if args.ray_address is not None:
            raise InvalidProblemError(f"--ray-address needs --executor ray (given --executor "
                                      f"{args.executor})")  # fmt: skip
        return
    from twill.mapping.front import parse_ray_address

    try:
        parse_ray_address(args.ray_address)
    except InvalidProblemError as exc:
        raise InvalidProblemError(f"--ray-address: {exc}") from None


def _cmd_map_network(args: argparse.Namespace) -> int:
    check_executor(args)
    methods = _network_methods(args.methods)
    source = _shipped_network(args, model_source(args, "directory"))
    _check_network_outputs(args, source)
    layers, notes = _network_layers(args, source)
    if not layers:
        raise InvalidProblemError("the network has no layers: nothing to map", source=source)
    arch = resolve_arch(args.arch)
    from twill.io.timeloop import check_layer_fits

    for layer in layers:
        check_layer_fits(layer, arch, source=f"{source}/{layer.name}")
    result = _map_network_with_progress(args, source, layers, arch, methods)
    if notes:
        from dataclasses import replace

        result = replace(result, notes=result.notes + notes)
    if args.plot:
        with atomic_output(args.plot) as tmp:
            _plot_network(result, str(tmp))
    payload = {**result.to_dict(), "units": REPORT_UNITS}
    _write_json_output(args, payload)
    if args.json:
        _print_json(payload)
    else:
        _print_network_table(result, methods)
        _say_written(args)
    ok = all(r.solution is not None for res in result.results.values() for r in res)
    return 0 if ok else 1


def _shipped_network(args: argparse.Namespace, source: str) -> str:
    """``source``, or the shipped folder of DOSA's workload it names (``dosa_bert``, ``bert``)
    when it is no existing path: a name resolves the same from any folder."""
    from twill.io.networks import default_workload_root
    from twill.mapping.front import NETWORKS, network_key

    if args.model or Path(source).exists():
        return source
    try:
        key = network_key(source)
    except InvalidProblemError:
        return source  # the reader reports the missing folder
    return str(default_workload_root() / key) if key in NETWORKS else source


def _network_label(source: str) -> str:
    """The network's name in reports: ``dosa_NAME`` for a shipped DOSA workload folder."""
    from twill.io.networks import SHIPPED_WORKLOADS
    from twill.mapping.front import network_name

    path = Path(source)
    return network_name(path.name) if path.parent == SHIPPED_WORKLOADS else path.stem


def _network_methods(text: str) -> list[str]:
    """The ``--method`` list (``--methods`` is the old spelling), every name checked against
    the known mappers."""
    from twill.mapping.front import MAPPERS

    methods = [m.strip() for m in text.split(",") if m.strip()]
    if not methods:
        raise InvalidProblemError(
            f"--method: no method named in {text!r} (choose from {', '.join(MAPPERS)})"
        )
    for m in methods:
        if m not in MAPPERS:
            raise InvalidProblemError(
                f"--method: unknown method {m!r} (choose from {', '.join(MAPPERS)})"
            )
    return methods


def _check_network_outputs(args: argparse.Namespace, source: str) -> None:
    """Refuse ``-o`` and ``--plot`` paths that name a file the command reads (layers, model,
    arch), or each other."""
    from twill.io.timeloop import network_input_files

    if Path(source).is_dir():
        model_files = network_input_files(source)
    else:
        from twill.onnx.model import onnx_input_files

        model_files = [] if args.model else onnx_input_files(source, (args.output, args.plot))
    inputs = [*model_files, *arch_input_files(args.arch)]
    check_output_and_plot(args, inputs, (".png", ".pdf", ".svg"))


def _write_json_output(args: argparse.Namespace, payload: dict[str, Any]) -> None:
    """``-o FILE``: the command's JSON document, written atomically."""
    if getattr(args, "output", None):
        write_output(args.output, json.dumps(_jsonable(payload), indent=2) + "\n")


def _say_written(args: argparse.Namespace) -> None:
    """``JSON result written to FILE`` / ``picture written to FILE``, as ``twill solve`` says."""
    for path, what in ((getattr(args, "output", None), "JSON result"),
                       (getattr(args, "plot", None), "picture")):  # fmt: skip
        if path:
            stdout_console().print(f"{what} written to {path}", markup=False, highlight=False)


def _network_layers(args: argparse.Namespace, source: str) -> tuple[list[Any], tuple[str, ...]]:
    """The layers to map (a folder, an ONNX file or a zoo model; ``--limit`` applied) and the
    notes the report adds (how repeated shapes were counted)."""
    notes: tuple[str, ...] = ()
    if args.model or source.lower().endswith(".onnx"):
        from twill.onnx.model import import_model, unique_layers

        imp = import_model(source, input_shape(args), **model_options(args),
                           constant_folding=False,  # the same layers, faster (export_onnx)
                           deadline=args.deadline)  # fmt: skip
        all_layers = imp.layers
        layers = unique_layers(all_layers)
        notes = (
            f"{len(all_layers)} compute layers, {len(layers)} unique shapes: each shape is "
            "mapped once and weighted by its count in the totals",
            *imp.notes,
        )
    else:
        from twill.io.timeloop import read_network

        layers = read_network(source)
    return (layers[: args.limit] if args.limit else layers), notes


def _map_network_with_progress(
    args: argparse.Namespace, source: str, layers: list[Any], arch: Arch, methods: list[str]
) -> Any:  # noqa: ANN401 (a NetworkMappings)
    """:func:`~twill.mapping.pipeline.map_network` with a progress bar on stderr."""
    from twill.cli._console import stderr_progress
    from twill.mapping.front import map_network

    with stderr_progress() as progress:
        task = progress.add_task(f"mapping {Path(source).name}", total=len(layers) * len(methods))

        def tick(i: int, method: str, res: Any) -> None:  # noqa: ANN401
            progress.update(task, advance=1, description=f"{method}: {layers[i].name}")

        return map_network(
            layers,
            arch,
            methods=methods,
            options={m: method_options(args, m) for m in methods},
            executor=f"ray:{args.ray_address}"
            if args.executor == "ray" and args.ray_address
            else args.executor,
            workers=args.workers,
            network=_network_label(source) if not args.model else source,
            on_result=tick,
        )


def layer_shape_text(layer: Any) -> str:  # noqa: ANN401
    """A layer's shape for people, instead of DOSA's key ``R_S_P_Q_C_K_N_Ws_Hs_Wd_Hd[_gG]``:
    ``3x3 filter, 112x112 out, 1→1 channels, 32 groups`` (channels per group)."""
    from twill.mapping.front import Dim

    d = {dim: layer.dim(dim) for dim in (Dim.R, Dim.S, Dim.P, Dim.Q, Dim.C, Dim.K, Dim.N)}
    parts = [f"{d[Dim.R]}x{d[Dim.S]} filter", f"{d[Dim.P]}x{d[Dim.Q]} out",
             f"{d[Dim.C]}→{d[Dim.K]} channels"]  # fmt: skip
    if d[Dim.N] > 1:
        parts.append(f"batch {d[Dim.N]}")
    for what, w, h in (("stride", layer.w_stride, layer.h_stride),
                       ("dilation", layer.w_dilation, layer.h_dilation)):  # fmt: skip
        if (w, h) != (1, 1):
            parts.append(f"{what} {w}" if w == h else f"{what} {w}x{h}")
    if layer.groups > 1:
        parts.append(f"{layer.groups} groups")
    return ", ".join(parts)


def _print_network_table(result: Any, methods: list[str]) -> None:  # noqa: ANN401
    """Per-layer cycles, energy and solve time per method, and the weighted totals."""
    from rich.table import Table

    t = Table(
        title=f"{result.network} on {result.arch} ({result.executor}, {result.seconds:.1f} s)"
    )
    for col in ("layer", "shape", "×"):
        t.add_column(col)
    for m in methods:
        for col in ("cycles", "µJ", "s"):
            t.add_column(f"{m} {col}")
    for i, layer in enumerate(result.layers):
        row = [layer.name, layer_shape_text(layer), str(layer.count)]
        for m in methods:
            res = result.results[m][i]
            rep = res.solution.report if res.solution is not None else None
            row += [
                f"{rep.cycles:,}" if rep else "-",
                f"{rep.energy_uj:.2f}" if rep else "-",
                f"{res.timings.total:.2f}",
            ]
        t.add_row(*row)
    tot_row = ["total (weighted)", "", ""]
    for m in methods:
        tot = result.total(m)
        tot_row += [
            f"{tot.cycles:,}" if tot else "-",
            f"{tot.energy_uj:.1f}" if tot else "-",
            f"{sum(result.solve_seconds(m)):.1f}",
        ]
    t.add_row(*tot_row)
    con = stdout_console()
    con.print(t)
    for note in result.notes:
        con.print(note, markup=False)


def _plot_network(result: Any, path: str) -> None:
    """Bar chart of per-layer latency and energy, normalised to the first method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    methods = list(result.results)
    names = [layer.name.replace("_outputs_", "") for layer in result.layers]
    x = np.arange(len(names))
    fig, axes = plt.subplots(2, 1, figsize=(max(6, 0.45 * len(names) + 2), 6), sharex=True)
    width = 0.8 / max(1, len(methods))
    for ax, key, label in (
        (axes[0], "cycles", "latency (cycles)"),
        (axes[1], "energy_uj", "energy (µJ)"),  # the table's unit
    ):
        for k, m in enumerate(methods):
            vals = [getattr(r.solution.report, key) if r.solution else np.nan
                    for r in result.results[m]]  # fmt: skip
            ax.bar(x + k * width, vals, width, label=m)
        ax.set_yscale("log")
        ax.set_ylabel(label)
    axes[0].legend()
    axes[0].set_title(f"{result.network} on {result.arch}: methods per layer")
    axes[1].set_xticks(x + 0.4 - width / 2, names, rotation=70, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------- map-eval
def model_source(args: argparse.Namespace, positional: str) -> str:
    """The model the user named: the positional path, or ``--model NAME`` (exactly one).
    The options that build a zoo model (``--input``, ``--seq``, ``--phase``, ``--exporter``)
    are refused without ``--model``: an ONNX file (or a layer folder) keeps the shapes it was
    exported with, and ignoring them would map another size than the one asked for."""
    given = getattr(args, positional)
    if bool(given) == bool(args.model):
        raise InvalidProblemError(
            f"give either {positional.upper()} or --model NAME (not both, not neither)",
            source="arguments",
        )
    zoo_only = [flag for flag, value in (("--input", args.input), ("--seq", args.seq),
                                         ("--phase", args.phase),
                                         ("--exporter", args.exporter != "auto"))
                if value]  # fmt: skip
    if not args.model and zoo_only:
        verb = "applies" if len(zoo_only) == 1 else "apply"
        raise InvalidProblemError(
            f"{', '.join(zoo_only)} {verb} to --model only: {given} has shapes of its own (an "
            "ONNX file keeps those it was exported with: export it again with the size you want)"
        )
    return str(given or args.model)


def input_shape(args: argparse.Namespace) -> tuple[int, ...] | None:
    from twill.onnx.model_zoo import parse_input_shape

    return parse_input_shape(args.input) if args.input else None


def model_options(args: argparse.Namespace) -> dict[str, Any]:
    """The keywords of :func:`twill.onnx.model.import_model` that the options give."""
    return {"exporter": args.exporter, "seq": args.seq, "phase": args.phase}


def add_model_options(p: argparse.ArgumentParser) -> None:
    """``--model NAME``, ``--input NxCxHxW``, ``--seq S``, ``--phase``, ``--exporter``: a zoo
    network instead of a path."""
    from twill.onnx.model_zoo import MODELS

    p.add_argument(
        "--model",
        help=f"a built-in PyTorch model, exported to ONNX on the fly: {', '.join(MODELS)}",
    )
    p.add_argument("--input", help="input shape of an image --model, NxCxHxW (default 1x3x224x224)")
    p.add_argument(
        "--seq",
        type=bounded_int(65_536),
        default=None,
        help="tokens of a text --model (default 128); for --phase decode, the KV-cache length",
    )
    p.add_argument(
        "--phase",
        choices=("prefill", "decode"),
        default=None,
        help="decoders (gpt2, llama-tiny): prefill = a prompt of S tokens (default), "
        "decode = one token against a KV cache of S",
    )
    p.add_argument(
        "--exporter",
        choices=("auto", "legacy", "dynamo"),
        default="auto",
        help="PyTorch ONNX exporter for --model: legacy (TorchScript), dynamo (PyTorch's "
        "default), auto = legacy, then dynamo if it fails (default)",
    )


def _cmd_import_onnx(args: argparse.Namespace) -> int:
    from twill.io.networks import write_layer_folder
    from twill.onnx.model import import_model, unique_layers

    if not args.output.strip():
        raise InvalidProblemError("-o: an empty path is not an output folder", source="-o")
    imp = import_model(model_source(args, "path"), input_shape(args), **model_options(args))
    out = write_layer_folder(imp, args.output)
    uniq = unique_layers(imp.layers)
    net = imp.network
    print(
        f"{out}: {len(imp.layers)} layers ({len(uniq)} unique shapes, repeated ones are mapped "
        f"once and counted), {len(net.edges)} edges, {len(net.candidates)} fusion candidates"
    )
    for note in imp.notes:
        print(note)
    return 0


def _check_map_eval_mode(args: argparse.Namespace) -> None:
    """One mapping (``--layer``, ``--arch``, ``--mapping``/``--mapping-file``, ``--full``) or a
    dataset (``--dataset``, ``--limit``), never options of both: each dataset row brings its
    own layer, architecture and mapping, so an option of the other mode would be ignored."""
    single = [("--layer", args.layer), ("--arch", args.arch), ("--mapping", args.mapping),
              ("--mapping-file", args.mapping_file), ("--full", args.full)]  # fmt: skip
    if args.dataset is not None:
        if not args.dataset.strip():
            raise InvalidProblemError(f"--dataset {args.dataset!r}: empty file name; give a CSV")
        given = [opt for opt, value in single if value]
        if given:
            raise InvalidProblemError(f"--dataset evaluates each row's own layer, architecture "
                                      f"and mapping; drop {', '.join(given)}")  # fmt: skip
    elif args.limit is not None:
        raise InvalidProblemError("--limit counts --dataset rows; give --dataset FILE.csv")
    if args.mapping is not None and args.mapping_file is not None:
        raise InvalidProblemError("give --mapping or --mapping-file, not both")


def _cmd_map_eval(args: argparse.Namespace) -> int:
    _check_map_eval_mode(args)
    if args.dataset is not None:
        return _eval_dataset(args)
    from twill.io.timeloop import read_layer, read_mapping
    from twill.mapping.front import evaluate, parse_dosa_mapping, verify_mapping

    missing = [f"--{k}" for k in ("arch", "layer") if not getattr(args, k)]
    if not (args.mapping or args.mapping_file):
        missing.append("--mapping or --mapping-file")
    if missing:
        raise InvalidProblemError(f"missing {', '.join(missing)} (or give --dataset FILE.csv)")
    given = [args.layer, args.mapping_file, *arch_input_files(args.arch)]
    check_output_path(args.output, "-o", given)
    layer = read_layer(args.layer)
    arch = resolve_arch(args.arch)
    if args.mapping_file:
        mapping = read_mapping(args.mapping_file, arch)
    else:
        mapping = parse_dosa_mapping(args.mapping, layer, arch)
    violations = verify_mapping(layer, arch, mapping)
    rep = evaluate(layer, arch, mapping)
    out = rep.to_dict(summary=not args.full)
    out.update(valid=not violations, violations=[str(v) for v in violations], mapping=str(mapping))
    out["levels"] = mapping_levels(mapping, arch)
    out["units"] = REPORT_UNITS
    _write_json_output(args, out)
    if args.json:
        _print_json(out)
    else:
        from rich.table import Table

        t = Table(title=f"{layer.describe()} on {arch.name}")
        number = {lv.name: m for m, lv in enumerate(arch.levels)}
        t.add_column("level")
        t.add_column("tensor")
        t.add_column("tile words")
        t.add_column("reads")
        t.add_column("fills")
        t.add_column("updates")
        t.add_column("energy µJ")
        for lvl, per in rep.accesses.items():
            for v, a in per.items():
                t.add_row(
                    f"L{number[lvl]} {lvl}" if lvl in number else lvl,
                    v,
                    str(rep.tiles[lvl][v]),
                    f"{a['reads']:,.0f}",
                    f"{a['fills']:,.0f}",
                    f"{a['updates']:,.0f}",
                    f"{rep.operand_energy_pj[lvl][v] * 1e-6:.4g}",
                )
        stdout_console().print(t)
        stdout_console().print(
            f"cycles {rep.cycles:,}  energy {rep.energy_uj:.4f} µJ  "
            f"EDP {rep.edp:.4g} µJ·cycles  PE utilisation {rep.utilisation:.2f}  "
            f"valid {not violations}"
        )
        for v in violations:
            stdout_console().print(f"  violation: {v}")
        _say_written(args)
    return 1 if violations else 0  # the report is printed either way; scripts see the verdict


def _eval_dataset(args: argparse.Namespace) -> int:
    from twill.io.timeloop import read_dosa_columns
    from twill.mapping.front import evaluate_columns

    check_output_path(args.output, "-o", [Path(args.dataset)])
    cols = read_dosa_columns(args.dataset, limit=args.limit)
    rows, errors = evaluate_columns(cols, rows=bool(args.json or args.output))
    for row in rows:  # the dataset's target.edp is in J·cycles: beside it, ours in µJ·cycles
        edp = row.get("target_edp")
        row["target_edp_uJ_cycles"] = None if edp is None else edp * 1e6
    units = {**REPORT_UNITS, "target_edp": "J·cycles, as the dataset's target.edp column",
             "target_edp_uJ_cycles": "µJ·cycles (target_edp × 10^6), the unit of edp"}  # fmt: skip
    payload = {"rows": rows, "errors": errors, "units": units}
    _write_json_output(args, payload)
    if args.json:
        _print_json(payload)
    else:
        from rich.table import Table

        t = Table(title=f"{Path(args.dataset).name}: {len(cols)} rows vs Timeloop targets")
        for col in ("quantity", "exact", "median |err|", "p95 |err|", "max |err|"):
            t.add_column(col)
        for q, s in errors.items():
            if isinstance(s, dict):
                t.add_row(
                    q,
                    f"{s['exact_fraction']:.1%}",
                    f"{s['median']:.3%}",
                    f"{s['p95']:.3%}",
                    f"{s['max']:.3%}",
                )
        stdout_console().print(t)
        stdout_console().print(f"valid rows: {errors['valid']} / {errors['rows']}")
        _say_written(args)
    return 0


# ------------------------------------------------------------------------- register
def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``map``, ``map-network``, ``import-onnx`` and ``map-eval`` to the ``twill`` CLI."""
    _register_map(subparsers)
    _register_map_network(subparsers)
    _register_import_onnx(subparsers)
    _register_map_eval(subparsers)


def _add_solver_options(p: argparse.ArgumentParser, network: bool = False) -> None:
    """Backend, limits, seed, search metric and ``--json``: shared by ``map`` and
    ``map-network`` (``network``: a whole-command limit and one per layer)."""
    p.add_argument(
        "--backend",
        choices=("cpsat", "scip", "highs", "cbc"),
        default="cpsat",
        help="MIP backend for --method cosa (default cpsat)",
    )
    if network:
        add_time_limit(p, None, "seconds for the whole command, reading or exporting the "
                       "network included (default: no limit); a layer not mapped by then is "
                       "reported without a mapping (unknown)")  # fmt: skip
        p.add_argument("--layer-time-limit", type=time_limit_arg, default=60.0, metavar="S",
                       help="MIP time limit per layer (s, default %(default)g), inside "
                       "--time-limit")  # fmt: skip
    else:
        add_time_limit(p, 60.0, "seconds for the whole command: the layer's MIP time limit "
                       "(default %(default)g)")  # fmt: skip
    add_threads(p, "solver threads per layer (at most 1,024)")
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the solver / random search")
    p.add_argument(
        "--metric",
        choices=("edp", "cycles", "energy", "lex"),
        default="edp",
        help="what the search baselines minimise (default edp)",
    )
    p.add_argument("--json", action="store_true", help="print JSON on stdout")


def _register_map(subparsers: argparse._SubParsersAction) -> None:
    """``twill map LAYER --arch ...``"""
    from twill.mapping.front import MAPPERS

    p = subparsers.add_parser(
        "map", help="map one DNN layer onto an accelerator (CoSA MIP or a baseline)"
    )
    p.add_argument("layer", help="Timeloop-style problem YAML")
    p.add_argument(
        "--arch",
        required=True,
        help=ARCH_HELP,
    )
    p.add_argument("--method", choices=MAPPERS, default="cosa")
    p.add_argument(
        "--n-valid",
        type=bounded_int(10_000_000),
        default=None,
        help="valid mappings a search evaluates (random, random16k, hybrid; default: random "
        "5, random16k and hybrid 16,000)",
    )
    p.add_argument("-o", "--output", help="write the mapping as Timeloop mapping YAML")
    _add_solver_options(p)
    p.set_defaults(func=_cmd_map)


def _register_map_network(subparsers: argparse._SubParsersAction) -> None:
    """``twill map-network DIR|MODEL.onnx|--model NAME --arch ...``"""
    from twill.mapping.front import MAPPERS

    p = subparsers.add_parser(
        "map-network", help="map every layer of a network folder or ONNX model"
    )
    p.add_argument(
        "directory",
        nargs="?",
        help="folder with layer YAMLs and layers.yaml, MODEL.onnx, or a shipped DOSA workload: "
        "dosa_resnet50, dosa_bert, dosa_retinanet, dosa_unet",
    )
    add_model_options(p)
    p.add_argument(
        "--arch",
        required=True,
        help=ARCH_HELP,
    )
    p.add_argument(
        "--method",
        "--methods",  # the first spelling, kept
        dest="methods",
        default="cosa-edp",
        help=f"comma-separated methods among {', '.join(MAPPERS)} (default cosa-edp: CoSA's "
        "mapping and a seeded evolutionary search, for the cost model's EDP; cosa = CoSA's own "
        "objective)",
    )
    add_executor_args(p)
    p.add_argument(
        "--limit", type=positive_int, default=None, help="only the first N unique layers"
    )
    p.add_argument("--n-valid", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--plot", help="write a per-layer comparison plot (PNG/PDF)")
    p.add_argument("-o", "--output", metavar="FILE", help="also write the JSON result to FILE")
    _add_solver_options(p, network=True)
    p.set_defaults(func=_cmd_map_network)


def _register_import_onnx(subparsers: argparse._SubParsersAction) -> None:
    """``twill import-onnx MODEL.onnx|--model NAME -o DIR``"""
    p = subparsers.add_parser(
        "import-onnx", help="turn an ONNX model into a layer folder and its graph"
    )
    p.add_argument("path", nargs="?", help="MODEL.onnx")
    p.add_argument("-o", "--output", required=True, help="new (or empty) output folder")
    add_model_options(p)
    p.set_defaults(func=_cmd_import_onnx)


def _register_map_eval(subparsers: argparse._SubParsersAction) -> None:
    """``twill map-eval``: one mapping, or a DOSA dataset, through the cost model"""
    p = subparsers.add_parser(
        "map-eval",
        help="evaluate a given mapping (or a DOSA dataset) with the cost model",
        description="Evaluate one mapping (exit 1 if it violates the architecture; the report "
        "and its violations are printed either way) or every row of a DOSA dataset.",
    )
    p.add_argument("--arch", help=ARCH_HELP)
    p.add_argument("--layer", help="Timeloop-style problem YAML")
    p.add_argument("--mapping", help="DOSA mapping string 'L3[WIO] ... - L0[W] ...'")
    p.add_argument("--mapping-file", help="Timeloop mapping YAML instead of --mapping")
    p.add_argument("--dataset", help="DOSA timeloop_sample.csv-style file: evaluate every row")
    p.add_argument("--limit", type=positive_int, default=None, help="only the first N dataset rows")
    p.add_argument("--full", action="store_true", help="full report (accesses per level) in JSON")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.add_argument("-o", "--output", metavar="FILE", help="also write the JSON result to FILE")
    p.set_defaults(func=_cmd_map_eval)
