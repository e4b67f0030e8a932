"""Check that the tables of docs/benchmarks.md still hold: rerun their commands, compare.

Each check names a benchmark command (often a reduced variant of the section's command: fewer
models, designs or methods, so that it fits a working session) and the table of
``docs/benchmarks.md`` it reproduces. The command's ``--json`` output is matched to the table's
rows by key (kernel, loop, network and method, ...) and the objective columns (I, L, EDP,
energy, cycles, MaxLive, gains, statuses) are compared at the precision the table prints.
Times are never compared: they depend on the machine's load.

One line per check: the command, the rows compared, how many are identical, and each row that
differs with its old and new values. Rows of the table that the reduced command does not rerun
are counted as "not rerun". Checks marked *timed* run a time-limited method (CP-SAT or Z3
under a limit, a fusion search under a deadline): their rows may move within the method's
run-to-run spread, which the line says.

Usage (from the repository root)::

    .venv/bin/python benchmarks/check_results.py --list            # the checks and commands
    .venv/bin/python benchmarks/check_results.py twill_search      # run it, compare
    .venv/bin/python benchmarks/check_results.py --all --save DIR  # run all, keep the outputs
    .venv/bin/python benchmarks/check_results.py --all --from DIR  # compare saved outputs

``--save DIR`` keeps each command's stdout as ``DIR/NAME.json``; ``--from DIR`` compares such
files without running anything. Exit status: 0 when every compared row is identical, 1 when a
row differs or a command failed, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
PY = ".venv/bin/python"

Rows = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Check:
    """One table of docs/benchmarks.md and the command that reproduces it.

    ``heading`` is the table's section heading (without the ``#``), ``table`` which table
    below it (0 = the first). ``rows`` turns the command's JSON output into the table's rows:
    ``{key: {column: value}}`` with the table's own column names, only for the columns that are
    compared. ``key`` gives a table row's key from its cells. ``extra`` are further tables
    compared with the same output (their own ``argv`` is empty).
    """

    name: str
    argv: tuple[str, ...]
    heading: str
    rows: Callable[[Any], Rows]
    key: Callable[[dict[str, str]], str]
    table: int = 0
    timed: str = ""
    note: str = ""
    extra: tuple[Check, ...] = field(default_factory=tuple)


# ---------------------------------------------------------------------------- the tables


def doc_table(heading: str, index: int = 0, text: str | None = None) -> list[dict[str, str]]:
    """The ``index``-th markdown table under ``heading``, as one dict per row.

    A repeated column name gets a suffix (``now``, ``now (2)``). Raises ``KeyError`` when the
    heading or the table is missing.
    """
    lines = (DOC.read_text() if text is None else text).splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.lstrip("#").strip() == heading), None)
    if start is None or not lines[start].startswith("#"):
        raise KeyError(f"docs/benchmarks.md: no heading {heading!r}")
    level = len(lines[start]) - len(lines[start].lstrip("#"))
    tables: list[list[str]] = []
    prev_table = fenced = False
    for ln in lines[start + 1 :]:
        stripped = ln.strip()
        fenced ^= stripped.startswith("```")
        if not fenced and ln.startswith("#") and len(ln) - len(ln.lstrip("#")) <= level:
            break
        is_row = stripped.startswith("|") and not fenced
        if is_row and not prev_table:
            tables.append([])
        if is_row:
            tables[-1].append(stripped)
        prev_table = is_row
    if index >= len(tables):
        raise KeyError(f"docs/benchmarks.md: no table {index} under {heading!r}")
    header, _, *body = tables[index]
    names: list[str] = []
    for c in _cells(header):
        names.append(c if c not in names else f"{c} ({names.count(c) + 1})")
    return [dict(zip(names, _cells(row), strict=False)) for row in body]


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


_NUM = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", re.IGNORECASE)


def _plain(cell: str) -> str:
    return cell.replace("**", "").replace("`", "").strip()


def same(cell: str, value: Any) -> bool:
    """Whether a table cell shows ``value`` (numbers at the precision the cell prints)."""
    cell = _plain(cell)
    if isinstance(value, tuple):  # "19,345,061 / 14,349.3 / 2.78e11"
        parts = cell.split(" / ")
        return len(parts) == len(value) and all(map(same, parts, value))
    if value is None:
        return cell in ("-", "–", "", "None", "none", "unknown")
    if isinstance(value, bool):
        return cell.lower() in (("yes", "true") if value else ("no", "false"))
    if isinstance(value, int | float):
        m = _NUM.search(cell)
        if m is None or not math.isfinite(float(value)):
            return False
        text = m.group(0).replace(",", "")
        mant, _, exp = text.lower().partition("e")
        decimals = len(mant.partition(".")[2])
        step = 10.0 ** (int(exp or 0) - decimals)
        return abs(float(text) - float(value)) <= 0.5 * step * (1 + 1e-9) + 1e-12
    return cell == str(value).strip()


def show(value: Any) -> str:
    """A value as the difference report prints it."""
    if isinstance(value, tuple):
        return " / ".join(map(show, value))
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@dataclass
class Outcome:
    """What one check found: the rows compared, identical and different, and why."""

    compared: int = 0
    identical: int = 0
    differ: list[str] = field(default_factory=list)
    missing: int = 0


def compare(check: Check, data: Any, text: str | None = None) -> Outcome:
    """Compare a command's JSON output with its table in docs/benchmarks.md."""
    out = Outcome()
    new = check.rows(data)
    for row in doc_table(check.heading, check.table, text):
        key = check.key(row)
        if key not in new:
            out.missing += 1
            continue
        out.compared += 1
        diffs = [
            f"{col} {_plain(row.get(col, '?'))} -> {show(v)}"
            for col, v in new[key].items()
            if col not in row or not same(row[col], v)
        ]
        if diffs:
            out.differ.append(f"{key}: " + ", ".join(diffs))
        else:
            out.identical += 1
    return out


# ---------------------------------------------------------------------------- the checks


def _yes(flag: Any) -> Any:
    return flag if flag is None else bool(flag)


def twill_search_rows(data: list[dict]) -> Rows:
    """twill_search.py: I, L, the proof and the model size per kernel."""
    return {
        r["kernel"]: {
            "I": r["I"],
            "L": r["L"],
            "optimal": r["optimal"],
            "Phase-1 I": r["phase1_I"],
            "points": " ".join(r["points"]),
            "vars": r["variables"],
            "clauses": r["clauses"],
            "PB": r["pb_rows"],
        }
        for r in data
    }


def phase1_loop_rows(data: dict) -> Rows:
    """phase1_hls.py: per loop, the heuristics' I, the answer, its lower bound and the proof."""
    return {
        r["loop"]: {
            "ops": r["ops"],
            "MII": r["mii"],
            "IMS I": r["first_I"],
            "incumbent I": r["incumbent_I"],
            "source": r["incumbent_source"],
            "I": r["I"],
            "lower bound": r["lower_bound"],
            "optimal": r["optimal"],
        }
        for r in data["rows"]
    }


def phase1_summary_rows(data: dict) -> Rows:
    """phase1_hls.py: the summary line per suite (loops, proven, within 5 %, at MII)."""
    out: Rows = {}
    for suite in ("ChStone", "MachSuite", "origami", "cTest"):
        rows = [r for r in data["rows"] if r["loop"].startswith(f"{suite}/")]
        if rows:
            out[suite] = {
                "loops": len(rows),
                "proven I": sum(bool(r["optimal"]) for r in rows),
                "gap ≤ 5 %": sum(
                    r["gap_percent"] is not None and r["gap_percent"] <= 5 for r in rows
                ),  # fmt: skip
                "at MII": sum(r["I"] == r["mii"] for r in rows),
                "IMS = I": sum(r["first_I"] == r["I"] for r in rows),
                "incumbent = I": sum(r["incumbent_I"] == r["I"] for r in rows),
            }
    return out


def hls_problem_rows(data: dict) -> Rows:
    """hls_problem.py: the one summary row."""
    s = data["summary"]
    return {
        "all": {
            "loops": s["loops"],
            "`problem: modulo` by default": s["default_is_modulo_problem"],
            "default I = proven modulo optimum": s["default_I_is_modulo_optimum"],
            "`--phase2` run": s["phase2_run"],
            "`--phase2` I larger": s["phase2_I_larger"],
            "`--phase2` unproven": s["phase2_unproven"],
        }
    }


def twill_triton_rows(data: list[dict]) -> Rows:
    """twill_triton.py: graph size, I, L and the proofs per kernel and architecture."""
    return {
        f"{r['kernel']}/{r['arch']}": {
            "ops": r["ops"],
            "edges": r["edges"],
            "phase1_I": r["phase1_I"],
            "I": r["I"],
            "L": r["L"],
            "optimal": r["optimal"],
            "L_optimal": r["L_optimal"],
            "warps": r["warps"],
        }
        for r in data
    }


def _loops_text(loops: list[dict]) -> str:
    return "; ".join(
        f"{lp['line']}: {lp['ops']}/{lp['reductions']}, "
        + (f"I={lp['I']}, L={lp['L']}" if lp["I"] is not None else "no schedule")
        for lp in loops
    )


def triton_corpus_rows(data: list[dict]) -> Rows:
    """triton_corpus.py: status and every loop's ops, I and L (seconds dropped)."""
    return {
        f"{r['kernel']}/{r['arch']}": {
            "status": r["status"],
            "loops": _loops_text(r["loops"]),
        }
        for r in data
    }


def triton_corpus_key(row: dict[str, str]) -> str:
    """The corpus table's key; its loop cells lose their seconds so that they compare."""
    loops = row.get("loops: source line: ops/reductions, I, L, seconds", "")
    loops = re.sub(r", [\d.]+ s(?=;|$)", "", loops.removesuffix(" *"))
    row["loops"] = re.sub(r"no schedule \([^)]*\)", "no schedule", loops)
    return f"{row['kernel']}/{row['arch']}"


def twill_vs_triton_rows(data: list[dict]) -> Rows:
    """twill_vs_triton.py: Twill's I and L, Triton's default priced in Twill's model."""
    out: Rows = {}
    for r in data:
        if "twill_I" not in r:
            continue
        if r["triton_I"]:
            triton: Any = (r["triton_I"], r["triton_L"])
        elif r.get("triton_I_lower"):
            triton = f"unknown, >= {r['triton_I_lower']}"
        else:
            triton = "not priced"
        speedup = r["predicted_speedup"]
        out[f"{r['kernel']}/{r['arch']}"] = {
            "Twill I / L": (r["twill_I"], r["twill_L"]) if r["twill_I"] is not None else "none",
            "Triton I / L": triton,
            "predicted speed-up": speedup if speedup is not None else "–",
        }
    return out


def gaus_modulo_rows(data: list[dict]) -> Rows:
    """gaus_modulo.py: GauS's and list scheduling's MaxLive per graph."""
    out: Rows = {}
    for r in data:
        key = "seed" if r["graph"].startswith("seed") else r["graph"]
        row = out.setdefault(key, {"nodes": r["nodes"], "II": r["II"], "D": r["D"]})
        col = "list MaxLive" if r["method"].startswith("list") else "GauS MaxLive"
        row[col] = r["objective"] if r["legal"] else None
    return out


def gaus_modulo_key(row: dict[str, str]) -> str:
    graph = _plain(row["graph"])
    return "seed" if graph.startswith("seed") else graph.split(" ")[0]


def gaus_a_now_rows(data: list[dict]) -> Rows:
    """gaus_formulation_a.py: GauS's objective (the "now" table)."""
    return {r["graph"]: {"now": r["objective"]} for r in data if r["method"] == "gaus"}


def gaus_a_baseline_rows(data: list[dict]) -> Rows:
    """gaus_formulation_a.py: the deterministic baselines' objectives (the comparison table)."""
    cols = {"list": "list", "list+ls": "list+LS", "force": "force", "categorical": "categorical"}
    out: Rows = {}
    for r in data:
        if r["method"] in cols:
            out.setdefault(r["graph"], {})[cols[r["method"]]] = r["objective"]
    return out


def gaus_epfl_rows(data: list[dict]) -> Rows:
    """gaus_epfl.py: each design, formulation and method's objective and legality."""
    return {
        f"{r['design']}/{r['formulation']}/{r['method']}": {
            "nodes": r["nodes"],
            "depth": r["depth"],
            "D": r["D"],
            "objective": r["objective"] if r["legal"] else None,
            "legal": r["legal"],
        }
        for r in data
        if "formulation" in r
    }


NETWORK_NAMES = {
    "resnet50": "ResNet-50",
    "resnext50": "ResNeXt-50",
    "alexnet": "AlexNet",
    "deepbench": "DeepBench",
    "resnet50_gemmini": "ResNet-50",
    "bert_gemmini": "BERT",
    "retinanet_gemmini": "RetinaNet",
    "unet_gemmini": "U-Net",
}


def _cosa_networks(data: Any) -> list[dict]:
    return data["networks"] if isinstance(data, dict) else data


def cosa_rows(data: Any) -> Rows:
    """cosa_networks.py: CoSA's network totals and its ratios to the search baselines."""
    out: Rows = {}
    for net in _cosa_networks(data):
        s, rows = net["summary"], net["rows"]
        n = len(rows)
        out[NETWORK_NAMES.get(s["network"], s["network"])] = {
            "layers": s["layers"],
            "CoSA cycles": s["totals"]["cosa"]["cycles"],
            "CoSA µJ": s["totals"]["cosa"]["energy_uJ"],
            "latency ×rand5": s["latency_speedup_vs_random"],
            "energy ×rand5": s["energy_gain_vs_random"],
            "latency ×hyb16K": s["latency_speedup_vs_hybrid"],
            "energy ×hyb16K": s["energy_gain_vs_hybrid"],
            "CoSA ≤ hybrid latency": f"{s['cosa_latency_le_hybrid']}/{n}",
            "optimal": f"{s['cosa_optimal']}/{n}",
        }
    return out


def cosa_rerank_rows(data: Any) -> Rows:
    """cosa_networks.py: cosa-rerank's totals, ratios and which MIP each layer chose."""
    out: Rows = {}
    for net in _cosa_networks(data):
        s, n = net["summary"], len(net["rows"])
        rr, tot = s["rerank"], s["totals"]["cosa-rerank"]
        chosen = " / ".join(str(v) for v in rr["chosen"].values())
        out[NETWORK_NAMES.get(s["network"], s["network"])] = {
            "cosa-rerank cycles": tot["cycles"],
            "cosa-rerank µJ": tot["energy_uJ"],
            "latency ×hyb16K": rr["latency_speedup_vs_hybrid"],
            "energy ×hyb16K": rr["energy_gain_vs_hybrid"],
            "latency ×CoSA": rr["latency_speedup_vs_cosa"],
            "energy ×CoSA": rr["energy_gain_vs_cosa"],
            "≤ hybrid latency": f"{rr['latency_le_hybrid']}/{n}",
            "chosen (pure / no-refetch / +reuse)": chosen,
        }
    return out


def _optimal_key(row: dict[str, str]) -> str:
    """Cosa's table says "7/8 (1 repaired)": the count is what is compared."""
    row["optimal"] = row.get("optimal", "").split(" ")[0]
    return _plain(row["network"])


def _net(row: dict) -> str:
    """FADiff's network name as the tables print it (``dosa_bert`` is ``bert``)."""
    return row["network"].removeprefix("dosa_")


def fadiff_rows(data: list[dict]) -> Rows:
    """fadiff_networks.py: each network and method's plan (EDP, energy, cycles, DRAM)."""
    return {
        f"{_net(r)}/{r['method']}": {
            "EDP (µJ·cycles)": r["edp"],
            "energy (µJ)": r["energy_uJ"],
            "cycles": r["cycles"],
            "DRAM (MB)": r["dram_bytes"] / 1e6,
            "fused": r["fused"],
        }
        for r in data
        if r.get("method") != "skipped" and r.get("arch", "") in ("", "gemmini")
    }


def fadiff_bound_rows(data: list[dict]) -> Rows:
    """fadiff_networks.py: the fusion bounds of each network's best layer-wise plan."""
    return {
        _net(r): {
            "candidates free": r["bound_gain_candidates"],
            "all free": r["bound_gain_all"],
            "ideal": r["bound_gain_ideal"],
            "DRAM floor (MB)": r["floor_dram_bytes"] / 1e6,
            "DRAM-bound layers": r["dram_bound_layers"],
            "DRAM energy share": r["dram_energy_share"],
        }
        for r in data
        if r.get("method") == "fadiff" and r.get("arch", "") in ("", "gemmini")
    }


def _pct(x: float | None) -> float | None:
    return None if x is None else 100 * x


def fadiff_headroom_rows(data: list[dict]) -> Rows:
    """fadiff_networks.py on the Gemmini family: gains over the best layer-wise plan, bounds."""
    cases: dict[str, dict[str, dict]] = {}
    for r in data:
        arch = r["arch"].removeprefix("gemmini_").replace("_", " ") or "gemmini"
        cases.setdefault(f"{_net(r)}/{arch}", {})[r["method"]] = r
    out: Rows = {}
    for key, ms in cases.items():
        if "fadiff" not in ms:
            continue
        lw = min(ms["layerwise-cosa"]["edp"], ms["layerwise-gradient"]["edp"])
        f = ms["fadiff"]
        out[key] = {
            "greedy": lw / ms["layerwise-greedy-fusion"]["edp"],
            "no-grad": lw / ms["no-gradient"]["edp"] if "no-gradient" in ms else None,
            "fadiff": lw / f["edp"],
            "cands free": lw / f["bound_candidates_edp"],
            "ideal": lw / f["bound_ideal_edp"],
            "capt. ideal": _pct(f["headroom_captured_ideal"]),
            "cap. layer": lw / f["bound_capacity_layer_edp"],
            "capacity": lw / f["bound_capacity_edp"],
            "captured": _pct(f["headroom_captured"]),
            "capt. cands": _pct(f["headroom_captured_candidates"]),
            "unfused": lw / f["bound_unfused_edp"],
        }
    return out


def cosa_agree_rows(data: dict) -> Rows:
    """cosa_networks.py --agree scip: both backends' objectives and proofs per layer."""
    out: Rows = {}
    for net in data["agreement"]:
        a, b = net["backends"]
        for r in net["rows"]:
            out[r["layer"]] = {
                "CP-SAT objective": r[a]["objective"],
                "SCIP objective": r[b]["objective"],
                "both OPTIMAL": r[a]["status"] == r[b]["status"] == "optimal",
            }
    return out


def cosa_zigzag_rows(data: dict) -> Rows:
    """cosa_networks.py --zigzag N: CoSA's mapping and LOMA's, both in ZigZag's model."""
    out: Rows = {}
    for net in data["networks"]:
        for r in net["rows"]:
            z = r.get("zigzag")
            if z:
                out[r["layer"]] = {
                    "count": r["count"],
                    "CoSA µJ": z["cosa_energy_uJ"],
                    "LOMA µJ": z["loma_energy_uJ"],
                    "CoSA cycles": z["cosa_cycles"],
                    "LOMA cycles": z["loma_cycles"],
                }
    return out


MODEL_NAMES = {
    "resnet50": "ResNet-50",
    "mobilenet_v2": "MobileNetV2",
    "efficientnet_b0": "EfficientNet-B0",
    "vit_b_16": "ViT-B/16",
}


def _totals(t: dict | None) -> tuple | None:
    return None if t is None else (t["cycles"], t["energy_uJ"], t["edp"])


def onnx_networks_rows(data: list[dict]) -> Rows:
    """onnx_networks.py: the imported network's size and each method's network totals."""
    cols = {"cosa": "CoSA", "cosa-rerank": "cosa-rerank", "hybrid": "hybrid best-of-16K"}
    out: Rows = {}
    for r in data:
        row = out[f"{MODEL_NAMES.get(r['model'], r['model'])}/{r['arch'].capitalize()}"] = {
            "layers": r["layers"],
            "unique": r["unique"],
            "grouped": r["grouped_layers"],
            "candidates": r["fusion_candidates"],
        }
        for m, col in cols.items():
            if m in r["totals"]:
                row[col] = _totals(r["totals"][m])
        if "fadiff" in r:
            row["FADiff (fused groups)"] = _totals(r["fadiff"])
    return out


def onnx_zoo_rows(data: Any) -> Rows:
    """onnx_zoo.py: each model and exporter's size, MACs and fusion gain (the gain at fuse's
    default deadline, which a loaded machine can lower)."""
    rows = data["rows"] if isinstance(data, dict) else data
    return {
        f"{r['model']}/{r['exporter']}": {
            "layers": r["layers"],
            "unique": r["unique_layers"],
            "MACs (= independent)": r["macs"] if r["macs"] == r["macs_independent"] else None,
            "gain": r.get("gain_vs_layerwise"),
        }
        for r in rows
        if r.get("imported") and not r.get("phase")
    }


def default_vs_random_rows(data: Any) -> Rows:
    """default_vs_random16k.py: each layer's EDP under both mappers and their ratio."""
    rows = data["rows"] if isinstance(data, dict) else data
    return {
        f"{r['arch']}/{r['layer']}": {
            "`cosa-edp` EDP": r["default_edp"],
            "`random16k` EDP": r["random16k_edp"],
            "ratio": r["ratio"],
        }
        for r in rows
        if "layer" in r
    }


def _key(*cols: str) -> Callable[[dict[str, str]], str]:
    return lambda row: "/".join(_plain(row[c]) for c in cols)


def _script(name: str, *args: str) -> tuple[str, ...]:
    return (PY, f"benchmarks/{name}", *args)


EPFL_SMALL = [f"data/epfl/{d}.aig" for d in ("int2float", "ctrl", "router", "cavlc", "dec")]

CHECKS: tuple[Check, ...] = (
    Check(
        "twill_search",
        _script("twill_search.py", "--json"),
        "Twill full search",
        twill_search_rows,
        _key("kernel"),
    ),
    Check(
        "phase1_hls",
        _script(
            "phase1_hls.py",
            "--suites",
            "ChStone",
            "MachSuite",
            "--backends",
            "cbc",
            "--budget",
            "30",
            "--json",
        ),  # fmt: skip
        "Phase 1 on HLS loops",
        phase1_loop_rows,
        _key("loop"),
        table=2,
        timed="30 s per loop",
        extra=(
            Check(
                "phase1_hls/summary",
                (),
                "Phase 1 on HLS loops",
                phase1_summary_rows,
                _key("suite"),
            ),  # fmt: skip
        ),
    ),
    Check(
        "hls_problem",
        _script("hls_problem.py", "--json"),
        "Which problem `twill solve` solves",
        hls_problem_rows,
        lambda row: "all",
    ),
    Check(
        "twill_triton",
        _script("twill_triton.py", "--kernels", "fa_bwd", "gemm", "--json"),
        "Twill on Triton kernels",
        twill_triton_rows,
        _key("kernel", "arch"),
        timed="Phase 1 and Phase 2 under 30 s per call",
        note="reduced: fa_bwd and gemm (fa_fwd: 4-6 s of CPU, but its Phase-2 call nears the "
        "30-s wall limit at load 20)",
    ),
    Check(
        "triton_corpus",
        _script("triton_corpus.py", "--json", "--time-limit", "20"),
        "Triton corpus",
        triton_corpus_rows,
        triton_corpus_key,
        timed="20 s per Phase-1 solve and Phase-2 call",
    ),
    Check(
        "twill_vs_triton",
        _script(
            "twill_vs_triton.py",
            "--kernels",
            "gemm",
            "masked_matmul",
            "--price-limit",
            "60",
            "--twill-limit",
            "60",
            "--json",
        ),  # fmt: skip
        "Twill against Triton's own schedule",
        twill_vs_triton_rows,
        _key("kernel", "arch"),
        timed="Twill's search and the pricing under 60 s each",
        note="reduced: the GEMM and the masked matmul (the FlashAttention rows take minutes)",
    ),
    Check(
        "twill_vs_triton_corpus",
        _script(
            "twill_vs_triton.py",
            "--kernels",
            "early_return",
            "autotuned_gemm",
            "persistent_tma_gemm",
            "--price-limit",
            "60",
            "--twill-limit",
            "60",
            "--json",
        ),  # fmt: skip
        "The corpus",
        twill_vs_triton_rows,
        _key("kernel", "arch"),
        timed="Twill's search and the pricing under 60 s each",
        note="reduced: three of the eleven corpus kernels",
    ),
    Check(
        "gaus_modulo",
        _script(
            "gaus_modulo.py",
            "--designs",
            "ctrl",
            "router",
            "int2float",
            "cavlc",
            "priority",
            "i2c",
            "bar",
            "--json",
        ),  # fmt: skip
        "GauS formulation C",
        gaus_modulo_rows,
        gaus_modulo_key,
    ),
    Check(
        "gaus_formulation_a",
        _script(
            "gaus_formulation_a.py",
            "--graphs",
            "rand_graph_1000_1",
            "rand_graph_sparse_1000_1",
            "--skip",
            "gumbel",
            "exact",
            "--json",
        ),  # fmt: skip
        "GauS formulation A on GS-Schedule graphs",
        gaus_a_now_rows,
        _key("graph"),
        table=1,
        note="reduced: the two graphs that ship (the other 16 need `make data`)",
        extra=(
            Check(
                "gaus_formulation_a/baselines",
                (),
                "GauS formulation A on GS-Schedule graphs",
                gaus_a_baseline_rows,
                _key("graph"),
            ),  # fmt: skip
        ),
    ),
    Check(
        "gaus_epfl",
        _script(
            "gaus_epfl.py", "--designs", *EPFL_SMALL, "--methods", "gaus", "list", "force", "--json"
        ),  # fmt: skip
        "All shipped designs, CP-SAT at 60 s",
        gaus_epfl_rows,
        _key("design", "form", "method"),
        note="reduced: five small designs, no CP-SAT (time-limited) or Gumbel",
    ),
    Check(
        "cosa_simba",
        _script(
            "cosa_networks.py",
            "--networks",
            "resnet50,resnext50,alexnet,deepbench",
            "--no-dosa",
            "--json",
        ),  # fmt: skip
        "Whole networks on Simba",
        cosa_rows,
        _optimal_key,
    ),
    Check(
        "cosa_gemmini",
        _script(
            "cosa_networks.py",
            "--networks",
            "resnet50_gemmini,bert_gemmini,retinanet_gemmini,unet_gemmini",
            "--no-dosa",
            "--json",
        ),  # fmt: skip
        "Whole networks on Gemmini",
        cosa_rows,
        _optimal_key,
        extra=(
            Check(
                "cosa_gemmini/rerank",
                (),
                "Whole networks on Gemmini",
                cosa_rerank_rows,
                _key("network"),
                table=1,
            ),  # fmt: skip
        ),
    ),
    Check(
        "fadiff",
        _script("fadiff_networks.py", "--networks", "resnet50,bert,retinanet,unet", "--json"),
        "Four networks on the default Gemmini",
        fadiff_rows,
        _key("network", "method"),
        extra=(
            Check(
                "fadiff/bounds",
                (),
                "Four networks on the default Gemmini",
                fadiff_bound_rows,
                _key("network"),
                table=1,
            ),  # fmt: skip
        ),
    ),
    Check(
        "fadiff_headroom",
        _script(
            "fadiff_networks.py",
            "--networks",
            "fsrcnn,bert",
            "--arch",
            "gemmini",
            "--arch",
            "gemmini_32x32_sp512k_acc128k",
            "--json",
        ),  # fmt: skip
        "Headroom on the Gemmini family: MobileNetV2 and a full-resolution image network",
        fadiff_headroom_rows,
        _key("network", "arch"),
        note="reduced: FSRCNN and BERT on two of the six architectures",
    ),
    Check(
        "cosa_agree",
        _script(
            "cosa_networks.py",
            "--networks",
            "resnet50",
            "--agree-only",
            "--agree",
            "scip",
            "--no-dosa",
            "--json",
        ),  # fmt: skip
        "Two exact backends agree on every ResNet-50 layer",
        cosa_agree_rows,
        _key("layer"),
    ),
    Check(
        "cosa_zigzag",
        _script(
            "cosa_networks.py", "--networks", "resnet50", "--zigzag", "4", "--no-dosa", "--json"
        ),  # fmt: skip
        "ZigZag LOMA",
        cosa_zigzag_rows,
        _key("layer"),
        note="reduced: the first 4 layers (LOMA takes 15-55 s per layer)",
    ),
    Check(
        "onnx_networks",
        _script(
            "onnx_networks.py",
            "--models",
            "mobilenet_v2,vit_b_16",
            "--methods",
            "cosa,cosa-rerank,hybrid",
            "--fadiff-steps",
            "300",
            "--json",
        ),  # fmt: skip
        "Networks from ONNX",
        onnx_networks_rows,
        _key("network", "arch"),
        note="reduced: MobileNetV2 and ViT-B/16",
    ),
    Check(
        "onnx_zoo",
        _script(
            "onnx_zoo.py",
            "--models",
            "vit_b_16,gpt2",
            "--exporters",
            "legacy",
            "--json",
        ),  # fmt: skip
        "The ONNX zoo through both exporters",
        onnx_zoo_rows,
        lambda row: re.sub(r" \(S=\d+\)$", "", _plain(row["model"])) + "/" + row["exporter"],
        note="reduced: ViT-B/16 and GPT-2, legacy exporter, fuse's default deadline",
    ),
    Check(
        "default_vs_random16k",
        _script(
            "default_vs_random16k.py", "--models", "vit_b_16", "--archs", "simba,gemmini", "--json"
        ),  # fmt: skip
        "Default mapper against random16k",
        default_vs_random_rows,
        _key("arch", "layer"),
        table=1,  # the ViT per-layer table, after the summary
    ),
)


# ---------------------------------------------------------------------------- running


def load_output(text: str) -> Any:
    """A command's ``--json`` stdout: one JSON document, or one JSON object per line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        rows = [json.loads(ln) for ln in text.splitlines() if ln.lstrip().startswith("{")]
        if not rows:
            raise
        return rows


def run(check: Check, timeout: float) -> tuple[str, float]:
    """Run a check's command from the repository root (``nice``'d); its stdout and seconds."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["nice", "-n", "5", *check.argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"exit {proc.returncode}: {' / '.join(tail)}")
    return proc.stdout, time.perf_counter() - t0


def report(check: Check, out: Outcome) -> str:
    """The check's summary line and one line per differing row."""
    cmd = " ".join(check.argv) or "(same run)"
    head = (
        f"{check.name}: {cmd}\n  rows compared {out.compared}, identical {out.identical}, "
        f"differ {len(out.differ)}, not rerun {out.missing}"
    )
    notes = [n for n in (check.note, check.timed and f"timed: {check.timed}") if n]
    lines = [head] + [f"  ({n})" for n in notes] + [f"  differs: {d}" for d in out.differ]
    return "\n".join(lines)


def check_one(check: Check, args: argparse.Namespace) -> bool:
    """Run (or load) one check and its extra tables; print their reports; True if all equal."""
    path = args.source / f"{check.name}.json" if args.source else None
    try:
        if path is not None:
            text = path.read_text()
        else:
            text, seconds = run(check, args.timeout)
            print(f"{check.name}: ran in {seconds:.0f} s", file=sys.stderr)
            if args.save:
                (args.save / f"{check.name}.json").write_text(text)
        data = load_output(text)
    except (OSError, RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        print(f"{check.name}: {' '.join(check.argv)}\n  not compared: {exc}")
        return False
    ok = True
    for c in (check, *check.extra):
        try:
            out = compare(c, data)
        except (KeyError, TypeError) as exc:
            print(f"{c.name}: not compared: {exc!r}")
            ok = False
            continue
        print(report(c, out))
        ok = ok and not out.differ
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("names", nargs="*", help="checks to run (see --list)")
    ap.add_argument("--all", action="store_true", help="every check")
    ap.add_argument("--list", action="store_true", help="list the checks and their commands")
    ap.add_argument("--from", dest="source", type=Path, help="compare DIR/NAME.json, run nothing")
    ap.add_argument("--save", type=Path, help="keep each command's output as DIR/NAME.json")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per command")
    args = ap.parse_args(argv)
    by_name = {c.name: c for c in CHECKS}
    if args.list:
        for c in CHECKS:
            print(f"{c.name}: {' '.join(c.argv)}\n  table: {c.heading!r} #{c.table}")
        return 0
    unknown = [n for n in args.names if n not in by_name]
    if unknown or not (args.names or args.all):
        ap.error(f"unknown check {unknown[0]!r}" if unknown else "name checks or use --all")
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
    chosen = CHECKS if args.all else [by_name[n] for n in args.names]
    results = [check_one(c, args) for c in chosen]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
