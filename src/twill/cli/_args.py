"""Argument checks shared by the ``twill`` sub-commands.

Numbers are checked by argparse ``type=`` callables, so a bad value is reported as
``twill CMD: error: argument --X: expected ..., found '...'`` with exit code 2 before any work
starts. Output paths (``-o``, ``--plot``) are checked before the (possibly long) solve, so a typo
never costs a solve, and no file the command reads (given or implicit) is ever overwritten.
Outputs are written atomically (:func:`write_output`, :func:`atomic_output`), so an interrupted
or failed run leaves either the old file or a complete new one.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from twill._atomic import atomic_output, write_output
from twill.deadline import Deadline
from twill.errors import InvalidProblemError
from twill.validation import MAX_THREADS, check_time_limit

__all__ = [
    "positive_int",
    "positive_float",
    "time_limit_arg",
    "add_time_limit",
    "add_threads",
    "command_deadline",
    "nonnegative_float",
    "bounded_int",
    "seed_int",
    "thread_count",
    "same_file",
    "check_output_path",
    "check_outputs_distinct",
    "check_output_and_plot",
    "pin_paths",
    "atomic_output",
    "write_output",
]

_command_started = time.monotonic()


def mark_command_start(from_process_start: bool = False) -> None:
    """Start the clock of the current command (called by ``twill.cli.main`` on entry). A
    program (``twill ...``, ``python -m twill ...``) counts from its process's start, so that
    the interpreter's start-up and the imports, slower on a loaded machine, are inside the
    command's time limit; a call of ``main`` in a long-lived process counts from the call."""
    global _command_started
    now = time.monotonic()
    started = _process_started() if from_process_start else None
    _command_started = now if started is None or not now - 60.0 < started <= now else started


def _process_started() -> float | None:
    """This process's start on the ``time.monotonic()`` clock, from ``/proc/self/stat``
    (Linux: clock ticks since boot, the clock ``CLOCK_BOOTTIME`` counts); ``None`` where that
    cannot be read."""
    try:
        with open("/proc/self/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # field 22 of proc(5); fields[0] is field 3
        since_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        return time.monotonic() - (since_boot - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def command_deadline(seconds: float | None) -> Deadline:
    """The deadline ``seconds`` after the current command started (``None``: no limit): every
    command's time flag is the whole command's wall time, reading the input included."""
    return Deadline.after(seconds, _command_started)


def command_started() -> float:
    """The ``time.monotonic()`` value at which the current command started."""
    return _command_started


def seconds_since_command_start() -> float:
    """Seconds since the current command started: since the process started for a program,
    since ``main``'s entry for a call in a long-lived process (a test session, a notebook),
    which gets its whole ``--total-time-limit`` (:func:`mark_command_start`)."""
    return max(0.0, time.monotonic() - _command_started)


def _number(text: str, kind: type, expected: str, ok: Callable[[float | int], bool]) -> float | int:
    shown = repr(text) if len(text) <= 40 else repr(text[:36]) + f" ({len(text)} characters)"
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, found {shown}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, found {shown}")
    return value


def bounded_int(hi: int, lo: int = 1) -> Callable[[str], int]:
    """An argparse ``type=`` accepting integers in ``[lo, hi]``: counts that set how much work
    a command does get an upper limit, so that no option can make a run unbounded."""

    def parse(text: str) -> int:
        expected = f"an integer from {lo} to at most {hi:,}"
        return int(_number(text, int, expected, lambda v: lo <= v <= hi))

    parse.__name__ = f"integer {lo}..{hi}"
    return parse


seed_int = bounded_int(2**32 - 1, lo=0)
"""A random seed: an integer from 0 to 2^32 - 1."""

thread_count = bounded_int(MAX_THREADS)
"""A count of threads or worker processes: an integer from 1 to ``MAX_THREADS`` (1,024)."""


def positive_int(text: str) -> int:
    """An integer >= 1 (argparse ``type=``)."""
    return int(_number(text, int, "an integer >= 1", lambda v: v >= 1))


def positive_float(text: str) -> float:
    """A finite number > 0 (argparse ``type=``)."""
    return float(_number(text, float, "a number > 0", lambda v: 0 < v < float("inf")))


def time_limit_arg(text: str) -> float:
    """A time limit in seconds (argparse ``type=``), by the one rule every limit follows,
    :func:`twill.validation.check_time_limit` (a finite number > 0)."""

    def ok(value: float) -> bool:
        try:
            check_time_limit(value)
        except (InvalidProblemError, TypeError):
            return False
        return True

    return float(_number(text, float, "a number > 0", ok))


def add_time_limit(
    p: argparse.ArgumentParser, default: float | None, help: str, zero_is_none: bool = False
) -> None:
    """The whole command's wall time, the same flag in every command (issue 51):
    ``--time-limit S``, with ``--total-time-limit`` as its other name (``args.time_limit``;
    ``zero_is_none``: 0 means no limit). It counts from the command's start, reading the
    input included: ``twill.cli.main`` gives the parsed command ``args.deadline``
    (:func:`command_deadline`); per-solve caps have flags of their own."""
    p.add_argument("--time-limit", "--total-time-limit", dest="time_limit",
                   type=nonnegative_float if zero_is_none else time_limit_arg, default=default,
                   metavar="S", help=f"{help}; counted from the command's start (the "
                   "program's start-up and imports included) to its exit "
                   "(--total-time-limit: the same flag)")  # fmt: skip


def add_threads(p: argparse.ArgumentParser, help: str) -> None:
    """``--threads N``: the solver threads of each solve (default 1, at most ``MAX_THREADS``)."""
    p.add_argument("--threads", type=thread_count, default=1, metavar="N", help=help)


def nonnegative_float(text: str) -> float:
    """A finite number >= 0 (argparse ``type=``)."""
    return float(_number(text, float, "a number >= 0", lambda v: 0 <= v < float("inf")))


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when ``a`` and ``b`` name the same file (also through links or ``..``)."""
    pa, pb = Path(a), Path(b)
    try:
        if pa.exists() and pb.exists():
            return pa.samefile(pb)
        return pa.resolve() == pb.resolve()
    except OSError:
        return False


def check_output_path(
    path: str | None,
    option: str,
    inputs: Iterable[str | Path | None] = (),
    suffixes: tuple[str, ...] | None = None,
) -> None:
    """Raise :class:`InvalidProblemError` when ``path`` cannot or must not be written.

    Refused: one of ``inputs`` (the user's data is never overwritten; compared as real files,
    so a symbolic or hard link to an input is refused too), a directory, a file in a folder that
    does not exist, and (with ``suffixes``) a suffix outside ``suffixes``. ``inputs`` must list
    every file the command reads, the implicit ones included (the readers' ``*_input_files``
    helpers give them). An existing output file is overwritten, as ``cc -o`` and ``sort -o`` do.
    """
    if path is None:
        return
    if not path.strip():
        raise InvalidProblemError(f"{option} {path!r}: empty file name; give a file")
    p = Path(path)
    for given in inputs:
        if given and Path(given).exists() and same_file(p, given):
            raise InvalidProblemError(
                f"{option} {path}: refusing to overwrite the input file {str(given)!r}"
            )
    if p.is_dir():
        raise InvalidProblemError(f"{option} {path}: is a directory; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InvalidProblemError(f"{option} {path}: folder {str(parent)!r} does not exist")
    if suffixes is not None and p.suffix.lower() not in suffixes:
        raise InvalidProblemError(
            f"{option} {path}: unsupported file type {p.suffix or '(none)'!r}; "
            f"expected {', '.join(suffixes)}"
        )


def check_outputs_distinct(*outputs: tuple[str, str | None]) -> None:
    """Raise :class:`InvalidProblemError` when two output options (``(option, path)`` pairs)
    name the same file, so that one output never silently replaces the other."""
    given = [(opt, path) for opt, path in outputs if path]
    for i, (opt_a, a) in enumerate(given):
        for opt_b, b in given[i + 1 :]:
            if same_file(a, b):
                raise InvalidProblemError(f"{opt_a} and {opt_b} name the same file {a!r}")


def check_output_and_plot(
    args: argparse.Namespace, inputs: Iterable[str | Path | None], plot_suffixes: tuple[str, ...]
) -> None:
    """``-o`` (``args.output``) and ``--plot`` (``args.plot``, one of ``plot_suffixes``)
    checked against the files the command reads and against each other
    (:func:`check_output_path`, :func:`check_outputs_distinct`)."""
    inputs = list(inputs)
    check_output_path(args.output, "-o", inputs)
    check_output_path(args.plot, "--plot", inputs, plot_suffixes)
    check_outputs_distinct(("-o", args.output), ("--plot", args.plot))


#: Argument names (``dest``) that hold a file the command writes, or one it reads.
OUTPUT_DESTS = ("output", "plot")
INPUT_DESTS = ("graph", "kernel", "file", "layer", "arch", "directory", "network", "path",
               "resource_model", "mapping_file", "dataset", "workloads")  # fmt: skip


def _absolute(path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def pin_paths(args: argparse.Namespace) -> None:
    """Make every path of the command line absolute, before any of the command's work (issue
    49): code the user gave (a kernel file's top level, its heuristics) may change the working
    directory, and an output must still land, and an input still be read, where the user
    meant. Outputs always (a blank name stays for :func:`check_output_path` to refuse); inputs
    only when they name an existing file or folder (``FILE.py:KERNEL`` by its file), so that
    a built-in name (``simba``, a kernel's name) keeps its meaning."""
    for dest in OUTPUT_DESTS:
        value = getattr(args, dest, None)
        if isinstance(value, str) and value.strip():
            setattr(args, dest, _absolute(value))
    for dest in INPUT_DESTS:
        value = getattr(args, dest, None)
        if not isinstance(value, str) or not value.strip() or os.path.isabs(value):
            continue
        head, sep, tail = value.rpartition(":")
        if os.path.lexists(value):
            setattr(args, dest, _absolute(value))
        elif sep and tail.isidentifier() and os.path.lexists(head):
            setattr(args, dest, f"{_absolute(head)}:{tail}")
