"""Starting a twill module in a child interpreter that imports the installed twill only.

``python -m twill...`` puts the current directory first on ``sys.path``, so a ``twill/`` folder
(or a ``pyscipopt.py``) lying where the user runs the command would be imported by the child
instead of the installed package: code from the working directory would run. The child is
started isolated instead (``python -I``: no current directory, no ``PYTHON*`` variables, no
user site), and the folder that holds the running ``twill`` package is put first on its path,
so parent and child import the same twill (also an editable install or a ``PYTHONPATH``
checkout).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["isolated_module_command"]


def isolated_module_command(module: str) -> list[str]:
    """The command line that runs ``python -m module`` in an isolated interpreter.

    Parameters
    ----------
    module
        A module of the twill package, e.g. ``"twill.mapping.cosa.worker"``.

    Returns
    -------
    list of str
        ``[sys.executable, "-I", "-c", ...]``, ready for :mod:`subprocess`.
    """
    import twill

    if not module.startswith("twill."):
        raise ValueError(f"only twill modules are started this way, found {module!r}")
    root = str(Path(twill.__file__).resolve().parent.parent)
    code = (
        f"import sys; sys.path.insert(0, {root!r}); import runpy; "
        f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"
    )
    return [sys.executable, "-I", "-c", code]
