"""Twill on a folder of Triton kernels that you bring: every kernel on each architecture, as
a new user runs it (``twill solve FILE.py:KERNEL --arch ARCH --json``, one process each).

The folder holds the kernels' ``.py`` files and the ``kernels.yaml`` that ``twill solve``
reads beside them (signature, constexprs, ``num_warps`` per kernel); every kernel named there
is run. Nothing of the folder is copied or shipped: this is how the hand check of other
people's kernels (Triton's tutorials, public kernel libraries) in docs/benchmarks.md is run.

    .venv/bin/python benchmarks/triton_user_kernels.py DIR [--arches A ...]
        [--total-time-limit S] [--kernels K ...] [--json]

One row per kernel and architecture: ``kernel``, ``file``, ``arch``, ``exit`` (the command's
exit code), ``status`` (``scheduled``: every loop has a schedule; ``no schedule``: a loop has
none; ``refused``: exit 2, with the message; ``internal error``: exit 70), ``loops`` (each
with ``line``, ``calls``, ``ops``, ``reductions``, ``I``, ``L``, ``I_clk``, ``optimal``,
``status``, ``seconds``, ``why_I``) and ``message`` (for a loop without a schedule, its
``why_I`` where the solver names a reason). The pass rate is the share of rows scheduled.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ARCHES = ("sm_90a", "sm_100a")


def kernel_files(folder: Path, names: list[str]) -> dict[str, Path]:
    """Each kernel named in ``kernels.yaml`` -> the ``.py`` of the folder that defines it."""
    found: dict[str, Path] = {}
    for py in sorted(folder.glob("*.py")):
        text = py.read_text(encoding="utf-8", errors="replace")
        for name in names:
            if name not in found and re.search(rf"^def {re.escape(name)}\(", text, re.M):
                found[name] = py
    return found


def run(py: Path, kernel: str, arch: str, total: float) -> dict:
    """One row: ``twill solve`` on one kernel and architecture, in its own process."""
    cmd = [sys.executable, "-m", "twill", "solve", f"{py}:{kernel}", "--arch", arch, "--json",
           "--total-time-limit", str(total)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=total * 3 + 300)
    row: dict = {"kernel": kernel, "file": py.name, "arch": arch, "exit": proc.returncode,
                 "loops": [], "message": ""}  # fmt: skip
    errors = [ln for ln in proc.stderr.splitlines() if "error" in ln.lower()]
    if proc.returncode in (0, 1) and proc.stdout.strip():
        data = json.loads(proc.stdout)
        keys = ("line", "calls", "ops", "reductions", "I", "L", "I_clk", "optimal", "status",
                "seconds", "why_I")  # fmt: skip
        row["loops"] = [{k: lp.get(k) for k in keys} for lp in data.get("loops", [])]
        missing = [lp for lp in row["loops"] if lp["I"] is None]
        row["status"] = "no schedule" if missing or not row["loops"] else "scheduled"
        row["message"] = "; ".join(
            f"loop at line {lp['line']}: {lp['status']}"
            + (f" ({lp['why_I']})" if lp["why_I"] else "")
            for lp in missing
        ) or "; ".join(data.get("notes", [])[1:])
    else:
        row["status"] = {2: "refused", 70: "internal error"}.get(proc.returncode, "failed")
        row["message"] = (errors or proc.stderr.strip().splitlines() or [""])[-1]
    return row


def _loops_cell(row: dict) -> str:
    return "; ".join(
        f"{lp['line']}{''.join(f'<{c}' for c in lp['calls'] or [])}: "
        f"{lp['ops']}/{lp['reductions']}, I={lp['I']} ({lp['I_clk']} clk), L={lp['L']}, "
        f"{'opt' if lp['optimal'] else lp['status']}, {lp['seconds']} s"
        for lp in row["loops"]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--arches", nargs="*", default=list(ARCHES))
    ap.add_argument("--kernels", nargs="*", default=None)
    ap.add_argument("--total-time-limit", type=float, default=120.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    spec = yaml.safe_load((args.folder / "kernels.yaml").read_text(encoding="utf-8")) or {}
    names = [k for k in spec if not args.kernels or k in args.kernels]
    files = kernel_files(args.folder, names)
    rows = []
    for name in names:
        for arch in args.arches:
            if name not in files:
                rows.append(
                    {
                        "kernel": name,
                        "file": None,
                        "arch": arch,
                        "exit": None,
                        "loops": [],
                        "status": "missing",
                        "message": "no file defines it",
                    }
                )
                continue  # fmt: skip
            rows.append(run(files[name], name, arch, args.total_time_limit))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    done = sum(r["status"] == "scheduled" for r in rows)
    out = {"rows": rows, "scheduled": done, "pairs": len(rows)}
    print(json.dumps(out, indent=1) if args.json else _table(rows, done))
    return 0


def _table(rows: list[dict], done: int) -> str:
    """The Markdown table of ``rows`` and the pass rate."""
    head = "| kernel | arch | exit | status | loops: line<call: ops/reductions, I, L | message |"
    lines = [head, "|---|---|---|---|---|---|"]
    lines += [
        f"| {r['kernel']} | {r['arch']} | {r['exit']} | {r['status']} | {_loops_cell(r)} | "
        f"{r['message'][:200]} |"
        for r in rows
    ]
    return "\n".join([*lines, "", f"{done} of {len(rows)} kernel x architecture pairs scheduled"])


if __name__ == "__main__":
    from twill.scratch import private_scratch

    with private_scratch():  # temporary files of this process: removed at exit
        raise SystemExit(main())
