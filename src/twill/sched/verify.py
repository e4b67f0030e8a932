"""Independent schedule verifiers (Twill paper §3.1; CIRCT ``verify()``).

These functions check a proposed schedule against the dependence graph directly from the
definitions; they never import a solver, so a bug in a model cannot hide in its own check.
One check serves the modulo problem and the one-iteration problem, whichever form the
schedule comes in:

* :func:`verify_modulo_schedule`: a modulo schedule ``M`` at initiation interval ``II``. Every
  edge ``(u, v, d, delta)`` must satisfy ``M(v) + delta*II >= M(u) + d``; for every limited
  functional unit ``f`` and congruence class ``r in [0, II)``, the units reserved by all ops
  whose RRT rows land on ``r`` (row ``c`` of op ``v`` lands on ``(M(v) + c) mod II``, so RRTs
  longer than ``II`` wrap onto themselves) must not exceed ``cap(f)``.
* :func:`verify_dag_schedule`: a plain (non-modulo) schedule of one iteration: only distance-0
  edges, and per-cycle capacity at absolute times.
* :func:`verify_start_steps`: the same checks on the graph's array view
  (:func:`~twill.sched.gaus.graph.gaus_view`) with a start-step vector, optionally inside a
  window ``[0, D - 1]``; GauS and its baselines check every schedule with it.

The checks are plain Python (about 15 ms for a 12,000-op graph): checking a schedule imports
no numpy.

All return a list of :class:`Violation` (empty means valid) and accept any schedule, however
malformed (missing or extra ops, negative or non-integer starts): malformation is reported,
never raised. Preconditions: the graph should have passed
:func:`twill.sched.validate.check_graph`; unknown functional units are reported as violations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from numbers import Integral
from typing import TYPE_CHECKING, Any

from twill.results import Violation
from twill.sched.ir import DependenceGraph

if TYPE_CHECKING:
    import numpy as np

    from twill.sched.gaus.graph import GauSGraph

__all__ = ["Violation", "verify_modulo_schedule", "verify_dag_schedule", "verify_start_steps"]

#: An edge ``(src, dst, delay, distance)`` and a reservation ``(op, unit, row, units)``, with
#: ops by their index in the graph.
_Edge = tuple[int, int, int, int]
_Load = tuple[int, str, int, float]


def _is_int(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _num(x: float) -> int | float:
    """``x`` as an int when it is whole (units and capacities print as counts)."""
    return int(x) if float(x).is_integer() else float(x)


def _start_defect(name: str, t: Any) -> Violation | None:
    if not _is_int(t):
        return Violation("non_integer_start", {"op": name}, value=t,
                         message=f"op {name!r} starts at {t!r}, not an integer")  # fmt: skip
    if t < 0:
        return Violation("negative_start", {"op": name}, value=int(t), limit=0,
                         message=f"op {name!r} starts at {t} < 0")  # fmt: skip
    return None


def _check_starts(graph: DependenceGraph, schedule: Mapping[str, Any]) -> list[Violation]:
    out: list[Violation] = []
    for name in graph.names:
        if name not in schedule:
            out.append(Violation("missing", {"op": name}, message=f"op {name!r} has no start"))
        elif (bad := _start_defect(name, schedule[name])) is not None:
            out.append(bad)
    known = set(graph.names)
    for name in schedule:
        if name not in known:
            out.append(Violation("extra", {"op": name}, message=f"op {name!r} is not in the graph"))
    return out


def _dependences(
    names: tuple[str, ...] | list[str],
    edges: Iterable[_Edge],
    t: list[int | None],
    ii: int | None,
) -> list[Violation]:
    """Edges ``(u, v, d, delta)`` (op indices) between scheduled ops (``t`` not None) with
    ``t[v] + delta*II < t[u] + d`` (distance-0 edges only when ``ii`` is None)."""
    out: list[Violation] = []
    shift = ii or 0
    for u, v, delay, dist in edges:
        tu, tv = t[u], t[v]
        if (
            tu is None
            or tv is None
            or (ii is None and dist != 0)
            or tv + dist * shift - tu >= delay
        ):
            continue
        slack, src, dst = tv + dist * shift - tu, names[u], names[v]
        rhs = f" + {dist}*{ii}" if ii is not None and dist else ""
        out.append(
            Violation(
                "dependence",
                {"edge": f"{src}->{dst}", "distance": dist},
                value=slack,
                limit=delay,
                message=f"{dst}@{tv}{rhs} is {slack} cycles after {src}@{tu}, needs >= {delay}",
            )
        )
    return out


def _capacity(
    names: tuple[str, ...] | list[str],
    loads: Iterable[_Load],
    caps: Mapping[str, float],
    t: list[int | None],
    ii: int | None,
) -> list[Violation]:
    """Limited units (``caps``) over capacity per congruence class (``ii``) or absolute cycle;
    row ``c`` of a scheduled op lands on ``t + c`` (mod ``ii``)."""
    usage: dict[tuple[str, int], float] = defaultdict(float)
    users: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for op, fu, c, units in loads:
        start = t[op]
        if start is not None and fu in caps:
            slot = (start + c) % ii if ii is not None else start + c
            usage[fu, slot] += units
            users[fu, slot].append((op, c))
    kind, key = ("congruence class", "slot") if ii is not None else ("cycle", "cycle")
    out: list[Violation] = []
    for (fu, slot), used in sorted(usage.items()):
        if used > caps[fu] + 1e-9:
            load, cap = _num(used), _num(caps[fu])
            by = ", ".join(f"{names[op]}[{c}]" for op, c in users[fu, slot])
            out.append(Violation("capacity", {"fu": fu, key: slot}, value=load, limit=cap,
                                 message=f"{fu} {kind} {slot}: {load} units used > capacity "
                                 f"{cap} (by {by})"))  # fmt: skip
    return out


def _unknown_units(graph: DependenceGraph, t: list[int | None]) -> list[Violation]:
    units = graph.machine.functional_units
    return [Violation("unknown_unit", {"op": ins.name, "fu": fu},
                      message=f"op {ins.name!r} reserves unknown unit {fu!r}")
            for ins, start in zip(graph.instructions, t, strict=True) if start is not None
            for fu in ins.reservation if fu not in units]  # fmt: skip


def _ii_defect(II: object) -> list[Violation]:
    if _is_int(II) and II >= 1:  # type: ignore[operator]
        return []
    message = f"initiation interval must be an integer >= 1, found {II!r}"
    return [Violation("invalid_II", {}, value=II, limit=1, message=message)]


def _verify_graph(
    graph: DependenceGraph, schedule: Mapping[str, Any], ii: int | None, capacity: bool
) -> list[Violation]:
    names = graph.names
    t = [int(s) if _is_int(s := schedule.get(name)) else None for name in names]
    index = {name: i for i, name in enumerate(names)}
    edges = [(index[e.src], index[e.dst], e.delay, e.distance) for e in graph.edges
             if e.src in index and e.dst in index]  # fmt: skip
    out = _check_starts(graph, schedule) + _dependences(names, edges, t, ii)
    if not capacity:
        return out
    caps = {fu: cap for fu, cap in graph.machine.functional_units.items() if cap >= 0}
    rows = (
        (i, fu, row) for i, x in enumerate(graph.instructions) for fu, row in x.reservation.items()
    )
    loads = ((op, fu, c, units) for op, fu, row in rows for c, units in enumerate(row) if units)
    return out + _unknown_units(graph, t) + _capacity(names, loads, caps, t, ii)


def verify_modulo_schedule(
    graph: DependenceGraph, schedule: Mapping[str, int], II: int
) -> list[Violation]:
    """Check a modulo schedule at initiation interval ``II``.

    Parameters
    ----------
    graph
        The dependence graph with its machine.
    schedule
        Start cycle of every operation (``M``).
    II
        Initiation interval, an integer >= 1.

    Returns
    -------
    list of Violation
        Every broken rule; empty when the schedule is valid.

    Examples
    --------
    >>> from twill.sched.ir import DependenceGraph, Edge, Instruction, MachineDescription
    >>> m = MachineDescription("m", {"TC": 1})
    >>> g = DependenceGraph("g", (Instruction("a", 1, {"TC": (1,)}),
    ...                           Instruction("b", 1, {"TC": (1,)})), (Edge("a", "b", 1),), m)
    >>> verify_modulo_schedule(g, {"a": 0, "b": 1}, 2)
    []
    >>> [v.rule for v in verify_modulo_schedule(g, {"a": 0, "b": 2}, 2)]
    ['capacity']
    """
    return _ii_defect(II) or _verify_graph(graph, schedule, int(II), True)


def verify_dag_schedule(
    graph: DependenceGraph, schedule: Mapping[str, int], *, check_capacity: bool = True
) -> list[Violation]:
    """Check a non-modulo schedule of one iteration (distance-0 edges, per-cycle capacity).

    Parameters
    ----------
    graph
        The dependence graph; edges with distance > 0 are ignored.
    schedule
        Start cycle of every operation.
    check_capacity
        Also check that, in every absolute cycle, each limited unit is within capacity.

    Returns
    -------
    list of Violation
        Every broken rule; empty when the schedule is valid.
    """
    return _verify_graph(graph, schedule, None, check_capacity)


def _integral_starts(view: GauSGraph, t: np.ndarray) -> tuple[list[Any], list[Violation]]:
    """``t`` as integer steps, or its wrong shape or non-integer entries."""
    import numpy as np

    if t.shape != (view.n,):
        return [], [Violation("shape", {}, value=t.shape, limit=(view.n,), message="wrong length")]
    if np.issubdtype(t.dtype, np.integer):
        return t.tolist(), []
    if not np.issubdtype(t.dtype, np.number):
        return [], [Violation("non_integer_start", {}, value=str(t.dtype), message="not numbers")]
    bad = np.flatnonzero(~np.isfinite(t) | (t != np.round(t)))
    return t.astype(np.int64).tolist() if not bad.size else [], [
        Violation("non_integer_start", {"op": view.names[i]}, value=float(t[i]),
                  message=f"op {view.names[i]!r} starts at {float(t[i])!r}, not an integer")
        for i in bad]  # fmt: skip


def _window(names: tuple[str, ...], t: list[int], D: int | None) -> list[Violation]:
    if D is None:
        return [bad for name, s in zip(names, t, strict=True)
                if (bad := _start_defect(name, s)) is not None]  # fmt: skip
    return [Violation("latency_bound", {"op": name}, value=s, limit=D - 1,
                      message=f"op {name!r} starts at {s}, outside [0, {D - 1}]")
            for name, s in zip(names, t, strict=True) if not 0 <= s <= D - 1]  # fmt: skip


def _view_loads(view: GauSGraph) -> Iterable[_Load]:
    i, k, c = view.usage.nonzero()
    units = view.usage[i, k, c].tolist()
    rows = zip(i.tolist(), k.tolist(), c.tolist(), units, strict=True)
    return ((a, view.resources[b], r, u) for a, b, r, u in rows)


def verify_start_steps(
    view: GauSGraph,
    t: np.ndarray,
    II: int | None = None,
    *,
    D: int | None = None,
    check_capacity: bool = True,
    most: int | None = None,
) -> list[Violation]:
    """Check start steps ``t`` (one per node of ``view``, in its order): the rules of
    :func:`verify_modulo_schedule` (``II`` given) or :func:`verify_dag_schedule`.

    Parameters
    ----------
    view
        The graph's array view (its capacities may differ from the machine's:
        :meth:`~twill.sched.gaus.graph.GauSGraph.with_caps`).
    t
        Start step per node.
    II
        Initiation interval of a modulo schedule; ``None``: one iteration (distance-0 edges,
        capacity per absolute step).
    D
        When given, every start must lie in ``[0, D - 1]`` (rule ``latency_bound``).
    check_capacity
        Also check limited units.
    most
        Report at most this many violations of each rule (``None``: all).

    Returns
    -------
    list of Violation
        Every broken rule; empty when the schedule is valid.
    """
    import numpy as np

    if II is not None and (bad := _ii_defect(II)):
        return bad
    steps, malformed = _integral_starts(view, np.asarray(t))
    if malformed:
        return malformed[:most]
    names, ii = view.names, None if II is None else int(II)
    lists = (view.src.tolist(), view.dst.tolist(), view.delay.tolist(), view.distance.tolist())
    out = _window(names, steps, D)[:most]
    out += _dependences(names, zip(*lists, strict=True), steps, ii)[:most]
    if not check_capacity:
        return out
    caps = {r: c for r, c in zip(view.resources, view.caps.tolist(), strict=True) if c < np.inf}
    return out + _capacity(names, _view_loads(view), caps, steps, ii)[:most]
