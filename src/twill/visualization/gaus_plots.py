"""Pictures of a GauS run: optimiser curves and the any-time curve (best legal objective
against wall time). matplotlib is imported inside the function (a heavy dependency)."""

from __future__ import annotations

from typing import Any

__all__ = ["anytime_curve", "plot_gaus_run"]


def anytime_curve(result: Any) -> list[tuple[float, float]]:
    """``(seconds, best legal objective so far)`` of a run, merging GauS's read-outs
    (``objective_history``) with the searches' improvements (``polish_history``), plus the
    returned objective at the run's end. Each point is the best over everything before it."""
    from twill.sched.gaus.result import best_so_far

    points = [*result.objective_history, *getattr(result, "polish_history", ())]
    if result.objective is not None and result.seconds is not None:
        points.append((float(result.seconds), float(result.objective)))
    return [(float(s), float(obj)) for s, obj in best_so_far(points)]


def plot_gaus_run(result: Any, path: str) -> None:
    """Save the loss and violation per Adam step (left) and the any-time curve (right, log
    time axis so the first seconds of a long run are visible) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
    ax[0].plot(result.loss_history, label="augmented Lagrangian")
    ax[0].plot(result.violation_history, label="expected violation")
    ax[0].set_yscale("symlog", linthresh=1e-3)
    ax[0].set_xlabel("Adam step")
    ax[0].legend()
    curve = anytime_curve(result)
    if curve:
        xs, ys = zip(*curve, strict=True)
        end = max(float(result.seconds or xs[-1]), xs[-1])
        ax[1].step([*xs, end], [*ys, ys[-1]], where="post", marker=".")
        ax[1].set_xscale("log")
        ax[1].annotate(f"{ys[-1]:g}", (end, ys[-1]), ha="right", va="bottom")
    ax[1].set_xlabel("seconds since the start")
    ax[1].set_ylabel("best legal objective")
    ax[1].set_title("any-time curve", fontsize=9)
    fig.suptitle(f"{result.method} on {result.graph}, formulation {result.formulation}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
