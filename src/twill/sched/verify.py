"""Independent schedule verifiers (Twill paper §3.1; CIRCT ``verify()``).

These functions check a proposed schedule against the dependence graph directly from the
definitions; they never import a solver, so a bug in a model cannot hide in its own check.

* :func:`verify_modulo_schedule`: a modulo schedule ``M`` at initiation interval ``II``. Every
  edge ``(u, v, d, delta)`` must satisfy ``M(v) + delta*II >= M(u) + d``; for every limited
  functional unit ``f`` and congruence class ``r in [0, II)``, the units reserved by all ops
  whose RRT rows land on ``r`` (row ``c`` of op ``v`` lands on ``(M(v) + c) mod II``, so RRTs
  longer than ``II`` wrap onto themselves) must not exceed ``cap(f)``.
* :func:`verify_dag_schedule`: a plain (non-modulo) schedule of one iteration: only distance-0
  edges, and per-cycle capacity at absolute times.

Both return a list of :class:`Violation` (empty means valid) and accept any schedule, however
malformed (missing or extra ops, negative or non-integer starts): malformation is reported,
never raised. Preconditions: the graph should have passed
:func:`twill.sched.validate.check_graph`; unknown functional units are reported as violations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from numbers import Integral
from typing import Any

from twill.results import Violation
from twill.sched.ir import DependenceGraph

__all__ = ["Violation", "verify_modulo_schedule", "verify_dag_schedule"]


def _is_int(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def _check_starts(graph: DependenceGraph, schedule: Mapping[str, Any]) -> list[Violation]:
    out: list[Violation] = []
    names = graph.names
    for name in names:
        if name not in schedule:
            out.append(Violation("missing", {"op": name}, message=f"op {name!r} has no start"))
            continue
        t = schedule[name]
        if not _is_int(t):
            out.append(
                Violation(
                    "non_integer_start",
                    {"op": name},
                    value=t,
                    message=f"op {name!r} starts at {t!r}, not an integer",
                )
            )
        elif t < 0:
            out.append(
                Violation(
                    "negative_start",
                    {"op": name},
                    value=int(t),
                    limit=0,
                    message=f"op {name!r} starts at {t} < 0",
                )
            )
    known = set(names)
    for name in schedule:
        if name not in known:
            out.append(Violation("extra", {"op": name}, message=f"op {name!r} is not in the graph"))
    return out


def _usable(schedule: Mapping[str, Any], name: str) -> bool:
    return name in schedule and _is_int(schedule[name])


def _check_dependences(
    graph: DependenceGraph, schedule: Mapping[str, Any], ii: int | None
) -> list[Violation]:
    out: list[Violation] = []
    for e in graph.edges:
        if ii is None and e.distance != 0:
            continue
        if not (_usable(schedule, e.src) and _usable(schedule, e.dst)):
            continue
        ts, td = int(schedule[e.src]), int(schedule[e.dst])
        shift = e.distance * ii if ii is not None else 0
        slack = td + shift - ts
        if slack < e.delay:
            rhs = f" + {e.distance}*{ii}" if ii is not None and e.distance else ""
            out.append(
                Violation(
                    "dependence",
                    {"edge": f"{e.src}->{e.dst}", "distance": e.distance},
                    value=slack,
                    limit=e.delay,
                    message=(
                        f"{e.dst}@{td}{rhs} is {slack} cycles after {e.src}@{ts}, "
                        f"needs >= {e.delay}"
                    ),
                )
            )
    return out


def _check_capacity(
    graph: DependenceGraph, schedule: Mapping[str, Any], ii: int | None
) -> list[Violation]:
    machine = graph.machine
    usage: dict[tuple[str, int], int] = defaultdict(int)
    users: dict[tuple[str, int], list[str]] = defaultdict(list)
    out: list[Violation] = []
    reported_units: set[tuple[str, str]] = set()
    for ins in graph.instructions:
        if not _usable(schedule, ins.name):
            continue
        t0 = int(schedule[ins.name])
        for fu, row in ins.reservation.items():
            if fu not in machine.functional_units:
                if (ins.name, fu) not in reported_units:
                    reported_units.add((ins.name, fu))
                    out.append(
                        Violation(
                            "unknown_unit",
                            {"op": ins.name, "fu": fu},
                            message=f"op {ins.name!r} reserves unknown unit {fu!r}",
                        )
                    )
                continue
            if machine.functional_units[fu] < 0:
                continue  # unlimited
            for c, units in enumerate(row):
                if units:
                    slot = (t0 + c) % ii if ii is not None else t0 + c
                    usage[fu, slot] += units
                    users[fu, slot].append(f"{ins.name}[{c}]")
    for (fu, slot), used in sorted(usage.items()):
        cap = machine.functional_units[fu]
        if used > cap:
            kind = "congruence class" if ii is not None else "cycle"
            key = "slot" if ii is not None else "cycle"
            out.append(
                Violation(
                    "capacity",
                    {"fu": fu, key: slot},
                    value=used,
                    limit=cap,
                    message=(
                        f"{fu} {kind} {slot}: {used} units used > capacity {cap} "
                        f"(by {', '.join(users[fu, slot])})"
                    ),
                )
            )
    return out


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
    if not _is_int(II) or II < 1:
        return [
            Violation(
                "invalid_II",
                {},
                value=II,
                limit=1,
                message=f"initiation interval must be an integer >= 1, found {II!r}",
            )
        ]
    ii = int(II)
    return (
        _check_starts(graph, schedule)
        + _check_dependences(graph, schedule, ii)
        + _check_capacity(graph, schedule, ii)
    )


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
    out = _check_starts(graph, schedule) + _check_dependences(graph, schedule, None)
    if check_capacity:
        out += _check_capacity(graph, schedule, None)
    return out
