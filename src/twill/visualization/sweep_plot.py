"""The plot of a design-space sweep: per network, every architecture's objective against its
area (log-log), the Pareto frontier drawn as a staircase and its points named.

matplotlib is imported inside :func:`plot_sweep` (Agg, no display needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot_sweep"]

_LABEL = {"edp": "EDP (µJ·cycles)", "energy_uJ": "energy (µJ)", "cycles": "latency (cycles)"}


def plot_sweep(rows: Sequence[dict[str, Any]], path: str | Path, metric: str = "edp") -> None:
    """Write the sweep's picture to ``path`` (PNG, SVG or PDF by its suffix).

    Parameters
    ----------
    rows
        The table's rows (:meth:`twill.mapping.sweep.SweepRow.to_dict`): ``network``,
        ``area_mm2``, ``on_frontier``, ``arch`` and ``metric``; rows without a total are left
        out.
    metric
        The column on the vertical axis: ``edp``, ``energy_uJ`` or ``cycles``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter

    nets = list(dict.fromkeys(r["network"] for r in rows))
    cols = min(len(nets), 2)
    n_rows = -(-len(nets) // cols)
    fig, axes = plt.subplots(n_rows, cols, figsize=(6.4 * cols, 4.4 * n_rows), squeeze=False)
    for ax, net in zip(axes.flat, nets, strict=False):
        mine = [r for r in rows if r["network"] == net and r[metric] is not None]
        ax.scatter([r["area_mm2"] for r in mine], [r[metric] for r in mine], s=14,
                   color="0.6", label=f"{len(mine)} architectures")  # fmt: skip
        front = sorted((r for r in mine if r["on_frontier"]), key=lambda r: r["area_mm2"])
        if front:
            ax.step([r["area_mm2"] for r in front], [r[metric] for r in front], where="post",
                    color="C3", marker="o", ms=5, label="Pareto frontier")  # fmt: skip
            for r in front[:8]:
                ax.annotate(r["arch"].replace("gemmini_", ""), (r["area_mm2"], r[metric]),
                            fontsize=6, xytext=(3, 3), textcoords="offset points")  # fmt: skip
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(LogLocator(10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))  # 0.2, 0.5, 1, 2: mm², not 10^x
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(net)
        ax.set_xlabel("area (mm², 40 nm)")
        ax.set_ylabel(_LABEL.get(metric, metric))
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(nets) :]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
