"""A small text reader for Triton's TTGIR (MLIR after layout assignment).

It reads the whole body of the kernel's ``tt.func`` (every block of an early return included)
into operations:

* every operation line ``%r = dialect.op operands : types loc(#locN)``, with its result values
  (``%r``, or ``%r#0..%r#k-1`` for ``%r:k``), the SSA values it uses, the types on its line and
  its source location;
* region operations (``scf.for``, ``scf.while``, ``scf.if``, ``tt.reduce``, ``tt.scan``, ...)
  keep their regions as lists of operations (``regions``; ``body`` is the first one), and the
  text of the closing line (``tail``), where MLIR's generic form prints the result type
  (``}) : (tensor<64x128xf32>) -> tensor<64xf32>``) and every region op its location; the uses
  of a region op are its own operands followed by every outer value used inside its regions.

Checks (a malformed file is an :class:`~twill.errors.InputFormatError` naming the TTGIR line):
balanced regions; every tensor/memdesc type has positive dimensions and a known element type;
every SSA value is defined once in its scope and before it is used (function arguments, block
arguments and loop-carried values included); an ``scf.for`` that carries values ends in an
``scf.yield`` of as many values.

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

__all__ = [
    "TtgirOp",
    "TtgirModule",
    "parse_ttgir",
    "element_bits",
    "ELEMENT_TYPES",
    "LOC_DEF",
    "OP_NAME",
    "RESULTS",
    "SHAPE",
]

_VALUE = re.compile(r"%[A-Za-z0-9_$.-]+(?:#\d+)?")
#: The results ``%a, %b:2 =`` that open an operation's line (the names in group 1).
RESULTS = re.compile(
    r"^\s*((?:%[A-Za-z0-9_$.-]+(?::\d+)?\s*,\s*)*%[A-Za-z0-9_$.-]+(?::\d+)?)\s*=\s*"
)
#: An operation's name at the start of the text after ``=`` (generic form quoted or not):
#: the one pattern every reader of TTGIR lines uses.
OP_NAME = re.compile(r'^\s*"?([a-z_][a-z0-9_]*\.[a-z0-9_.]+)"?')
_LOC_TAIL = re.compile(r"loc\((#loc\d*)\)\s*$")
#: A location alias's definition line, ``#locN = loc(...)``: (alias, what it stands for).
LOC_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_ALIAS_DEF = re.compile(r"^(#[A-Za-z_][\w]*)\s*=\s*(.*)$")
_FILE_LINE = re.compile(r'"([^"]+)":(\d+):\d+')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
#: A static tensor or shared-memory type: (``"128x64x"`` dims, element type).
SHAPE = re.compile(r"(?:tensor|memdesc)<((?:\d+x)+)([A-Za-z][A-Za-z0-9]*)")
_TYPE = re.compile(r"\b(tensor|memdesc)<((?:-?\d+x)*)([^,>\s]*)")
#: Element types a tensor or buffer of Triton's TTGIR may hold.
ELEMENT_TYPES = frozenset(
    "i1 i8 i16 i32 i64 f16 bf16 f32 f64 tf32 f8E4M3FN f8E5M2 f8E4M3FNUZ f8E5M2FNUZ "
    "f8E4M3B11FNUZ f8E8M0FNU f4E2M1FN f6E2M3FN f6E3M2FN index".split()
)
_REGION_OPEN = ("{", "({")


def element_bits(element: str) -> int:
    """Bits of one element of type ``element`` (``f8E4M3FN``: 8; a pointer: 64)."""
    if element.startswith("!tt.ptr") or element == "index":
        return 64
    m = re.search(r"\d+", element)
    return int(m.group(0)) if m else 32


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
        SSA values it uses, in textual order (for region ops: then every value used inside the
        regions that is not defined there).
    text
        The operation's first line (types and attributes included).
    loc
        ``#locN`` alias of the operation (resolved with :meth:`TtgirModule.source_line`).
    line
        1-based line number of the operation in the TTGIR text.
    body
        The first region (an ``scf.for`` body; empty for an op without regions).
    iter_args
        For ``scf.for`` and ``scf.while``: (region argument, initial value) pairs.
    regions
        Every region, in order (``scf.if``: then, else; ``scf.while``: before, after).
    tail
        A region op's closing line (result types of the generic form, location).
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
    regions: list[list[TtgirOp]] = field(default_factory=list)
    tail: str = ""

    @property
    def type_text(self) -> str:
        """The text that holds the op's types: the first line, and for a region op the
        closing line too (the generic form prints ``(inputs) -> results`` there)."""
        return f"{self.text} {self.tail}" if self.tail else self.text


@dataclass
class TtgirModule:
    """A parsed TTGIR module: the ops of its first public ``tt.func`` and the location table."""

    function: str
    ops: list[TtgirOp]
    locs: dict[str, str]
    target: str | None
    source: str
    num_warps: int = 4
    aliases: dict[str, str] = field(default_factory=dict)

    def loc_name(self, loc: str | None) -> str | None:
        """The variable name Triton attached to a location (``loc("acc"(#loc9))``), if any."""
        m = re.match(r'"([A-Za-z_]\w*)"\(', self.locs.get(loc or "", ""))
        return m.group(1) if m else None

    def source_line(self, loc: str | None) -> str:
        """``file:line`` of a ``#locN`` alias (``"unknown"`` when it cannot be resolved).

        A call site's chain may hold several places (``callsite(callee at caller)``): the one
        in the kernel's own file wins (a ``tl.sum`` is reported at the kernel's line, not in
        Triton's library), else the first (the callee, the line that wrote the operation)."""
        places = self._places(loc, set())
        own = [p for p in places if p[0] == self.kernel_file]
        if own or places:
            file, line = (own or places)[0]
            return f"{file}:{line}"
        return "unknown"

    def _places(self, loc: str | None, seen: set[str]) -> list[tuple[str, str]]:
        if loc is None or loc in seen or len(seen) > 64:
            return []
        seen.add(loc)
        text = self.locs.get(loc, "")
        out: list[tuple[str, str]] = []
        for m in re.finditer(r'"([^"]+)":(\d+):\d+|(#loc\d*)', text):
            out += [(m.group(1), m.group(2))] if m.group(1) else self._places(m.group(3), seen)
        return out

    @property
    def kernel_file(self) -> str | None:
        """The file of the kernel's own definition (its ``tt.func`` location)."""
        m = _FILE_LINE.search(self.locs.get("#loc", ""))
        return m.group(1) if m else None

    def line_number(self, op: TtgirOp) -> int:
        """The kernel source line of ``op`` (its TTGIR line when the location is unknown)."""
        where = self.source_line(op.loc)
        return int(where.rsplit(":", 1)[1]) if where != "unknown" else op.line

    def call_lines(self, op: TtgirOp) -> tuple[int, ...]:
        """The kernel-file lines of the calls through which ``op`` was inlined, innermost
        first (empty for an op written in the kernel itself): a helper called twice gives
        two loops at one source line, told apart by these."""
        own = [int(line) for f, line in self._places(op.loc, set()) if f == self.kernel_file]
        return tuple(own[1:])


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


def _strip_loc(text: str) -> str:
    return re.sub(r"loc\((?:[^()]|\([^()]*\))*\)", "", text)


def _uses(text: str) -> list[str]:
    """SSA values named in ``text`` outside locations and string attributes (an inline-asm
    string may hold PTX registers such as ``%r1``)."""
    return _VALUE.findall(_STRING.sub('""', _strip_loc(text)))


def _parse_line(text: str, number: int) -> TtgirOp | None:
    """The operation on one line, or ``None`` for lines that are not operations."""
    m = RESULTS.match(text)
    results = _split_results(m.group(1)) if m else []
    rest = text[m.end() :] if m else text
    name = OP_NAME.match(rest)
    if name is None:
        return None
    loc = _LOC_TAIL.search(text)
    operands = [v for v in _uses(rest[name.end() :]) if v not in results]
    return TtgirOp(
        name.group(1), results, operands, text.strip(), loc.group(1) if loc else None, number
    )


def _header_args(op: TtgirOp) -> list[str]:
    """Fill ``iter_args``, ``induction`` and ``operands`` of an ``scf.for`` or ``scf.while``
    from its header line; returns the values its first region defines."""
    head = _STRING.sub('""', _strip_loc(op.text)).split(op.name, 1)[1]  # after "%r:k = op"
    m = re.match(r"\s*(%[\w$.-]+)\s*=", head)
    op.induction = m.group(1) if m and op.name == "scf.for" else None
    pattern = r"iter_args\((.*?)\)\s*->" if op.name == "scf.for" else r"^\s*\((.*?)\)\s*:"
    ia = re.search(pattern, head)
    pairs: list[tuple[str, str]] = []
    for part in ia.group(1).split(",") if ia else []:
        if "=" in part:
            arg, init = (s.strip() for s in part.split("=", 1))
            pairs.append((arg, init))
    op.iter_args = pairs
    inner = [a for a, _ in pairs] + ([op.induction] if op.induction else [])
    bounds = head[: ia.start()] if ia else head.split("{")[0]
    op.operands = [v for v in _VALUE.findall(bounds) if v not in inner]
    op.operands += [init for _, init in pairs]
    return inner


class _Scopes:
    """Visible SSA values, one set per open region (checks definitions and uses)."""

    def __init__(self, source: str) -> None:
        self.stack: list[set[str]] = [set()]
        self.source = source

    def visible(self, value: str) -> bool:
        return any(value in s for s in self.stack)

    def define(self, values: list[str], number: int) -> None:
        for v in values:
            if self.visible(v):
                raise InputFormatError(
                    f"line {number}: SSA value {v} is defined twice", source=self.source
                )
            self.stack[-1].add(v)

    def use(self, values: list[str], number: int) -> None:
        for v in values:
            if not self.visible(v):
                raise InputFormatError(
                    f"line {number}: SSA value {v} is used but never defined before",
                    source=self.source,
                )


def _check_types(text: str, number: int, source: str) -> None:
    """Every tensor/memdesc type on a line: positive dimensions and a known element type."""
    for kind, dims, elem in _TYPE.findall(_STRING.sub('""', _strip_loc(text))):
        for d in dims.rstrip("x").split("x") if dims else []:
            if int(d) <= 0:
                raise InputFormatError(
                    f"line {number}: {kind} dimension {d} is not positive", source=source
                )
        if not elem.startswith("!tt.ptr") and elem not in ELEMENT_TYPES:
            raise InputFormatError(
                f"line {number}: unknown element type {elem!r} in a {kind} type (known: "
                f"{', '.join(sorted(ELEMENT_TYPES))}, !tt.ptr<...>)",
                source=source,
            )


@dataclass
class _Open:
    """A region op whose regions are being read."""

    op: TtgirOp
    body: list[TtgirOp]
    inner: list[str]  # values its first region defines (loop counter, carried values)


class _Reader:
    """One pass over the function's lines, keeping the open regions on a stack."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.top: list[TtgirOp] = []
        self.stack: list[_Open] = []
        self.scopes = _Scopes(source)

    def block(self, line: str, number: int) -> None:
        """``^bbN(%a: type, ...):``: block arguments (top level: an early return's blocks)."""
        args = _uses(line)
        if not self.stack:  # blocks of the function body: one scope (dominance not checked)
            self.scopes.define([a for a in args if not self.scopes.visible(a)], number)
            return
        self.scopes.define(args, number)
        self.stack[-1].body.append(TtgirOp("^bb", args, [], line, None, number))

    def close(self, line: str, number: int) -> None:
        if not self.stack:
            raise InputFormatError(f"line {number}: unbalanced '}}'", source=self.source)
        current = self.stack[-1]
        current.op.regions.append(current.body)
        self.scopes.stack.pop()
        if line.endswith("{"):  # "} else {", "} do {": the op continues with another region
            current.body = []
            self.scopes.stack.append(set())
            return
        self.stack.pop()
        op = current.op
        op.tail = line
        loc = _LOC_TAIL.search(line)
        if loc:  # a region op carries its location on its closing line
            op.loc = loc.group(1)
        _check_types(line, number, self.source)
        op.body = op.regions[0] if op.regions else []
        _absorb(op)
        if op.name == "scf.for" and op.iter_args:
            last = op.body[-1] if op.body else None
            if last is None or last.name != "scf.yield" or len(last.operands) != len(op.iter_args):
                raise InputFormatError(
                    f"line {op.line}: scf.for carries {len(op.iter_args)} value(s) but its body "
                    "does not end in an scf.yield of as many values",
                    source=self.source,
                )

    def operation(self, raw: str, number: int) -> None:
        op = _parse_line(raw, number)
        if op is None:
            return
        _check_types(raw, number, self.source)
        inner = _header_args(op) if op.name in ("scf.for", "scf.while") else []
        self.scopes.use(op.operands, number)
        self.scopes.define(op.results, number)
        (self.stack[-1].body if self.stack else self.top).append(op)
        if raw.rstrip().endswith(_REGION_OPEN):
            self.stack.append(_Open(op, [], inner))
            self.scopes.stack.append(set())
            self.scopes.define(inner, number)


def _absorb(op: TtgirOp) -> None:
    """A region op also uses every outer value its regions use."""
    defined = {a for a, _ in op.iter_args} | ({op.induction} if op.induction else set())
    for region in op.regions:
        for inner in region:
            defined.update(inner.results)
    for region in op.regions:
        for inner in region:
            for v in inner.operands:
                if v not in defined and v not in op.operands:
                    op.operands.append(v)


def _function_args(line: str) -> list[str]:
    return _uses(line)


def parse_ttgir(text: str, source: str = "<ttgir>") -> TtgirModule:
    """Parse TTGIR text into a :class:`TtgirModule` (the first public ``tt.func``, else the
    first ``tt.func``).

    Raises
    ------
    InputFormatError
        No ``tt.func`` in the text, unbalanced regions, a malformed type, an SSA value used
        before its definition or defined twice, or a loop without its ``scf.yield``.
    """
    locs: dict[str, str] = {}
    aliases: dict[str, str] = {}
    lines = text.splitlines()
    start = _function_start(lines, source)
    reader = _Reader(source)
    function = re.match(r"tt\.func\s+(?:public\s+|private\s+)?@([\w$.]+)", lines[start].strip())
    reader.scopes.define(_function_args(lines[start]), start + 1)
    end = None
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        loc_def = LOC_DEF.match(line)
        if loc_def:
            locs[loc_def.group(1)] = loc_def.group(2)
            continue
        alias = _ALIAS_DEF.match(line)
        if alias and not line.startswith("#loc"):
            aliases[alias.group(1)] = alias.group(2)
            continue
        if number <= start + 1 or end is not None:
            continue
        if line.startswith("}") and not reader.stack:
            end = number
        elif line.startswith("^bb"):
            reader.block(line, number)
        elif line.startswith("}"):
            reader.close(line, number)
        else:
            reader.operation(raw, number)
    if reader.stack:
        raise InputFormatError(
            f"line {reader.stack[-1].op.line}: unclosed region of {reader.stack[-1].op.name}",
            source=source,
        )
    if end is None:
        raise InputFormatError(f"line {start + 1}: tt.func is never closed", source=source)
    target = re.search(r'ttg\.target\s*=\s*"([^"]+)"', text)
    warps = re.search(r'"ttg\.num-warps"\s*=\s*(\d+)', text)
    return TtgirModule(
        function.group(1) if function else "kernel",
        reader.top,
        locs,
        target.group(1) if target else None,
        source,
        int(warps.group(1)) if warps else 4,
        aliases,
    )


def _function_start(lines: list[str], source: str) -> int:
    """Index of the kernel's ``tt.func`` line (the first public one, else the first)."""
    funcs = [k for k, raw in enumerate(lines) if raw.strip().startswith("tt.func")]
    if not funcs:
        raise InputFormatError("no tt.func in the TTGIR text", source=source)
    public = [k for k in funcs if lines[k].strip().startswith("tt.func public")]
    return (public or funcs)[0]
