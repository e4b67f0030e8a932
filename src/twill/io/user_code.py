"""Running a Python file the user gave (a Triton kernel file): its failures are its own.

Importing ``FILE.py`` runs its top-level code. Whatever goes wrong there is the user's input,
not a bug in twill: a ``SyntaxError``, any exception, and ``SystemExit`` (``sys.exit(7)``,
``raise SystemExit(0)``) become one :class:`~twill.errors.InvalidProblemError` naming the file,
the line and the error, so the CLI exits 2 with that message; a ``SystemExit`` never ends twill
with the file's own exit code. Ctrl-C (``KeyboardInterrupt``) still interrupts. What the file
prints while it is imported goes to stderr, so that twill's stdout (a graph, JSON) stays clean.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from twill.errors import InvalidProblemError
from twill.io.text import check_input_file

__all__ = ["import_user_file"]


def _line_in(exc: BaseException, path: Path) -> int | None:
    """The last line of ``path`` in ``exc``'s traceback (where the file's code failed)."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        return exc.lineno
    target = str(path.resolve())
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if str(Path(frame.filename).resolve()) == target:
            line = frame.lineno
    return line


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the file calls sys.exit({exc.code!r}) when imported"
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg}"
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def import_user_file(path: Path, module_name: str) -> ModuleType:
    """Import ``path`` as a fresh module named ``module_name`` (not left in ``sys.modules``).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    InvalidProblemError
        ``path`` is a folder, the file cannot be loaded, or its code fails when imported
        (the message names the file and the line: ``FILE.py, line 3: ZeroDivisionError:
        division by zero``).
    KeyboardInterrupt
        Ctrl-C while the file runs.
    """
    if path.is_dir():
        raise InvalidProblemError("is a folder; expected a Python file", source=str(path))
    check_input_file(path)  # missing, a pipe or a device: refused before it runs
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise InvalidProblemError("cannot load as a Python module", source=str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        with contextlib.redirect_stdout(sys.stderr):
            spec.loader.exec_module(module)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 (SystemExit included: the file's, not ours)
        line = _line_in(exc, path)
        where = f"{path}, line {line}" if line else str(path)
        raise InvalidProblemError(
            f"running the file failed: {_describe(exc)}", source=where
        ) from None
    finally:
        sys.modules.pop(spec.name, None)
    return module
