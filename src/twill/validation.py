"""Checks of numeric options shared by the public API and the CLI.

The CLI checks its numbers with argparse; a Python caller reaches the solvers without argparse,
so each public entry calls these first. A value of the wrong type raises ``TypeError``, one of
the right type outside its range raises :class:`~twill.errors.InvalidProblemError`; both say
which option, what is allowed and what was received. Why it matters: a ``NaN`` time limit
reached CBC as ``-sec nan`` and came back as a false proof of infeasibility.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

from twill.errors import ArgumentTypeError, InvalidProblemError

__all__ = [
    "MAX_THREADS",
    "check_time_limit",
    "check_int",
    "check_real",
    "check_choice",
    "check_bool",
    "check_callable",
    "check_instance",
    "check_num_warps",
    "NUM_WARPS",
]


#: The ``num_warps`` Triton compiles for (a power of two).
NUM_WARPS = (1, 2, 4, 8, 16, 32)

#: Most solver threads or worker processes one run may ask for (docs/formats.md).
MAX_THREADS = 1024


def _received(value: object) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"found {text} ({type(value).__name__})"


def check_int(
    value: object, name: str, *, minimum: int = 1, maximum: int | None = None, none: bool = False
) -> int | None:
    """``value`` as an ``int`` in ``[minimum, maximum]`` (``None`` passes when ``none``).

    Raises
    ------
    TypeError
        Not an integer (``bool`` and ``float`` are refused, even ``2.0``).
    InvalidProblemError
        Out of range.
    """
    if value is None and none:
        return None
    rng = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    allowed = f"an integer {rng}" + (" or None" if none else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be {allowed}, {_received(value)}")
    out = int(value)
    if out < minimum or (maximum is not None and out > maximum):
        raise InvalidProblemError(f"{name} must be {allowed}, {_received(value)}")
    return out


def check_real(
    value: object,
    name: str,
    *,
    minimum: float = 0.0,
    maximum: float = math.inf,
    strict: bool = True,
    none: bool = False,
) -> float | None:
    """``value`` as a finite ``float`` above ``minimum`` (``>`` when ``strict``, else ``>=``)
    and at most ``maximum``; ``None`` passes when ``none``.

    Raises
    ------
    TypeError
        Not a real number (strings such as ``'1'`` and ``bool`` are refused).
    InvalidProblemError
        NaN, infinite or out of range.
    """
    if value is None and none:
        return None
    low = f"> {minimum:g}" if strict else f">= {minimum:g}"
    rng = low if maximum == math.inf else f"{low} and <= {maximum:g}"
    allowed = f"a finite number {rng}" + (" or None" if none else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{name} must be {allowed}, {_received(value)}")
    out = float(value)
    below = out <= minimum if strict else out < minimum
    if not math.isfinite(out) or below or out > maximum:
        raise InvalidProblemError(f"{name} must be {allowed}, {_received(value)}")
    return out


def check_time_limit(value: object, name: str = "time_limit") -> float | None:
    """A time limit in seconds: ``None`` (no limit) or a finite number > 0.

    Examples
    --------
    >>> check_time_limit(2)
    2.0
    >>> check_time_limit(float("nan"))
    Traceback (most recent call last):
    ...
    twill.errors.InvalidProblemError: time_limit must be a finite number > 0 or None, \
found nan (float)
    """
    return check_real(value, name, none=True)


def check_choice(value: object, name: str, choices: Iterable[str]) -> str:
    """``value`` when it is one of ``choices``.

    Raises
    ------
    TypeError
        Not a string.
    InvalidProblemError
        A string outside ``choices``.
    """
    options = tuple(choices)
    allowed = f"one of {', '.join(repr(c) for c in options)}"
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be {allowed}, {_received(value)}")
    if value not in options:
        raise InvalidProblemError(f"{name} must be {allowed}, {_received(value)}")
    return value


def check_callable(value: object, name: str) -> None:
    """``value`` is ``None`` or callable (a callback), else ``TypeError`` naming ``name``."""
    if value is not None and not callable(value):
        raise ArgumentTypeError(f"{name} must be a callable or None, {_received(value)}")


def check_instance(value: object, name: str, kind: type | tuple[type, ...]) -> None:
    """``value`` is a ``kind`` (the problem a public ``solve`` takes), else ``TypeError``
    naming the argument, the type(s) allowed and the type found.

    Examples
    --------
    >>> check_instance(None, "problem", int)
    Traceback (most recent call last):
    ...
    twill.errors.ArgumentTypeError: problem must be a int, found None (NoneType)
    """
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        allowed = " or ".join(k.__name__ for k in kinds)
        raise ArgumentTypeError(f"{name} must be a {allowed}, {_received(value)}")


def check_num_warps(value: object, name: str = "num_warps") -> int | None:
    """Triton's ``num_warps``: ``None`` (not given) or a power of two in :data:`NUM_WARPS`.

    Examples
    --------
    >>> check_num_warps(0)
    Traceback (most recent call last):
    ...
    twill.errors.InvalidProblemError: num_warps must be one of 1, 2, 4, 8, 16, 32 or None, \
found 0 (int)
    """
    if value is None:
        return None
    allowed = f"one of {', '.join(map(str, NUM_WARPS))} or None"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ArgumentTypeError(f"{name} must be {allowed}, {_received(value)}")
    if value not in NUM_WARPS:
        raise InvalidProblemError(f"{name} must be {allowed}, {_received(value)}")
    return int(value)


def check_bool(value: object, name: str) -> bool:
    """``value`` when it is ``True`` or ``False`` (``'no'``, ``0`` and ``None`` are refused: a
    non-empty string would silently read as true), else ``TypeError`` naming ``name``."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, {_received(value)}")
    return value
