"""Pictures of a FADiff run: loss/EDP curve, the network with fused groups, per-layer energy.

matplotlib is imported lazily (Agg backend). Only verified plans reach this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twill.mapping.fadiff.fusion import PlanReport
    from twill.mapping.network import Network
    from twill.results import SolveResult

__all__ = ["plot_fadiff"]


def plot_fadiff(net: Network, result: SolveResult, path: str | Path) -> Path:
    """Write a three-panel PNG for ``result`` (FADiff's :class:`~twill.results.SolveResult`:
    its :class:`~twill.mapping.fadiff.plan.NetworkPlan` and ``stats["history"]``).

    Panels: relaxed loss and best exact EDP per step; the layer graph in execution order with
    chain candidates, fused boundaries (thick red) and other edges (grey); per-layer energy
    split by memory level (exact NumPy model).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(12, 11))
    _plot_history(axes[0], net, result)
    _plot_boundaries(axes[1], net, result.solution.report)
    _plot_level_energy(axes[2], net, result.solution.report)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _plot_history(ax: Any, net: Network, result: SolveResult) -> None:  # noqa: ANN401 (an Axes)
    """Top panel: the relaxed loss (left axis) and the best verified EDP (right, log) per step."""
    import numpy as np

    history = result.stats.get("history", [])
    steps = np.arange(len(history))
    ax.plot(steps, [h["loss"] for h in history], color="tab:blue", label="relaxed loss")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (log EDP + penalties)")
    ax2 = ax.twinx()
    best = [np.nan if h["best_edp"] is None else h["best_edp"] for h in history]
    ax2.plot(steps, best, color="tab:red", label="best verified EDP")
    ax2.set_yscale("log")
    ax2.set_ylabel("EDP (µJ·cycles)")
    edp = result.solution.report.edp
    ax.set_title(f"{net.name}: optimisation ({result.solution.plan.method}, final EDP {edp:.4g})")
    ax.legend(loc="upper left")
    ax2.legend(loc="upper right")


def _plot_boundaries(ax: Any, net: Network, rep: PlanReport) -> None:  # noqa: ANN401 (a matplotlib Axes)
    """Middle panel: layers in execution order; fused edges red, other candidates dashed, the
    rest grey (an edge that skips layers arcs over them)."""
    import numpy as np

    n = len(net.layers)
    xs = np.arange(n)
    fused = set(rep.fused)
    cands = set(net.candidates)
    for i, e in enumerate(net.edges):
        a, b = e.src, e.dst
        if i in fused:
            style = dict(color="red", lw=3.5, zorder=3)
        elif i in cands:
            style = dict(color="tab:blue", lw=1.2, ls="--", zorder=2)
        else:
            style = dict(color="0.7", lw=0.8, zorder=1)
        if b == a + 1:
            ax.plot([a, b], [0, 0], **style)
        else:
            h = 0.15 + 0.05 * abs(b - a)
            t = np.linspace(0, 1, 30)
            ax.plot(a + (b - a) * t, h * np.sin(np.pi * t), **style)
    ax.scatter(xs, np.zeros(n), s=40, color="k", zorder=4)
    ax.set_yticks([])
    ax.set_xticks(xs)
    ax.set_xticklabels(
        [ly.name.replace("_outputs_input.", "r") for ly in net.layers], rotation=90, fontsize=7
    )
    ax.set_title(
        "layers in execution order: fused boundaries red, other candidates dashed, "
        "non-fusable edges grey"
    )


def _plot_level_energy(ax: Any, net: Network, rep: PlanReport) -> None:  # noqa: ANN401 (a matplotlib Axes)
    """Bottom panel: each layer's energy stacked by level, MACs first (exact model)."""
    import numpy as np

    xs = np.arange(len(net.layers))
    lev = rep.layer_level_energy_pj * 1e-6
    names = ["registers", "accumulator", "scratchpad", "DRAM"]
    mac_e = rep.layer_energy_pj * 1e-6 - lev.sum(axis=1)
    ax.bar(xs, mac_e, color="0.5", label="MAC")
    bottom = np.array(mac_e, dtype=float)
    for m in range(lev.shape[1]):
        ax.bar(xs, lev[:, m], bottom=bottom, label=names[m] if m < 4 else f"L{m}")
        bottom += lev[:, m]
    ax.set_xticks(xs)
    ax.set_xticklabels([str(i) for i in xs], fontsize=7)
    ax.set_xlabel("layer index")
    ax.set_ylabel("energy (µJ)")
    ax.set_title("per-layer energy by level (exact model, fused plan)")
    ax.legend(fontsize=8)
