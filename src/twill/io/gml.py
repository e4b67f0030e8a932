"""Reader for GS-Schedule's GML graphs (``Yu-Maryland/Differentiable_Scheduler_ICML24``).

NetworkX-style GML: ``graph [ directed 1 node [ id I label "L" parameter W ] ...
edge [ source U target V name "K" parameter C ] ]``. ``parameter`` on a node is its
memory/resource weight ``w_i``; on an edge it is a communication weight that GS-Schedule
binarises (``> 0 -> 1``), and so does this reader.

The graph becomes a :class:`~twill.sched.ir.DependenceGraph` with one functional unit ``mem``
(usage ``w_i`` for one step, unlimited), edge delay 0 (GS-Schedule's non-strict precedence
``s_u <= s_v``), communication weight ``[c > 0]`` and memory weight ``w_i`` (the footprint in
memory ``mem``). Node names are the GML ids as strings.

Validate, then build: every defect found (missing keys, non-integer values, unknown or
duplicate ids, negative weights, cycles) is reported at once with the file and item.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from twill.errors import InputFormatError, InvalidProblemError
from twill.sched.gaus.graph import gaus_view, topological_generations
from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
from twill.text import read_text_file
from twill.yaml_safe import short_repr

__all__ = ["read_gml", "parse_gml", "MAX_GML_DEPTH", "MAX_GML_VALUE"]

_TOKEN = re.compile(r'\s*(?:(\[)|(\])|("(?:[^"\\]|\\.)*")|([^\s\[\]"]+))')


def _tokens(text: str, source: str) -> list[str]:
    out: list[str] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise InputFormatError(
                f"unexpected text at offset {pos}: {short_repr(text[pos : pos + 20])}",
                source=source,
            )
        pos = m.end()
        tok = next(g for g in m.groups() if g is not None)
        out.append(tok)
    return out


MAX_GML_DEPTH = 32
"""Deepest ``[ ... ]`` nesting accepted (GS-Schedule files use 2)."""

MAX_GML_VALUE = 10**15
"""Largest id or parameter accepted (weights become float64; ids index arrays)."""


def _parse_list(tokens: list[str], i: int, source: str) -> tuple[list[tuple[str, object]], int]:
    """Parse ``key value`` pairs from ``tokens[i]`` up to the ``]`` that closes them.

    Iterative, with nesting limited to :data:`MAX_GML_DEPTH` (no recursion to exhaust).
    Returns the items and the index after the closing bracket.
    """
    root: list[tuple[str, object]] = []
    stack = [root]
    while i < len(tokens):
        key = tokens[i]
        if key == "]":
            stack.pop()
            i += 1
            if not stack:
                return root, i
            continue
        if key == "[":
            raise InputFormatError(f"'[' without a key (token {i})", source=source)
        if i + 1 >= len(tokens):
            raise InputFormatError(f"key {key!r} has no value (file ends)", source=source)
        val = tokens[i + 1]
        if val == "[":
            if len(stack) >= MAX_GML_DEPTH:
                raise InputFormatError(
                    f"lists nested deeper than {MAX_GML_DEPTH} levels (key {key!r})",
                    source=source,
                )
            sub: list[tuple[str, object]] = []
            stack[-1].append((key, sub))
            stack.append(sub)
        elif val == "]":
            raise InputFormatError(f"key {key!r} has no value", source=source)
        else:
            stack[-1].append((key, val.strip('"') if val.startswith('"') else val))
        i += 2
    raise InputFormatError("unbalanced brackets: 'graph [' is not closed", source=source)


def parse_gml(text: str, source: str = "<gml>") -> DependenceGraph:
    """Parse GS-Schedule GML text (see module docstring)."""
    tokens = _tokens(text, source)
    if len(tokens) < 2 or tokens[0] != "graph" or tokens[1] != "[":
        raise InputFormatError("expected 'graph [' at the start", source=source)
    items, end = _parse_list(tokens, 2, source)
    if end < len(tokens):
        raise InputFormatError(
            f"trailing text after the graph's closing ']': {short_repr(tokens[end])}",
            source=source,
        )
    nodes, edges, defects = _nodes_and_edges(items)
    if defects:
        raise InvalidProblemError(defects, source=source)
    g = _dependence_graph(nodes, edges, source)
    try:
        topological_generations(gaus_view(g))
    except InvalidProblemError as exc:
        raise exc.with_source(source) from None
    return g


class _Defects(list):
    """The defects found so far, and the integer reader that records them."""

    def as_int(self, value: object, where: str, key: str) -> int | None:
        text = str(value)
        if len(text) <= 20 and re.fullmatch(r"-?\d+", text):
            n = int(text)
            if abs(n) <= MAX_GML_VALUE:
                return n
        self.append(
            f"{where}: {key} must be an integer of magnitude at most {MAX_GML_VALUE:.0e}, "
            f"found {short_repr(value)}"
        )
        return None


def _nodes_and_edges(
    items: list[tuple[str, Any]],
) -> tuple[dict[int, int], list[tuple[int, int, int]], list[str]]:
    """Node id -> weight, edges ``(source, target, parameter)`` and every defect, in order."""
    defects = _Defects()
    nodes: dict[int, int] = {}
    edges: list[tuple[int, int, int]] = []
    for key, val in items:
        d = dict(val) if isinstance(val, list) else {}
        if key == "node":
            _read_node(d, nodes, defects)
        elif key == "edge":
            _read_edge(d, edges, defects)
        elif key == "directed" and str(val) != "1":
            defects.append(f"graph: directed must be 1, found {val!r}")
    for u, v, _ in edges:
        for x in (u, v):
            if x not in nodes:
                defects.append(f"edge {u}->{v}: unknown node {x}")
    if not nodes and not defects:
        defects.append("graph has no nodes")
    return nodes, edges, list(defects)


def _read_node(d: dict[str, Any], nodes: dict[int, int], defects: _Defects) -> None:
    where = f"node #{len(nodes) + 1}"
    if "id" not in d:
        defects.append(f"{where}: missing 'id'")
        return
    nid = defects.as_int(d["id"], where, "id")
    w = defects.as_int(d.get("parameter", 0), f"node {d['id']}", "parameter")
    if nid is None or w is None:
        return
    if nid in nodes:
        defects.append(f"node {nid}: duplicate id")
    if w < 0:
        defects.append(f"node {nid}: parameter (weight) must be >= 0, found {w}")
    nodes[nid] = w


def _read_edge(d: dict[str, Any], edges: list[tuple[int, int, int]], defects: _Defects) -> None:
    where = f"edge #{len(edges) + 1}"
    missing = [x for x in ("source", "target") if x not in d]
    if missing:
        defects.append(f"{where}: missing {', '.join(repr(m) for m in missing)}")
        return
    u = defects.as_int(d["source"], where, "source")
    v = defects.as_int(d["target"], where, "target")
    c = defects.as_int(d.get("parameter", 1), where, "parameter")
    if u is not None and v is not None and c is not None:
        edges.append((u, v, c))


def _dependence_graph(
    nodes: dict[int, int], edges: list[tuple[int, int, int]], source: str
) -> DependenceGraph:
    """Nodes in id order, weight = memory footprint and ``mem`` use for one step, delay 0."""
    ids = sorted(nodes)
    instructions = tuple(
        Instruction(str(nid), 1, {"mem": (nodes[nid],)}, footprint={"mem": nodes[nid]})
        for nid in ids
    )
    machine = MachineDescription(
        "gml", {"mem": MachineDescription.UNLIMITED}, memories={"mem": max(1, *nodes.values())}
    )
    return DependenceGraph(
        Path(source).stem if source != "<gml>" else "gml",
        instructions,
        tuple(Edge(str(u), str(v), 0, comm=1.0 if c > 0 else 0.0) for u, v, c in edges),
        machine,
        memory_weight="footprint",
        weight_note="GS-Schedule GML: resource/memory weight = node parameter, delay 0 per "
        "edge (non-strict precedence), comm = [edge parameter > 0]",
    )


def read_gml(path: str | Path) -> DependenceGraph:
    """Read a GS-Schedule ``.gml`` file.

    Raises
    ------
    InputFormatError
        Unparseable text (names the file).
    InvalidProblemError
        Every semantic defect (names the file and the node or edge).

    Examples
    --------
    >>> g = parse_gml('graph [ directed 1 node [ id 0 parameter 5 ] node [ id 1 ] '
    ...               'edge [ source 0 target 1 parameter 7 ] ]')
    >>> from twill.sched.gaus.graph import gaus_view
    >>> v = gaus_view(g)
    >>> v.n, v.num_edges, v.usage[:, 0, 0].tolist(), v.comm.tolist()
    (2, 1, [5.0, 0.0], [1.0])
    """
    p = Path(path)
    return parse_gml(read_text_file(p), source=str(p))
