"""The one deadline of a call (issue 51): an absolute end on the ``time.monotonic()`` clock.

Every time budget in twill is a :class:`Deadline`. The entry of a call (a solver's
``solve``, a command) anchors one from its time limit (:meth:`Deadline.after`); a nested
solve gets a :meth:`Deadline.child`, which can only end earlier, so nested solves together
never outlive the caller's deadline. Nothing else computes an end time: a test
(``tests/test_deadline_class.py``) refuses ``monotonic() +`` and its variants outside this
module. Loops that compare ``time.perf_counter()`` against a stop value take it from
:meth:`Deadline.perf_stop`.

``time.monotonic()`` is system-wide on Linux, so worker processes on one machine share a
deadline: pickled, a deadline keeps its absolute end when it is unpickled on the same machine
(same boot), and travels as the *seconds left*, re-anchored on the receiving clock, to another
machine (a Ray worker), the time in transit being the only slack there.

Examples
--------
>>> d = Deadline.after(10)
>>> 9.0 < d.remaining() <= 10.0, d.child(2).remaining() <= 2.0, d.child(60).remaining() <= 10.0
(True, True, True)
>>> d.child(fraction=0.5).remaining() <= 5.0
True
>>> Deadline().remaining() is None, Deadline().expired(), Deadline.after(0).expired()
(True, False, True)
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MIN_SLICE", "Deadline", "NO_DEADLINE"]

MIN_SLICE = 0.05  # seconds: less than this left and a solver call is not started
_MIN_LIMIT = 0.01  # seconds: the smallest limit handed to a solver (0 or less is invalid)


@dataclass(frozen=True)
class Deadline:
    """An absolute end on the ``time.monotonic()`` clock (``end=None``: no limit).

    Parameters
    ----------
    end
        The ``time.monotonic()`` value at which the time is up; ``None``: never.
    """

    end: float | None = None

    @classmethod
    def after(cls, seconds: float | None, start: float | None = None) -> Deadline:
        """The deadline ``seconds`` after ``start`` (a ``time.monotonic()`` value, default
        now); ``seconds=None``: no limit."""
        if seconds is None:
            return cls()
        return cls((time.monotonic() if start is None else start) + seconds)

    @classmethod
    def of(cls, value: Deadline | float | None) -> Deadline:
        """``value`` as a deadline: a :class:`Deadline` unchanged, ``None`` no limit, a number
        a ``time.monotonic()`` end (the form older public calls take)."""
        if isinstance(value, Deadline):
            return value
        return cls(None if value is None or math.isinf(value) else float(value))

    @staticmethod
    def now() -> float:
        """The clock the deadline is on: ``time.monotonic()``."""
        return time.monotonic()

    @property
    def limited(self) -> bool:
        """True when there is an end."""
        return self.end is not None

    def remaining(self) -> float | None:
        """Seconds left (``None``: no limit; never below 0)."""
        return None if self.end is None else max(0.0, self.end - time.monotonic())

    def passed(self) -> bool:
        """True once the end has been reached."""
        return self.end is not None and time.monotonic() >= self.end

    def expired(self) -> bool:
        """True when less than :data:`MIN_SLICE` seconds are left: too little to start a
        solver call."""
        left = self.remaining()
        return left is not None and left < MIN_SLICE

    def short_of(self, seconds: float) -> bool:
        """True when there is an end and fewer than ``seconds`` are left before it."""
        left = self.remaining()
        return left is not None and left < seconds

    def within(self, limit: float | None = None) -> float | None:
        """The seconds one solver call may take: the smaller of its own ``limit`` and the
        time left (``None``: neither is set; never below 0.01 s, a valid solver limit)."""
        left = self.remaining()
        if left is None:
            return limit
        left = max(_MIN_LIMIT, left)
        return left if limit is None else min(limit, left)

    def child(self, seconds: float | None = None, *, fraction: float | None = None) -> Deadline:
        """The deadline of a nested call: at most ``seconds`` more, or ``fraction`` of the
        time left (neither: this one). It is the earlier of this end and the sub-budget's,
        so it can only shrink; ``fraction`` of no limit is no limit."""
        if fraction is not None:
            if seconds is not None:
                raise TypeError("child takes seconds or fraction, not both")
            if not 0.0 <= fraction <= 1.0:
                raise ValueError(f"fraction must be in [0, 1], found {fraction!r}")
            left = self.remaining()
            seconds = None if left is None else fraction * left
        if seconds is None:
            return self
        end = time.monotonic() + seconds
        return self if self.end is not None and self.end <= end else Deadline(end)

    def earliest(self, other: Deadline) -> Deadline:
        """The earlier of two deadlines."""
        if other.end is None or (self.end is not None and self.end <= other.end):
            return self
        return other

    def reserve(self, seconds: float) -> Deadline:
        """The end ``seconds`` before this one: the budget of the steps before a last step
        that keeps ``seconds`` for itself (no limit stays no limit)."""
        return self if self.end is None or seconds <= 0 else Deadline(self.end - seconds)

    def perf_stop(self) -> float:
        """This deadline as a ``time.perf_counter()`` value (``math.inf``: no limit), for the
        loops that compare ``perf_counter`` against a stop time."""
        left = self.remaining()
        return math.inf if left is None else time.perf_counter() + left

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its end, the machine's boot and the seconds left (module docstring)."""
        return (_unpickled, (self.end, _boot_id(), self.remaining()))


@functools.cache
def _boot_id() -> str | None:
    """This machine's boot (Linux), whose ``time.monotonic()`` clock every process shares;
    ``None`` elsewhere (then a pickled deadline is always re-anchored)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _unpickled(end: float | None, boot: str | None, left: float | None) -> Deadline:
    if boot is not None and boot == _boot_id():
        return Deadline(end)  # same clock: the same end, however long the trip took
    return Deadline.after(left)


#: No limit.
NO_DEADLINE = Deadline()
