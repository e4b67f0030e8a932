"""Matplotlib picture of a warp-specialised software pipeline (Twill paper Figs. 1–3 style).

:func:`plot_pipeline` draws several consecutive loop iterations on a time axis, one horizontal
lane per warp slot, each op instance as a box coloured by its functional unit and labelled with
the op name and iteration; the prologue, steady state and epilogue of the first ``n`` copies are
shaded, and dashed lines mark every initiation interval. matplotlib (Agg backend) is imported
only inside the function. PNG or SVG by the file suffix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from twill.results import WarpSchedule, takes_warp_schedule
from twill.sched.ir import DependenceGraph
from twill.sched.verify_warps import program_shape

__all__ = ["plot_pipeline", "UNIT_COLOURS"]

UNIT_COLOURS = {
    "TC": "#4C72B0",
    "EXP": "#DD8452",
    "TMA": "#55A868",
    "TMEM": "#8172B3",
    "ALU": "#937860",
    "SMEM": "#DA8BC3",
}
_FALLBACK = ["#8C8C8C", "#CCB974", "#64B5CD", "#C44E52"]


def _unit(graph: DependenceGraph, v: str) -> str:
    ins = graph.instruction(v)
    return "TMA" if ins.variable_latency and ins.main_unit is None else (ins.main_unit or "ALU")


Box = tuple[float, float, str, int, str]  # start, duration, op, iteration, unit
PlacedBox = tuple[float, float, str, int, str, int]  # ... and its sub-row in the lane


def _op_boxes(
    graph: DependenceGraph,
    schedule: Mapping[str, int],
    slots: Mapping[str, Sequence[int]],
    warps: Sequence[int],
    iters: int,
    II: int,
) -> dict[int, list[Box]]:
    """Every op instance of the first ``iters`` iterations, as a box on each of its warps
    (zero-cycle ops get a thin box so that they stay visible)."""
    boxes: dict[int, list[Box]] = {w: [] for w in warps}
    for k in range(iters):
        for v in sorted(graph.names, key=lambda x: schedule[x]):
            start = schedule[v] + k * II
            dur = max(graph.instruction(v).cycles, 1)
            if graph.instruction(v).cycles == 0:
                dur = 0.35
            for w in slots[v]:
                boxes[w].append((start, dur, v, k, _unit(graph, v)))
    return boxes


def _stack_lanes(
    boxes: Mapping[int, list[Box]],
) -> tuple[dict[int, list[PlacedBox]], dict[int, int]]:
    """Stack overlapping boxes of one warp into sub-rows (first row free at the box's start):
    the placed boxes and the number of sub-rows (at least 1) of every warp."""
    lanes: dict[int, list[PlacedBox]] = {}
    depth: dict[int, int] = {}
    for w in boxes:
        rows_end: list[float] = []
        placed = []
        for start, dur, v, k, u in sorted(boxes[w]):
            for r, end in enumerate(rows_end):
                if end <= start + 1e-9:
                    rows_end[r] = start + dur
                    break
            else:
                rows_end.append(start + dur)
                r = len(rows_end) - 1
            placed.append((start, dur, v, k, u, r))
        lanes[w] = placed
        depth[w] = max(len(rows_end), 1)
    return lanes, depth


def _shade_phases(ax: Any, n: int, II: int, t_end: int, horizon: int, y: float) -> None:
    """Shade the prologue, steady state and epilogue of the first ``n`` copies, mark every
    initiation interval with a dotted line and name the phases above the top lane at ``y``."""
    ax.axvspan(0, (n - 1) * II, color="#f2e6ff", alpha=0.5, zorder=0)
    ax.axvspan((n - 1) * II, n * II, color="#e6ffe6", alpha=0.6, zorder=0)
    ax.axvspan(n * II, t_end, color="#fff2e6", alpha=0.5, zorder=0)
    for t in range(0, horizon + 1, II):
        ax.axvline(t, color="grey", linestyle=":", linewidth=0.7, zorder=0)
    ax.text((n - 1) * II / 2, y + 0.05, "prologue", ha="center", fontsize=8) if n > 1 else None
    ax.text((n - 0.5) * II, y + 0.05, "steady state", ha="center", fontsize=8)


@takes_warp_schedule
def plot_pipeline(
    ws: WarpSchedule,
    *,
    iterations: int | None = None,
    path: str | None = None,
    title: str | None = None,
) -> Any:
    """Draw the pipeline over a few iterations, one lane per warp, coloured by unit.

    Parameters
    ----------
    graph, schedule, assignment, II, L
        A verified joint schedule (``assignment=None`` puts every op on warp 0), or one
        :class:`~twill.results.WarpSchedule` as ``graph``.
    iterations
        Loop iterations drawn (default ``n + 2``, so the steady state repeats).
    path
        Save to this ``.png`` or ``.svg`` file.
    title
        Figure title (default: kernel, I, L).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    graph, schedule, II, L = ws.graph, ws.schedule, ws.I, ws.L
    if L is None:
        L = max(schedule[v] + graph.instruction(v).cycles for v in schedule)
    n, t_end = program_shape(II, L)
    iters = iterations or n + 2
    slots = dict(ws.assignment)
    warps = sorted({w for ws in slots.values() for w in ws})
    units = sorted({_unit(graph, v) for v in graph.names})
    colours = {u: UNIT_COLOURS.get(u, _FALLBACK[i % len(_FALLBACK)]) for i, u in enumerate(units)}
    has_vl = any(graph.instruction(v).variable_latency for v in graph.names)

    lanes, depth = _stack_lanes(_op_boxes(graph, schedule, slots, warps, iters, II))

    horizon = (iters - 1) * II + L
    height = sum(depth.values()) * 0.55 + 1.6
    fig, ax = plt.subplots(figsize=(max(8.0, min(0.55 * horizon + 3, 22)), height))
    y = 0.0
    ticks, labels = [], []
    for w in reversed(warps):
        sub = depth[w]
        for start, dur, v, k, u, r in lanes[w]:
            y0 = y + (sub - 1 - r) * 0.55 + 0.05
            ax.add_patch(Rectangle((start, y0), dur, 0.45, facecolor=colours[u],
                                   edgecolor="black", linewidth=0.6, alpha=0.9))  # fmt: skip
            ax.text(start + dur / 2, y0 + 0.225, f"{v}\n#{k}", ha="center", va="center",
                    fontsize=6.5, color="white", fontweight="bold")  # fmt: skip
        ticks.append(y + sub * 0.55 / 2)
        ops = sorted({v for _, _, v, _, _, _ in lanes[w]}, key=lambda x: schedule[x])
        role = "producer (TMA)" if has_vl and w == 0 else ", ".join(ops)
        labels.append(f"warp {w}\n{role}")
        ax.axhline(y - 0.02, color="grey", linewidth=0.5)
        y += sub * 0.55 + 0.1
    _shade_phases(ax, n, II, t_end, horizon, y)
    ax.set_xlim(-0.2, horizon + 0.2)
    ax.set_ylim(-0.1, y + 0.45)
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel(f"time (normalised cycles); dotted lines every I = {II}")
    ax.legend(handles=[Patch(facecolor=colours[u], label=u) for u in units],
              loc="upper right", fontsize=7, ncol=len(units), framealpha=0.9)  # fmt: skip
    ax.set_title(title or f"{graph.name}: I = {II}, L = {L}, {n} overlapped copies "
                 f"(iterations #0..#{iters - 1})", fontsize=9)  # fmt: skip
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=130)
        plt.close(fig)
    return fig
