"""The bound every deadline test holds a solver to: ``T + 5 % + 1 s``.

On a machine with more runnable processes than cores (a shared development machine, not CI)
every step that is not a solver call (building a model, reading the answer) takes longer in
wall seconds, by about the oversubscription ``over`` (runnable processes per core, less one):
the second allowed for those steps becomes ``1 + over`` seconds, and nothing changes on a
machine that is not overloaded. (Half a second per unit was too little: at a load of 9 on two
cores the Phase-2 point of ``tests/conformance/test_deadlines.py``, whose Z3 model build runs
before its 1 s limit can stop anything, took 4.3 s against a bound of 3.8 s.)"""

from __future__ import annotations

import os


def deadline_bound(limit: float) -> float:
    """Seconds a call with a limit of ``limit`` seconds may take in all."""
    over = max(0.0, os.getloadavg()[0] / (os.cpu_count() or 1) - 1.0)
    return limit * 1.05 + 1.0 + over
