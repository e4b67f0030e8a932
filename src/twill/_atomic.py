"""Atomic output files: the target is either untouched or complete, never half written.

Every file twill writes (a ``-o`` result, a ``--plot`` picture, a graph from
:func:`twill.io.graph_json.write_graph`) goes through :func:`atomic_output`: the content is
written to a temporary file in the target's own folder (so that the final rename stays on one
file system) and moved over the target with :func:`os.replace` only once it is complete. An
error, a Ctrl-C or a closed pipe in between removes the temporary file and leaves the old
target as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_output", "write_output", "atomic_folder", "write_files"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; on success it replaces ``path`` at once.

    The temporary file keeps the suffix (plotting libraries pick the format from it) and is
    removed on any error or interrupt. A target that exists and is not a regular file
    (``/dev/null``, a pipe) is written in place instead.
    """
    target = Path(path)
    if target.exists() and not target.is_file():
        yield target
        return
    fd, tmp = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=target.suffix or ".tmp", dir=target.parent
    )
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # the permissions a plain open() would give
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_output(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_output`), UTF-8."""
    with atomic_output(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


@contextmanager
def atomic_folder(path: str | Path) -> Iterator[Path]:
    """A temporary folder beside ``path`` to fill; on success it becomes ``path`` at once.

    ``path`` must not exist or be an empty folder (which the rename replaces). An error or an
    interrupt removes the temporary folder, so no half-written output folder is ever left.
    """
    target = Path(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # the permissions a plain mkdir() would give
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _stage(folder: Path, name: str, content: str | bytes) -> Path:
    """``content`` in a new temporary file in ``folder`` (named after ``name``)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    staged = Path(tmp)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content if isinstance(content, bytes) else content.encode("utf-8"))
        os.chmod(staged, 0o666 & ~_umask())
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    return staged


def write_files(files: dict[str, str | bytes], folder: str | Path) -> list[Path]:
    """Write every ``name: content`` of ``files`` into ``folder``, all or nothing.

    A ``folder`` that does not exist is filled as a temporary folder beside it and renamed
    into place (:func:`atomic_folder`). In an existing one, every file is first written
    complete to a temporary file there, and only then renamed over its target; an error or an
    interrupt while writing removes every temporary file and leaves the folder as it was.
    Returns the paths written. Callers check the targets first (none a folder or a link).
    """
    target = Path(folder)
    if not target.exists():
        with atomic_folder(target) as tmp:
            for name, content in files.items():
                os.replace(_stage(tmp, name, content), tmp / name)
        return [target / name for name in files]
    staged: dict[str, Path] = {}
    try:
        for name, content in files.items():
            staged[name] = _stage(target, name, content)
        for name, tmp in staged.items():
            os.replace(tmp, target / name)
    finally:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)
    return [target / name for name in files]
