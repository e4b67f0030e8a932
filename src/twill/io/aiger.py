"""Reader for binary AIGER netlists (``.aig``, format version 1; GauS spec §10.1).

Header ``aig M I L O A``, then ``O`` output literals (ASCII lines), then ``A`` AND gates in
the binary delta encoding: gate ``i`` has ``lhs = 2 (I + L + i + 1)`` and two LEB128-style
7-bit varints ``delta0 = lhs - rhs0`` and ``delta1 = rhs0 - rhs1``. Symbol table and comments
after the gates are ignored. Only combinational netlists (``L = 0``) are accepted.

The netlist becomes an AND-gate DAG (:class:`~twill.sched.gaus.graph.GauSGraph`):

* nodes: primary inputs ``i0 .. i{I-1}`` and AND gates named by their (even) literal index,
  e.g. ``"16"`` (the ``--json`` schedule uses these names);
* edges: one per AND fan-in from a non-constant variable (so twice the gate count, as in the
  spec's table), delay 1 (an AND output is available the step after it is computed), distance 0;
* weights (spec §10.1 recommended defaults, recorded in ``weight_note``): resource ``AND``
  usage 1 per gate and 0 per input; communication 1 per edge; memory 1 bit per node.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twill.errors import InputFormatError
from twill.sched.gaus.graph import GauSGraph

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


def parse_aiger(data: bytes, source: str = "<aig>") -> GauSGraph:
    """Parse binary AIGER bytes (see module docstring)."""
    nl = data.find(b"\n")
    if nl < 0:
        raise InputFormatError("no header line", source=source)
    header = data[:nl].decode("ascii", errors="replace").split()
    if not header or header[0] != "aig":
        what = header[0] if header else "an empty line"
        hint = " (ASCII 'aag' files are not supported)" if header and header[0] == "aag" else ""
        raise InputFormatError(f"header must start with 'aig', found {what!r}{hint}", source=source)
    if len(header) < 6:
        raise InputFormatError(
            f"header must be 'aig M I L O A', found {' '.join(header)!r}", source=source
        )
    try:
        M, I, L, O, A = (int(x) for x in header[1:6])
    except ValueError:
        raise InputFormatError(
            f"header fields M I L O A must be integers, found {' '.join(header[1:6])!r}",
            source=source,
        ) from None
    if min(M, I, L, O, A) < 0:
        raise InputFormatError("header fields must be non-negative", source=source)
    if L != 0:
        raise InputFormatError(
            f"{L} latches: only combinational netlists (L = 0) are supported", source=source
        )
    if M != I + L + A:
        raise InputFormatError(f"header: M = {M} but I + L + A = {I + L + A}", source=source)
    _check_counts(M, O, A, len(data) - nl - 1, source)
    pos = nl + 1
    for k in range(O):
        end = data.find(b"\n", pos)
        if end < 0:
            raise InputFormatError(f"output {k}: file ends before the output list", source=source)
        line = data[pos:end].strip()
        if not line.isdigit() or len(line) > 12 or int(line) > 2 * M + 1:
            raise InputFormatError(
                f"output {k}: expected a literal from 0 to 2M+1 = {2 * M + 1}, found {line[:20]!r}",
                source=source,
            )
        pos = end + 1
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
    n = len(names)
    usage = np.zeros((n, 1, 1))
    usage[I:, 0, 0] = 1.0
    return GauSGraph(
        name=Path(source).stem if source != "<aig>" else "aig",
        names=tuple(names),
        resources=("AND",),
        usage=usage,
        caps=np.array([np.inf]),
        src=np.array(src, dtype=np.int64),
        dst=np.array(dst, dtype=np.int64),
        delay=np.ones(len(src), dtype=np.int64),
        distance=np.zeros(len(src), dtype=np.int64),
        comm=np.ones(len(src)),
        mem=np.ones(n),
        weight_note="AIGER: AND usage 1 per gate, 0 per input; delay 1 and comm 1 per edge; "
        "memory 1 per node; outputs not live-out",
    )


def read_aiger(path: str | Path) -> GauSGraph:
    """Read a binary AIGER ``.aig`` file as an AND-gate DAG.

    Raises
    ------
    InputFormatError
        Bad header, latches, truncated or inconsistent gate encoding (names the file).
    """
    from twill.io.text import MAX_INPUT_BYTES

    p = Path(path)
    if p.is_file() and p.stat().st_size > MAX_INPUT_BYTES:
        raise InputFormatError(
            f"file larger than the {MAX_INPUT_BYTES:,}-byte limit", source=str(p)
        )
    return parse_aiger(p.read_bytes(), source=str(p))
