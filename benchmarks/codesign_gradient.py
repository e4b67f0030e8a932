"""Gemmini co-design by gradient against random search and the grid at the same number of
model evaluations, per network (issue 52, item 4; DOSA reports 2.80x better EDP than random
search at a similar number of samples).

    .venv/bin/python benchmarks/codesign_gradient.py                 # table
    .venv/bin/python benchmarks/codesign_gradient.py --json --steps 300

Networks: DOSA's four workloads (``src/twill/data/workloads/dosa``: ResNet-50, BERT,
RetinaNet, U-Net), unique layers weighted by count. For each, in the same run:
:func:`~twill.mapping.search.codesign.codesign_gradient` first; its evaluation count is then
the budget of :func:`~twill.mapping.search.codesign.codesign_random` and
:func:`~twill.mapping.search.codesign.codesign_grid` (same seed). Every point is a legal
Gemmini (integer array side and buffer kB) within the area budget (the default Gemmini's,
0.637 mm², :mod:`twill.mapping.area`), its mappings verified, its EDP the exact NumPy
model's (network energy x network cycles, µJ·cycles). ``ratio_random`` and ``ratio_grid``
are the baseline's EDP over the gradient's (above 1: the gradient is better).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = ("resnet50", "bert", "retinanet", "unet")


def network_row(name: str, steps: int, seed: int) -> dict[str, Any]:
    """The three methods on one network."""
    from twill.io.timeloop import read_network
    from twill.mapping.search.codesign import (
        CodesignSettings,
        codesign_gradient,
        codesign_grid,
        codesign_random,
    )

    layers = read_network(ROOT / "src" / "twill" / "data" / "workloads" / "dosa" / name)
    cfg = CodesignSettings(steps=steps, seed=seed)
    row: dict[str, Any] = {"network": name, "layers": len(layers), "steps": steps}
    t0 = time.process_time()
    grad = codesign_gradient(layers, cfg)
    row["gradient_cpu_s"] = time.process_time() - t0
    budget = grad.evaluations if grad is not None else steps * 6 * len(layers)
    for key, fn in (("random", codesign_random), ("grid", codesign_grid)):
        t0 = time.process_time()
        got = fn(layers, budget, cfg)
        row[f"{key}_cpu_s"] = time.process_time() - t0
        row[key] = got.to_dict() if got is not None else None
    row["gradient"] = grad.to_dict() if grad is not None else None
    for key in ("random", "grid"):
        a, b = row[key], row["gradient"]
        row[f"ratio_{key}"] = a["edp"] / b["edp"] if a and b else None
    return row


def _hw(d: dict[str, Any] | None) -> str:
    if d is None:
        return "none found"
    return (f"{d['pe_dim']}x{d['pe_dim']} {d['scratchpad_kB']}k/{d['accumulator_kB']}k "
            f"{d['area_mm2']:.3f}mm2 EDP {d['edp']:.4g} ({d['evaluations']:,} evals)")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--networks", default=",".join(NETWORKS))
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    rows = [network_row(n, args.steps, args.seed) for n in args.networks.split(",")]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        print(f"{r['network']} ({r['layers']} unique layers, {r['steps']} steps)")
        for key in ("gradient", "random", "grid"):
            print(f"  {key:8} {_hw(r[key])}  [{r[f'{key}_cpu_s']:.0f} CPU s]")
        rr, rg = r["ratio_random"], r["ratio_grid"]
        print(f"  EDP ratio random/gradient {rr:.2f}x" if rr else "  EDP ratio random: -",
              f", grid/gradient {rg:.2f}x" if rg else "", "(DOSA: 2.80x vs random)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
