"""Reader for AIGER netlists (binary ``.aig`` and ASCII ``.aag``; the EPFL suite).

Binary: header ``aig M I L O A`` (AIGER 1.9 may add ``B C J F``), then ``O`` output literals
(ASCII lines; then the ``B`` bad-state, ``C`` constraint, justice and ``F`` fairness lines of
1.9, skipped), then ``A`` AND gates in the binary delta encoding: gate ``i`` has
``lhs = 2 (I + L + i + 1)`` and two LEB128-style 7-bit varints ``delta0 = lhs - rhs0`` and
``delta1 = rhs0 - rhs1``. ASCII: header ``aag M I L O A``, one literal per input and output
line, then one ``lhs rhs0 rhs1`` line per AND gate, in any order. Symbol table and comments
after the gates are ignored. Only combinational netlists (``L = 0``) are accepted.

The netlist becomes an AND-gate DAG (:class:`~twill.sched.ir.DependenceGraph`):

* nodes: primary inputs ``i0 .. i{I-1}`` and AND gates named by their (even) literal index,
  e.g. ``"16"`` (the ``--json`` schedule uses these names);
* edges: one per AND fan-in from a non-constant variable (so twice the gate count), delay 1
  (an AND output is available the step after it is computed), distance 0;
* weights (``docs/gaus.md``, decision 9; recorded in ``weight_note``): resource ``AND``
  usage 1 per gate and 0 per input (unlimited); communication 1 per edge; memory 1 bit per
  node (memory weight ``unit``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twill.errors import InputFormatError
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription

__all__ = ["read_aiger", "parse_aiger", "MAX_AIGER_VARIABLES"]

MAX_AIGER_VARIABLES = 10_000_000
"""Largest ``M`` (variables) accepted; the EPFL suite's largest netlist has about 1.2e6."""


def _read_varint(data: bytes, pos: int, source: str, gate: int) -> tuple[int, int]:
    x = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise InputFormatError(
                f"AND gate {gate}: file ends inside its delta encoding", source=source
            )
        byte = data[pos]
        pos += 1
        x |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return x, pos
        shift += 7
        if shift > 63:
            raise InputFormatError(f"AND gate {gate}: delta varint too long", source=source)


def _check_counts(M: int, O: int, A: int, body_bytes: int, source: str) -> None:  # noqa: N803
    """Refuse header counts that the file cannot hold, before allocating anything: every
    output takes at least 2 bytes (a digit and a newline), every AND gate at least 1 (its
    two varints; the exact check comes while decoding)."""
    if M > MAX_AIGER_VARIABLES:
        raise InputFormatError(
            f"header claims M = {M:,} variables; the limit is {MAX_AIGER_VARIABLES:,}",
            source=source,
        )
    need = 2 * O + A
    if need > body_bytes:
        raise InputFormatError(
            f"header claims {O:,} outputs and {A:,} AND gates (at least {need:,} bytes) but "
            f"only {body_bytes:,} bytes follow it",
            source=source,
        )


def parse_aiger(data: bytes, source: str = "<aig>") -> DependenceGraph:
    """Parse AIGER bytes, binary or ASCII (see module docstring)."""
    nl = data.find(b"\n")
    if nl < 0:
        raise InputFormatError("no header line", source=source)
    header = data[:nl].decode("ascii", errors="replace").split()
    if not header or header[0] not in ("aig", "aag"):
        what = header[0] if header else "an empty line"
        raise InputFormatError(
            f"header must start with 'aig' or 'aag', found {what!r}", source=source
        )
    if not 6 <= len(header) <= 10:
        raise InputFormatError(
            f"header must be '{header[0]} M I L O A [B C J F]', found {' '.join(header)!r}",
            source=source,
        )
    try:
        M, I, L, O, A, *extra = (int(x) for x in header[1:])
    except ValueError:
        raise InputFormatError(
            f"header fields must be integers, found {' '.join(header[1:])!r}",
            source=source,
        ) from None
    if min(M, I, L, O, A, *extra) < 0:
        raise InputFormatError("header fields must be non-negative", source=source)
    if L != 0:
        raise InputFormatError(
            f"{L} latches: only combinational netlists (L = 0) are supported", source=source
        )
    if header[0] == "aag":
        _check_counts(M, 0, 0, 0, source)  # lines are read one by one: only M allocates
        return _parse_ascii(data[nl + 1 :], source, M, I, O, A, extra)
    if M != I + L + A:
        raise InputFormatError(f"header: M = {M} but I + L + A = {I + L + A}", source=source)
    _check_counts(M, O, A, len(data) - nl - 1, source)
    lines, pos = _skip_lines(data, nl + 1, O, extra, source, M)
    del lines
    names = [f"i{k}" for k in range(I)]
    var_node = np.full(M + 1, -1, dtype=np.int64)  # variable index -> node index
    var_node[1 : I + 1] = np.arange(I)
    src: list[int] = []
    dst: list[int] = []
    for gidx in range(A):
        lhs = 2 * (I + L + gidx + 1)
        d0, pos = _read_varint(data, pos, source, gidx)
        d1, pos = _read_varint(data, pos, source, gidx)
        rhs0 = lhs - d0
        rhs1 = rhs0 - d1
        if d0 == 0 or rhs0 < 0 or rhs1 < 0:
            raise InputFormatError(
                f"AND gate {gidx} (literal {lhs}): invalid deltas {d0}, {d1}", source=source
            )
        node = len(names)
        names.append(str(lhs))
        var_node[lhs // 2] = node
        for rhs in (rhs0, rhs1):
            var = rhs // 2
            if var == 0:
                continue  # constant
            if var_node[var] < 0:
                raise InputFormatError(
                    f"AND gate {gidx} (literal {lhs}): fan-in literal {rhs} is not defined "
                    "before it",
                    source=source,
                )
            src.append(int(var_node[var]))
            dst.append(node)
    return _and_graph(source, names, I, src, dst)


def _line(data: bytes, pos: int, what: str, source: str) -> tuple[bytes, int]:
    end = data.find(b"\n", pos)
    if end < 0:
        raise InputFormatError(f"{what}: file ends before it", source=source)
    return data[pos:end].strip(), end + 1


def _skip_lines(
    data: bytes, pos: int, O: int, extra: list[int], source: str, M: int
) -> tuple[list[bytes], int]:
    """The ``O`` output lines and the AIGER 1.9 property lines after them (``B``, ``C``,
    justice sizes and literals, ``F``); returns the lines and the position after them. Every
    literal names a variable of the header's ``M`` (at most ``2 M + 1``)."""
    B, C, J, F = (*extra, 0, 0, 0, 0)[:4]
    out: list[bytes] = []
    for k in range(O + B + C):
        what = f"output {k}" if k < O else f"property line {k - O}"
        line, pos = _line(data, pos, what, source)
        if not line.isdigit() or len(line) > 12:
            raise InputFormatError(f"{what}: expected a literal, found {line[:20]!r}",
                                   source=source)  # fmt: skip
        if int(line) > 2 * M + 1:
            raise InputFormatError(
                f"{what}: literal {int(line)} names variable {int(line) // 2}, but the header "
                f"has M = {M} (literals 0 to {2 * M + 1})",
                source=source,
            )
        out.append(line)
    sizes = []
    for k in range(J):
        line, pos = _line(data, pos, f"justice property {k}", source)
        if not line.isdigit() or len(line) > 12:
            raise InputFormatError(f"justice property {k}: expected a size", source=source)
        sizes.append(int(line))
    for k in range(sum(sizes) + F):
        line, pos = _line(data, pos, f"justice/fairness literal {k}", source)
        if not line.isdigit() or int(line[:13]) > 2 * M + 1:
            raise InputFormatError(
                f"justice/fairness literal {k}: expected a literal 0 to {2 * M + 1}, found "
                f"{line[:20]!r}",
                source=source,
            )
    return out, pos


def _parse_ascii(
    body: bytes, source: str, M: int, I: int, O: int, A: int, extra: list[int]
) -> DependenceGraph:
    """ASCII AIGER after the header line (gates in any order, checked to form a DAG)."""
    pos = 0
    var_node = np.full(M + 1, -1, dtype=np.int64)
    names: list[str] = []
    for k in range(I):
        line, pos = _line(body, pos, f"input {k}", source)
        if not line.isdigit() or int(line) % 2 or not 0 < int(line) // 2 <= M:
            raise InputFormatError(f"input {k}: invalid literal {line[:20]!r}", source=source)
        var_node[int(line) // 2] = k
        names.append(f"i{k}")
    _, pos = _skip_lines(body, pos, O, extra, source, M)
    gates = []
    for k in range(A):
        line, pos = _line(body, pos, f"AND gate {k}", source)
        parts = line.split()
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise InputFormatError(f"AND gate {k}: expected 'lhs rhs0 rhs1'", source=source)
        lhs, r0, r1 = (int(p) for p in parts)
        if lhs % 2 or not 0 < lhs // 2 <= M or max(r0, r1) // 2 > M or var_node[lhs // 2] >= 0:
            raise InputFormatError(
                f"AND gate {k}: invalid or repeated literal {lhs}", source=source
            )
        var_node[lhs // 2] = len(names)
        names.append(str(lhs))
        gates.append((r0, r1))
    src: list[int] = []
    dst: list[int] = []
    for k, (r0, r1) in enumerate(gates):
        for rhs in (r0, r1):
            if rhs // 2 == 0:
                continue
            if var_node[rhs // 2] < 0:
                raise InputFormatError(
                    f"AND gate {k}: fan-in literal {rhs} is not defined", source=source
                )
            src.append(int(var_node[rhs // 2]))
            dst.append(I + k)
    _check_acyclic(len(names), src, dst, source)
    return _and_graph(source, names, I, src, dst)


def _check_acyclic(n: int, src: list[int], dst: list[int], source: str) -> None:
    """Kahn's algorithm: every node must get a topological position."""
    indeg = np.bincount(np.asarray(dst, dtype=np.int64), minlength=n)
    order = np.argsort(np.asarray(src, dtype=np.int64), kind="stable")
    s_sorted = np.asarray(src, dtype=np.int64)[order]
    d_sorted = np.asarray(dst, dtype=np.int64)[order]
    ptr = np.searchsorted(s_sorted, np.arange(n + 1))
    stack = list(np.flatnonzero(indeg == 0))
    seen = 0
    while stack:
        u = stack.pop()
        seen += 1
        for v in d_sorted[ptr[u] : ptr[u + 1]]:
            indeg[v] -= 1
            if indeg[v] == 0:
                stack.append(v)
    if seen < n:
        raise InputFormatError("AND gates form a cycle", source=source)


def _and_graph(
    source: str, names: list[str], I: int, src: list[int], dst: list[int]
) -> DependenceGraph:
    """The AND-gate DAG with the default weights (module docstring)."""
    gate, pin = {"AND": (1,)}, {"AND": (0,)}
    instructions = tuple(Instruction(x, 1, pin if i < I else gate) for i, x in enumerate(names))
    return DependenceGraph(
        Path(source).stem if source != "<aig>" else "aig",
        instructions,
        tuple(Edge(names[u], names[v], 1) for u, v in zip(src, dst, strict=True)),
        MachineDescription("aig", {"AND": MachineDescription.UNLIMITED}),
        memory_weight="unit",
        weight_note="AIGER: AND usage 1 per gate, 0 per input; delay 1 and comm 1 per edge; "
        "memory 1 per node; outputs not live-out",
    )


def read_aiger(path: str | Path) -> DependenceGraph:
    """Read an AIGER file (binary ``aig`` or ASCII ``aag``) as an AND-gate DAG.

    Raises
    ------
    InputFormatError
        Bad header, latches, truncated or inconsistent gate encoding (names the file).
    """
    from twill.text import check_input_file

    p = check_input_file(path)
    return parse_aiger(p.read_bytes(), source=str(p))
