"""Networks from the PyTorch model zoo, exported to ONNX at run time (batch 1, 3×224×224),
imported and mapped on Gemmini and Simba: layers and unique layers, import time, CoSA map
time, network cycles / energy / EDP per method (every mapping verified), FADiff (grouped
layers as their groups in sequence, their edges not fused), and for ResNet-50 the same totals
from the DOSA/CoSA layer folders side by side.

    .venv/bin/python benchmarks/onnx_networks.py                          # all four, both archs
    .venv/bin/python benchmarks/onnx_networks.py --models resnet50 --archs gemmini --json
    .venv/bin/python benchmarks/onnx_networks.py --methods cosa,cosa-rerank,hybrid

Repeated shapes are mapped once and weighted by their count (the "unique" column).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from twill.scratch import private_scratch

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "data"
MODELS = ("resnet50", "mobilenet_v2", "efficientnet_b0", "vit_b_16")
FOLDERS = {"gemmini": "dosa/workloads/resnet50", "simba": "cosa/workloads/resnet50_graph"}


def _arch(name: str):  # noqa: ANN202 - benchmark script
    from twill.mapping.arch import gemmini_arch, simba_arch

    return gemmini_arch() if name == "gemmini" else simba_arch()


def _totals(result, methods: list[str]) -> dict:  # noqa: ANN001
    from twill.mapping.mapping import verify_mapping

    out = {}
    for m in methods:
        ok = all(
            r.solution is not None and not verify_mapping(ly, _arch_of(result), r.solution.mapping)
            for ly, r in zip(result.layers, result.results[m], strict=True)
        )
        tot = result.total(m)
        out[m] = {
            "cycles": tot.cycles if tot else None,
            "energy_uJ": tot.energy_uj if tot else None,
            "edp": tot.edp if tot else None,
            "seconds": sum(result.solve_seconds(m)),
            "verified": ok,
        }
    return out


_ARCHS: dict[str, object] = {}


def _arch_of(result):  # noqa: ANN001, ANN202
    return _ARCHS[result.arch]


def _fadiff(imp, arch_name: str, steps: int) -> dict:  # noqa: ANN001
    from twill.mapping.fadiff.fusion import fusion_groups
    from twill.mapping.fadiff.train import FADiffSettings, solve
    from twill.mapping.problems import NetworkMappingProblem
    from twill.options import SolverOptions

    problem = NetworkMappingProblem(imp.network, _arch(arch_name))
    res = solve(problem, SolverOptions(seed=0, fadiff=FADiffSettings(steps=steps)))
    rep = res.solution.report
    groups = [g for g in fusion_groups(imp.network, rep.fused) if len(g) > 1]
    return {
        "cycles": rep.cycles,
        "energy_uJ": rep.energy_uj,
        "edp": rep.edp,
        "seconds": res.timings.total,
        "fused_groups": len(groups),
        "fused_layers": sum(len(g) for g in groups),
    }


def run(model: str, arch_name: str, args: argparse.Namespace) -> dict:
    from twill.mapping.pipeline import map_network
    from twill.onnx.model import import_model, unique_layers

    t0 = time.perf_counter()
    imp = import_model(model)
    t_import = time.perf_counter() - t0
    uniq = unique_layers(imp.layers)
    arch = _arch(arch_name)
    _ARCHS[arch.name] = arch
    res = map_network(uniq, arch, methods=args.methods, workers=args.workers, network=model)
    row = {
        "model": model,
        "arch": arch_name,
        "layers": len(imp.layers),
        "unique": len(uniq),
        "grouped_layers": sum(ly.groups > 1 for ly in imp.layers),
        "gmacs": sum(ly.total_macs for ly in imp.layers) / 1e9,
        "import_s": t_import,
        "edges": len(imp.network.edges),
        "fusion_candidates": len(imp.network.candidates),
        "totals": _totals(res, args.methods),
    }
    row["import_plus_cosa_s"] = t_import + row["totals"]["cosa"]["seconds"]
    if args.fadiff_steps:
        row["fadiff"] = _fadiff(imp, arch_name, args.fadiff_steps)
    if model == "resnet50":
        from twill.io.timeloop import read_network

        ref = map_network(
            read_network(BENCH / FOLDERS[arch_name]), arch, methods=["cosa"], workers=args.workers
        )
        tot = ref.total("cosa")
        row["folder_cosa"] = {"cycles": tot.cycles, "energy_uJ": tot.energy_uj, "edp": tot.edp}
    return row


def _print(rows: list[dict], methods: list[str]) -> None:
    head = "model arch layers unique import_s cosa_s cands " + " ".join(
        f"{m}:cycles {m}:uJ {m}:EDP" for m in methods
    )
    print(head)
    for r in rows:
        t = r["totals"]
        cells = [
            r["model"],
            r["arch"],
            r["layers"],
            r["unique"],
            f"{r['import_s']:.1f}",
            f"{t['cosa']['seconds']:.1f}",
            r["fusion_candidates"],
        ]
        for m in methods:
            cells += [f"{t[m]['cycles']:,}", f"{t[m]['energy_uJ']:.1f}", f"{t[m]['edp']:.4g}"]
        print(" ".join(str(c) for c in cells))
        if "folder_cosa" in r:
            f = r["folder_cosa"]
            print(f"  layer-folder ResNet-50, cosa: {f['cycles']:,} cycles {f['energy_uJ']:.1f} uJ")
        if "fadiff" in r:
            print(f"  fadiff: {r['fadiff']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--archs", default="gemmini,simba")
    ap.add_argument("--methods", default="cosa,cosa-rerank")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--fadiff-steps", type=int, default=0, help="FADiff steps (0: skip)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.methods = [m for m in args.methods.split(",") if m]
    if "cosa" not in args.methods:
        args.methods.insert(0, "cosa")
    rows = [
        run(m, a, args) for m in args.models.split(",") if m for a in args.archs.split(",") if a
    ]
    if args.json:
        json.dump(rows, sys.stdout, indent=1, default=str)
        print()
    else:
        _print(rows, args.methods)
    return 0 if all(r["totals"][m]["verified"] for r in rows for m in args.methods) else 1


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
