"""The bound every deadline test holds a solver to: ``T + 5 % + 1 s``.

On a machine with more runnable processes than cores (a shared development machine, not CI)
every step that is not a solver call (building a model, reading the answer) takes longer in
wall seconds, by about the oversubscription; the bound stretches by half a second per unit of
it, and by nothing on a machine that is not overloaded."""

from __future__ import annotations

import os


def deadline_bound(limit: float) -> float:
    """Seconds a call with a limit of ``limit`` seconds may take in all."""
    over = max(0.0, os.getloadavg()[0] / (os.cpu_count() or 1) - 1.0)
    return limit * 1.05 + 1.0 + 0.5 * over
