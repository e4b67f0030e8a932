"""Throughput of the batched cost model and of ``twill map-eval --dataset`` (issue 52, item 1),
each beside its bound.

    .venv/bin/python benchmarks/cost_model_throughput.py            # table
    .venv/bin/python benchmarks/cost_model_throughput.py --json

The rows are DOSA's shipped ``timeloop_sample.csv`` (2,000 Gemmini mappings, each its own
layer and architecture), and the same rows repeated to ``--rows`` (default 70,000, the size of
the issue's held-out set) in a temporary CSV.

* **model**: :func:`twill.mapping.cost.analytical.evaluate_many` on the rows (a layer, an
  architecture and a mapping per row), in chunks of ``--chunk`` rows, one thread; beside it
  the scalar :func:`~twill.mapping.cost.analytical.evaluate`, one row at a time.
  Bound: the bytes the call must read and write per mapping (its input arrays and the cycles,
  energy, utilisation and validity it returns) at this core's streaming bandwidth
  (``numpy.copyto`` of 512 MiB, bytes read plus written per second).
* **end to end**: ``python -m twill map-eval --dataset FILE`` (table) and ``--json`` (stdout
  to ``/dev/null``), whole process, start-up included; beside it the process before this
  change (``read_dosa_dataset`` + ``evaluate_rows``, row by row) on the shipped 2,000 rows.
  Bound: ``csv.reader`` alone over the same file (no conversion, no model).

Rates are rows per CPU second (user + system, so a loaded machine slows the wall clock, not the
figure) and per wall second; ratios are to the bound.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "dosa" / "timeloop_sample.csv"


def _best(fn: Any, repeat: int) -> tuple[float, float]:
    """Least CPU and wall seconds of ``repeat`` calls of ``fn``."""
    cpu = wall = float("inf")
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        cpu, wall = min(cpu, time.process_time() - c0), min(wall, time.perf_counter() - w0)
    return cpu, wall


def stream_bandwidth() -> float:
    """Bytes read plus written per second by one core copying 512 MiB."""
    a = np.ones(64 * 2**20)  # 512 MiB, past any cache
    b = np.empty_like(a)
    cpu, _ = _best(lambda: np.copyto(b, a), 5)
    return 2 * a.nbytes / cpu


def model_rows(n: int, chunk: int) -> dict[str, Any]:
    """evaluate_many on ``n`` rows (the sample repeated) against the bytes bound, and the
    scalar model on the sample."""
    from twill.io.timeloop import read_dosa_columns, read_dosa_dataset
    from twill.mapping.cost.analytical import (
        ArchArrays,
        LayerArrays,
        MappingBatch,
        evaluate,
        evaluate_many,
    )

    cols = read_dosa_columns(SAMPLE)
    idx = np.arange(n) % len(cols)
    mc = cols.mappings
    layers = LayerArrays.of(cols.layers).take(cols.layer_of[idx])
    archs = ArchArrays.of(cols.archs).take(cols.arch_of[idx])
    batch = MappingBatch(mc.temporal[idx], mc.spatial[idx], mc.order[idx],
                         mc.group_temporal[idx], mc.group_spatial[idx])  # fmt: skip

    def run() -> None:
        for lo in range(0, n, chunk):
            s = slice(lo, lo + chunk)
            evaluate_many(layers.take(s), archs.take(s), MappingBatch(
                batch.temporal[s], batch.spatial[s], batch.order[s], batch.group_temporal[s],
                batch.group_spatial[s]))  # fmt: skip

    cpu, wall = _best(run, 3)
    per_row_in = (
        sum(
            a.nbytes
            for a in (
                batch.temporal,
                batch.spatial,
                batch.order,
                batch.group_temporal,
                batch.group_spatial,
            )
        )
        / n
    )
    per_row_in += (
        sum(
            getattr(layers, f).nbytes
            for f in (
                "bounds",
                "w_stride",
                "h_stride",
                "w_dilation",
                "h_dilation",
                "total_macs",
                "groups",
            )
        )
        / n
    )
    per_row_in += sum(getattr(archs, f).nbytes for f in ("energy_pj", "entries", "fanout",
                      "bandwidth", "bandwidth_shared", "spatial_ok", "macs",
                      "mac_energy_pj")) / n  # fmt: skip
    per_row = per_row_in + 3 * 8 + 1  # cycles, energy, utilisation (float64), valid (bool)
    bw = stream_bandwidth()
    rows = read_dosa_dataset(SAMPLE)
    s_cpu, _ = _best(lambda: [evaluate(r.layer, r.arch, r.mapping) for r in rows], 1)
    return {
        "rows": n, "chunk": chunk, "rows_per_cpu_s": n / cpu, "rows_per_wall_s": n / wall,
        "bytes_per_row": per_row, "stream_GB_s": bw / 1e9, "bound_rows_per_s": bw / per_row,
        "ratio_to_bound": (n / cpu) / (bw / per_row),
        "scalar_rows_per_cpu_s": len(rows) / s_cpu,
    }  # fmt: skip


def _child(argv: list[str]) -> tuple[float, float]:
    """CPU (user + system) and wall seconds of one child process, stdout to /dev/null."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1"}
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def end_to_end(path: Path, n: int, repeat: int) -> list[dict[str, Any]]:
    """The CLI on ``path`` (``n`` rows), table and --json, against csv.reader alone."""
    text = path.read_text()
    p_cpu, _ = _best(lambda: list(csv.reader(io.StringIO(text, newline=""))), 3)
    parse_rate = n / p_cpu
    cmd = [sys.executable, "-m", "twill", "map-eval", "--dataset", str(path)]
    start = min(_child([*cmd[:4], "--help"])[0] for _ in range(repeat))
    out = []
    for mode, argv in (("table", cmd), ("--json", [*cmd, "--json"])):
        runs = [_child(argv) for _ in range(repeat)]
        cpu, wall = min(r[0] for r in runs), min(r[1] for r in runs)
        out.append({"file_rows": n, "mode": mode, "rows_per_cpu_s": n / cpu,
                    "rows_per_wall_s": n / wall, "csv_reader_rows_per_s": parse_rate,
                    "startup_cpu_s": start, "rows_per_cpu_s_after_startup": n / (cpu - start),
                    "ratio_to_csv_reader": (n / cpu) / parse_rate})  # fmt: skip
    return out


def row_by_row(n_rows: int) -> float:
    """Rows per CPU second of the reader and evaluation before issue 52 (one row at a time:
    read_dosa_dataset, then per row evaluate and verify_mapping), in process."""
    from twill.io.timeloop import read_dosa_dataset
    from twill.mapping.cost.analytical import evaluate
    from twill.mapping.mapping import verify_mapping

    def run() -> None:
        for r in read_dosa_dataset(SAMPLE):
            evaluate(r.layer, r.arch, r.mapping)
            verify_mapping(r.layer, r.arch, r.mapping)

    cpu, _ = _best(run, 1)
    return n_rows / cpu


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=70_000, help="rows of the repeated CSV")
    p.add_argument("--chunk", type=int, default=4096, help="rows per evaluate_many call")
    p.add_argument("--repeat", type=int, default=3, help="processes per end-to-end figure")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    model = model_rows(args.rows, args.chunk)
    lines = SAMPLE.read_text().splitlines(keepends=True)
    body = lines[1:]
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "rows.csv"
        big.write_text(lines[0] + "".join(body[i % len(body)] for i in range(args.rows)))
        e2e = end_to_end(SAMPLE, len(body), args.repeat) + end_to_end(big, args.rows, args.repeat)
    before = row_by_row(len(body))
    out = {"model": model, "end_to_end": e2e, "row_by_row_rows_per_cpu_s": before,
           "machine": {"cpus": os.cpu_count(), "load_1min": os.getloadavg()[0]}}  # fmt: skip
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    m = model
    print(f"model, {m['rows']:,} rows in chunks of {m['chunk']:,}: {m['rows_per_cpu_s']:,.0f} "
          f"rows/CPU s ({m['rows_per_wall_s']:,.0f}/wall s); bound {m['bound_rows_per_s']:,.0f}"
          f" ({m['bytes_per_row']:.0f} B/row at {m['stream_GB_s']:.1f} GB/s): "
          f"{m['ratio_to_bound']:.2%} of it; scalar evaluate {m['scalar_rows_per_cpu_s']:,.0f}"
          " rows/CPU s")  # fmt: skip
    print(
        f"{'rows':>7} {'mode':>7} {'rows/CPU s':>11} {'rows/wall s':>11} "
        f"{'csv.reader/s':>12} {'ratio':>6}"
    )
    for r in e2e:
        print(
            f"{r['file_rows']:7,} {r['mode']:>7} {r['rows_per_cpu_s']:11,.0f} "
            f"{r['rows_per_wall_s']:11,.0f} {r['csv_reader_rows_per_s']:12,.0f} "
            f"{r['ratio_to_csv_reader']:6.1%}"
        )
    print(
        f"before (row by row, in process, 2,000 rows): {before:,.0f} rows/CPU s; "
        f"load {out['machine']['load_1min']:.1f} on {out['machine']['cpus']} CPUs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
