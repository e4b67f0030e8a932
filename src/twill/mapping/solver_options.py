"""How the mappers read the shared :class:`~twill.options.SolverOptions`.

Every mapper (CoSA, the search baselines, FADiff) takes ``options=SolverOptions(...)`` beside
its own keywords and settings object. When given, the options' fields are the ones used:
``seed`` and ``threads`` always, ``time_limit`` when it is set, ``extra`` merged into the
backend settings, ``on_progress`` called with one dictionary per progress event.

Examples
--------
>>> from twill.options import SolverOptions
>>> common_fields(SolverOptions(time_limit=5, seed=2))
{'seed': 2, 'threads': 1, 'time_limit': 5.0}
>>> common_fields(None)
{}
>>> math.isinf(deadline(None))
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from twill.options import SolverOptions

__all__ = ["common_fields", "deadline", "resolve_seed"]


def common_fields(options: SolverOptions | None) -> dict[str, Any]:
    """The fields of ``options`` that replace a mapper's own ``seed``, ``threads`` and
    ``time_limit`` (the limit only when one is set); empty without options."""
    if options is None:
        return {}
    out: dict[str, Any] = {"seed": options.seed, "threads": options.threads}
    if options.time_limit is not None:
        out["time_limit"] = options.time_limit
    return out


def resolve_seed(seed: int | None, options: SolverOptions | None) -> int | None:
    """``options.seed`` when options are given, else the mapper's own ``seed``."""
    return seed if options is None else options.seed


def deadline(options: SolverOptions | None) -> float:
    """``time.perf_counter()`` value at which a search stops drawing (infinity: no limit)."""
    if options is None or options.time_limit is None:
        return math.inf
    return time.perf_counter() + options.time_limit


def progress(options: SolverOptions | None) -> Callable[[dict[str, Any]], None] | None:
    """The progress callback of ``options`` (``None`` when there is none)."""
    return None if options is None else options.on_progress
