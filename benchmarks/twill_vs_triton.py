"""Twill's schedule against Triton's default, in Twill's model, and both compiled by Triton.

For every shipped kernel (``twill.triton.SHIPPED_VARIANTS``: ``gemm``, ``fa_fwd``,
``fa_fwd_plain`` = ``fa_fwd`` with one 128-row Q tile on 8 warps, ``fa_bwd``), every kernel
of the Triton front end's test corpus (``tests/data/triton/``; its costliest loop, as ``twill
solve`` picks) and architecture
(``sm_90a``: H100, ``sm_100a``: B200); a kernel that fails (Triton does not pipeline the loop,
or cannot compile it) gets a row with ``error``:

* Twill's optimum over its problem, the union of warp specialisation (Algorithm 1, CP-SAT
  Phase 1) and one partition on the kernel's ``num_warps`` warps, the sequential loop always
  evaluated (:mod:`twill.sched.exact.single`): ``twill_I``, ``twill_L``, ``twill_optimal``
  (proven over the union), ``picked`` (the part answered), ``twill_lower`` (the union's proven
  lower bound on I);
* Triton's default schedule (``num_stages=3``, the kernel's ``num_warps``, no warp
  specialisation: the kernels do not ask for it), read after ``schedule_loops`` and priced in
  Twill's model: the smallest ``I`` and its ``L`` at which its stages, body order and warp
  assignment are feasible (``triton_I``, ``triton_L``; ``triton_status`` is ``feasible``,
  ``infeasible`` or ``unknown`` within ``--price-limit`` seconds, with ``triton_I_lower``, the
  smallest ``I`` not refuted); ``predicted_speedup = triton_I / twill_I`` (steady state);
* Twill's schedule compiled (``twill compile``): ``compiled`` (a cubin that can launch: not
  a trap, shared memory within 227 KiB), ``runnable`` (the same), ``regs``, ``smem_bytes``,
  ``spills`` (bytes), ``kept``/``changed`` (stages Triton's pipeliner kept or moved, read back
  from the pipelined IR), ``prologue_depth``, ``partitions_applied`` (``None``: Twill's answer
  is one partition, nothing to apply), ``partitions_why``, ``route`` (``gluon``: the Gluon
  template with Twill's slots as partitions, as ``twill compile`` takes it; else ``attributes``,
  and ``gluon_why``); ``compile_error`` where Twill's
  schedule cannot be written;
* ``bound``: where the predicted speed-up is below 1.0 or unknown, what stops it (a time
  limit, with the lower bounds of both sides);
  and the same resources for Triton's default compile (``triton_regs``, ...);
* ``seconds``: the whole row.

    .venv/bin/python benchmarks/twill_vs_triton.py [--kernels gemm ...] [--arches sm_90a ...]
        [--price-limit S] [--twill-limit S] [--json]

Needs the ``triton`` extra; no GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from twill.scratch import private_scratch
from twill.triton import SHIPPED_VARIANTS as KERNELS

TESTS = Path(__file__).resolve().parents[1] / "tests" / "data"
CORPUS = TESTS / "triton"
#: A user's kernel (``tests/data/triton_user``): the masked pointer-load matmul.
USER = {"masked_matmul": "matmul"}


def corpus() -> list[str]:
    """The Triton front end's test corpus (``tests/data/triton/NAME.py``)."""
    return sorted(p.stem for p in CORPUS.glob("*.py") if p.stem != "generate")


def _spec(name: str, arch: str) -> Any:  # noqa: ANN401 (a KernelSpec)
    from twill.triton import kernel_spec, shipped_spec

    if name in KERNELS:
        return shipped_spec(name, arch)
    if name in USER:
        return kernel_spec(f"{TESTS / 'triton_user' / name}.py:{USER[name]}", arch)
    return kernel_spec(f"{CORPUS / name}.py:{name}", arch)


def _resources(build: Any, prefix: str = "") -> dict[str, Any]:
    from twill.triton.peer import why_not_runnable

    return {
        f"{prefix}regs": build.regs,
        f"{prefix}smem_bytes": build.smem_bytes,
        f"{prefix}spills": build.spills,
        f"{prefix}runnable": why_not_runnable(build) is None,
    }


def run(name: str, arch: str, price_limit: float, twill_limit: float = 600.0) -> dict[str, Any]:
    from twill.errors import TwillError

    t0 = time.perf_counter()
    row: dict[str, Any] = {"kernel": name, "arch": arch, "compiled": False}
    try:
        _fill(row, _spec(name, arch), price_limit, twill_limit)
    except TwillError as exc:  # a corpus kernel Triton does not pipeline, or cannot compile
        row["error"] = str(exc).splitlines()[0][:300]
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def _fill(row: dict[str, Any], ks: Any, price_limit: float, twill_limit: float) -> None:
    from twill.errors import TwillError
    from twill.triton import register_conflict
    from twill.triton.build import private_cache
    from twill.triton.peer import price_triton, solve_for_compile, twill_graph

    with private_cache():
        lp, ttgir = twill_graph(ks)
        proof = register_conflict(lp.graph, ks.num_warps)  # no schedule at any I
        if proof is not None:
            row["twill_why"] = f"register proof: {proof.split(';')[0]}"
        r = solve_for_compile(lp.graph, twill_limit, time.monotonic() + twill_limit, ks.num_warps)
        row.update(twill_I=r.I, twill_L=r.L, twill_optimal=r.optimal, problem=r.problem,
                   picked=r.extra.get("picked"), twill_lower=r.extra.get("union_lower_bound"),
                   union=r.extra.get("union"))  # fmt: skip
        row.update(compiled=False, runnable=False, kept=[], changed={})
        try:
            _price(row, price_triton(ks, lp, ttgir, total_time_limit=price_limit), r.I)
        except TwillError as exc:  # Triton's compile of the kernel has no schedule to read
            row.update(triton_I=None, predicted_speedup=None, triton_status="not priced",
                       triton_I_lower=None)  # fmt: skip
            row["bound"] = f"Triton's schedule not priced: {str(exc).splitlines()[0][:160]}"
        if r.I is not None:
            _compile(row, ks, r, lp, ttgir)


def _price(row: dict[str, Any], peer: Any, twill_I: int | None) -> None:  # noqa: ANN401
    """The row's Triton columns: its default schedule priced in Twill's model."""
    p = peer.to_dict()
    row.update(
        triton_I=p["I"],
        triton_L=p["L"],
        triton_status=p["status"],
        triton_I_lower=p["I"] or peer.pinned.stats["lower_I"],
        triton_max_stage=peer.max_stage,
        triton_pipelined=p["pipelined"],
        unmatched=peer.match.twill_only,
        triton_notes=p["notes"],
    )
    row["predicted_speedup"] = round(p["I"] / twill_I, 3) if p["I"] and twill_I else None
    row["bound"] = _bound(row)
    row.update(_resources(peer.build, "triton_"))


def _bound(row: dict[str, Any]) -> str | None:
    """What stops a predicted speed-up of at least 1.0 (``None`` when it is reached)."""
    s = row["predicted_speedup"]
    if s is not None and s >= 1.0:
        return None
    if row["twill_I"] is None:
        return row.get("twill_why") or "no Twill schedule within the limit"
    if row["triton_I"] is None and not row["triton_I_lower"]:
        return "Triton's schedule not priced: its match contradicts the graph (notes)"
    if row["triton_I"] is None:
        return f"Triton's schedule: {row['triton_status']}, I >= {row['triton_I_lower']}"
    return (f"time limit: Twill's I {row['twill_I']} not proven (union lower bound "
            f"{row['twill_lower']}), Triton's priced I {row['triton_I']}")  # fmt: skip


def _compile(row: dict[str, Any], ks: Any, r: Any, lp: Any, ttgir: str) -> None:  # noqa: ANN401
    """Twill's schedule compiled: the row's resources, stages kept and partitions."""
    from twill.errors import TwillError
    from twill.triton.gluon_route import gluon_summary
    from twill.triton.peer import compile_twill, twill_slots

    slots = twill_slots(r)
    s, why = gluon_summary(ks, r, lp, ttgir) if slots else (None, None)  # as twill compile
    row.update(route="gluon" if s else "attributes", gluon_why=why)
    try:
        s = s or compile_twill(ks, r.schedule, slots, r.I, r.L, lp, ttgir)
    except TwillError as exc:  # the loop carries no schedule to overwrite
        row["compile_error"] = str(exc).splitlines()[0][:300]
        return
    d = s.data
    parts = d["partitions"]
    row.update(
        compiled=d["runnable"],
        runnable=d["runnable"],
        max_stage=d["max_stage"],
        prologue_depth=d["prologue_depth"],
        kept=d["kept"]["stages"],
        changed=d["changed"]["stages"],
        partitions_applied=parts["applied"] if slots else None,
        partitions_why=parts.get("why"),
    )
    row.update({k: d[k] for k in ("regs", "smem_bytes", "spills")})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--kernels",
        nargs="+",
        default=[*KERNELS, *USER, *corpus()],
        choices=[*KERNELS, *USER, *corpus()],
        help="shipped kernels, the user matmul and the test corpus (default: all)",
    )
    ap.add_argument(
        "--arches", nargs="+", default=["sm_90a", "sm_100a"], choices=["sm_90a", "sm_100a"]
    )
    ap.add_argument(
        "--price-limit",
        type=float,
        default=120.0,
        help="seconds for pricing Triton's schedule per kernel (default 120)",
    )
    ap.add_argument(
        "--twill-limit",
        type=float,
        default=600.0,
        help="seconds for Twill's search per kernel (default 600)",
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for k in args.kernels:
        for a in args.arches:
            rows.append(run(k, a, args.price_limit, args.twill_limit))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)  # progress
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    head = (
        "kernel",
        "arch",
        "twill_I",
        "twill_L",
        "triton_I",
        "triton_L",
        "triton_I_lower",
        "predicted_speedup",
        "picked",
        "route",
        "runnable",
        "partitions_applied",
        "regs",
        "smem_bytes",
        "spills",
        "triton_runnable",
        "seconds",
    )
    print(" | ".join(head))
    for r in rows:
        tail = r.get("error") or r.get("bound") or f"kept {len(r['kept'])}"
        print(" | ".join(str(r.get(h)) for h in head) + f"  {tail}")


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        main()
