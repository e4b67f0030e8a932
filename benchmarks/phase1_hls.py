"""Phase 1 on HLS loops: a heuristic incumbent at once, then the minimum I with proof or a gap.

For every shipped HatScheT loop (MachSuite, origami, cTest; ``data/hatschet``; ChStone, the 263
CHStone loops of ``ChStone.tar.xz``, with ``--suites ChStone``) and, with
``--large``, for large loops made from them (unrolled 2-8 times: 900-1,728 operations with
their real recurrences) and random loops of 500-2,000 operations with a HatScheT MachSuite-style
resource model (fixed seeds), the minimum-I search runs as ``twill solve`` does: first Rau's
iterative modulo scheduling, slack scheduling below it, on loops of 500+ operations where
that found nothing GauS formulation C (the incumbent, verified; ``incumbent_source`` says which
won), then the CP-SAT probes and the exact Phase-1 solves from MII up to the incumbent's I,
under a per-solve and a per-loop time limit. One row per loop and
backend: ``loop``, ``ops``, ``mii``, ``first_I`` and ``first_seconds`` (the first verified
schedule, IMS's), ``incumbent_I``, ``incumbent_seconds``, ``incumbent_source``, ``I``,
``lower_bound`` (every smaller I is excluded by a proof), ``gap`` (``I - lower_bound``),
``gap_percent`` (of ``I``), ``optimal``, ``proof_seconds`` (when proven), ``status``, ``L``,
``L_optimal``, ``seconds``. ``-o`` writes the JSON object, ``--plot`` the gap against size.
Every schedule passed the independent verifier inside the solver.

Usage (from the repository root)::

    .venv/bin/python benchmarks/phase1_hls.py                     # shipped loops, both backends
    .venv/bin/python benchmarks/phase1_hls.py --max-ops 40        # a quick subset
    .venv/bin/python benchmarks/phase1_hls.py --large --only-large --backends cpsat --budget 600
    .venv/bin/python benchmarks/phase1_hls.py --json              # one JSON object
    .venv/bin/python benchmarks/phase1_hls.py --suites ChStone MachSuite --backends cbc \
        --budget 10 -o chstone.json --plot gap.png                   # issue 50's table
    .venv/bin/python benchmarks/phase1_hls.py --write-large DIR   # the large loops as graphml
    .venv/bin/python benchmarks/phase1_hls.py --only-large --loops random_500_s1   # some loops
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from twill.options import SolverOptions
from twill.sched.exact.settings import TwillSettings
from twill.scratch import private_scratch

ROOT = Path(__file__).resolve().parents[1]
HATSCHET = ROOT / "data" / "hatschet"
MALFORMED = {"cTest/vanDongen"}  # upstream XML error (tests/io/test_hatschet.py)
# (loop, unroll factor): the shipped loops with the hardest recurrences, unrolled as an HLS
# tool would before pipelining
UNROLLED = [
    ("MachSuite/aes2/graph4", 4),
    ("MachSuite/aes2/graph4", 6),
    ("MachSuite/md_grid/graph7", 3),
    ("MachSuite/md_grid/graph7", 5),
    ("MachSuite/aes2/graph2", 8),
    ("origami/iir_sos16", 8),
    ("origami/mat_inv", 4),
    ("origami/r2_FFT", 3),
]
RANDOM = [(500, 1), (1000, 2), (2000, 3)]  # (ops, seed) of twill.sched.generate.random_hls_loop


def shipped(data: Path, suites: list[str]) -> list[tuple[str, object]]:
    """``(name, loader)`` of the shipped loops of the requested suites, in a stable order
    (``ChStone`` unpacked from ``ChStone.tar.xz`` into the scratch folder when not beside it)."""
    from twill.io import load_graph

    out = []
    for suite in suites:
        root = data
        if not (data / suite).is_dir() and (data / f"{suite}.tar.xz").is_file():
            import tarfile
            import tempfile

            root = Path(tempfile.mkdtemp(prefix="hatschet-"))  # inside private_scratch
            with tarfile.open(data / f"{suite}.tar.xz") as tar:
                tar.extractall(root, filter="data")
        for path in sorted((root / suite).rglob("*.graphml")):
            name = str(path.relative_to(root).with_suffix(""))
            if name not in MALFORMED:
                out.append((name, lambda p=path: load_graph(p)))
    return out


def large(data: Path) -> list[tuple[str, object]]:
    """``(name, loader)`` of the generated large loops."""
    from twill.io import load_graph
    from twill.sched.generate import random_hls_loop, unroll

    out: list[tuple[str, object]] = [
        (f"{name}_x{u}", lambda n=name, u=u: unroll(load_graph(data / f"{n}.graphml"), u))
        for name, u in UNROLLED
    ]
    out += [(f"random_{n}_s{s}", lambda n=n, s=s: random_hls_loop(n, s)) for n, s in RANDOM]
    return out


def run_one(name: str, graph, backend: str, time_limit: float, budget: float) -> dict:
    from twill.sched.exact.search import search_min_ii

    t0 = time.perf_counter()
    r = search_min_ii(
        graph,
        SolverOptions(
            time_limit=budget, twill=TwillSettings(backend=backend, solve_time_limit=time_limit)
        ),
    )
    h = r.heuristic
    return {
        "loop": name,
        "ops": len(graph.instructions),
        "edges": len(graph.edges),
        "mii": r.mii,
        "backend": backend,
        "first_I": (h.first or (h.I, h.seconds))[0] if h else None,  # IMS (or serial)
        "first_seconds": round((h.first or (h.I, h.seconds))[1], 3) if h else None,
        "incumbent_I": h.I if h else None,
        "incumbent_seconds": round(h.seconds, 3) if h else None,
        "incumbent_source": h.method if h else None,  # ims, gaus-C or serial
        "I": r.I,
        "lower_bound": r.lower_bound,
        "gap": r.I - r.lower_bound if r.I is not None else None,
        "gap_percent": round(100 * (r.I - r.lower_bound) / r.I, 2) if r.I else None,
        "optimal": r.optimal,
        "proof_seconds": round(time.perf_counter() - t0, 3) if r.optimal else None,
        "status": r.status.value,
        "L": r.L,
        "L_optimal": r.L_optimal,
        "unknown_I": [c.I for c in r.certificate if not c.proven],
        "seconds": round(time.perf_counter() - t0, 3),
    }


def write_hatschet(graph, folder: Path) -> Path:
    """``graph`` as HatScheT files (``NAME.graphml`` + ``NAME_RM.xml``) that
    :func:`twill.io.load_graph` reads back to the same graph: every resource with latency 0
    (the whole delay sits on the edge) and ``blockingTime`` = the op's cycles."""
    from xml.sax.saxutils import quoteattr

    folder.mkdir(parents=True, exist_ok=True)
    caps = graph.machine.functional_units
    block = {}
    for ins in graph.instructions:
        block[ins.unit] = max(block.get(ins.unit, 0), ins.cycles)
    res = "\n".join(
        f'    <Resource name={quoteattr(u)} latency="0" blockingTime="{b}" '
        f'limit="{caps.get(u, -1)}"/>'
        for u, b in sorted(block.items())
    )
    rm = folder / f"{graph.name}_RM.xml"
    rm.write_text(
        f"<ModelInformation>\n  <Resources>\n{res}\n  </Resources>\n</ModelInformation>\n"
    )
    lines = ['<graphml><key id="name" for="node"/><graph edgedefault="directed">']
    ids = {ins.name: f"n{i}" for i, ins in enumerate(graph.instructions)}
    for ins in graph.instructions:
        lines.append(f'<node id="{ids[ins.name]}"><data key="name">{ins.name}</data>'
                     f"<data key=\"uses_resource\">{ins.unit}</data></node>")  # fmt: skip
    for k, e in enumerate(graph.edges):
        lines.append(f'<edge id="e{k}" source="{ids[e.src]}" target="{ids[e.dst]}">'
                     f'<data key="distance">{e.distance}</data><data key="delay">{e.delay}</data>'
                     "</edge>")  # fmt: skip
    lines.append("</graph></graphml>")
    path = folder / f"{graph.name}.graphml"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=HATSCHET, help="the HatScheT benchmark folder")
    ap.add_argument("--suites", nargs="+", default=["MachSuite", "origami", "cTest"])
    ap.add_argument("--backends", nargs="+", default=["cbc", "cpsat"], choices=["cbc", "cpsat"])
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per Phase-1 solve")
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per loop and backend")
    ap.add_argument("--max-ops", type=int, default=None, help="only loops up to this many ops")
    ap.add_argument("--large", action="store_true", help="add the generated large loops")
    ap.add_argument("--only-large", action="store_true", help="only the generated large loops")
    ap.add_argument("--loops", nargs="+", default=None, metavar="NAME",
                    help="only these loops (as named in the table)")  # fmt: skip
    ap.add_argument("--write-large", type=Path, default=None, metavar="DIR",
                    help="write the large loops as HatScheT graphml to DIR and stop")  # fmt: skip
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-o", "--output", type=Path, default=None, metavar="FILE.json",
                    help="also write the JSON object to FILE")  # fmt: skip
    ap.add_argument("--plot", type=Path, default=None, metavar="FILE.png",
                    help="draw the gap (percent of I) against the loop size to FILE")  # fmt: skip
    args = ap.parse_args(argv)

    if args.write_large is not None:
        for name, load in large(args.data):
            graph = load()
            print(write_hatschet(graph.replace(name=name.replace("/", "_")), args.write_large))
        return 0
    if "cpsat" in args.backends:  # load OR-Tools before timing (its import takes ~0.5 s)
        from ortools.sat.python import cp_model  # noqa: F401
    todo = [] if args.only_large else shipped(args.data, args.suites)
    todo += large(args.data) if args.large or args.only_large else []
    if args.loops is not None:
        unknown = set(args.loops) - {name for name, _ in todo}
        if unknown:
            print(f"error: --loops: no loop named {sorted(unknown)[0]!r}", file=sys.stderr)
            return 2
        todo = [(name, load) for name, load in todo if name in args.loops]
    rows: list[dict] = []
    load_before = [round(x, 2) for x in os.getloadavg()]
    for name, load in todo:
        graph = load()
        if args.max_ops is not None and len(graph.instructions) > args.max_ops:
            continue
        for backend in args.backends:
            rows.append(run_one(name, graph, backend, args.time_limit, args.budget))
            r = rows[-1]
            print(f"{name:<32} {backend:<6} ops={r['ops']:<5} MII={r['mii']:<4} "
                  f"IMS={r['first_I']} ({r['first_seconds']:.2f}s) "
                  f"inc={r['incumbent_I']} {r['incumbent_source']} ({r['incumbent_seconds']:.2f}s) "
                  f"I={r['I']} "
                  f"lb={r['lower_bound']} proven={r['optimal']} {r['seconds']:.1f}s",
                  file=sys.stderr, flush=True)  # fmt: skip
    summary = _summary(rows, args.backends, load_before)
    command = "benchmarks/phase1_hls.py " + " ".join(argv if argv is not None else sys.argv[1:])
    out = {"command": command, "rows": rows, "summary": summary}
    if args.output is not None:
        args.output.write_text(json.dumps(out, indent=2) + "\n")
    if args.plot is not None:
        _plot(rows, args.plot)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    _print_table(rows, summary)
    return 0


def _summary(rows: list[dict], backends: list[str], load_before: list[float]) -> dict:
    summary: dict = {
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    for backend in backends:
        mine = [r for r in rows if r["backend"] == backend]
        secs = [r["seconds"] for r in mine]
        summary[backend] = {
            "loops": len(mine),
            "proven": sum(r["optimal"] for r in mine),
            "gap_at_most_5_percent": sum(
                r["gap_percent"] is not None and r["gap_percent"] <= 5 for r in mine
            ),  # fmt: skip
            "first_within_10_s": sum(
                r["first_seconds"] is not None and r["first_seconds"] <= 10 for r in mine
            ),  # fmt: skip
            "incumbent_within_10_s": sum(
                r["incumbent_seconds"] is not None and r["incumbent_seconds"] <= 10 for r in mine
            ),  # fmt: skip
            "incumbent_at_optimum": sum(r["optimal"] and r["incumbent_I"] == r["I"] for r in mine),
            "max_incumbent_seconds": max((r["incumbent_seconds"] for r in mine), default=None),
            "max_first_seconds": max((r["first_seconds"] for r in mine), default=None),
            "max_gap": max((r["gap"] for r in mine if r["gap"] is not None), default=None),
            "total_seconds": round(sum(secs), 2),
            "median_seconds": round(statistics.median(secs), 4) if secs else None,
            "max_seconds": round(max(secs), 2) if secs else None,
        }
    if set(backends) == {"cbc", "cpsat"}:
        by = {(r["loop"], r["backend"]): r for r in rows}
        names = sorted({r["loop"] for r in rows})
        agree = sum(by[n, "cbc"]["I"] == by[n, "cpsat"]["I"] for n in names)
        summary["agree_on_I"] = f"{agree}/{len(names)}"
    return summary


def _plot(rows: list[dict], path: Path) -> None:
    """One scatter per backend: the gap in percent of ``I`` against the number of ops."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for backend in sorted({r["backend"] for r in rows}):
        mine = [r for r in rows if r["backend"] == backend and r["gap_percent"] is not None]
        ax.scatter([r["ops"] for r in mine], [r["gap_percent"] for r in mine], s=10,
                   label=backend, alpha=0.7)  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("operations in the loop")
    ax.set_ylabel("gap (I - lower bound), % of I")
    ax.axhline(5, color="grey", lw=0.5, ls="--")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _print_table(rows: list[dict], summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Phase 1 on HLS loops: incumbent, then the proof")
    cols = ("loop", "backend", "ops", "mii", "first_seconds", "incumbent_I", "I", "lower_bound",
            "gap_percent", "optimal", "proof_seconds", "seconds")  # fmt: skip
    for col in cols:
        table.add_column(col)
    for r in rows:
        table.add_row(*(str(r[c]) for c in cols))
    console = Console(width=160)
    console.print(table)
    console.print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    with private_scratch():  # torch and Triton caches, temporary files: removed at exit
        sys.exit(main())
