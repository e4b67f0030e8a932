"""Functions fit on a screen: no function body (docstring excluded) over 80 lines in src/twill.

The functions that are longer today are listed, each to be cut into named steps; an entry must
be removed once its function is short (the test below fails until it is), so the list only
shrinks.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "twill"
MAX_BODY_LINES = 80

# (file relative to src/twill, function name): still too long, to be split (none left; a new
# entry needs a reason in its commit)
TOO_LONG_TODAY: set[tuple[str, str]] = set()


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the end of the function."""
    body = node.body
    has_doc = isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant
    )
    if has_doc and len(body) == 1:
        return 0
    first = body[1] if has_doc else body[0]
    return node.end_lineno - first.lineno + 1  # type: ignore[operator]


@functools.cache
def function_sizes() -> dict[tuple[str, str], int]:
    """``(file, name) -> body lines`` for every function and method in src/twill."""
    out: dict[tuple[str, str], int] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = (rel, node.name)
                out[key] = max(out.get(key, 0), body_lines(node))
    return out


def test_no_new_long_functions() -> None:
    sizes = function_sizes()
    long = sorted(
        f"{f}:{n} ({lines} lines)"
        for (f, n), lines in sizes.items()
        if lines > MAX_BODY_LINES and (f, n) not in TOO_LONG_TODAY
    )
    assert not long, "functions over 80 lines (cut into named steps):\n" + "\n".join(long)


@pytest.mark.parametrize("entry", sorted(TOO_LONG_TODAY), ids=lambda e: f"{e[0]}:{e[1]}")
def test_listed_functions_are_still_long(entry: tuple[str, str]) -> None:
    """A listed function that is now short (or gone) must leave the list."""
    assert function_sizes().get(entry, 0) > MAX_BODY_LINES, f"shortened: delete {entry}"


def test_body_lines_skips_the_docstring() -> None:
    tree = ast.parse('def f():\n    """doc\n    more"""\n    a = 1\n    return a\n')
    assert body_lines(tree.body[0]) == 2  # type: ignore[arg-type]
