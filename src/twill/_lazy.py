"""Re-exports loaded on first use (PEP 562), for the families' front modules.

``twill.sched.front`` and ``twill.mapping.front`` hand the command line the family's own
objects from many modules; importing all of them when the parser is built would load the CoSA
MIP, FADiff and the exact searches for ``twill --help``. :func:`lazy_exports` gives a front the
module-level ``__getattr__`` and ``__dir__`` that import a name's module when the name is first
read, and cache the object in the front's namespace.

Examples
--------
>>> import types
>>> m = types.ModuleType("demo")
>>> m.__getattr__, m.__dir__ = lazy_exports(m.__dict__, {"sqrt": "math"})
>>> m.sqrt(9.0)
3.0
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    namespace: dict[str, Any], module_of: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a module whose names ``module_of`` maps to their modules.

    Parameters
    ----------
    namespace
        The front module's ``globals()``: a name read once is stored there, so later reads do
        not come back here.
    module_of
        Name -> the dotted module that defines it.

    Returns
    -------
    tuple
        The module-level ``__getattr__`` (``AttributeError`` for any other name, as a module
        without it raises) and ``__dir__``.
    """
    owner = namespace.get("__name__", "module")

    def __getattr__(name: str) -> Any:  # noqa: ANN401, N807 - any object, PEP 562's name
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:  # noqa: N807 - PEP 562's name
        return sorted(set(namespace) | set(module_of))

    return __getattr__, __dir__
