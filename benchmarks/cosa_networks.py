"""CoSA vs random best-of-5 vs Timeloop-Hybrid-like best-of-16K (vs ZigZag LOMA when installed)
per layer and per network, under twill's Timeloop-class cost model; plus the cost model's error
distribution against DOSA's 2,000 Timeloop-evaluated Gemmini mappings. A second CoSA column,
``cosa-rerank`` (a few MIP solutions, loop orders polished and the best picked under the cost
model; not CoSA, never claimed optimal), runs unless ``--no-rerank``.

    .venv/bin/python benchmarks/cosa_networks.py                       # ResNet-50 on Simba + DOSA
    .venv/bin/python benchmarks/cosa_networks.py --networks all        # all 8 network/arch pairs
    .venv/bin/python benchmarks/cosa_networks.py --networks resnet50 --limit 6 --json
    .venv/bin/python benchmarks/cosa_networks.py --agree-only --agree scip   # backend agreement

Prints tables (and ``--json``): per layer latency, energy and solve time of each method, per
network the count-weighted totals, ratios to random best-of-5 and hybrid, and the solve-time
distribution of CoSA.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from twill.scratch import private_scratch

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ("cpsat", "scip", "highs", "cbc")
BENCH = ROOT / "data"

NETWORKS = {
    "resnet50": ("cosa/workloads/resnet50_graph", "simba"),
    "resnext50": ("cosa/workloads/resnext50_32x4d_graph", "simba"),
    "alexnet": ("cosa/workloads/alexnet_graph", "simba"),
    "deepbench": ("cosa/workloads/deepbench_graph", "simba"),
    "resnet50_gemmini": ("dosa/workloads/resnet50", "gemmini"),
    "bert_gemmini": ("dosa/workloads/bert", "gemmini"),
    "retinanet_gemmini": ("dosa/workloads/retinanet", "gemmini"),
    "unet_gemmini": ("dosa/workloads/unet", "gemmini"),
}


def _zigzag_available() -> bool:
    try:
        import zigzag  # noqa: F401
    except Exception:
        return False
    return True


def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def run_network(name: str, args: argparse.Namespace) -> dict:
    from twill.io.timeloop import read_network
    from twill.mapping.arch import gemmini_arch, simba_arch
    from twill.mapping.cosa.solve import CoSASettings
    from twill.mapping.pipeline import map_network
    from twill.mapping.search.common import SearchSettings
    from twill.options import SolverOptions

    folder, arch_name = NETWORKS[name]
    arch = simba_arch() if arch_name == "simba" else gemmini_arch()
    layers = read_network(BENCH / folder)
    if args.limit:
        layers = layers[: args.limit]
    methods = ["cosa", "random", "hybrid"] + ([] if args.no_rerank else ["cosa-rerank"])
    mip = SolverOptions(time_limit=args.time_limit, cosa=CoSASettings(backend=args.backend))
    opts = {
        "cosa": mip,
        "cosa-rerank": mip,
        "random": SolverOptions(seed=args.seed, search=SearchSettings(n_valid=5, metric="edp")),
        "hybrid": SolverOptions(
            seed=args.seed, search=SearchSettings(n_valid=args.hybrid_n, metric=args.hybrid_metric)
        ),
    }
    res = map_network(
        layers, arch, methods=methods, options=opts, workers=args.workers, network=name
    )
    rows = []
    for i, layer in enumerate(layers):
        row = {"layer": layer.name, "shape": layer.key, "count": layer.count}
        for m in methods:
            r = res.results[m][i]
            found = r.solution
            row[m] = {
                "cycles": found.report.cycles if found else None,
                "energy_uJ": found.report.energy_uj if found else None,
                "seconds": r.timings.total,
                "cpu_seconds": r.stats.get("cpu_seconds"),
                "status": r.status.value,
                "mapping": str(found.mapping) if found else None,
            }
        rows.append(row)
    zz_rows = _zigzag_rows(layers, res, arch, arch_name, args)
    for row, zz in zip(rows, zz_rows, strict=False):
        row["zigzag"] = zz
    totals = {}
    for m in methods:
        tot = res.total(m)
        totals[m] = (
            {"cycles": tot.cycles, "energy_uJ": tot.energy_uj, "edp": tot.edp} if tot else None
        )
    ok = [r for r in rows if all(r[m]["cycles"] for m in methods)]
    cosa_s = [r["cosa"]["seconds"] for r in rows]
    summary = {
        "network": name,
        "arch": arch.name,
        "layers": len(rows),
        "totals": totals,
        "latency_speedup_vs_random": totals["random"]["cycles"] / totals["cosa"]["cycles"],
        "energy_gain_vs_random": totals["random"]["energy_uJ"] / totals["cosa"]["energy_uJ"],
        "latency_speedup_vs_hybrid": totals["hybrid"]["cycles"] / totals["cosa"]["cycles"],
        "energy_gain_vs_hybrid": totals["hybrid"]["energy_uJ"] / totals["cosa"]["energy_uJ"],
        "layer_geomean_latency_vs_random": geomean(
            [r["random"]["cycles"] / r["cosa"]["cycles"] for r in ok]
        ),
        "layer_geomean_latency_vs_hybrid": geomean(
            [r["hybrid"]["cycles"] / r["cosa"]["cycles"] for r in ok]
        ),
        "cosa_latency_le_hybrid_fraction": sum(
            r["cosa"]["cycles"] <= r["hybrid"]["cycles"] for r in ok
        )
        / max(1, len(ok)),
        "cosa_seconds_median": statistics.median(cosa_s),
        "cosa_seconds_max": max(cosa_s),
        "cosa_optimal": sum(r["cosa"]["status"] == "optimal" for r in rows),
        "hybrid_seconds_median": statistics.median(r["hybrid"]["seconds"] for r in rows),
        "random_seconds_median": statistics.median(r["random"]["seconds"] for r in rows),
        "wall_seconds": res.seconds,
        "zigzag": "not installed (pip install 'twill-sched[peers]')"
        if not _zigzag_available()
        else f"LOMA on the first {len(zz_rows)} layers (--zigzag N)",
    }
    if "cosa-rerank" in methods:
        rr = "cosa-rerank"
        rr_s = [r[rr]["seconds"] for r in rows]
        rr_cpu = [r[rr]["cpu_seconds"] for r in rows if r[rr]["cpu_seconds"] is not None]
        summary["rerank"] = {
            "latency_speedup_vs_hybrid": totals["hybrid"]["cycles"] / totals[rr]["cycles"],
            "energy_gain_vs_hybrid": totals["hybrid"]["energy_uJ"] / totals[rr]["energy_uJ"],
            "latency_speedup_vs_random": totals["random"]["cycles"] / totals[rr]["cycles"],
            "energy_gain_vs_random": totals["random"]["energy_uJ"] / totals[rr]["energy_uJ"],
            "latency_speedup_vs_cosa": totals["cosa"]["cycles"] / totals[rr]["cycles"],
            "energy_gain_vs_cosa": totals["cosa"]["energy_uJ"] / totals[rr]["energy_uJ"],
            "layer_geomean_latency_vs_hybrid": geomean(
                [r["hybrid"]["cycles"] / r[rr]["cycles"] for r in ok]
            ),
            "latency_le_hybrid": sum(r[rr]["cycles"] <= r["hybrid"]["cycles"] for r in ok),
            "seconds_median": statistics.median(rr_s),
            "seconds_max": max(rr_s),
            "cpu_seconds_median": statistics.median(rr_cpu) if rr_cpu else None,
            "cpu_seconds_max": max(rr_cpu) if rr_cpu else None,
            "chosen": {
                v: sum(res.results[rr][i].stats.get("chosen") == v for i in range(len(rows)))
                for v in ("cosa", "no_bypass_refetch", "no_bypass_refetch+register_reuse")
            },
        }
    summary["cosa_latency_le_hybrid"] = sum(
        r["cosa"]["cycles"] <= r["hybrid"]["cycles"] for r in ok
    )
    cosa_cpu = [r["cosa"]["cpu_seconds"] for r in rows if r["cosa"]["cpu_seconds"] is not None]
    if cosa_cpu:
        summary["cosa_cpu_seconds_median"] = statistics.median(cosa_cpu)
        summary["cosa_cpu_seconds_max"] = max(cosa_cpu)
    if zz_rows:
        summary["zigzag_cosa_vs_loma_energy_geomean"] = geomean(
            [z["loma_energy_uJ"] / z["cosa_energy_uJ"] for z in zz_rows]
        )
        summary["zigzag_cosa_vs_loma_latency_geomean"] = geomean(
            [z["loma_cycles"] / z["cosa_cycles"] for z in zz_rows]
        )
    return {"summary": summary, "rows": rows}


def _zigzag_rows(layers, res, arch, arch_name: str, args: argparse.Namespace) -> list[dict]:
    """ZigZag peer on the first ``args.zigzag`` layers (Simba only): our CoSA mapping evaluated
    in ZigZag's model, and ZigZag's own LOMA (hint setting, EDP) best."""
    if not args.zigzag or arch_name != "simba" or not _zigzag_available():
        return []
    from twill.mapping.zigzag_peer import zigzag_evaluate, zigzag_loma

    acc = BENCH / "cosa" / "zigzag" / "simba_tl.yaml"
    out = []
    for i, layer in enumerate(layers[: args.zigzag]):
        cosa = res.results["cosa"][i]
        if cosa.solution is None:
            continue
        ev = zigzag_evaluate(layer, cosa.solution.mapping, arch, acc)
        lo = zigzag_loma(layer, arch, acc)
        out.append(
            {
                "cosa_energy_uJ": ev.energy_uj,
                "cosa_cycles": ev.latency_cycles,
                "loma_energy_uJ": lo.energy_uj,
                "loma_cycles": lo.latency_cycles,
                "loma_seconds": lo.seconds,
            }
        )
        # LOMA takes minutes per layer: show each row as it comes (stderr, JSON)
        print(json.dumps({"layer": layer.name, **out[-1]}), file=sys.stderr, flush=True)
    return out


def agreement(name: str, args: argparse.Namespace) -> dict:
    """Solve every unique layer of ``name`` with ``args.backend`` and ``args.agree``; report
    both objectives, statuses and solve times (the issue's "optimal objective agrees across
    the two backends on every ResNet-50 layer")."""
    from twill.io.timeloop import read_network
    from twill.mapping.arch import gemmini_arch, simba_arch
    from twill.mapping.cosa.solve import CoSASettings, solve
    from twill.mapping.problems import LayerMappingProblem
    from twill.options import SolverOptions

    folder, arch_name = NETWORKS[name]
    arch = simba_arch() if arch_name == "simba" else gemmini_arch()
    layers = read_network(BENCH / folder)
    if args.limit:
        layers = layers[: args.limit]
    rows = []
    for layer in layers:
        row = {"layer": layer.name}
        for b in (args.backend, args.agree):
            opts = SolverOptions(time_limit=args.time_limit, cosa=CoSASettings(backend=b))
            r = solve(LayerMappingProblem(layer, arch), opts)
            row[b] = {
                "status": r.status.value,
                "objective": r.objective,
                "bound": r.bound,
                "seconds": r.timings.solve,
                "valid": bool(r.solution and r.solution.report.valid),
            }
        a, b = row[args.backend], row[args.agree]
        row["agree"] = (
            a["status"] == b["status"] == "optimal" and abs(a["objective"] - b["objective"]) <= 1e-3
        )
        rows.append(row)
    return {
        "network": name,
        "backends": [args.backend, args.agree],
        "layers": len(rows),
        "agree": sum(r["agree"] for r in rows),
        "rows": rows,
    }


def dosa_errors() -> dict:
    from twill.io.timeloop import read_dosa_dataset
    from twill.mapping.cost.dataset import evaluate_rows

    _rows, errors = evaluate_rows(read_dosa_dataset(BENCH / "dosa" / "timeloop_sample.csv"))
    return errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--networks", default="resnet50", help=f"comma list of {', '.join(NETWORKS)} or 'all'"
    )
    ap.add_argument("--limit", type=int, default=None, help="first N unique layers per network")
    ap.add_argument("--backend", default="cpsat", choices=BACKENDS)
    ap.add_argument(
        "--agree", default=None, choices=BACKENDS, help="also solve with this backend; compare"
    )
    ap.add_argument(
        "--agree-only", action="store_true", help="only the backend agreement table (no baselines)"
    )
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--hybrid-n", type=int, default=16_000)
    ap.add_argument("--hybrid-metric", default="edp", choices=("edp", "cycles", "energy", "lex"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--zigzag",
        type=int,
        default=0,
        metavar="N",
        help="ZigZag peer (CoSA mapping in ZigZag's model vs LOMA) on the first N layers",
    )
    ap.add_argument("--no-dosa", action="store_true", help="skip the DOSA error distribution")
    ap.add_argument(
        "--no-rerank", action="store_true", help="skip the cosa-rerank column (pure CoSA only)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    names = (
        list(NETWORKS) if args.networks == "all" else [n.strip() for n in args.networks.split(",")]
    )
    for n in names:
        if n not in NETWORKS:
            print(f"unknown network {n!r}; choose from {', '.join(NETWORKS)}", file=sys.stderr)
            return 2
    out: dict = {}
    if args.agree:
        out["agreement"] = [agreement(n, args) for n in names]
    if not args.agree_only:
        out["networks"] = [run_network(n, args) for n in names]
    if not args.no_dosa:
        out["dosa_errors"] = dosa_errors()
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    con = Console()
    for ag in out.get("agreement", []):
        b1, b2 = ag["backends"]
        t = Table(title=f"{ag['network']}: {b1} vs {b2} ({ag['agree']}/{ag['layers']} agree)")
        for col in ("layer", f"{b1} obj", f"{b2} obj", f"{b1} s", f"{b2} s", "status", "agree"):
            t.add_column(col)
        for r in ag["rows"]:
            x, y = r[b1], r[b2]
            t.add_row(
                r["layer"],
                f"{x['objective']:.4f}" if x["objective"] is not None else "-",
                f"{y['objective']:.4f}" if y["objective"] is not None else "-",
                f"{x['seconds']:.2f}",
                f"{y['seconds']:.2f}",
                f"{x['status']}/{y['status']}",
                "yes" if r["agree"] else "NO",
            )
        con.print(t)
    for net in out.get("networks", []):
        t = Table(title=f"{net['summary']['network']} on {net['summary']['arch']}")
        for col in (
            "layer",
            "×",
            "CoSA cyc",
            "rand5 cyc",
            "hyb16K cyc",
            "CoSA µJ",
            "rand5 µJ",
            "hyb16K µJ",
            "CoSA s",
            "hyb s",
            "rerank cyc",
            "rerank µJ",
            "rerank s",
        ):
            t.add_column(col)
        for r in net["rows"]:
            t.add_row(
                r["layer"],
                str(r["count"]),
                f"{r['cosa']['cycles']:,}",
                f"{r['random']['cycles']:,}",
                f"{r['hybrid']['cycles']:,}",
                f"{r['cosa']['energy_uJ']:.1f}",
                f"{r['random']['energy_uJ']:.1f}",
                f"{r['hybrid']['energy_uJ']:.1f}",
                f"{r['cosa']['seconds']:.2f}",
                f"{r['hybrid']['seconds']:.2f}",
                *(
                    (
                        f"{r['cosa-rerank']['cycles']:,}",
                        f"{r['cosa-rerank']['energy_uJ']:.1f}",
                        f"{r['cosa-rerank']['seconds']:.2f}",
                    )
                    if "cosa-rerank" in r
                    else ("-", "-", "-")
                ),
            )
        con.print(t)
        s = net["summary"]
        con.print(
            {k: (round(v, 3) if isinstance(v, float) else v) for k, v in s.items() if k != "totals"}
        )
        con.print(s["totals"])
    if "dosa_errors" in out:
        con.print("DOSA sample (cost model vs Timeloop):", out["dosa_errors"])
    return 0


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
