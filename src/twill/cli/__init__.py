"""The ``twill`` command line: one sub-command module per family, registered here.

Every sub-command module exposes ``register(subparsers)``, which adds its parsers and sets
``func`` (a callable taking the parsed ``argparse.Namespace`` and returning an exit code).
The CLI only calls the public API. Errors the user caused (:class:`twill.errors.TwillError`,
unreadable files, unwritable outputs, out of memory) print one clear message on stderr and
exit with code 2; no traceback. Any other exception is a bug: one line that says so and exit
code 70, the traceback only when ``TWILL_DEBUG`` is set (see ``docs/decisions.md``). Ctrl-C
prints one line and exits 130, whatever worker processes are running (they ignore it; the
parent stops them); a closed stdout (``twill ... | head``) ends quietly with 141.
"""

from __future__ import annotations

import argparse
import atexit
import errno
import gc
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from twill import __version__
from twill.cli._args import command_deadline, mark_command_start, pin_paths
from twill.errors import TimeLimitError, TwillError
from twill.scratch import private_scratch

__all__ = ["main", "build_parser"]

# Sub-command modules, in the order their commands appear in --help.
_COMMAND_MODULES = (
    "twill.cli.sched_cmds",  # kernels, bounds, solve
    "twill.cli.codegen_cmd",  # codegen
    "twill.cli.gaus_cmd",  # gaus
    "twill.cli.mapping_cmds",  # map, map-network, map-eval
    "twill.cli.sweep_cmd",  # sweep
    "twill.cli.fuse_cmd",  # fuse
    "twill.cli.triton_cmd",  # import-triton
    "twill.cli.compile_cmd",  # compile
)

EXIT_OK = 0
EXIT_NOT_FOUND = 1  # the solver ran but found no answer (infeasible/unknown)
EXIT_USAGE = 2  # bad input: file, item or option
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_CLOSED_PIPE = 141  # stdout closed by its reader, ``| head`` (128 + SIGPIPE)
EXIT_TERMINATED = 143  # SIGTERM (128 + SIGTERM)
EXIT_INTERNAL = 70  # an unexpected exception: a bug in twill (BSD EX_SOFTWARE)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="twill",
        description="Provably optimal schedules (Twill, GauS) and accelerator mappings "
        "(CoSA, FADiff).",
    )
    parser.add_argument("--version", action="version", version=f"twill-sched {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:  # a family not installed in this build
            if exc.name != module_name:
                raise
            continue
        module.register(sub)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that it unwinds like Ctrl-C (solvers stopped,
    temporary files removed, no result printed, no output file written)."""


def _stop_once(signum: int, frame: object) -> None:
    """SIGINT or SIGTERM: raise once, then ignore both, so that a second Ctrl-C (a user who
    presses it twice) cannot cut short the clean-up (workers stopped, files removed)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if not os.environ.get("TWILL_DEBUG"):  # finalisers of objects that the interrupt left
        sys.unraisablehook = lambda _unraisable: None  # half built print no noise
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def main(argv: list[str] | None = None) -> int:
    """Run the ``twill`` command line; returns the exit code.

    Exit codes: 0 answer found, 1 no answer (infeasible/unknown), 2 bad input, 130 interrupted
    (Ctrl-C), 141 stdout closed by its reader (``| head``), 143 terminated (SIGTERM), 70
    internal error (a bug). Run as a program (``argv`` None), the process ends here, once
    the answer is out, without the interpreter's teardown (:func:`_end_program`).
    """
    for stream in ("stdout", "stderr"):  # started with it closed (>&-): Python gives None
        if getattr(sys, stream) is None:
            setattr(sys, stream, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    mark_command_start(from_process_start=argv is None)
    on_main = threading.current_thread() is threading.main_thread()
    hook = sys.unraisablehook
    saved = {sig: signal.signal(sig, _stop_once) for sig in _STOP_SIGNALS} if on_main else {}
    try:
        code = _main(argv)
    except Terminated:  # before the command started (parsing) or after it ended
        code = EXIT_TERMINATED
    except KeyboardInterrupt:
        print("twill: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    finally:
        if sys.unraisablehook is not hook:
            gc.collect()  # the interrupted objects' finalisers run now, quietly
            sys.unraisablehook = hook
        if argv is None and on_main:  # a program: the work is done, and a late Ctrl-C must
            saved[signal.SIGINT] = signal.SIG_IGN  # not turn the exit into a traceback
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        if argv is None and "triton._C.libtriton" in sys.modules:
            atexit.register(_quiet_native_teardown)
    if argv is None and on_main:
        _end_program(code)
    return code


def _end_program(code: int) -> None:
    """End a program whose command is done at once, without the interpreter's teardown.

    The answer is printed and every file written (the scratch folder too is gone, removed by
    :func:`~twill.scratch.private_scratch`); what is left is the interpreter freeing every
    module and object, which takes 1-3 s once torch (or Triton) is loaded, longer on a loaded
    machine, and would count against the command's ``--time-limit``, which runs to the
    process's exit (issue 51). The exit handlers (logging's flush, those libraries registered)
    run first, then stdout and stderr are flushed and the process exits with ``code``. Where
    anything could still need the normal teardown (a non-daemon thread alive, a child process
    of :mod:`multiprocessing` not yet reaped, a tracer or profiler such as coverage or
    cProfile that writes its data after ``main`` returns) this returns and the interpreter
    exits as usual.
    """
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if any(t.is_alive() and not t.daemon for t in others):
        return
    mp = sys.modules.get("multiprocessing")
    if mp is not None and mp.active_children():
        return
    atexit._run_exitfuncs()  # noqa: SLF001 - what the normal exit would run, in its order
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or its reader gone: nothing more to say
            pass
    os._exit(code)


def _quiet_native_teardown() -> None:
    """Close stderr for the interpreter's teardown once a program's command has ended.

    Triton 3.9's nanobind bindings list, at exit, the native objects Triton's compiler still
    holds (\"nanobind: leaked 4 instances!\" and some 300 lines after them) once a Gluon kernel
    has been compiled: Triton's, not the user's, and printed after the answer.
    """
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        if "time_limit" in vars(args):  # every command's whole wall time, from main's entry
            args.deadline = command_deadline(args.time_limit or None)
    except BrokenPipeError:  # twill --help | head -1
        return _stdout_closed()
    except SystemExit as exc:  # --help or --version (0), or a refused option (2)
        if exc.code in (0, None) and _flush_stdout(EXIT_OK) != EXIT_OK:
            return EXIT_CLOSED_PIPE
        raise
    with private_scratch(), _warnings_as_notes():  # caches and temporary files: removed
        return _run(args)


@contextmanager
def _warnings_as_notes() -> Iterator[None]:
    """Warnings (twill's :class:`~twill.errors.ConvergenceWarning`, scikit-learn's or SciPy's
    ``ConvergenceWarning``, ...) reach the user as one line, ``twill: note: ...``, each
    distinct text once, instead of Python's ``FILE:LINE: Category: text`` with the source
    line below it (issue 49); ``TWILL_DEBUG=1`` keeps Python's form."""
    import warnings

    if os.environ.get("TWILL_DEBUG"):
        yield
        return
    shown: set[str] = set()

    def note(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
        text = " ".join(str(message).split())
        if text not in shown:
            shown.add(text)
            print(f"twill: note: {text} ({category.__name__})", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = note
        yield


def _run(args: argparse.Namespace) -> int:
    try:
        pin_paths(args)  # before any user code can change the working directory
        return _flush_stdout(int(args.func(args) or 0))
    except TimeLimitError as exc:  # out of time before there was anything to report
        print(f"twill {args.command}: {exc}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except TwillError as exc:
        return _fail(args, str(exc))
    except Terminated:
        print(f"twill {args.command}: terminated; no result written", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        where = getattr(args, "interrupted_at", None)  # the search's last progress line
        at = f" at {where.strip()}" if where else ""
        print(f"twill {args.command}: interrupted{at}; no result written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _stdout_closed()
    except OSError as exc:  # unreadable input, or an output that cannot be written
        name = exc.filename or (getattr(args, "output", None) if exc.errno in _WRITE_ERRNOS else "")
        return _fail(args, f"{name or '(file)'}: {exc.strerror or exc}")
    except MemoryError:
        return _fail(args, "out of memory: the input is too large for this machine")
    except (RecursionError, OverflowError) as exc:
        if os.environ.get("TWILL_DEBUG"):
            raise
        what = "nested too deeply" if isinstance(exc, RecursionError) else "has a number too large"
        return _fail(args, f"the input {what} ({type(exc).__name__}); {_REPORT}")
    except Exception as exc:  # a bug: say so briefly; the traceback only on request
        if os.environ.get("TWILL_DEBUG"):
            raise
        text = str(exc).splitlines()[0][:200] if str(exc) else ""
        print(
            f"twill {args.command}: internal error: {type(exc).__name__}: {text}\n  {_REPORT}",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


_REPORT = "this is a bug in twill; please report it (TWILL_DEBUG=1 shows the traceback)"
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO}


def _flush_stdout(code: int) -> int:
    """Flush stdout inside the command's error handling, so that a reader that has gone away
    (``| head``) is noticed here and not as a traceback during the interpreter's exit."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _stdout_closed()
    return code


def _stdout_closed() -> int:
    """The reader of stdout stopped early (``twill ... | head``): end quietly, as ``git log |
    head`` does, with 141 (128 + SIGPIPE). What is still buffered goes to ``/dev/null``, so
    Python's own flush at exit finds no broken pipe either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (captured in a test)
        pass
    return EXIT_CLOSED_PIPE


def _fail(args: argparse.Namespace, message: str) -> int:
    """Print ``twill CMD: error: message`` on stderr; exit code 2 (the user's input)."""
    print(f"twill {args.command}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
