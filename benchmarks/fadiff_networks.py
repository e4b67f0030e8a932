"""FADiff vs layer-wise baselines on whole networks (default Gemmini 16x16, 128 KB SP, 32 KB ACC).

Usage::

    python benchmarks/fadiff_networks.py [--networks resnet50,bert,retinanet,unet] [--json]
    python benchmarks/fadiff_networks.py --networks path/to/model.onnx   # an ONNX model
        [--steps N] [--seed N] [--cosa-time-limit S]

Methods per network (one shared exact NumPy cost model): ``layerwise-cosa`` (CoSA per layer),
``layerwise-gradient`` (gradient descent with fusion off and the read-out polish, the better
of two starts: CoSA's plan, as DOSA, and a cold start), ``layerwise-greedy-fusion`` (best
layer-wise plan + greedy fusion), ``random`` (same number of model evaluations as FADiff) and
``fadiff`` (joint mapping + fusion from a cold start, then the depth-first group search on the
best layer-wise mappings; compared with every layer-wise plan, so never worse). ``seconds`` is
each method's own optimisation time; FADiff's includes the layer-wise gradient runs and the
greedy fusion whose plans it takes as candidates, not the CoSA run. Progress goes to stderr;
with ``--json`` stdout is one JSON list.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from twill.io.networks import load_network
from twill.mapping.arch import gemmini_arch
from twill.mapping.fadiff.baselines import greedy_fusion_baseline, layerwise_cosa, random_search
from twill.mapping.fadiff.bounds import fusion_bounds
from twill.mapping.fadiff.networks import NETWORKS
from twill.mapping.fadiff.train import fadiff


def _row(net: str, method: str, report, seconds: float, fused: int) -> dict:
    return {
        "network": net,
        "method": method,
        "edp": report.edp,
        "energy_uJ": report.energy_uj,
        "cycles": float(report.cycles),
        "dram_bytes": float(report.dram_bytes),
        "seconds": round(seconds, 3),
        "fused": fused,
    }


def _network(name: str):  # noqa: ANN202 - benchmark script
    """A built-in network, or the graph of an ONNX file / zoo model (``PATH.onnx``)."""
    if name.lower().endswith(".onnx"):
        from twill.io.onnx_model import import_model

        return import_model(name).network
    return load_network(name)


def run_network(name: str, *, steps: int, seed: int, cosa_time_limit: float) -> list[dict]:
    arch = gemmini_arch()
    net = _network(name)
    name = net.name
    rows = []
    print(f"[{name}] layerwise-cosa ...", file=sys.stderr, flush=True)
    cosa = layerwise_cosa(net, arch, time_limit=cosa_time_limit)
    rows.append(_row(name, "layerwise-cosa", cosa.report, cosa.seconds, 0))
    print(f"[{name}] layerwise-gradient ...", file=sys.stderr, flush=True)
    # two starts (DOSA restarts from several points): CoSA's plan and a cold start; the
    # descent from CoSA never leaves CoSA's basin, the cold start finds other tilings
    lg_starts = [
        fadiff(net, arch, fusion=False, steps=steps, seed=seed, init=init)
        for init in (cosa.plan, None)
    ]
    lg = min(lg_starts, key=lambda r: r.report.edp)
    lg_seconds = sum(r.seconds for r in lg_starts)
    rows.append(_row(name, "layerwise-gradient", lg.report, lg_seconds, 0))
    best_lw = min((cosa.plan, cosa.report), (lg.plan, lg.report), key=lambda x: x[1].edp)[0]
    print(f"[{name}] layerwise-greedy-fusion ...", file=sys.stderr, flush=True)
    gf = greedy_fusion_baseline(net, arch, best_lw)
    rows.append(_row(name, "layerwise-greedy-fusion", gf.report, gf.seconds, len(gf.plan.fused)))
    print(f"[{name}] fadiff ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    fd = fadiff(
        net, arch, fusion=True, steps=steps, seed=seed, candidates=[cosa.plan, lg.plan, gf.plan]
    )
    fd_seconds = time.perf_counter() - t0 + lg_seconds + gf.seconds
    rows.append(_row(name, "fadiff", fd.report, fd_seconds, len(fd.plan.fused)))
    print(f"[{name}] random ({fd.n_evaluations} evaluations) ...", file=sys.stderr, flush=True)
    rnd = random_search(net, arch, evaluations=fd.n_evaluations, seed=seed)
    rows.append(_row(name, "random", rnd.report, rnd.seconds, 0))
    # Upper bounds on any fusion gain over the best layer-wise plan (docs/fadiff.md).
    b = fusion_bounds(net, arch, best_lw)
    extra = {
        "bound_gain_candidates": b.gain_candidates,
        "bound_gain_all": b.gain_all,
        "bound_gain_ideal": b.gain_ideal,
        "floor_dram_bytes": b.floor_dram_bytes,
        "dram_bound_layers": b.dram_bound_layers,
        "dram_energy_share": b.dram_share,
    }
    for r in rows:
        r.update(extra)
    return rows


CROSSCHECK_LAYERS = (
    "1_1_128_1_128_64_1_1_1",
    "1_1_128_1_768_768_1_1_1",
    "3_3_14_14_256_256_1_1_1",
    "1_1_28_28_128_512_1_1_1",
    "3_3_56_56_64_64_1_1_1",
    "1_1_7_7_2048_512_1_1_1",
)


def crosscheck(*, steps: int, seed: int, cosa_time_limit: float) -> int:
    """Single layers: FADiff with fusion off (cold start) vs CoSA, same model."""
    from twill.mapping.cosa import cosa_map
    from twill.mapping.cost.analytical import evaluate
    from twill.mapping.fadiff.networks import chain_network
    from twill.mapping.workload import Layer

    arch = gemmini_arch()
    print(
        f"{'layer':26} {'CoSA cycles':>12} {'FADiff cycles':>13} {'ratio':>6} "
        f"{'CoSA uJ':>8} {'FADiff uJ':>9} {'FADiff s':>8}"
    )
    for key in CROSSCHECK_LAYERS:
        ly = Layer.from_key(key, name="l")
        ref = evaluate(ly, arch, cosa_map(ly, arch, time_limit=cosa_time_limit).mapping)
        t0 = time.perf_counter()
        fd = fadiff(chain_network([ly]), arch, fusion=False, steps=steps, seed=seed)
        dt = time.perf_counter() - t0
        print(
            f"{key:26} {ref.cycles:12.0f} {fd.report.cycles:13.0f} "
            f"{fd.report.cycles / ref.cycles:6.3f} {ref.energy_uj:8.2f} "
            f"{fd.report.energy_uj:9.2f} {dt:8.1f}",
            flush=True,
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default=",".join(NETWORKS))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cosa-time-limit", type=float, default=10.0)
    ap.add_argument(
        "--crosscheck",
        action="store_true",
        help="single layers: FADiff without fusion vs CoSA latency, then exit",
    )
    args = ap.parse_args(argv)
    if args.crosscheck:
        return crosscheck(steps=args.steps, seed=args.seed, cosa_time_limit=args.cosa_time_limit)
    rows: list[dict] = []
    for name in [n.strip() for n in args.networks.split(",") if n.strip()]:
        rows += run_network(
            name, steps=args.steps, seed=args.seed, cosa_time_limit=args.cosa_time_limit
        )
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    by_net: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_net.setdefault(r["network"], {})[r["method"]] = r
    hdr = (
        f"{'network':10} {'method':24} {'EDP uJ*cyc':>12} {'energy uJ':>10} {'cycles':>11} "
        f"{'DRAM MB':>8} {'fused':>5} {'s':>6} {'EDP/best-lw':>11}"
    )
    print(hdr)
    for net, ms in by_net.items():
        best_lw = min(ms["layerwise-cosa"]["edp"], ms["layerwise-gradient"]["edp"])
        for m, r in ms.items():
            print(
                f"{net:10} {m:24} {r['edp']:12.4g} {r['energy_uJ']:10.1f} {r['cycles']:11.0f} "
                f"{r['dram_bytes'] / 1e6:8.2f} {r['fused']:5d} {r['seconds']:6.1f} "
                f"{best_lw / r['edp']:10.3f}x"
            )
    print("\nUpper bounds on the EDP gain of any fusion plan over the best layer-wise plan:")
    print(
        f"{'network':10} {'cands free':>10} {'all free':>9} {'ideal':>7} {'floor MB':>9} "
        f"{'DRAM-bound layers':>17} {'DRAM energy share':>17}"
    )
    for net, ms in by_net.items():
        r = next(iter(ms.values()))
        print(
            f"{net:10} {r['bound_gain_candidates']:9.3f}x {r['bound_gain_all']:8.3f}x "
            f"{r['bound_gain_ideal']:6.3f}x {r['floor_dram_bytes'] / 1e6:9.2f} "
            f"{r['dram_bound_layers']:17d} {r['dram_energy_share']:17.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
