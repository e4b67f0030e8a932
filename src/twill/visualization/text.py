"""Text Gantt charts of a Twill schedule (paper Fig. 1 style tables; spec §9).

* :func:`modulo_gantt`: one row per op, one column per cycle of ``[0, L)``, the op's execution
  marked with its unit letter, and its stage.
* :func:`program_gantt`: the straight-line program ``Q`` (``n`` copies, ``T`` cycles) with one row
  per warp slot; each cell lists ``op.copy`` issued there, with prologue / steady state /
  epilogue marked above.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from twill.results import WarpSchedule
from twill.sched.ir import DependenceGraph
from twill.sched.verify_warps import program_shape

__all__ = ["modulo_gantt", "program_gantt"]


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


def program_gantt(
    graph: DependenceGraph | WarpSchedule,
    schedule: Mapping[str, int] | None = None,
    assignment: Mapping[str, int | Sequence[int]] | None = None,
    II: int | None = None,
    L: int | None = None,
) -> str:
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
    ws = WarpSchedule.of(graph, schedule, assignment, II, L)
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
