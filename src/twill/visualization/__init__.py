"""Pictures of Twill schedules: text Gantt charts (:mod:`.text`) and matplotlib figures of the
pipeline, one lane per warp (:mod:`.plots`). Outer layer; matplotlib is imported lazily."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["modulo_gantt", "program_gantt", "plot_pipeline"]


def __getattr__(name: str) -> Callable[..., Any]:  # text Gantt charts (str) or a figure
    if name in ("modulo_gantt", "program_gantt"):
        from twill.visualization import text

        return getattr(text, name)
    if name == "plot_pipeline":
        from twill.visualization.plots import plot_pipeline

        return plot_pipeline
    raise AttributeError(name)
