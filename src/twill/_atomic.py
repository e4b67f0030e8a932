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

__all__ = ["atomic_output", "write_output", "atomic_folder"]


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
