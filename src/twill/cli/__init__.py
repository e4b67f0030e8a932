"""The ``twill`` command line: one sub-command module per family, registered here.

Every sub-command module exposes ``register(subparsers)``, which adds its parsers and sets
``func`` (a callable taking the parsed ``argparse.Namespace`` and returning an exit code).
The CLI only calls the public API. Errors the user caused (:class:`twill.errors.TwillError`,
unreadable files, unwritable outputs, out of memory) print one clear message on stderr and
exit with code 2; no traceback. Any other exception is a bug: one line that says so and exit
code 70, the traceback only when ``TWILL_DEBUG`` is set (see ``docs/decisions.md``).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys
import threading

from twill import __version__
from twill.errors import TwillError

__all__ = ["main", "build_parser"]

# Sub-command modules, in the order their commands appear in --help.
_COMMAND_MODULES = (
    "twill.cli.sched_cmds",  # kernels, bounds, solve
    "twill.cli.codegen_cmd",  # codegen
    "twill.cli.gaus_cmd",  # gaus
    "twill.cli.mapping_cmds",  # map, map-network, map-eval
    "twill.cli.fuse_cmd",  # fuse
    "twill.cli.triton_cmd",  # import-triton
)

EXIT_OK = 0
EXIT_NOT_FOUND = 1  # the solver ran but found no answer (infeasible/unknown)
EXIT_USAGE = 2  # bad input: file, item or option
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
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


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Run the ``twill`` command line; returns the exit code.

    Exit codes: 0 answer found, 1 no answer (infeasible/unknown), 2 bad input, 130 interrupted
    (Ctrl-C), 143 terminated (SIGTERM), 70 internal error (a bug).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if on_main else None
    try:
        return _run(args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except TwillError as exc:
        return _fail(args, str(exc))
    except Terminated:
        print(f"twill {args.command}: terminated; no result written", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print(f"twill {args.command}: interrupted; no result written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
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


def _fail(args: argparse.Namespace, message: str) -> int:
    """Print ``twill CMD: error: message`` on stderr; exit code 2 (the user's input)."""
    print(f"twill {args.command}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
