"""The ``twill`` command line: one sub-command module per family, registered here.

Every sub-command module exposes ``register(subparsers)``, which adds its parsers and sets
``func`` (a callable taking the parsed ``argparse.Namespace`` and returning an exit code).
The CLI only calls the public API. Errors the user caused (:class:`twill.errors.TwillError`,
unreadable files) print one clear message on stderr and exit with code 2; no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except TwillError as exc:
        print(f"twill {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        name = getattr(exc, "filename", None) or ""
        print(f"twill {args.command}: error: {name}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"twill {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
