"""GauS on the EPFL combinational suite, formulations A, B and C, with baselines in the same run.

Every design (default: every ``.aig`` in ``data/epfl/``; ``--designs PATH...``
for any other binary AIGER files) is scheduled in each formulation by each method:

* ``gaus``: :class:`twill.gaus_solver.GauSSolver` with its default settings (``--gaus-lns S``
  adds S seconds of its large-neighbourhood search, ``GauSSettings.lns_time``);
* ``list``: list scheduling (A, B, C); ``force``: force-directed scheduling (A, C; it has no
  memory model, so B is reported as not applicable);
* ``cpsat``: CP-SAT (A, B, C) capped at ``--cpsat-limit`` seconds (default 900 s, the GauS paper's
  15 minutes), reporting its best incumbent and its proven bound; skipped with the reason when
  the model would be too large to build (``--cpsat-max-vars`` booleans); ``--cpsat-cuts``
  adds, in A, the time-indexed precedence cuts and CP-SAT's full LP relaxation
  (``SolverOptions.extra["precedence_cuts"]``), which proves some small instances optimal;
* ``gumbel``: the categorical GS-Schedule-style baseline (A only), capped like CP-SAT, skipped as
  "out of memory (estimated X GB)" when its ``[batch, n, D]`` tensors would not fit
  ``--mem-limit-gb``.

Instances (``docs/gaus.md``, decision 9): AND gates use 1 unit of resource ``AND``, inputs none;
every edge has delay 1 and communication weight 1; every value 1 bit. ``D = ceil(1.25 * depth)``
(the solver default); A weighs the peak by ``ratio = 100``. C uses the pipelined variant of
``benchmarks/gaus_modulo.py`` (5 % random back edges, AND capacity ``ceil(1.25 #AND / II)``,
``II = 8``).

Each method runs in its own forked process, so ``peak_rss_mb`` (``ru_maxrss``) is that
method's peak (including the parent's small footprint at the fork); a method whose process
holds more than ``--rss-limit-gb`` (default 16) is stopped and its row noted "out of memory"
(CP-SAT's B model of ``div`` passes 19 GB). ``seconds`` is the wall
time of the solver call (torch is imported before it). Every reported schedule passed the
verifier inside the method.

    .venv/bin/python benchmarks/gaus_epfl.py                       # all shipped designs
    .venv/bin/python benchmarks/gaus_epfl.py --cpsat-limit 60 --json
    .venv/bin/python benchmarks/gaus_epfl.py --designs /data/epfl/div.aig --formulations B
    .venv/bin/python benchmarks/gaus_epfl.py --synthetic 25000:5000 --methods gaus list
    .venv/bin/python benchmarks/gaus_epfl.py --designs data/epfl/ctrl.aig \
        --methods gaus cpsat --gaus-lns 600                         # same-budget comparison
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

from twill.scratch import private_scratch

ROOT = Path(__file__).resolve().parents[1]
EPFL = ROOT / "data" / "epfl"
sys.path.insert(0, str(ROOT / "benchmarks"))

METHODS = ("gaus", "list", "force", "cpsat", "gumbel")
II = 8


def synthetic_aiger(n_and: int, depth: int, n_in: int = 128, seed: int = 0) -> bytes:
    """Binary AIGER bytes of a deep random AND network: ``depth`` levels of about
    ``n_and / depth`` gates; each gate reads one gate of the level above and one of the 64
    levels above (either polarity), like the carry chains of the EPFL arithmetic designs."""
    import numpy as np

    def varint(x: int) -> bytes:
        out = bytearray()
        while x >= 0x80:
            out.append((x & 0x7F) | 0x80)
            x >>= 7
        out.append(x)
        return bytes(out)

    rng = np.random.default_rng(seed)
    levels = [[2 * (k + 1) for k in range(n_in)]]
    body = bytearray()
    var = n_in
    width, extra = divmod(n_and, depth)
    for lv in range(depth):
        cur = []
        for _ in range(width + (lv < extra)):
            var += 1
            prev = levels[-1]
            far = levels[int(rng.integers(max(0, len(levels) - 64), len(levels)))]
            a = prev[int(rng.integers(len(prev)))] ^ int(rng.integers(2))
            b = far[int(rng.integers(len(far)))] ^ int(rng.integers(2))
            r0, r1 = max(a, b), min(a, b)
            body += varint(2 * var - r0) + varint(r0 - r1)
            cur.append(2 * var)
        levels.append(cur)
    head = f"aig {var} {n_in} 0 1 {var - n_in}\n{levels[-1][0]}\n".encode()
    return head + bytes(body)


def load(spec: str) -> Any:
    """A design: a path to an AIGER file, or ``synthetic:N:DEPTH``."""
    from twill.io.aiger import parse_aiger, read_aiger

    if spec.startswith("synthetic:"):
        _, n, depth = spec.split(":")
        return parse_aiger(synthetic_aiger(int(n), int(depth)), f"synthetic_{n}_{depth}.aig")
    return read_aiger(spec)


def instance(g: Any, formulation: str) -> tuple[Any, int, int | None]:
    """``(graph, D, II)`` of one formulation."""
    from gaus_modulo import pipelined

    from twill.sched.gaus.bounds import default_D
    from twill.sched.gaus.graph import gaus_view

    if formulation == "C":
        g = pipelined(g, II)
        return g, default_D(gaus_view(g), "C", II), II
    return g, default_D(gaus_view(g), formulation), None


def skip_reason(method: str, g: Any, form: str, D: int, args: argparse.Namespace) -> str | None:
    """Why ``method`` is not run on this instance (``None``: it runs)."""
    import numpy as np

    from twill.sched.gaus.graph import asap_alap

    if method == "force" and form == "B":
        return "not applicable (force-directed has no memory model)"
    if method == "cpsat":
        asap, alap = asap_alap(g, D)
        nvars = {"A": int(np.maximum(alap - asap + 1, 1).sum()), "B": 3 * g.n}.get(
            form, g.n * (II + 2)
        )
        if nvars > args.cpsat_max_vars:
            return f"model too large ({nvars:,} booleans > {args.cpsat_max_vars:,})"
    if method == "gumbel":
        if form != "A":
            return "not applicable (formulation A only)"
        # Measured: the per-node sampling keeps its autograd graph, about 600 bytes per
        # batch * n * D element (EPFL priority, batch 16, n 1106, D 314: 3.1 GB peak RSS)
        est = 600 * args.gumbel_batch * g.n * D / 2**30
        if est > args.mem_limit_gb:
            return f"out of memory (estimated {est:.1f} GB)"
    return None


def run_method(method: str, g: Any, form: str, D: int, II_: int | None, args: Any) -> dict:
    """Run one method (in the child process) and return its row fields."""
    from twill.options import SolverOptions
    from twill.sched.baselines import exact
    from twill.sched.baselines.categorical import GumbelSettings, gumbel_schedule
    from twill.sched.baselines.common import keyword_problem
    from twill.sched.baselines.force_directed import force_directed_schedule
    from twill.sched.baselines.list_sched import list_schedule

    if method == "gaus":
        import twill.sched.gaus.losses  # noqa: F401  (torch import outside the timing)
        from twill.gaus_solver import GauSSolver

        t0 = time.perf_counter()
        r = GauSSolver(g, D=D, **_gaus_limits(args)).solve(form, II=II_)
    elif method == "list":
        t0 = time.perf_counter()
        r = list_schedule(g, form, D=D, II=II_)
    elif method == "force":
        t0 = time.perf_counter()
        r = force_directed_schedule(g, form, D=D, II=II_)
    elif method == "cpsat":
        t0 = time.perf_counter()
        extra = {"precedence_cuts": True} if args.cpsat_cuts else {}
        opts = SolverOptions(time_limit=args.cpsat_limit, seed=args.cpsat_seed, extra=extra)
        r = exact.solve(keyword_problem(g, form, D, II_, 100.0), opts)
    else:
        import torch  # noqa: F401

        t0 = time.perf_counter()
        settings = GumbelSettings(batch=args.gumbel_batch)
        r = gumbel_schedule(g, "A", D=D, settings=settings, time_limit=args.cpsat_limit)
    seconds = time.perf_counter() - t0
    return {
        "objective": r.objective,
        "legal": bool(r.legal),
        "seconds": round(seconds, 2),
        "status": str(getattr(r.status, "value", r.status)),
        "bound": getattr(r, "bound", None),
        "note": (r.message or "")[:400],
    }


def _child(conn: Any, method: str, g: Any, form: str, D: int, II_: int | None, args: Any) -> None:
    try:
        row = run_method(method, g, form, D, II_, args)
    except Exception as exc:  # noqa: BLE001 - reported as the row's note
        row = {"objective": None, "legal": False, "seconds": None, "note": f"error: {exc}"}
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    conn.send(row)
    conn.close()


def in_child(method: str, g: Any, form: str, D: int, II_: int | None, args: Any) -> dict:
    """Run ``method`` in a forked process (its own peak RSS), stopped and reported as out of
    memory once its resident memory passes ``--rss-limit-gb``: CP-SAT's B model of EPFL
    ``div`` grew past 19 GB in 6 minutes, which would take the machine down with it."""
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(send, method, g, form, D, II_, args))
    p.start()
    send.close()
    row, over = None, None
    try:
        while row is None and over is None:
            if recv.poll(1.0):
                row = recv.recv()
            elif not p.is_alive() and not recv.poll(0):
                break
            elif (resident := _resident_mb(p.pid)) > 1024 * args.rss_limit_gb:
                over = resident
                p.kill()
    except EOFError:  # the child died (killed, out of memory) before sending
        row = None
    p.join()
    if row is None:
        row = {"objective": None, "legal": False, "seconds": None, "peak_rss_mb": None}
        row["note"] = f"process ended with code {p.exitcode}"
        if over is not None:
            row["peak_rss_mb"] = round(over, 1)
            row["note"] = f"out of memory: stopped above --rss-limit-gb {args.rss_limit_gb:g}"
    return row


def _resident_mb(pid: int) -> float:
    """A live process's resident memory in MB (0 when it has ended)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _gaus_limits(args: argparse.Namespace) -> dict[str, float | None]:
    """GauSSolver time settings: ``--gaus-budget`` split between the gradient phase and the
    final searches (each of which may otherwise take as long as the run before it), or
    ``--gaus-limit`` for the gradient phase only."""
    lns = {"lns_time": args.gaus_lns} if args.gaus_lns else {}
    if args.gaus_budget is not None:
        return {"time_limit": 0.6 * args.gaus_budget, "polish_time": 0.15 * args.gaus_budget, **lns}
    return {"time_limit": args.gaus_limit, **lns}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--designs",
        nargs="+",
        metavar="PATH",
        help="AIGER files (default: every .aig in data/epfl); "
        "synthetic:N:DEPTH makes a deep random AND network",
    )
    ap.add_argument("--synthetic", nargs="+", metavar="N:DEPTH", default=[])
    ap.add_argument("--formulations", nargs="+", choices="ABC", default=list("ABC"))
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument("--cpsat-limit", type=float, default=900.0, help="seconds (default 900)")
    ap.add_argument("--cpsat-max-vars", type=int, default=2_000_000)
    ap.add_argument("--cpsat-seed", type=int, default=0, help="CP-SAT's random seed")
    ap.add_argument(
        "--cpsat-cuts",
        action="store_true",
        help="formulation A: time-indexed precedence cuts and CP-SAT's full LP relaxation "
        "(proves some small designs optimal; slower elsewhere)",
    )
    ap.add_argument("--gaus-limit", type=float, default=None, help="GauS time limit, seconds")
    ap.add_argument(
        "--gaus-budget",
        type=float,
        default=None,
        help="GauS's whole wall-clock budget, s: 60 %% for the gradient phase, 15 %% for "
        "each final search (local search, and push moves in A; the rest covers "
        "legalisation); overrides --gaus-limit",
    )
    ap.add_argument(
        "--gaus-lns",
        type=float,
        default=0.0,
        metavar="S",
        help="seconds of large-neighbourhood search after GauS's own searches (GauSSettings."
        "lns_time; default 0: off); meant for designs small enough for the exact model",
    )
    ap.add_argument("--gumbel-batch", type=int, default=16)
    ap.add_argument(
        "--mem-limit-gb",
        type=float,
        default=4.0,
        help="gumbel is skipped when its tensors are estimated above this (default 4)",
    )
    ap.add_argument(
        "--rss-limit-gb",
        type=float,
        default=16.0,
        help="a method whose process holds more resident memory is stopped and reported out "
        "of memory (default 16)",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object per design and method")
    ap.add_argument(
        "--table-from",
        nargs="+",
        metavar="JSONL",
        help="print the table of saved --json lines (the latest row per design, formulation "
        "and method wins)",
    )
    args = ap.parse_args(argv)
    if args.table_from:
        latest: dict[tuple, dict] = {}  # the latest row of each design/formulation/method wins
        for path in args.table_from:
            for line in Path(path).read_text().splitlines():
                if line.strip():
                    r = json.loads(line)
                    latest[(r["design"], r["formulation"], r["method"])] = r
        print_table(list(latest.values()))
        return 0
    designs = args.designs or [str(p) for p in sorted(EPFL.glob("*.aig"), key=os.path.getsize)]
    designs += [f"synthetic:{s}" for s in args.synthetic]
    from twill.sched.gaus.graph import critical_path_steps, gaus_view

    rows = []
    for spec in designs:
        base = load(spec)
        depth = critical_path_steps(gaus_view(base))
        for form in args.formulations:
            g, D, II_ = instance(base, form)
            for method in args.methods:
                row = {"design": base.name, "nodes": len(g.instructions), "depth": depth, "D": D}
                row.update(formulation=form, method=method, II=II_)
                why = skip_reason(method, gaus_view(g), form, D, args)
                if why is None:
                    row.update(in_child(method, g, form, D, II_, args))
                else:
                    row.update(objective=None, legal=False, seconds=None, peak_rss_mb=None)
                    row["note"] = why
                rows.append(row)
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    print(f"{base.name} {form} {method}: {row.get('objective')}", file=sys.stderr)
    if not args.json:
        print_table(rows)
    print(f"load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
    return 0


def summary(rows: list[dict]) -> list[str]:
    """Per formulation: median list/GauS ratio, and on how many designs GauS is no worse than
    list, force-directed and CP-SAT's incumbent (where CP-SAT did not prove optimality)."""
    import statistics

    by = {(r["design"], r["formulation"], r["method"]): r for r in rows}
    out = []
    for form in "ABC":
        designs = [d for (d, f, m) in by if f == form and m == "gaus"]
        if not designs:
            continue
        ratios, tally = [], {"list": [0, 0], "force": [0, 0], "cpsat": [0, 0]}
        for d in designs:
            ref = by[(d, form, "gaus")]["objective"]
            for m, cnt in tally.items():
                r = by.get((d, form, m))
                if ref is None or r is None or r["objective"] is None:
                    continue
                if m == "cpsat" and r.get("status") == "optimal":
                    continue
                cnt[0] += ref <= r["objective"] + 1e-9
                cnt[1] += 1
                if m == "list":
                    ratios.append(r["objective"] / ref)
        med = f"{statistics.median(ratios):.3f}" if ratios else "-"
        parts = ", ".join(f"<= {m} on {a}/{b}" for m, (a, b) in tally.items())
        out.append(f"{form}: median list/GauS {med}; GauS {parts} (cpsat: unproven only)")
    return out


def print_table(rows: list[dict]) -> None:
    """Markdown table: one line per design, formulation and method; ``x gaus`` is the
    method's objective over GauS's (above 1: GauS better)."""
    gaus = {(r["design"], r["formulation"]): r["objective"] for r in rows if r["method"] == "gaus"}
    cols = "design nodes depth D form method objective x_gaus legal s MB note".split()
    print("| " + " | ".join(c.replace("_", " ") for c in cols) + " |")
    print("|" + "---|" * 12)
    for r in rows:
        ref = gaus.get((r["design"], r["formulation"]))
        obj = r["objective"]
        rel = f"{obj / ref:.3f}" if obj is not None and ref else "-"
        if r.get("bound") is not None and r["method"] in ("cpsat", "gaus"):
            obj_s = f"{obj:g} (bound {r['bound']:.6g})" if obj is not None else "-"
        else:
            obj_s = "-" if obj is None else f"{obj:g}"
        note = r.get("note", "") if not r["legal"] or r["method"] == "cpsat" else ""
        if r["method"] == "cpsat" and r.get("status"):
            note = r["status"]
        sec = "-" if r["seconds"] is None else f"{r['seconds']:.1f}"
        mb = "-" if r["peak_rss_mb"] is None else f"{r['peak_rss_mb']:.0f}"
        print(
            f"| {r['design']} | {r['nodes']} | {r['depth']} | {r['D']} | {r['formulation']} | "
            f"{r['method']} | {obj_s} | {rel} | {r['legal']} | {sec} | {mb} | {note} |"
        )
    print()
    for line in summary(rows):
        print(f"* {line}")


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
