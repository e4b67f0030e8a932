"""A small text reader for Triton's TTGIR (MLIR after layout assignment).

It reads just enough of the textual IR to find loops and build dependence graphs:

* every operation line ``%r = dialect.op operands : types loc(#locN)`` inside ``tt.func``,
  with its result values (``%r``, or ``%r#0..%r#k-1`` for ``%r:k``), the SSA values it uses,
  the types of its results and its source location;
* ``scf.for`` operations with their ``iter_args`` and the nested body (a list of operations),
  and the ``scf.yield`` at the end of the body;
* other region operations (``tt.reduce`` with its combiner, ``scf.if``) are kept as **one**
  operation whose uses are every outer value referenced inside the region.

Source locations: the ``#locN = loc(...)`` aliases at the end of the module are resolved to
``file:line`` (a ``callsite(callee at caller)`` resolves to the callee's line, i.e. the line
that wrote the operation).

Preconditions: TTGIR as printed by ``triton.compile(...).asm["ttgir"]`` (one operation per
line, MLIR's generic ``"op"(...)`` form only for region operations). No Triton import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from twill.errors import InputFormatError

__all__ = ["TtgirOp", "TtgirModule", "parse_ttgir"]

_VALUE = re.compile(r"%[A-Za-z0-9_$.-]+(?:#\d+)?")
_RESULTS = re.compile(
    r"^\s*((?:%[A-Za-z0-9_$.-]+(?::\d+)?\s*,\s*)*%[A-Za-z0-9_$.-]+(?::\d+)?)\s*=\s*"
)
_OPNAME = re.compile(r'^\s*"?([a-z_][a-z0-9_]*\.[a-z0-9_.]+)"?')
_LOC_TAIL = re.compile(r"loc\((#loc\d*)\)\s*$")
_LOC_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_FILE_LINE = re.compile(r'"([^"]+)":(\d+):\d+')
_LOC_REF = re.compile(r"#loc\d*")


@dataclass
class TtgirOp:
    """One operation of a TTGIR function body.

    Attributes
    ----------
    name
        Operation name, e.g. ``ttng.warp_group_dot``.
    results
        SSA values it defines (``%x#1`` for the second result of ``%x:2``).
    operands
        SSA values it uses, in textual order (for region ops: every value used inside the region
        that is not defined there).
    text
        The operation's first line (types and attributes included).
    loc
        ``#locN`` alias of the operation (resolved with :meth:`TtgirModule.source_line`).
    line
        1-based line number of the operation in the TTGIR text.
    body
        Nested operations of an ``scf.for`` (empty otherwise).
    iter_args
        For ``scf.for``: (region argument, initial value) pairs.
    """

    name: str
    results: list[str]
    operands: list[str]
    text: str
    loc: str | None
    line: int
    body: list[TtgirOp] = field(default_factory=list)
    iter_args: list[tuple[str, str]] = field(default_factory=list)
    induction: str | None = None


@dataclass
class TtgirModule:
    """A parsed TTGIR module: the ops of its first ``tt.func`` and the location table."""

    function: str
    ops: list[TtgirOp]
    locs: dict[str, str]
    target: str | None
    source: str

    def loc_name(self, loc: str | None) -> str | None:
        """The variable name Triton attached to a location (``loc("acc"(#loc9))``), if any."""
        m = re.match(r'"([A-Za-z_]\w*)"\(', self.locs.get(loc or "", ""))
        return m.group(1) if m else None

    def source_line(self, loc: str | None) -> str:
        """``file:line`` of a ``#locN`` alias (``"unknown"`` when it cannot be resolved)."""
        seen: set[str] = set()
        while loc is not None and loc not in seen:
            seen.add(loc)
            text = self.locs.get(loc, "")
            m = _FILE_LINE.search(text)
            if m:
                return f"{m.group(1)}:{m.group(2)}"
            refs = _LOC_REF.findall(text)
            loc = refs[0] if refs else None
        return "unknown"


def _split_results(head: str) -> list[str]:
    out: list[str] = []
    for part in head.split(","):
        part = part.strip()
        if ":" in part:
            base, count = part.split(":")
            out += [f"{base}#{k}" for k in range(int(count))]
        else:
            out.append(part)
    return out


def _parse_line(text: str, number: int) -> TtgirOp | None:
    """The operation on one line, or ``None`` for lines that are not operations."""
    m = _RESULTS.match(text)
    results = _split_results(m.group(1)) if m else []
    rest = text[m.end() :] if m else text
    name = _OPNAME.match(rest)
    if name is None:
        return None
    loc = _LOC_TAIL.search(text)
    body_text = rest[name.end() :]
    operands = [v for v in _VALUE.findall(_strip_loc(body_text)) if v not in results]
    return TtgirOp(name.group(1), results, operands, text.strip(), loc.group(1) if loc else None,
                   number)  # fmt: skip


def _strip_loc(text: str) -> str:
    return re.sub(r"loc\((?:[^()]|\([^()]*\))*\)", "", text)


def _for_header(op: TtgirOp) -> None:
    """Fill ``iter_args`` and ``induction`` of an ``scf.for`` from its header line."""
    m = re.search(r"scf\.for\s+(%[\w$.-]+)\s*=", op.text)
    op.induction = m.group(1) if m else None
    ia = re.search(r"iter_args\((.*?)\)\s*->", op.text)
    pairs: list[tuple[str, str]] = []
    if ia:
        for part in ia.group(1).split(","):
            if "=" in part:
                arg, init = (s.strip() for s in part.split("=", 1))
                pairs.append((arg, init))
    op.iter_args = pairs
    inner = {a for a, _ in pairs} | ({op.induction} if op.induction else set())
    bounds = op.text.split("iter_args")[0] if pairs else op.text.split("{")[0]
    op.operands = [v for v in _VALUE.findall(bounds) if v not in inner]
    op.operands += [init for _, init in pairs]


def _close_region(stack: list[tuple[TtgirOp, list[TtgirOp]]]) -> None:
    """Pop the innermost region; a non-``scf.for`` region op absorbs its inner uses."""
    op, body = stack.pop()
    if op.name == "scf.for":
        op.body = body
        return
    defined = {r for inner in body for r in inner.results}  # block arguments included
    for inner in body:
        for v in inner.operands:
            if v not in defined and v not in op.operands:
                op.operands.append(v)


def parse_ttgir(text: str, source: str = "<ttgir>") -> TtgirModule:
    """Parse TTGIR text into a :class:`TtgirModule`.

    Raises
    ------
    InputFormatError
        No ``tt.func`` in the text, or unbalanced regions.
    """
    locs: dict[str, str] = {}
    top: list[TtgirOp] = []
    stack: list[tuple[TtgirOp, list[TtgirOp]]] = []
    function: str | None = None
    target = re.search(r'ttg\.target\s*=\s*"([^"]+)"', text)
    in_func = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        loc_def = _LOC_DEF.match(line)
        if loc_def:
            locs[loc_def.group(1)] = loc_def.group(2)
            continue
        if not in_func:
            m = re.match(r"tt\.func\s+(?:public\s+|private\s+)?@([\w$.]+)", line)
            if m and function is None:
                function, in_func = m.group(1), True
            continue
        if line.startswith("tt.return") or (line.startswith("}") and not stack):
            in_func = False
            continue
        if line.startswith("^bb"):
            if stack:
                args = _VALUE.findall(_strip_loc(line))
                stack[-1][1].append(TtgirOp("^bb", args, [], line, None, number))
            continue
        if line.startswith("}"):
            if not stack:
                raise InputFormatError(f"line {number}: unbalanced '}}'", source=source)
            if line.endswith("{"):  # "} else {": the region op continues with a second region
                continue
            loc = _LOC_TAIL.search(line)
            if loc:  # a region op carries its location on its closing line
                stack[-1][0].loc = loc.group(1)
            _close_region(stack)
            continue
        op = _parse_line(raw, number)
        if op is None:
            continue
        if op.name == "scf.for":
            _for_header(op)
        (stack[-1][1] if stack else top).append(op)
        if line.endswith("{") or line.endswith("({"):
            stack.append((op, []))
    if function is None:
        raise InputFormatError("no tt.func in the TTGIR text", source=source)
    if stack:
        raise InputFormatError(f"unclosed region of {stack[-1][0].name}", source=source)
    return TtgirModule(function, top, locs, target.group(1) if target else None, source)
