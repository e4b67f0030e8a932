"""``Einsum`` nodes as layers (docs/onnx.md, "What becomes a layer").

Models written with ``torch.einsum`` keep an ``Einsum`` node under both PyTorch exporters:
attention as ``"bhqd,bhkd->bhqk"``, a projection as ``"btd,dk->btk"``, RoPE's frequency table
as ``"i,j->ij"``. A two-operand einsum in which every index is either shared by both operands
or kept in the output is a batched matrix product, so it is imported like ``MatMul``:

* an index in both operands and the output is a batch index (a group, G);
* an index in both operands only is contracted (C);
* an index of the first operand and the output is a row (P), of the second a column (K).

Its MAC count is exactly G × P × C × K. A one-operand einsum (a transpose, a sum, a trace)
does no multiply and is free; every other form (three or more operands, an index summed over
one operand only, a repeated index) has no layer model and is refused with its equation.
"""

from __future__ import annotations

import string
from typing import Any

__all__ = ["einsum_operands", "einsum_roles"]


def einsum_operands(node: Any) -> int:
    """How many operands an ``Einsum`` node multiplies."""
    return sum(1 for t in node.input if t)


def _equation(node: Any) -> str:
    for a in node.attribute:
        if a.name == "equation":
            raw = a.s
            return (raw.decode() if isinstance(raw, bytes) else str(raw)).replace(" ", "")
    return ""


def _expand(term: str, rank: int, pool: str) -> str:
    """``term`` with ``...`` replaced by the last ``rank - explicit`` letters of ``pool``
    (ellipsis dimensions broadcast from the right)."""
    if "..." not in term:
        if len(term) != rank:
            raise ValueError(f"{term!r} names {len(term)} indices for a rank-{rank} operand")
        return term
    n = rank - (len(term) - 3)
    if n < 0 or n > len(pool):
        raise ValueError(f"{term!r} does not fit a rank-{rank} operand")
    return term.replace("...", pool[len(pool) - n :])


def _terms(equation: str, shapes: list[list[int]]) -> tuple[list[str], str]:
    """The operands' and the output's index letters, ellipses expanded."""
    lhs, arrow, out = equation.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes) or not all(set(t) <= set(string.ascii_letters + ".") for t in ins):
        raise ValueError("not an equation of two operands")
    pool = "".join(c for c in string.ascii_letters if c not in equation)
    pairs = list(zip(ins, shapes, strict=True))
    width = max((len(s) - (len(t) - 3) for t, s in pairs if "..." in t), default=0)
    pool = pool[:width]
    terms = [_expand(t, len(s), pool) for t, s in pairs]
    if arrow:
        return terms, _expand(out, len(out.replace("...", "")) + width, pool)
    once = sorted(c for c in set("".join(terms)) if "".join(terms).count(c) == 1 and c not in pool)
    return terms, pool + "".join(once)


def einsum_roles(node: Any, shapes: list[list[int]]) -> tuple[tuple[int, int, int, int], str]:
    """``((G, P, C, K), "")`` of a two-operand ``Einsum`` with operand shapes ``shapes``, or
    ``((0, 0, 0, 0), reason)`` when it is not a batched matrix product."""
    eq = _equation(node)
    none = (0, 0, 0, 0)
    try:
        (a, b), out = _terms(eq, shapes)
    except ValueError as exc:
        return none, f"equation {eq!r}: {exc}"
    size: dict[str, int] = {}
    for term, shape in ((a, shapes[0]), (b, shapes[1])):
        if len(set(term)) != len(term):
            return none, f"equation {eq!r}: an index repeats within one operand (a diagonal)"
        for c, d in zip(term, shape, strict=True):
            if size.get(c, 1) not in (1, d) and d != 1:
                return none, f"equation {eq!r}: index {c!r} has sizes {size[c]} and {d}"
            size[c] = max(size.get(c, 1), d)
    if len(set(out)) != len(out):  # numpy and onnxruntime refuse it too
        twice = next(c for c in out if out.count(c) > 1)
        return none, f"equation {eq!r}: output index {twice!r} repeats (not a valid einsum)"
    lone = sorted(c for c in set(a) ^ set(b) if c not in out)
    if lone or not set(out) <= set(a) | set(b):
        what = f"sums index {lone[0]!r} over one operand" if lone else "has an unknown output"
        return none, f"equation {eq!r}: {what}, not a matrix product"
    roles = [1, 1, 1, 1]  # G, P, C, K
    for c, n in size.items():
        roles[(0 if c in out else 2) if c in a and c in b else (1 if c in a else 3)] *= n
    g, p, c, k = roles
    return (g, p, c, k), ""
