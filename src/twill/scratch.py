"""A private scratch folder for one command: caches and temporary files that leave nothing behind.

Libraries twill calls keep files of their own: Triton caches every compiled kernel in
``~/.triton/cache``, torch's inductor writes ``$TMPDIR/torchinductor_$USER``, and other code
may create files through :mod:`tempfile` and not remove them when it is interrupted. While a
``twill`` command runs, :func:`private_scratch` points all of these at one folder of its own
(``$TMPDIR/twill-XXXX``): ``TRITON_CACHE_DIR``, ``TORCHINDUCTOR_CACHE_DIR``, Python's
:func:`tempfile.gettempdir` and ``TMPDIR`` for child processes. At exit, on success, error,
Ctrl-C or a closed pipe, the folder is removed and the environment restored. A variable the
user has set is left as it is: their cache stays theirs. A Ray instance the command started
keeps its session under ``TMPDIR`` and would write it again from Ray's exit handler after the
folder is gone, so it is shut down first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["private_scratch", "CACHE_VARIABLES"]

#: Cache folders redirected into the scratch folder unless the user set them.
CACHE_VARIABLES = {"TRITON_CACHE_DIR": "triton", "TORCHINDUCTOR_CACHE_DIR": "inductor"}


@contextmanager
def private_scratch() -> Iterator[str | None]:
    """Run the body with caches and temporary files in a private folder, removed afterwards.

    Yields the folder, or ``None`` when no folder can be created (an unwritable ``TMPDIR``):
    then nothing is redirected and the command runs as it would without this.
    """
    try:
        folder = tempfile.mkdtemp(prefix="twill-")
    except OSError:
        yield None
        return
    names = [*CACHE_VARIABLES, "TMPDIR"]
    saved_env = {name: os.environ.get(name) for name in names}
    saved_tempdir = tempfile.tempdir
    try:
        for name, sub in CACHE_VARIABLES.items():
            if not os.environ.get(name):
                os.environ[name] = os.path.join(folder, sub)
        os.environ["TMPDIR"] = folder
        tempfile.tempdir = folder
        yield folder
    finally:
        _stop_local_ray()
        tempfile.tempdir = saved_tempdir
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)


def _stop_local_ray() -> None:
    """Shut down this process's Ray session, if the command started one (``--executor ray``)."""
    ray = sys.modules.get("ray")
    if ray is not None and getattr(ray, "is_initialized", lambda: False)():
        with contextlib.suppress(Exception):  # noqa: BLE001 (cleanup: the folder goes anyway)
            ray.shutdown()
