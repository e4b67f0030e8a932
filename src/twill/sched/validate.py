"""Instance validation for dependence graphs (Twill paper §3.1).

:func:`check_graph` is the ``check()`` half of CIRCT's check/verify pair: it inspects a
:class:`~twill.sched.ir.DependenceGraph` before any solver sees it and raises one
:class:`~twill.errors.InvalidProblemError` that lists **every** defect found, each naming the
item (instruction, edge, functional unit) and what is wrong with it.

Defects reported:

* machine: negative (other than ``-1`` = unlimited) or non-integer capacities, non-positive
  warp count, negative register limit or memory size;
* instructions: duplicate names, negative or non-integer ``cycles``/``regs``/``spill_cost``/
  footprints, ``warps < 1``, a reservation on an unknown functional unit, an RRT row whose
  length differs from ``cycles``, negative or non-integer RRT entries, a single row that needs
  more units than the machine has (no initiation interval can ever fit it), a footprint in an
  unknown memory;
* edges: dangling endpoints, negative or non-integer delay/distance;
* circuits whose total distance is 0 (their nodes are named): no loop can execute them;
* values outside the documented ranges (:data:`LIMITS`, ``docs/formats.md``), and graphs whose
  time-indexed model would exceed :data:`MAX_MODEL_CELLS` (the estimate is in the message).
  These limits keep every solver's memory and time bounded on hostile input.

Preconditions: none. This module never imports a solver.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from numbers import Integral

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph, Edge

__all__ = [
    "LIMITS",
    "MAX_INSTRUCTIONS",
    "MAX_EDGES",
    "MAX_MODEL_CELLS",
    "MAX_RESERVATION_TERMS",
    "reservation_terms",
    "check_graph",
    "graph_defects",
    "model_cells",
    "zero_distance_circuits",
]

LIMITS: dict[str, int] = {
    "cycles": 100_000,  # latency of one instruction (cycles)
    "delay": 100_000,  # edge delay (cycles)
    "distance": 10_000,  # edge distance (iterations)
    "warps": 64,  # machine and instruction warps (an SM runs at most 64)
    "capacity": 1_000_000,  # functional-unit capacity (units)
    "reservation": 1_000_000,  # units in one RRT row
    "regs": 1_000_000,  # registers (instruction need and machine limit per warp)
    "spill_cost": 1_000_000_000,
    "memory": 2**40,  # memory size and footprint (bytes)
}
"""Largest value accepted for each numeric field (the smallest is 0, or 1 for warps)."""

MAX_INSTRUCTIONS = 100_000
MAX_EDGES = 1_000_000
MAX_MODEL_CELLS = 20_000_000
"""Largest time-indexed model accepted: instructions x (sum of latencies + largest delay),
an upper bound on the (operation, time step) pairs a Phase-1 or Phase-2 model may need."""
MAX_RESERVATION_TERMS = 20_000_000_000
"""Largest modulo resource model accepted from any graph (:func:`reservation_terms`), a sanity
bound: the shipped kernels read in SM clocks (``--no-normalize``) need up to 3.4 10^9; the
HatScheT reader applies a tighter one (``MAX_HATSCHET_RESERVATION_TERMS``)."""


def _is_int(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _nonneg(value: object) -> bool:
    return _is_int(value) and int(value) >= 0  # type: ignore[call-overload]


def _range_defect(label: str, field: str, value: object, lo: int = 0) -> str | None:
    """``None`` when ``value`` is an integer in ``[lo, LIMITS[kind]]``, else the message."""
    hi = LIMITS[field if field in LIMITS else "memory"]
    if _is_int(value) and lo <= int(value) <= hi:  # type: ignore[call-overload]
        return None
    found = short_value(value)
    return f"{label}: {field} must be an integer from {lo} to at most {hi:,}, found {found}"


def short_value(value: object) -> str:
    """``repr(value)``, shortened so that no message grows with a hostile input."""
    if _is_int(value) and abs(int(value)).bit_length() > 64:  # type: ignore[call-overload]
        return f"an integer of about {int(abs(int(value)).bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:56] + "..."


def _edge_label(e: Edge) -> str:
    return f"edge {e.src}->{e.dst} (distance {e.distance})"


def _machine_defects(graph: DependenceGraph) -> list[str]:
    m = graph.machine
    out: list[str] = []
    label = f"machine {m.name!r}"
    for fu, cap in m.functional_units.items():
        if not (_is_int(cap) and int(cap) == -1):
            bad = _range_defect(f"{label}: functional unit {fu!r}", "capacity", cap)
            out += [bad + " (or -1, unlimited)"] if bad else []
    checks = [_range_defect(label, "warps", m.warps, lo=1)]
    if m.registers_per_warp is not None:
        checks.append(_range_defect(label, "regs", m.registers_per_warp))
    checks += [_range_defect(f"{label}: memory {k!r}", "memory", v) for k, v in m.memories.items()]
    return out + [c for c in checks if c]


def _instruction_defects(graph: DependenceGraph) -> list[str]:
    m = graph.machine
    out: list[str] = []
    seen: set[str] = set()
    for ins in graph.instructions:
        label = f"instruction {ins.name!r}"
        if not isinstance(ins.name, str) or not ins.name:
            out.append(f"instruction {ins.name!r}: name must be a non-empty string")
        if ins.name in seen:
            out.append(f"{label}: duplicate name")
        seen.add(ins.name)
        checks = [
            _range_defect(label, a, getattr(ins, a)) for a in ("cycles", "regs", "spill_cost")
        ]
        checks.append(_range_defect(label, "warps", ins.warps, lo=1))
        for mem, size in ins.footprint.items():
            if mem not in m.memories:
                out.append(f"{label}: footprint in unknown memory {mem!r}")
            checks.append(_range_defect(label, f"footprint[{mem!r}]", size))
        out += [c for c in checks if c]
        for fu, row in ins.reservation.items():
            if fu not in m.functional_units:
                known = ", ".join(sorted(m.functional_units)) or "none"
                out.append(f"{label}: unknown functional unit {fu!r} (machine has: {known})")
            row = tuple(row)
            if _nonneg(ins.cycles) and len(row) != ins.cycles:
                out.append(
                    f"{label}: reservation[{fu!r}] has {len(row)} rows but cycles = {ins.cycles}"
                )
            for c, units in enumerate(row):
                bad = _range_defect(f"{label}: reservation[{fu!r}][{c}]", "reservation", units)
                if bad:
                    out.append(bad)
                    continue
                cap = m.functional_units.get(fu)
                if _is_int(cap) and 0 <= int(cap) < units:
                    out.append(
                        f"{label}: reservation[{fu!r}][{c}] needs {units} units but the "
                        f"capacity of {fu!r} is {cap}; no initiation interval can fit it"
                    )
    return out


def _edge_defects(graph: DependenceGraph) -> list[str]:
    names = set(graph.names)
    out: list[str] = []
    for e in graph.edges:
        label = _edge_label(e)
        for end, name in (("source", e.src), ("target", e.dst)):
            if name not in names:
                out.append(f"{label}: unknown {end} instruction {name!r} (dangling edge)")
        for field in ("delay", "distance"):
            bad = _range_defect(label, field, getattr(e, field))
            out += [bad] if bad else []
    return out


def model_cells(graph: DependenceGraph) -> int:
    """Estimated (operation, time step) pairs of the largest time-indexed model of ``graph``:
    instructions x (sum of latencies + largest delay), the serial schedule's length bounding
    every I and L a solver tries. Assumes the fields are in range."""
    return len(graph.instructions) * _model_terms(graph)[0]


def reservation_terms(graph: DependenceGraph) -> int:
    """Estimated terms of the modulo resource rows beyond one per (operation, time step): the
    reserved cycles of every limited unit's RRT rows after their first x the serial
    schedule's length (each row sums, at every time step, the ops' reservations). A HatScheT
    unit blocked for 4,000 cycles made one op a model of 16 million terms that CBC did not
    finish in 120 s (issue 49)."""
    span, reserved = _model_terms(graph)
    return reserved * span


def _model_terms(graph: DependenceGraph) -> tuple[int, int]:
    """The serial schedule's cycles and the reserved cycles of the limited units' RRT rows
    beyond each row's first (those the (operation, time step) count already covers)."""
    span = sum(max(1, int(i.cycles)) for i in graph.instructions)
    span += max((int(e.delay) for e in graph.edges), default=0)
    units = graph.machine.functional_units
    reserved = sum(max(0, len(row) - 1) for i in graph.instructions
                   for fu, row in i.reservation.items() if int(units.get(fu, -1)) >= 0)  # fmt: skip
    return span, reserved


def _size_defects(graph: DependenceGraph) -> list[str]:
    """Refusals for graphs too large to model (checked only when every field is in range)."""
    n, m = len(graph.instructions), len(graph.edges)
    if n > MAX_INSTRUCTIONS or m > MAX_EDGES:
        return [
            f"graph has {n:,} instructions and {m:,} edges; the limits are "
            f"{MAX_INSTRUCTIONS:,} and {MAX_EDGES:,}"
        ]
    cells = model_cells(graph)
    if cells > MAX_MODEL_CELLS:
        return [
            f"graph too large to model: about {cells:,} (operation, time step) pairs "
            f"({n:,} instructions x {cells // max(n, 1):,} cycles of serial schedule); "
            f"the limit is {MAX_MODEL_CELLS:,}"
        ]
    span, reserved = _model_terms(graph)
    if reserved * span > MAX_RESERVATION_TERMS:  # reservation_terms, its parts named
        return [
            f"reservations too long to model: {reserved:,} reserved unit cycles after each RRT "
            f"row's first (a HatScheT blockingTime of B counts B - 1) over {span:,} cycles of "
            "serial schedule, about "
            f"{reserved * span:,} resource terms; the limit is {MAX_RESERVATION_TERMS:,}"
        ]
    return []


def zero_distance_circuits(names: Iterable[str], edges: Iterable[Edge]) -> list[list[str]]:
    """Strongly connected groups of instructions joined by distance-0 edges only.

    Every returned group (in graph order) lies on a circuit whose total distance is 0; a
    self-loop with distance 0 gives a one-element group. Edges with unknown endpoints or
    non-integer distances are ignored.

    Parameters
    ----------
    names
        Instruction names in graph order.
    edges
        The dependences.

    Returns
    -------
    list of list of str
        One list of node names per offending strongly connected component.
    """
    order = list(dict.fromkeys(names))
    pos = {n: i for i, n in enumerate(order)}
    succ: dict[str, list[str]] = {n: [] for n in order}
    self_loops: set[str] = set()
    for e in edges:
        if e.src in pos and e.dst in pos and _is_int(e.distance) and e.distance == 0:
            if e.src == e.dst:
                self_loops.add(e.src)
            else:
                succ[e.src].append(e.dst)
    comps = [
        sorted(comp, key=pos.__getitem__)
        for comp in strongly_connected(order, succ)
        if len(comp) > 1 or comp[0] in self_loops
    ]
    comps.sort(key=lambda c: pos[c[0]])
    return comps


def strongly_connected(order: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of the graph ``succ`` over ``order`` (every node,
    one-node components included), by Tarjan's algorithm without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    counter = 0
    for root in order:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            recurse = False
            children = succ[v]
            while i < len(children):
                w = children[i]
                i += 1
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comps


#: Defects already found per live graph object, (id, model_size) -> (weak reference, lines):
#: a reader checks the graph it builds and the problem checks it again before the solve; the
#: graph is immutable, so the second check is the first one's answer (0.3 s at 3,000 ops).
_FOUND: dict[tuple[int, bool], tuple[weakref.ref[DependenceGraph], tuple[str, ...]]] = {}


def graph_defects(graph: DependenceGraph, *, model_size: bool = True) -> list[str]:
    """Every defect of ``graph`` as one readable line each (empty when the graph is valid).

    ``model_size=False`` skips the refusal of graphs too large for Twill's time-indexed models
    (GauS bounds its own arrays; netlists of 10,000+ gates are its normal input). Computed once
    per graph object."""
    key = (id(graph), model_size)
    known = _FOUND.get(key)
    if known is not None and known[0]() is graph:
        return list(known[1])
    out = _graph_defects(graph, model_size)
    _FOUND[key] = (weakref.ref(graph, lambda _ref: _FOUND.pop(key, None)), tuple(out))
    return out


def _graph_defects(graph: DependenceGraph, model_size: bool) -> list[str]:
    out = _machine_defects(graph) + _instruction_defects(graph) + _edge_defects(graph)
    if not out and model_size:
        out = _size_defects(graph)
    for comp in zero_distance_circuits(graph.names, graph.edges):
        out.append(
            "circuit with total distance 0 through "
            + ", ".join(repr(n) for n in comp)
            + ": every dependence circuit needs distance >= 1"
        )
    return out


def check_graph(
    graph: DependenceGraph, source: str | None = None, *, model_size: bool = True
) -> None:
    """Raise :class:`~twill.errors.InvalidProblemError` listing every defect of ``graph``.

    Parameters
    ----------
    graph
        The instance to check.
    source
        File or kernel name the graph came from; it prefixes the message.
    model_size
        Also refuse a graph too large for Twill's models (:func:`graph_defects`).

    Raises
    ------
    InvalidProblemError
        When at least one defect is found; ``.defects`` holds one line per defect.

    Examples
    --------
    >>> from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
    >>> g = DependenceGraph("g", (Instruction("a", 1, {"X": (1,)}),), (Edge("a", "b", 1),),
    ...                     MachineDescription("m", {"TC": 1}))
    >>> try:
    ...     check_graph(g)
    ... except InvalidProblemError as exc:
    ...     print(len(exc.defects))
    2
    """
    defects = graph_defects(graph, model_size=model_size)
    if defects:
        raise InvalidProblemError(defects, source=source)
