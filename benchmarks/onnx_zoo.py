"""The `--model` zoo end to end with both PyTorch exporters: export, import, the layer
shapes mapped by ``twill fuse``'s layer method (``map-network``'s default) and the rest of
``twill fuse`` (FADiff against the best layer-wise plan), with the MAC count checked against a
counter written here over the ONNX graph (not the importer's).

    .venv/bin/python benchmarks/onnx_zoo.py --json                 # every model, both exporters
    .venv/bin/python benchmarks/onnx_zoo.py --models "" --llm      # the LLM rows only
    .venv/bin/python benchmarks/onnx_zoo.py --models resnet50 --exporters legacy --steps 50

One row per model and exporter: ``model``, ``exporter``, ``imported``, ``layers``,
``unique_layers``, ``macs`` (importer), ``macs_independent`` (this file's counter),
``map_seconds`` (every unique layer shape mapped, 2 workers: the first step of ``twill fuse``,
done once and shared), ``fuse_seconds`` (the rest of ``twill fuse`` on that mapping: the
layer-wise plan, the first group search, the layer-wise gradient, FADiff and the bound;
``twill fuse`` takes about the sum), both also as ``*_cpu_seconds`` (this process and its
workers) with the load average at the row's start and end, ``gain_vs_layerwise``, ``status``
and ``message``. ``--time-limit`` is fuse's, counted from the start of the mapping as the
command counts it. LLM rows (``--llm``: GPT-2 and llama-tiny, prefill and decode at ``--seq``,
default 512) add DRAM traffic, the layer-wise and fused EDP and what fused. A second exporter
whose network (layers in order and edges) equals the first's reuses its numbers (the mappers
see nothing else) and says so in ``message``; ``--rerun`` runs it again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from twill.scratch import private_scratch

ROOT = Path(__file__).resolve().parents[1]


def count_macs(path: Path) -> int:
    """MACs of every Conv, ConvTranspose, Gemm, MatMul and two-operand Einsum of the ONNX
    file at ``path``, from
    onnx's inferred shapes (weights not loaded): an independent check of the importer."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    g = model.graph
    shapes = {t.name: list(t.dims) for t in g.initializer}
    for vi in [*g.input, *g.value_info, *g.output]:
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    total = 0
    for n in g.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "Conv":  # every output element: C/group x kernel MACs
            w = shapes[n.input[1]]
            total += math.prod(shapes[n.output[0]]) * math.prod(w[1:])
        elif n.op_type == "ConvTranspose":  # every input element scatters K/group x kernel
            w = shapes[n.input[1]]
            total += math.prod(shapes[n.input[0]]) * math.prod(w[1:])
        elif n.op_type == "MatMul":  # every output element: the inner dimension
            a = shapes[n.input[0]]
            total += math.prod(shapes[n.output[0]]) * a[-1]
        elif n.op_type == "Gemm":
            a = shapes[n.input[0]]
            total += math.prod(shapes[n.output[0]]) * (a[0] if attrs.get("transA") else a[-1])
        elif n.op_type == "Einsum" and len([t for t in n.input if t]) == 2:
            ins = [shapes[t] for t in n.input]
            total += _einsum_macs(attrs["equation"], ins, shapes[n.output[0]])
    return total


def _einsum_macs(equation: bytes | str, ins: list[list[int]], out: list[int]) -> int:
    """Every output element of a two-operand einsum times the sizes of the indices it sums
    over (those of both operands that the output drops)."""
    eq = (equation.decode() if isinstance(equation, bytes) else equation).replace(" ", "")
    lhs, arrow, kept = eq.partition("->")
    terms = lhs.split(",")
    size: dict[str, int] = {}
    for term, shape in zip(terms, ins, strict=True):
        head, _, tail = term.partition("...")
        rest = shape[len(shape) - len(tail) :] if tail else []
        pairs = [*zip(head, shape[: len(head)], strict=True), *zip(tail, rest, strict=True)]
        for c, d in pairs:
            size[c] = max(size.get(c, 1), d)
    both = set(terms[0]) & set(terms[1]) - {"."}
    summed = both - set(kept) if arrow else both
    return math.prod(out) * math.prod(size[c] for c in summed)


def _fuse_args(opts: argparse.Namespace) -> argparse.Namespace:
    """``twill fuse``'s options as its parser fills them (layer method, seed, init: its
    defaults), with this run's ``--steps``, ``--time-limit`` and 2 workers."""
    from twill.cli import build_parser

    argv = ["fuse", "x", "--steps", str(opts.steps), "--time-limit", str(opts.time_limit)]
    return build_parser().parse_args([*argv, "--workers", "2"])


def _cpu() -> float:
    """CPU seconds of this process and its finished workers (the machine is shared: wall
    time grows with the load, CPU time much less)."""
    import resource

    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _mapping(imp: Any, arch: Any, opts: argparse.Namespace, llm: bool) -> dict[str, Any]:
    """``twill fuse``'s flow, timed in two parts: the layer shapes mapped (what
    ``map-network`` does with fuse's layer method), then the rest of the command on that
    result, under the command's ``--time-limit`` counted from the start of the mapping."""
    from twill.cli.fuse_cmd import fuse_settings, fuse_with_progress
    from twill.deadline import Deadline
    from twill.mapping.fadiff.fusion import fusion_groups
    from twill.mapping.fadiff.pipeline import map_layer_shapes

    args, net = _fuse_args(opts), imp.network
    t0, c0 = time.perf_counter(), _cpu()
    deadline = Deadline.after(args.time_limit or None)
    mapped = map_layer_shapes(net, arch, fuse_settings(args))  # not cut: timed on its own
    t1, c1 = time.perf_counter(), _cpu()
    row: dict[str, Any] = {"map_seconds": t1 - t0, "map_cpu_seconds": c1 - c0}
    row["mapped_all"] = all(r.solution is not None for r in mapped.results[args.layer_method])
    out = fuse_with_progress(args, net, arch, deadline, mapped)
    res, lw_rep, gain = out.result, out.layerwise_report, out.gain
    stopped = gain["stopped"] is not None
    row.update(fuse_seconds=time.perf_counter() - t1, fuse_cpu_seconds=_cpu() - c1)
    row.update(gain_vs_layerwise=gain["gain_vs_layerwise"], stopped=stopped)
    row.update(layerwise_edp=gain["layerwise_edp"], fused_edp=gain["edp"])
    row.update(bound_gain=gain["bound_gain"], bound_note=gain["bound_note"])
    row.update(source=res.solution.source, layer_method=args.layer_method)
    if llm:
        rep = res.solution.report
        groups = fusion_groups(net, rep.fused)
        row.update(
            dram_mb_layerwise=lw_rep.dram_bytes / 1e6,
            dram_mb_fused=rep.dram_bytes / 1e6,
            fused=[[net.layers[j].name for j in grp] for grp in groups if len(grp) > 1],
        )
    return row


def run_one(model: str, exporter: str, seq: int | None, phase: str | None, opts: Any,
            cache: dict, llm: bool) -> dict[str, Any]:  # fmt: skip
    """One row: export, import, the independent count, mapping and fusion."""
    from twill.mapping.arch import gemmini_arch
    from twill.onnx.model import read_onnx, unique_layers
    from twill.onnx.model_zoo import exported_model

    row: dict[str, Any] = {"model": model, "exporter": exporter, "phase": phase, "seq": seq}
    row.update(imported=False, status="error", message="")
    t0 = time.perf_counter()
    try:
        with exported_model(model, None, exporter, seq=seq, phase=phase) as path:
            row["export_seconds"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            imp = read_onnx(path)
            row["import_seconds"] = time.perf_counter() - t0
            row["macs_independent"] = count_macs(path)
    except Exception as exc:  # noqa: BLE001 - a benchmark row records any failure
        row["message"] = f"{type(exc).__name__}: {exc}"[:500]
        return row
    uniq = unique_layers(imp.layers)
    row.update(
        imported=True, layers=len(imp.layers), unique_layers=len(uniq), macs=imp.network.macs
    )
    net = imp.network  # the mappers see the layers and edges only (names aside)
    key = (model, phase, seq, tuple(ly.key for ly in net.layers),
           tuple((e.src, e.dst, e.kind) for e in net.edges))  # fmt: skip
    if key in cache and not opts.rerun:
        row.update(cache[key])
        row["message"] = "the same network (layers and edges) as the first exporter: reused"
    else:
        try:
            load = os.getloadavg()[0]
            cache[key] = {**_mapping(imp, gemmini_arch(), opts, llm), "load_start": load}
            cache[key]["load_end"] = os.getloadavg()[0]
            row.update(cache[key])
        except Exception as exc:  # noqa: BLE001
            row["message"] = f"mapping failed: {type(exc).__name__}: {exc}"[:500]
            return row
    same = row["macs"] == row["macs_independent"]
    never_worse = row.get("gain_vs_layerwise", 0) >= 1 - 1e-12
    row["status"] = "ok" if same and never_worse and row.get("mapped_all") else "check"
    return row


def main(argv: list[str] | None = None) -> int:
    from twill.cli.fuse_cmd import DEFAULT_TIME_LIMIT
    from twill.onnx.model_zoo import MODELS

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--exporters", default="legacy,dynamo")
    p.add_argument("--llm", action="store_true", help="add the LLM rows (prefill and decode)")
    p.add_argument("--seq", type=int, default=512, help="tokens of the LLM rows")
    p.add_argument("--steps", type=int, default=300, help="FADiff steps (fuse's default)")
    p.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT,
                   help="fuse's --time-limit (0: none), from the start of its mapping")  # fmt: skip
    p.add_argument("--rerun", action="store_true",
                   help="map and fuse each exporter's network, even a repeated one")  # fmt: skip
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    cases: list[tuple[str, int | None, str | None, bool]] = [
        (m, None, None, False) for m in args.models.split(",") if m
    ]
    if args.llm:
        cases += [(m, args.seq, ph, True) for m in ("gpt2", "llama-tiny")
                  for ph in ("prefill", "decode")]  # fmt: skip
    rows, cache = [], {}
    for model, seq, phase, llm in cases:
        for exporter in args.exporters.split(","):
            print(f"[{model} {phase or ''} {exporter}] ...", file=sys.stderr, flush=True)
            rows.append(run_one(model, exporter, seq, phase, args, cache, llm))
            print(f"  {_line(rows[-1])}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(_line(r))
    return 0


def _line(r: dict[str, Any]) -> str:
    name = f"{r['model']}{' ' + r['phase'] if r.get('phase') else ''}"
    if not r["imported"]:
        return f"{name:24} {r['exporter']:7} NOT IMPORTED {r['message']}"
    gain = r.get("gain_vs_layerwise")
    return (
        f"{name:24} {r['exporter']:7} layers {r['layers']:4} unique {r['unique_layers']:3} "
        f"MACs {r['macs']:.4g} (independent {r['macs_independent']:.4g}) "
        f"map {r.get('map_seconds', 0):6.1f} s fuse {r.get('fuse_seconds', 0):6.1f} s "
        f"(CPU {r.get('map_cpu_seconds', 0):.0f} / {r.get('fuse_cpu_seconds', 0):.0f} s, "
        f"load {r.get('load_start', 0):.1f}-{r.get('load_end', 0):.1f}"
        f"{', stopped at the time limit' if r.get('stopped') else ''}) "
        f"gain {gain if gain is None else round(gain, 3)} {r['status']} {r['message']}"
        + (
            f" | DRAM {r['dram_mb_layerwise']:.1f} -> {r['dram_mb_fused']:.1f} MB, EDP "
            f"{r['layerwise_edp']:.4g} -> {r['fused_edp']:.4g}, fused {r['fused']}"
            if "dram_mb_fused" in r
            else ""
        )
    )


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
