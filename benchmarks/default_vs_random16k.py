"""The default layer mapper of ``map-network`` and ``fuse`` (``cosa-edp``) against
``random16k`` (best of 16,000 valid random mappings), layer by layer, on the test networks.

    .venv/bin/python benchmarks/default_vs_random16k.py --json
    .venv/bin/python benchmarks/default_vs_random16k.py --models vit_b_16 --archs simba

Each network of the ``--model`` zoo is exported (legacy exporter) and imported; every unique
layer shape is mapped by both methods (same seed, 2 workers) on each architecture. One row per
(model, architecture, layer): ``model``, ``arch``, ``layer``, ``key``, ``count``,
``default_edp``, ``random16k_edp`` (µJ·cycles, the exact cost model), ``ratio`` (default over
random16k: at most 1 means the default is no worse) and both methods' seconds. The summary
line per network gives the worst ratio and how many layers the default loses.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from twill.scratch import private_scratch

DEFAULT = "cosa-edp"
#: the zoo's transformers and the CNNs of the test networks (issue 42)
MODELS = ("vit_b_16", "bert-base", "gpt2", "llama-tiny", "t5-small", "resnet50", "mobilenet_v2")


def network_rows(model: str, arch_name: str, workers: int) -> list[dict[str, Any]]:
    """Rows of one network on one architecture."""
    from twill.cli.mapping_cmds import resolve_arch
    from twill.io.model_zoo import exported_model
    from twill.io.onnx_model import read_onnx, unique_layers
    from twill.mapping.pipeline import map_network

    with exported_model(model, None, "legacy") as path:
        layers = unique_layers(read_onnx(path).layers)
    arch = resolve_arch(arch_name)
    res = map_network(layers, arch, methods=[DEFAULT, "random16k"], workers=workers)
    rows = []
    for i, ly in enumerate(layers):
        d, r = res.results[DEFAULT][i], res.results["random16k"][i]
        de = d.solution.report.edp if d.solution is not None else None
        re = r.solution.report.edp if r.solution is not None else None
        rows.append({
            "model": model, "arch": arch_name, "layer": ly.name, "key": ly.key,
            "count": ly.count, "default_edp": de, "random16k_edp": re,
            "ratio": None if de is None or re is None else de / re,
            "default_seconds": d.timings.total, "random16k_seconds": r.timings.total,
        })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--archs", default="gemmini,simba")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for model in filter(None, args.models.split(",")):
        for arch in filter(None, args.archs.split(",")):
            t0 = time.perf_counter()
            got = network_rows(model, arch, args.workers)
            rows += got
            ratios = [r["ratio"] for r in got if r["ratio"] is not None]
            lost = sum(x > 1 + 1e-9 for x in ratios)
            print(f"{model:14} {arch:8} {len(got):3} layers: worst ratio {max(ratios):.3f}, "
                  f"default loses on {lost} ({time.perf_counter() - t0:.0f} s)",
                  file=sys.stderr, flush=True)  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
            print(f"{r['model']:14} {r['arch']:8} {r['layer'][:40]:40} x{r['count']:<3} "
                  f"default {r['default_edp']:.4g} random16k {r['random16k_edp']:.4g} "
                  f"ratio {ratio}")  # fmt: skip
    return 0


if __name__ == "__main__":
    with private_scratch():
        sys.exit(main())
