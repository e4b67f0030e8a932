"""The default layer mapper of ``map-network`` and ``fuse`` (``cosa-edp``) against
``random16k`` (best of 16,000 valid random mappings), layer by layer, on the test networks.

    .venv/bin/python benchmarks/default_vs_random16k.py --json
    .venv/bin/python benchmarks/default_vs_random16k.py --models vit_b_16 --archs simba

Each network is exported (legacy exporter) and imported; a decoder is named with its phase,
``llama-tiny:decode`` (text models take 128 tokens). Every unique layer shape is mapped by
both methods (same seed, 2 workers) on each architecture. One row per (model, architecture,
layer): ``model``, ``arch``, ``layer``, ``key``, ``count``, ``default_edp``,
``random16k_edp`` (µJ·cycles, the exact cost model), ``ratio`` (default over random16k: at
most 1 means the default is no worse) and both methods' seconds. The summary line per network
gives the worst ratio and how many layers the default loses.

``random16k`` is deterministic (seeded) and slow (a few hundred thousand to two million draws
per layer), so ``--reference FILE`` takes its EDPs from an earlier run's ``--json`` rows (same
seed; rows matched by model, architecture and shape key) and runs only the default;
``--save FILE`` rewrites the rows so far after every network.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from twill.scratch import private_scratch

DEFAULT = "cosa-edp"
#: the test networks of issue 42: the zoo's transformers (decoders in both phases) and CNNs
MODELS = ("vit_b_16", "bert-base", "gpt2", "llama-tiny:prefill", "llama-tiny:decode",
          "t5-small", "swin-tiny", "resnet50", "mobilenet_v2")  # fmt: skip


def network_rows(
    model: str, arch_name: str, workers: int, reference: dict[tuple[str, str, str], dict]
) -> list[dict[str, Any]]:
    """Rows of one network (``name`` or ``name:phase``) on one architecture; ``random16k``
    runs only for the layers that ``reference`` lacks."""
    from twill.cli.mapping_cmds import resolve_arch
    from twill.mapping.pipeline import map_network
    from twill.onnx.model import read_onnx, unique_layers
    from twill.onnx.model_zoo import exported_model

    name, _, phase = model.partition(":")
    with exported_model(name, None, "legacy", phase=phase or None) as path:
        layers = unique_layers(read_onnx(path).layers)
    arch = resolve_arch(arch_name)
    known = [reference.get((model, arch_name, ly.key)) for ly in layers]
    res = map_network(layers, arch, methods=[DEFAULT], workers=workers)
    todo = [ly for ly, k in zip(layers, known, strict=True) if k is None]
    ref = iter(map_network(todo, arch, methods=["random16k"], workers=workers).results["random16k"]
               if todo else ())  # fmt: skip
    rows = []
    for i, ly in enumerate(layers):
        d = res.results[DEFAULT][i]
        de = d.solution.report.edp if d.solution is not None else None
        if known[i] is not None:
            re, r_s = known[i]["random16k_edp"], known[i]["random16k_seconds"]
        else:
            r = next(ref)
            re = r.solution.report.edp if r.solution is not None else None
            r_s = r.timings.total
        rows.append({
            "model": model, "arch": arch_name, "layer": ly.name, "key": ly.key,
            "count": ly.count, "default_edp": de, "random16k_edp": re,
            "ratio": None if de is None or re is None else de / re,
            "default_seconds": d.timings.total, "random16k_seconds": r_s,
        })  # fmt: skip
    return rows


def _reference(path: str | None) -> dict[tuple[str, str, str], dict]:
    """An earlier run's rows by (model, arch, key)."""
    if not path:
        return {}
    rows = json.loads(Path(path).read_text())
    return {(r["model"], r["arch"], r["key"]): r for r in rows if r["random16k_edp"] is not None}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--archs", default="gemmini,simba")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--reference", help="random16k EDPs from an earlier run's --json rows")
    p.add_argument("--save", help="rewrite the rows so far to this file after every network")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    reference = _reference(args.reference)
    rows: list[dict[str, Any]] = []
    for model in filter(None, args.models.split(",")):
        for arch in filter(None, args.archs.split(",")):
            t0 = time.perf_counter()
            got = network_rows(model, arch, args.workers, reference)
            rows += got
            ratios = [r["ratio"] for r in got if r["ratio"] is not None]
            lost = sum(x > 1 + 1e-9 for x in ratios)
            print(f"{model:18} {arch:8} {len(got):3} layers: worst ratio {max(ratios):.3f}, "
                  f"default loses on {lost} ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr, flush=True)  # fmt: skip
            if args.save:
                Path(args.save).write_text(json.dumps(rows, indent=1))
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
            print(f"{r['model']:18} {r['arch']:8} {r['layer'][:40]:40} x{r['count']:<3} "
                  f"default {r['default_edp']:.4g} random16k {r['random16k_edp']:.4g} "
                  f"ratio {ratio}")  # fmt: skip
    return 0


if __name__ == "__main__":
    with private_scratch():
        sys.exit(main())
