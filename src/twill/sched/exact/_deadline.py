"""Deadlines shared by the exact searches: one absolute end time, each solver call inside it.

A deadline is a ``time.monotonic()`` value (system-wide on Linux, so worker processes share
it). Every solver call gets the smaller of its own limit and the time left, and a call with
less than :data:`MIN_SLICE` seconds left is not started; so nested solves together never
outlive the deadline by more than one solver's reaction time.
"""

from __future__ import annotations

import time

__all__ = ["MIN_SLICE", "out_of_time", "within"]

MIN_SLICE = 0.05  # seconds: less than this left and a solver call is not started


def within(limit: float | None, deadline: float | None) -> float | None:
    """The smaller of ``limit`` and the seconds left before ``deadline`` (``None``: none)."""
    if deadline is None:
        return limit
    left = max(0.01, deadline - time.monotonic())  # never 0 or negative: a valid limit
    return left if limit is None else min(limit, left)


def out_of_time(limit: float | None) -> bool:
    """True when ``limit`` leaves too little time for a solver call to be worth starting."""
    return limit is not None and limit < MIN_SLICE
