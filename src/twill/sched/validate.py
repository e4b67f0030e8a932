"""Instance validation for dependence graphs (Twill spec ``twill.md`` §1.1–1.2).

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
* circuits whose total distance is 0 (their nodes are named): no loop can execute them.

Preconditions: none. This module never imports a solver.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph, Edge

__all__ = ["check_graph", "graph_defects", "zero_distance_circuits"]


def _is_int(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _nonneg(value: object) -> bool:
    return _is_int(value) and int(value) >= 0  # type: ignore[call-overload]


def _edge_label(e: Edge) -> str:
    return f"edge {e.src}->{e.dst} (distance {e.distance})"


def _machine_defects(graph: DependenceGraph) -> list[str]:
    m = graph.machine
    out: list[str] = []
    for fu, cap in m.functional_units.items():
        if not _is_int(cap) or int(cap) < -1:
            out.append(
                f"machine {m.name!r}: functional unit {fu!r}: capacity must be an integer "
                f">= 0 or -1 (unlimited), found {cap!r}"
            )
    if not _is_int(m.warps) or int(m.warps) < 1:
        out.append(f"machine {m.name!r}: warps must be an integer >= 1, found {m.warps!r}")
    if m.registers_per_warp is not None and not _nonneg(m.registers_per_warp):
        out.append(
            f"machine {m.name!r}: registers_per_warp must be a non-negative integer or None, "
            f"found {m.registers_per_warp!r}"
        )
    for mem, size in m.memories.items():
        if not _nonneg(size):
            out.append(
                f"machine {m.name!r}: memory {mem!r}: size must be a non-negative integer "
                f"(bytes), found {size!r}"
            )
    return out


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
        for attr in ("cycles", "regs", "spill_cost"):
            value = getattr(ins, attr)
            if not _nonneg(value):
                out.append(f"{label}: {attr} must be a non-negative integer, found {value!r}")
        if not _is_int(ins.warps) or int(ins.warps) < 1:
            out.append(f"{label}: warps must be an integer >= 1, found {ins.warps!r}")
        for mem, size in ins.footprint.items():
            if mem not in m.memories:
                out.append(f"{label}: footprint in unknown memory {mem!r}")
            if not _nonneg(size):
                out.append(
                    f"{label}: footprint[{mem!r}] must be a non-negative integer (bytes), "
                    f"found {size!r}"
                )
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
                if not _nonneg(units):
                    out.append(
                        f"{label}: reservation[{fu!r}][{c}] must be a non-negative integer, "
                        f"found {units!r}"
                    )
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
        if not _nonneg(e.delay):
            out.append(f"{label}: delay must be a non-negative integer, found {e.delay!r}")
        if not _nonneg(e.distance):
            out.append(f"{label}: distance must be a non-negative integer, found {e.distance!r}")
    return out


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
    # Tarjan's algorithm, iterative.
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
                if len(comp) > 1 or v in self_loops:
                    comps.append(sorted(comp, key=pos.__getitem__))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    comps.sort(key=lambda c: pos[c[0]])
    return comps


def graph_defects(graph: DependenceGraph) -> list[str]:
    """Every defect of ``graph`` as one readable line each (empty when the graph is valid)."""
    out = _machine_defects(graph) + _instruction_defects(graph) + _edge_defects(graph)
    for comp in zero_distance_circuits(graph.names, graph.edges):
        out.append(
            "circuit with total distance 0 through "
            + ", ".join(repr(n) for n in comp)
            + ": every dependence circuit needs distance >= 1"
        )
    return out


def check_graph(graph: DependenceGraph, source: str | None = None) -> None:
    """Raise :class:`~twill.errors.InvalidProblemError` listing every defect of ``graph``.

    Parameters
    ----------
    graph
        The instance to check.
    source
        File or kernel name the graph came from; it prefixes the message.

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
    defects = graph_defects(graph)
    if defects:
        raise InvalidProblemError(defects, source=source)
