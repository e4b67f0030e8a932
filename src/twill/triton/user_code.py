"""Running a Python file the user gave (a Triton kernel file): its failures are its own.

Importing ``FILE.py`` runs its top-level code. Whatever goes wrong there is the user's input,
not a bug in twill: a ``SyntaxError``, any exception, and ``SystemExit`` (``sys.exit(7)``,
``raise SystemExit(0)``) and ``os._exit(0)`` (which would end the process with no output and
exit 0) become one :class:`~twill.errors.InvalidProblemError` naming the file,
the line and the error, so the CLI exits 2 with that message; a ``SystemExit`` never ends twill
with the file's own exit code. Ctrl-C (``KeyboardInterrupt``) still interrupts. What the file
prints while it is imported goes to stderr, so that twill's stdout (a graph, JSON) stays clean.

The file runs as Python runs a script (issue 49): its own folder is first on ``sys.path``, so it
may import a module beside it. Nothing it changes in the process outlives the run
(:func:`user_code`): the working directory (an ``os.chdir`` at import), ``sys.path`` and the
Ctrl-C/SIGTERM handlers are restored, and the modules imported from its folder are dropped
from ``sys.modules``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from twill.errors import InvalidProblemError
from twill.text import check_input_file

__all__ = ["import_user_file", "user_code"]


def _from_folder(module: object, folder: str) -> bool:
    """True when the top-level ``module`` was found in ``folder``: ``folder/NAME.py`` (or an
    extension) or a package ``folder/NAME/``, namespace packages included."""
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        places = [os.path.dirname(file) if hasattr(module, "__path__") else file]
    else:
        places = [p for p in getattr(module, "__path__", None) or [] if isinstance(p, str)]
    return any(os.path.dirname(os.path.abspath(p)) == folder for p in places)


def _forget_modules_from(folder: str, known: set[str]) -> None:
    """Drop the modules imported since ``known`` whose top-level package lies in ``folder``
    (a module beside the user's file, and its submodules)."""
    new = [n for n in sys.modules if n not in known]
    tops = {n for n in new if "." not in n and _from_folder(sys.modules[n], folder)}
    for name in new:
        if name.partition(".")[0] in tops:
            sys.modules.pop(name, None)


class _HardExit(Exception):  # noqa: N818 (what the user's code did, read in messages)
    """``os._exit(code)`` called by the user's code (raised in its place, :func:`user_code`):
    an error of the user's code like any other, caught where the user's code is."""

    def __init__(self, code: object) -> None:
        super().__init__(f"os._exit({code!r}) called")
        self.code = code


def _refuse_hard_exit(code: object = 0) -> None:
    raise _HardExit(code)


@contextlib.contextmanager
def user_code(folder: str | Path | None = None) -> Iterator[None]:
    """Run the user's code in the block without letting it change twill's process: the
    working directory (every relative path twill holds keeps its meaning), ``sys.path`` and
    the SIGINT/SIGTERM handlers (Ctrl-C still stops twill) are restored afterwards; with
    ``folder`` (absolute), that folder is first on ``sys.path`` during the block and the
    modules imported from it are forgotten after it."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # started in a folder that no longer exists
        cwd = None
    known, path, handlers = set(sys.modules), list(sys.path), _stop_handlers()
    hard_exit = os._exit
    if folder is not None:
        sys.path.insert(0, str(folder))
    os._exit = _refuse_hard_exit  # type: ignore[assignment]
    try:
        yield
    except KeyboardInterrupt:  # twill's own interrupt handling owns the signals now
        handlers = {}
        raise
    finally:
        os._exit = hard_exit
        if cwd is not None:
            with contextlib.suppress(OSError):
                os.chdir(cwd)
        sys.path[:] = path
        if folder is not None:
            _forget_modules_from(str(folder), known)
        for sig, handler in handlers.items():
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)


def _stop_handlers() -> dict[int, Any]:
    """The SIGINT and SIGTERM handlers (none off the main thread, where they cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


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
    if isinstance(exc, _HardExit):
        return f"the file calls os._exit({exc.code!r}) when imported"
    if isinstance(exc, SyntaxError):
        return f"SyntaxError: {exc.msg}"
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def import_user_file(path: Path, module_name: str) -> ModuleType:
    """Import ``path`` as a fresh module named ``module_name`` (not left in ``sys.modules``),
    under :func:`user_code` with the file's folder first on ``sys.path``.

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
    where = Path(os.path.abspath(path))  # its functions' source stays readable after a chdir
    spec = importlib.util.spec_from_file_location(module_name, where)
    if spec is None or spec.loader is None:
        raise InvalidProblemError("cannot load as a Python module", source=str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        with contextlib.redirect_stdout(sys.stderr), user_code(where.parent):
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
