"""Exceptions and warnings shared by both families.

Every error a user can cause derives from :class:`TwillError`; the CLI turns it into a one-line
message on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

__all__ = [
    "TwillError",
    "InvalidProblemError",
    "InputFormatError",
    "ArgumentTypeError",
    "VerificationError",
    "BackendUnavailableError",
    "TimeLimitError",
    "ConvergenceWarning",
]


class TwillError(Exception):
    """Base class of every error twill raises on purpose."""


class InvalidProblemError(TwillError, ValueError):
    """The instance is malformed: each entry of :attr:`defects` names the item and the problem.

    Parameters
    ----------
    defects
        One human-readable line per defect, e.g. ``"edge S->Q: unknown instruction 'Q'"``.
    source
        The file (or kernel name) the instance came from, if any; prefixed to the message.
    """

    def __init__(self, defects: list[str] | str, source: str | None = None) -> None:
        self.defects = [defects] if isinstance(defects, str) else list(defects)
        self.source = source
        prefix = f"{source}: " if source else ""
        if len(self.defects) == 1:
            message = prefix + self.defects[0]
        else:
            message = prefix + f"{len(self.defects)} problems:\n  - " + "\n  - ".join(self.defects)
        super().__init__(message)

    def __reduce__(self) -> tuple[object, ...]:  # survives pickling (worker processes)
        return (type(self), (self.defects, self.source))

    def with_source(self, source: str) -> InvalidProblemError:
        """Return the same error with ``source`` (a file name) attached."""
        return type(self)(self.defects, source=source)


class ArgumentTypeError(InvalidProblemError, TypeError):
    """An API argument of the wrong type (``None`` or ``"5"`` where a count belongs).

    It is both a :class:`TypeError`, as Python callers expect, and an
    :class:`InvalidProblemError`, so that the CLI and ``except TwillError`` see it too.
    """


class InputFormatError(InvalidProblemError):
    """A file could not be parsed at all (bad XML, bad YAML, bad binary header, ...)."""


class VerificationError(TwillError):
    """A solver produced a solution that the independent verifier rejected.

    This is a bug in twill, not a user error: the solution is never returned.
    """

    def __init__(self, violations: list[object], what: str = "solution") -> None:
        self.violations = list(violations)
        lines = "\n  - ".join(str(v) for v in self.violations[:20])
        count = len(self.violations)
        super().__init__(f"{what} failed verification ({count} violations):\n  - {lines}")
        self.what = what

    def __reduce__(self) -> tuple[object, ...]:  # survives pickling (worker processes)
        return (type(self), (self.violations, self.what))


class BackendUnavailableError(TwillError):
    """A requested solver backend or optional dependency is not installed or cannot run here."""


class TimeLimitError(TwillError):
    """The time limit passed before a step whose result everything after it needs had ended
    (a ``--model``'s export): there is nothing to report; the CLI says so and exits with 1,
    as for any run that ends without an answer."""


class ConvergenceWarning(UserWarning):
    """A gradient-based solver stopped at its iteration limit with violations left."""
