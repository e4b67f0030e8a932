"""FADiff vs layer-wise baselines on whole networks and Gemmini configurations, with headroom.

Usage::

    python benchmarks/fadiff_networks.py [--networks resnet50,bert,retinanet,unet,fsrcnn] [--json]
    python benchmarks/fadiff_networks.py --networks path/to/model.onnx,mobilenet_v2
    python benchmarks/fadiff_networks.py --arch gemmini --arch gemmini_16x16_sp512k_acc128k
        [--steps N] [--seed N] [--cosa-time-limit S] [--no-ablation] [--no-joint-rounding]

``--networks`` takes built-in names, ``.onnx`` paths and zoo names (as ``--model``);
``--arch`` (repeatable) takes ``gemmini``, a shipped ``gemmini_*`` name or an architecture
YAML. Each network x architecture is one case; a case FADiff cannot take (e.g. grouped
convolutions) is reported as skipped with the reason.

Methods per network (one shared exact NumPy cost model): ``layerwise-cosa`` (CoSA per layer),
``layerwise-gradient`` (gradient descent with fusion off and the read-out polish, the better
of two starts: CoSA's plan, as DOSA, and a cold start), ``layerwise-greedy-fusion`` (best
layer-wise plan + greedy fusion), ``random`` (same number of model evaluations as FADiff) and
``no-gradient`` (the ablation: FADiff's discrete phase alone, i.e. greedy fusion, polish
and the group search, on CoSA's plan, same settings) and ``fadiff`` (joint mapping + fusion
from a cold start, then the depth-first group search on the best layer-wise mappings; compared
with every layer-wise plan, so never worse). Its ``source`` says which step produced the
winning plan (``gradient`` only when a gradient read-out won).

Headroom: ``bound_edp`` is the group-consistent ``capacity`` bound
(:func:`twill.mapping.fadiff.bounds.group_capacity_bound`, with energy and cycles priced
together per tile where that is higher, :func:`twill.mapping.fadiff.bounds.fusion_bounds`),
the tightest that no plan and no mapping can go below (``bound_capacity_edp``, the same
number; ``bound_capacity_layer_edp`` is the looser per-layer form,
:func:`twill.mapping.fadiff.bounds.capacity_bound`),
``headroom_captured = (lw/fadiff - 1) / (lw/bound - 1)`` with ``lw`` the best layer-wise EDP
(``headroom_captured_capacity``, the same number). ``bound_ideal_edp`` and
``headroom_captured_ideal`` use the looser ``ideal`` bound (capacity ignored);
``headroom_captured_candidates`` uses the ``candidates free`` bound, which holds for plans
keeping the best layer-wise mappings only (FADiff changes mappings, so it may exceed 1).
``bound_unfused_edp`` (column ``unfused``) is the mapping-independent bound of plans without
fusion: ``lw`` over it is the part of the headroom that better mappings alone could claim.
``seconds`` is
each method's own optimisation time; FADiff's includes the layer-wise gradient runs and the
greedy fusion whose plans it takes as candidates, not the CoSA run. Progress goes to stderr;
with ``--json`` stdout is one JSON list.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from types import SimpleNamespace
from typing import Any

from twill.errors import InvalidProblemError
from twill.io.networks import load_network
from twill.mapping.arch import gemmini_arch
from twill.mapping.fadiff.baselines import greedy_fusion_baseline, layerwise_cosa, random_search
from twill.mapping.fadiff.bounds import fusion_bounds
from twill.mapping.fadiff.train import FADiffSettings, discrete_only, solve
from twill.mapping.network import IMAGE_NETWORKS, NETWORKS
from twill.mapping.problems import NetworkMappingProblem
from twill.options import SolverOptions
from twill.scratch import private_scratch


def _row(net: str, method: str, report, seconds: float, fused: int) -> dict:
    return {
        "network": net,
        "arch": "",
        "method": method,
        "edp": report.edp,
        "energy_uJ": report.energy_uj,
        "cycles": float(report.cycles),
        "dram_bytes": float(report.dram_bytes),
        "seconds": round(seconds, 3),
        "fused": fused,
    }


def _network(name: str):  # noqa: ANN202 - benchmark script
    """A built-in network, or the graph of an ONNX file (``PATH.onnx``) or a zoo model."""
    from twill.onnx.model_zoo import MODELS

    if name.lower().endswith(".onnx") or (
        name.lower().replace("-", "_") in MODELS and name not in NETWORKS + IMAGE_NETWORKS
    ):
        from twill.onnx.model import import_model

        return import_model(name).network
    return load_network(name)


def _arch(spec: str):  # noqa: ANN202 - benchmark script
    """``gemmini`` (DOSA's default), a shipped ``gemmini_*`` name, or an architecture YAML."""
    from twill.io.timeloop import read_arch, shipped_archs

    if spec == "gemmini":
        return gemmini_arch(name="gemmini")
    return read_arch(shipped_archs().get(spec, spec))


def run_case(net, arch, *, steps: int, seed: int, cosa_time_limit: float, ablation: bool,  # noqa: ANN001, ANN201
             joint_rounding: bool = True):  # fmt: skip
    """Every method on one network x architecture; rows carry the arch and the headroom."""
    try:
        rows = _methods(net, arch, steps, seed, cosa_time_limit, ablation, joint_rounding)
    except InvalidProblemError as exc:
        print(f"[{net.name} @ {arch.name}] skipped: {exc}", file=sys.stderr, flush=True)
        return [{"network": net.name, "arch": arch.name, "method": "skipped", "reason": str(exc)}]
    for r in rows:
        r["arch"] = arch.name
    return rows


def fadiff(net, arch, *, fusion: bool = True, init=None, candidates=(), seed: int = 0,  # noqa: ANN001, ANN201
           **settings: Any):  # fmt: skip
    """FADiff (``solve``) as ``plan``, ``report``, ``seconds``, ``source``, ``n_evaluations``."""
    problem = NetworkMappingProblem(net, arch, fusion, init, tuple(candidates))
    res = solve(problem, SolverOptions(seed=seed, fadiff=FADiffSettings(**settings)))
    return SimpleNamespace(plan=res.solution.plan, report=res.solution.report,
                           seconds=res.timings.total, source=res.solution.source,
                           n_evaluations=res.stats["n_evaluations"])  # fmt: skip


def _baseline(res: Any) -> SimpleNamespace:  # noqa: ANN401 (a SolveResult)
    """A baseline's result as ``plan``, ``report`` and ``seconds``."""
    return SimpleNamespace(plan=res.solution.plan, report=res.solution.report,
                           seconds=res.timings.total)  # fmt: skip


def _methods(net, arch, steps: int, seed: int, cosa_time_limit: float, ablation: bool,  # noqa: ANN001, ANN202
             joint_rounding: bool = True):  # fmt: skip
    name = f"{net.name} @ {arch.name}"
    rows = []
    print(f"[{name}] layerwise-cosa ...", file=sys.stderr, flush=True)
    cosa = _baseline(layerwise_cosa(net, arch, SolverOptions(time_limit=cosa_time_limit)))
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
    gf = _baseline(greedy_fusion_baseline(net, arch, best_lw))
    rows.append(_row(name, "layerwise-greedy-fusion", gf.report, gf.seconds, len(gf.plan.fused)))
    if ablation:
        print(f"[{name}] no-gradient ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        ng_plan, ng_rep, ng_src = discrete_only(net, arch, [cosa.plan])
        rows.append(_row(name, "no-gradient", ng_rep, time.perf_counter() - t0, len(ng_plan.fused)))
        rows[-1]["source"] = ng_src
    print(f"[{name}] fadiff ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    fd = fadiff(net, arch, fusion=True, steps=steps, seed=seed, joint_rounding=joint_rounding,
                candidates=[cosa.plan, lg.plan, gf.plan])  # fmt: skip
    fd_seconds = time.perf_counter() - t0 + lg_seconds + gf.seconds
    rows.append(_row(name, "fadiff", fd.report, fd_seconds, len(fd.plan.fused)))
    rows[-1]["source"] = fd.source
    print(f"[{name}] random ({fd.n_evaluations} evaluations) ...", file=sys.stderr, flush=True)
    rnd = _baseline(random_search(net, arch, evaluations=fd.n_evaluations, seed=seed))
    rows.append(_row(name, "random", rnd.report, rnd.seconds, 0))
    # Upper bounds on any fusion gain over the best layer-wise plan (docs/fadiff.md).
    b = fusion_bounds(net, arch, best_lw)
    lw = min(cosa.report.edp, lg.report.edp)
    captured = _captured(lw, fd.report.edp, b.capacity_edp)
    extra = {
        "bound_edp": b.capacity_edp,
        "bound_capacity_edp": b.capacity_edp,
        "bound_capacity_layer_edp": b.capacity_layer_edp,
        "bound_ideal_edp": b.ideal_edp,
        "bound_candidates_edp": b.candidates_free_edp,
        "headroom_captured": captured,
        "headroom_captured_capacity": captured,
        "headroom_captured_ideal": _captured(lw, fd.report.edp, b.ideal_edp),
        "headroom_captured_candidates": _captured(lw, fd.report.edp, b.candidates_free_edp),
        "bound_gain_candidates": b.gain_candidates,
        "bound_gain_all": b.gain_all,
        "bound_gain_ideal": b.gain_ideal,
        "bound_gain_capacity": b.gain_capacity,
        "bound_unfused_edp": b.unfused_edp,
        "bound_gain_unfused": b.gain_unfused,
        "floor_dram_bytes": b.floor_dram_bytes,
        "dram_bound_layers": b.dram_bound_layers,
        "dram_energy_share": b.dram_share,
    }
    for r in rows:
        r.update(extra)
        r["network"] = net.name
    return rows


def _captured(lw: float, got: float, bound: float) -> float | None:
    """``(lw/got - 1) / (lw/bound - 1)``; ``None`` when the bound leaves no headroom."""
    room = lw / bound - 1
    return (lw / got - 1) / room if room > 1e-12 else None


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
    from twill.mapping.cosa.solve import solve
    from twill.mapping.cost.analytical import evaluate
    from twill.mapping.network import chain_network
    from twill.mapping.problems import LayerMappingProblem
    from twill.mapping.workload import Layer

    arch = gemmini_arch()
    print(
        f"{'layer':26} {'CoSA cycles':>12} {'FADiff cycles':>13} {'ratio':>6} "
        f"{'CoSA uJ':>8} {'FADiff uJ':>9} {'FADiff s':>8}"
    )
    for key in CROSSCHECK_LAYERS:
        ly = Layer.from_key(key, name="l")
        got = solve(LayerMappingProblem(ly, arch), SolverOptions(time_limit=cosa_time_limit))
        ref = evaluate(ly, arch, got.solution.mapping)
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
    ap.add_argument("--networks", default=",".join(NETWORKS + IMAGE_NETWORKS))
    ap.add_argument(
        "--arch",
        action="append",
        help="gemmini (default), a shipped gemmini_* name or an architecture YAML; repeatable",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cosa-time-limit", type=float, default=10.0)
    ap.add_argument("--no-ablation", action="store_true", help="skip the no-gradient run")
    ap.add_argument(
        "--no-joint-rounding",
        action="store_true",
        help="FADiff rounds each layer of a read-out on its own (the joint rounding ablation)",
    )
    ap.add_argument("--save", help="also write the JSON rows to this (new) file")
    ap.add_argument(
        "--crosscheck",
        action="store_true",
        help="single layers: FADiff without fusion vs CoSA latency, then exit",
    )
    args = ap.parse_args(argv)
    if args.crosscheck:
        return crosscheck(steps=args.steps, seed=args.seed, cosa_time_limit=args.cosa_time_limit)
    try:
        archs = [_arch(a) for a in args.arch or ["gemmini"]]
        nets = [_network(n.strip()) for n in args.networks.split(",") if n.strip()]
    except InvalidProblemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows: list[dict] = []
    for net in nets:
        for arch in archs:
            rows += run_case(
                net,
                arch,
                steps=args.steps,
                seed=args.seed,
                cosa_time_limit=args.cosa_time_limit,
                ablation=not args.no_ablation,
                joint_rounding=not args.no_joint_rounding,
            )
    if args.save:
        with open(args.save, "x") as fh:  # never overwrite
            json.dump(rows, fh, indent=1)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print_tables(rows)
    return 0


def print_tables(rows: list[dict]) -> None:
    """The per-method table, then the headroom table (one line per network x architecture)."""
    cases: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        cases.setdefault((r["network"], r["arch"]), {})[r["method"]] = r
    print(
        f"{'network':12} {'arch':28} {'method':24} {'EDP uJ*cyc':>12} {'energy uJ':>10} "
        f"{'cycles':>11} {'DRAM MB':>8} {'fused':>5} {'s':>6} {'EDP/best-lw':>11} source"
    )
    for (net, arch), ms in cases.items():
        if "skipped" in ms:
            print(f"{net:12} {arch:28} skipped: {ms['skipped']['reason']}")
            continue
        best_lw = min(ms["layerwise-cosa"]["edp"], ms["layerwise-gradient"]["edp"])
        for m, r in ms.items():
            print(
                f"{net:12} {arch:28} {m:24} {r['edp']:12.4g} {r['energy_uJ']:10.1f} "
                f"{r['cycles']:11.0f} {r['dram_bytes'] / 1e6:8.2f} {r['fused']:5d} "
                f"{r['seconds']:6.1f} {best_lw / r['edp']:10.3f}x {r.get('source', '')}"
            )
    print("\nHeadroom (gains over the best layer-wise EDP; captured = achieved / possible):")
    print(
        f"{'network':12} {'arch':28} {'greedy':>7} {'no-grad':>7} {'fadiff':>7} "
        f"{'cands free':>10} {'ideal':>7} {'capt. ideal':>11} {'capacity':>8} {'captured':>8} "
        f"{'capt. cands':>11} {'unfused':>8}"
    )
    for (net, arch), ms in cases.items():
        if "skipped" in ms:
            continue
        lw = min(ms["layerwise-cosa"]["edp"], ms["layerwise-gradient"]["edp"])
        r = ms["fadiff"]
        ng = ms.get("no-gradient")
        ng_gain = f"{lw / ng['edp']:6.3f}x" if ng else "-"
        print(
            f"{net:12} {arch:28} {lw / ms['layerwise-greedy-fusion']['edp']:6.3f}x "
            f"{ng_gain:>7} {lw / r['edp']:6.3f}x "
            f"{lw / r['bound_candidates_edp']:9.3f}x {lw / r['bound_ideal_edp']:6.3f}x "
            f"{_pct(r['headroom_captured_ideal']):>11} {lw / r['bound_capacity_edp']:7.3f}x "
            f"{_pct(r['headroom_captured']):>8} {_pct(r['headroom_captured_candidates']):>11}"
            f" {lw / r['bound_unfused_edp']:7.3f}x"
        )


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
