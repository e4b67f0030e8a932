"""The families' front modules (``twill.sched.front``, ``twill.mapping.front``): what ``cli/``
imports of the core (issue 51, ``tests/test_layering.py`` counts it). Each name is the
defining module's own object, loaded on first read, and the three spellings of the list (the
``TYPE_CHECKING`` imports, ``__all__`` and the loading table) agree."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys

import pytest

FRONTS = ("twill.sched.front", "twill.mapping.front")


def _type_checking_imports(module: object) -> dict[str, str]:
    """Name -> module of each import under the front's ``if TYPE_CHECKING:``."""
    tree = ast.parse(inspect.getsource(module))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                found.update({a.name: str(imp.module) for a in imp.names})
    return found


@pytest.mark.parametrize("name", FRONTS)
def test_a_front_lists_each_name_once_and_hands_back_the_real_object(name: str) -> None:
    front = importlib.import_module(name)
    table = front._MODULE_OF
    assert sorted(front.__all__) == sorted(table) == sorted(_type_checking_imports(front))
    assert _type_checking_imports(front) == table
    for export, module in table.items():
        assert getattr(front, export) is getattr(importlib.import_module(module), export)
    with pytest.raises(AttributeError):
        front.no_such_name  # noqa: B018


def test_building_the_parser_loads_no_solver() -> None:
    """``twill --help`` builds every sub-command's parser; the fronts load a module only when a
    command reads one of its names, so neither the CoSA MIP nor the exact search is imported."""
    code = (
        "import sys, twill.cli; twill.cli.build_parser(); "
        "print(sorted(m for m in ('twill.mapping.cosa.solve', 'twill.mapping.fadiff.pipeline', "
        "'twill.sched.exact.pipeline', 'twill.sched.gaus.pipeline') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
