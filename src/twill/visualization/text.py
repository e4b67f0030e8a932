"""Text Gantt charts of a Twill schedule (Twill paper Fig. 1 style tables).

* :func:`modulo_gantt`: one row per op, one column per cycle of ``[0, L)``, the op's execution
  marked with its unit letter, and its stage.
* :func:`program_gantt`: the straight-line program ``Q`` (``n`` copies, ``T`` cycles) with one row
  per warp slot; each cell lists ``op.copy`` issued there, with prologue / steady state /
  epilogue marked above.
* :func:`format_result`, :func:`format_mrt`, :func:`format_phase2`: the text report of
  ``twill solve`` (and ``twill_solve(verbose=True)``): the problem solved, I and its proof, the
  certificate, the modulo reservation table, the warps and the (I, L) points.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from twill.results import Status, WarpSchedule, takes_warp_schedule
from twill.sched.ir import DependenceGraph
from twill.sched.problems import PROBLEM_TEXT, PROBLEM_WARP_SPECIALISATION, has_warp_model
from twill.sched.verify_warps import program_shape

__all__ = [
    "modulo_gantt",
    "program_gantt",
    "format_mrt",
    "format_result",
    "format_phase2",
    "clocks_per_unit",
    "time_unit",
    "summarise_certificate",
]


def modulo_gantt(graph: DependenceGraph, schedule: Mapping[str, int], II: int) -> str:
    """One row per op: ``#`` over its execution cycles in ``[0, L)``; columns are cycles.

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> print(modulo_gantt(flash_attention_forward_simplified(), {"S": 0, "P": 2, "O": 3}, 2))
    op | 0123 | stage
    S  | T... | 0
    P  | ..E. | 1
    O  | ...T | 1
    """
    length = max(schedule[v] + max(graph.instruction(v).cycles, 1) for v in schedule)
    width = max(len(v) for v in graph.names + ["op"])
    head = "".join(str(t % 10) for t in range(length))
    lines = [f"{'op'.ljust(width)} | {head} | stage"]
    for v in sorted(graph.names, key=lambda x: (schedule[x], x)):
        ins = graph.instruction(v)
        mark = (ins.main_unit or "#")[0]
        s = schedule[v]
        row = "".join(mark if s <= t < s + max(ins.cycles, 1) else "." for t in range(length))
        lines.append(f"{v.ljust(width)} | {row} | {s // II}")
    return "\n".join(lines)


@takes_warp_schedule
def program_gantt(ws: WarpSchedule) -> str:
    """The straight-line program per warp: rows are warp slots, columns cycles ``0..T-1``.

    Takes a :class:`~twill.results.WarpSchedule`, or its parts.

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> g = flash_attention_forward_simplified()
    >>> print(program_gantt(g, {"S": 0, "P": 2, "O": 3}, {"S": 0, "P": 0, "O": 0}, 2, 4))
    t      | 0   | 1   | 2       | 3   | 4   | 5
    phase  | pro | pro | ss      | ss  | epi | epi
    warp 0 | S.0 | .   | S.1,P.0 | O.0 | P.1 | O.1
    """
    graph, schedule, II, L = ws.graph, ws.schedule, ws.I, ws.L
    if L is None:
        L = max(schedule[v] + graph.instruction(v).cycles for v in schedule)
    n, t_end = program_shape(II, L)
    slots = dict(ws.assignment)
    warps = sorted({w for ws in slots.values() for w in ws})
    cells: dict[tuple[int, int], list[str]] = {}
    for v in graph.names:
        for i in range(n):
            t = schedule[v] + i * II
            for w in slots[v]:
                cells.setdefault((w, t), []).append(f"{v}.{i}")
    phase = ["pro" if t < (n - 1) * II else "ss" if t < n * II else "epi" for t in range(t_end)]
    rows = [["t"] + [str(t) for t in range(t_end)], ["phase"] + phase]
    for w in warps:
        rows.append([f"warp {w}"] + [",".join(cells.get((w, t), [])) or "." for t in range(t_end)])
    widths = [max(len(r[c]) for r in rows) for c in range(t_end + 1)]
    return "\n".join(
        " | ".join(cell.ljust(wd) for cell, wd in zip(r, widths, strict=True)).rstrip()
        for r in rows
    )


def format_mrt(graph: DependenceGraph, schedule: Mapping[str, int], II: int) -> str:
    """Text picture of the modulo reservation table: one row per limited unit, one column
    per congruence class ``0..II-1``, listing the ops (with RRT row ``[c]`` when multi-row)."""
    units = [fu for fu, cap in graph.machine.functional_units.items()]
    cells: dict[tuple[str, int], list[str]] = {}
    for ins in graph.instructions:
        if ins.name not in schedule:
            continue
        for fu, row in ins.reservation.items():
            for c, units_used in enumerate(row):
                if units_used:
                    tag = ins.name if len(row) == 1 else f"{ins.name}[{c}]"
                    if units_used > 1:
                        tag += f"x{units_used}"
                    cells.setdefault((fu, (schedule[ins.name] + c) % II), []).append(tag)
    used_units = [fu for fu in units if any((fu, r) in cells for r in range(II))]
    if not used_units:
        return "(no reserved units)"
    caps = graph.machine.functional_units
    labels = {
        fu: f"{fu} ({'unlimited' if caps[fu] < 0 else f'cap {caps[fu]}'})" for fu in used_units
    }
    table = [
        [labels[fu]] + [" ".join(cells.get((fu, r), [])) or "." for r in range(II)]
        for fu in used_units
    ]
    header = ["unit \\ slot"] + [str(r) for r in range(II)]
    widths = [max(len(row[i]) for row in [header] + table) for i in range(II + 1)]

    def line(row: list[str]) -> str:
        return " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()

    sep = "-+-".join("-" * w for w in widths)
    return "\n".join([line(header), sep] + [line(r) for r in table])


_SCALE_NOTE = re.compile(r"1 cycle = ([\d,]+) (?:SM )?clocks")
_OP_CLOCKS = re.compile(r"\((\d+) clk\)")


def clocks_per_unit(graph: DependenceGraph) -> float | None:
    """SM clocks per time unit when the graph's costs are normalised (paper §5.2), else None.

    The built-in kernels state the scale in their machine note (``1 cycle = 512 SM clocks``); an
    imported Triton graph keeps each operation's clocks in its note (``tt.dot (512 clk)``), and
    the scale is their ratio to the normalised costs. A graph in real cycles gives ``None``.
    """
    found = _SCALE_NOTE.search(graph.machine.note)
    if found:
        return float(found.group(1).replace(",", ""))
    clocks = units = 0
    for ins in graph.instructions:
        op = _OP_CLOCKS.search(ins.note)
        if op:
            clocks, units = clocks + int(op.group(1)), units + ins.cycles
    return clocks / units if clocks and units and clocks != units else None


def time_unit(graph: DependenceGraph | None) -> tuple[str, str | None]:
    """``("units", "1 unit = about 64 SM clocks")`` for a normalised graph, else
    ``("cycles", None)``: the word every I, L and schedule time is printed with."""
    scale = clocks_per_unit(graph) if graph is not None else None
    if scale is None:
        return "cycles", None
    about = "" if scale == round(scale) else "about "
    return "units", f"1 unit = {about}{scale:,.0f} SM clocks"


def summarise_certificate(result: Any) -> list[str]:  # noqa: ANN401
    """The certificate in runs of equal reasons: ``I = 1..57 excluded: ResMII 58``."""
    bound = {"ResMII": result.res_mii, "RecMII": result.rec_mii}
    runs: list[list[Any]] = []
    for c in result.certificate:
        last = runs[-1][-1] if runs else None
        if last is not None and (c.verdict, c.by) == (last.verdict, last.by) and c.I == last.I + 1:
            runs[-1].append(c)
        else:
            runs.append([c])
    lines = []
    for run in runs:
        first, last = run[0], run[-1]
        span = f"I = {first.I}" if first is last else f"I = {first.I}..{last.I}"
        seconds = sum(c.seconds for c in run)
        if first.verdict == "below_bound":
            lines.append(f"{span} excluded: {first.by} {bound.get(first.by, '')}".rstrip())
        elif first.verdict == "infeasible":
            lines.append(f"{span} proven infeasible ({first.by}, {seconds:.2f} s)")
        elif first.verdict == "untried":
            lines.append(f"{span} not tried ({first.by} reached)")
        else:
            lines.append(f"{span} UNKNOWN ({first.by} hit its limit, {seconds:.2f} s)")
    return lines


def format_result(
    result: Any,  # noqa: ANN401
    graph: DependenceGraph | None = None,
    *,
    verbose: bool = False,
    width: int | None = None,
) -> str:
    """Readable summary of a :class:`twill.twill_solver.TwillResult` (typed loosely so that
    this outer layer does not import the entry point back): the problem solved, I (proven or
    not), L, the schedule, the certificate, the MRT and, after Phase 2, the warp assignment
    and the (I, L) points. Times are in ``cycles``, or in ``units`` with their scale in SM
    clocks when the graph's costs are normalised. The certificate is summarised in runs
    (``I = 1..7 excluded: ResMII 8``) and the MRT left out when wider than ``width``
    characters; ``verbose`` shows both in full."""
    unit, scale = time_unit(graph)
    lines = [f"twill: {result.graph}  (backend {result.backend}, {result.seconds:.2f} s)"]
    lines.append(f"  problem: {result.problem} ({PROBLEM_TEXT[result.problem]})")
    if scale is not None:
        lines.append(f"  time: normalised units (paper §5.2), {scale}")
    lines.append(f"  bounds: ResMII={result.res_mii} RecMII={result.rec_mii} MII={result.mii}")
    lines += _answer_lines(result, unit)
    lines += _certificate_lines(result, verbose)
    if graph is not None and result.I is not None and result.schedule is not None:
        mrt = format_mrt(graph, result.schedule, result.I).splitlines()
        wide = max(len(s) for s in mrt) + 4
        if verbose or width is None or wide <= width:
            lines.append("  modulo reservation table:")
            lines += ["    " + s for s in mrt]
        else:
            lines.append(f"  modulo reservation table: {result.I} slots, {wide} characters "
                         f"wide, more than the {width} here: shown with --verbose")  # fmt: skip
    if result.problem == PROBLEM_WARP_SPECIALISATION:
        lines += [s for s in format_phase2(result.extra).splitlines() if s]
    elif graph is not None and not has_warp_model(graph):
        lines.append("  (the machine has no warp model: Phase 1 only; Phase 2 with --phase2)")
    return "\n".join(lines)


def _answer_lines(result: Any, unit: str) -> list[str]:  # noqa: ANN401
    if result.I is None:
        why = {
            Status.INFEASIBLE: "every I tried is proven infeasible",
            Status.UNKNOWN: "a time limit was hit before a proof",
        }.get(result.status, result.status.value)
        points = result.extra.get("points") or []
        if points:  # Phase 1 found I; Algorithm 1 found no joint (warp) schedule
            tried = max(p["I"] for p in points)
            alone = f"  (Phase 1 alone, without warps: I = {result.extra.get('phase1_I')})"
            return [f"  no warp-specialised schedule with I <= {tried}: {why}", alone]
        tried = result.certificate[-1].I if result.certificate else 0
        return [f"  no schedule with I <= {tried}: {why}"]
    status = getattr(result.status, "value", str(result.status))  # "feasible" when not proven
    proof = "proven optimal" if result.optimal else f"{status}, NOT proven optimal"
    low = result.to_dict().get("lower_bound")
    gap = ""
    if not result.optimal and low is not None:  # what is proven: no schedule below it
        gap = f"; lower bound {low}, gap {result.I - low}"
    order = sorted(result.schedule or {}, key=lambda n: (result.schedule[n], n))
    return [
        f"  I = {result.I} {unit} ({proof} for {PROBLEM_TEXT[result.problem]}{gap})",
        f"  L = {result.L} {unit}" + ("" if result.L_optimal else " (not proven minimal)"),
        "  schedule: " + ", ".join(f"{n}@{result.schedule[n]}" for n in order),
    ]


def _certificate_lines(result: Any, verbose: bool) -> list[str]:  # noqa: ANN401
    if not result.certificate:
        return ["  certificate: I = 1 needs none"]
    if verbose:
        return ["  certificate:"] + [f"    {c}" for c in result.certificate]
    runs = summarise_certificate(result)
    if len(runs) == 1:
        return [f"  certificate: {runs[0]}"]
    return ["  certificate:"] + [f"    {r}" for r in runs]


def format_phase2(extra: Any) -> str:
    """Text lines for the warp assignment and the (I, L) points of a merged result's ``extra``."""
    warps = extra.get("warps") or {}
    lines = []
    if warps:
        by_slot: dict[int, list[str]] = {}
        for op, ws in (extra.get("assignment") or {}).items():
            for w in ws:
                by_slot.setdefault(w, []).append(op)
        lines.append("  warp assignment:")
        lines += [f"    warp {w}: {', '.join(ops)}" for w, ops in sorted(by_slot.items())]
    pts = extra.get("points") or []
    if pts:
        lines.append(f"  Phase 2 points (Phase-1 minimum I = {extra.get('phase1_I')}):")
        for p in pts:
            span = f"{p['from_L']}..{p['L']}" if p.get("from_L") is not None else p["L"]
            where = f"I={p['I']}" + (f", L={span}" if p["L"] is not None else "")
            lines.append(f"    ({where}): {p['answer']} in {p['seconds']:.3f} s")
    return "\n".join(lines)
