"""Independent verifier of a joint modulo schedule + warp assignment (Twill paper §4, Figs. 4–6).

Given a dependence graph, an initiation interval ``I``, a length bound
``L``, a modulo schedule ``M`` and a warp assignment ``A``, :func:`verify_warp_schedule` builds the
straight-line program of ``n = ceil(L / I)`` overlapped copies (``T = (n - 1) * I + L`` cycles)
**directly from the definitions** and reports every broken rule. It never imports a solver: the
SMT model (:mod:`twill.sched.exact.phase2`) encodes liveness with the paper's backward
propagation rules, whereas this module computes liveness intervals in closed form, so a bug in
one cannot hide in the other.

Rules checked (rule names of :class:`~twill.sched.verify.Violation`):

* ``start``: ``M(v) >= 0`` and the last copy finishes inside the program,
  ``M(v) + max(cycles(v), 1) <= L`` (Fig. 4 completion);
* ``dependence``: for every edge ``(u, v, d, delta)``: ``M(v) + delta*I >= M(u) + d``, plus
  ``spillcost(u)`` when ``u`` and ``v`` run on different warp slots (Fig. 6 cross-warp spill);
* ``capacity``: at every cycle of the program, each limited functional unit is within capacity
  (equivalent to the modulo reservation table: the steady state holds each cycle once);
* ``memory``: at every ``t in [0, T]``, the footprints of live values fit each memory (Fig. 5);
* ``registers``: at every ``t in [0, T]`` and warp slot, live values' registers fit the limit;
* ``register_file``: the slots' peaks (each rounded up to :data:`REGISTER_GRANULE`, times the
  slot's threads) fit the register file of the SM (:attr:`WarpRules.registers_per_sm`);
* ``warp``: each op on a valid, distinct set of exactly ``k`` slots; variable-latency ops on the
  reserved slot ``W_vl = 0`` and nothing else there (the iff of Fig. 6);
* ``blocking``: when the consumer of a blocking edge issues on slot ``w``, no other op is executing
  on ``w``; the same for the consumer of a cross-warp register hand-off when
  :attr:`WarpRules.spill_blocking` is set (a decision of ``docs/model.md``);
* ``cross_warp``: with :attr:`WarpRules.cross_warp` off, edges out of a non-variable-latency op
  stay on one slot set (the paper's "no cross-warp communication" ablation).

Liveness (Fig. 5, with the decisions of ``docs/model.md``): the result of copy ``i`` of ``v``
is live on ``[issue, end)`` where ``end`` is the latest issue of an in-window user copy, or
``T + 1`` (live through ``T``) when some loop-carried user copy ``i + delta`` falls outside the
window. A value whose users all issue in its own issue cycle (``d = 0``) is never live.

Preconditions: the graph passed :func:`twill.sched.validate.check_graph`.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twill.results import Violation, WarpSchedule
from twill.sched.ir import DependenceGraph, Edge, Instruction

__all__ = [
    "WARPS_PER_SLOT",
    "WarpRules",
    "verify_warp_schedule",
    "slots_needed",
    "live_interval",
    "program_shape",
    "spill_blocking_edge",
    "REGISTER_GRANULE",
    "register_file_use",
    "register_peaks",
]

#: Hardware warps per Phase-2 warp slot: slots are warp groups (``docs/model.md``).
WARPS_PER_SLOT = 4
#: Registers per thread are allocated in multiples of 8 (``setmaxnreg``; PTX ISA).
REGISTER_GRANULE = 8


@dataclass(frozen=True)
class WarpRules:
    """The settings of the warp-specialisation model shared by the SMT model and this verifier.

    Parameters
    ----------
    warps
        Number of warp slots ``W`` (the variable-latency slot included when the graph has a
        variable-latency op). ``None``: the machine's ``warps``.
    registers_per_warp
        Register limit per slot (32-bit registers per thread). ``None``: no limit. Use
        :meth:`for_graph` to default it to the machine's value.
    warps_per_slot
        Hardware warps per slot; an op spanning ``k`` warps occupies exactly
        ``ceil(k / warps_per_slot)`` slots.
    cross_warp
        Allow data edges between different slots (``False``: the paper's ablation).
    spill_blocking
        Treat the consumer of a cross-warp register hand-off as blocking on its slot.
    registers_per_sm
        The SM's register file (32-bit registers) that the slots' peaks share. ``None``: no
        limit; :meth:`for_graph` takes the machine's.
    """

    warps: int | None = None
    registers_per_warp: int | None = None
    warps_per_slot: int = WARPS_PER_SLOT
    cross_warp: bool = True
    spill_blocking: bool = True
    registers_per_sm: int | None = None

    @classmethod
    def for_graph(cls, graph: DependenceGraph, **overrides: Any) -> WarpRules:
        """Rules with the machine's warps and register limit, then ``overrides`` applied."""
        base: dict[str, Any] = {
            "warps": graph.machine.warps,
            "registers_per_warp": graph.machine.registers_per_warp,
            "registers_per_sm": graph.machine.registers_per_sm,
        }
        base.update(overrides)
        return cls(**base)

    def num_warps(self, graph: DependenceGraph) -> int:
        return graph.machine.warps if self.warps is None else self.warps


def slots_needed(ins: Instruction, warps_per_slot: int = WARPS_PER_SLOT) -> int:
    """Number of warp slots op ``ins`` occupies: 1 for a variable-latency op, else
    ``ceil(warps / warps_per_slot)`` ("exactly k", ``docs/model.md``)."""
    if ins.variable_latency:
        return 1
    return max(1, math.ceil(max(ins.warps, 1) / warps_per_slot))


def program_shape(ii: int, length: int) -> tuple[int, int]:
    """``(n, T)``: copies ``n = ceil(L / I)`` and program length ``T = (n - 1) * I + L``."""
    n = max(1, -(-length // ii))
    return n, (n - 1) * ii + length


def spill_blocking_edge(graph: DependenceGraph, e: Edge) -> bool:
    """True when edge ``e`` is a register-to-register hand-off, whose consumer blocks on its slot
    when the endpoints are on different slots (a decision of ``docs/model.md``)."""
    if e.src == e.dst:
        return False
    u, v = graph.instruction(e.src), graph.instruction(e.dst)
    return not u.variable_latency and u.regs > 0 and v.regs > 0


def live_interval(
    graph: DependenceGraph, schedule: Mapping[str, int], name: str, copy: int, ii: int, length: int
) -> tuple[int, int]:
    """Half-open interval ``[start, end)`` of cycles in ``[0, T]`` where copy ``copy`` of the result
    of ``name`` is live (empty when ``end <= start``).

    Notes
    -----
    Closed form of the backward propagation rules of Fig. 5 with the decisions of
    ``docs/model.md``: a value is live from its issue cycle up to (not including) the issue of
    its last in-window user copy; it stays live through ``T`` when a loop-carried user copy lies
    beyond the last copy of the window (``copy + delta > n - 1``).
    """
    n, t_end = program_shape(ii, length)
    issue = schedule[name] + copy * ii
    end = issue
    for e in graph.out_edges(name):
        j = copy + e.distance
        if j > n - 1:
            if e.distance > 0:
                end = max(end, t_end + 1)
            continue
        end = max(end, schedule[e.dst] + j * ii)
    return issue, end


def _slot_sets(
    graph: DependenceGraph, assignment: Mapping[str, Any], rules: WarpRules
) -> tuple[dict[str, frozenset[int]], list[Violation]]:
    out: list[Violation] = []
    sets: dict[str, frozenset[int]] = {}
    w_total = rules.num_warps(graph)
    has_vl = any(ins.variable_latency for ins in graph.instructions)
    for ins in graph.instructions:
        raw = assignment.get(ins.name)
        if raw is None:
            out.append(Violation("warp", {"op": ins.name}, message=f"{ins.name!r} has no warp"))
            continue
        slots = frozenset([raw] if isinstance(raw, int) else raw)
        sets[ins.name] = slots
        k = slots_needed(ins, rules.warps_per_slot)
        what = "must run on" if ins.variable_latency else "must not run on"
        rules_broken = (
            (len(slots) != k or len(list([raw] if isinstance(raw, int) else raw)) != k,
             {"op": ins.name}, k, f"{ins.name!r} must occupy exactly {k} distinct slot(s)"),
            (any(not isinstance(w, int) or w < 0 or w >= w_total for w in slots),
             {"op": ins.name}, w_total, f"{ins.name!r} on a slot outside [0, {w_total})"),
            (has_vl and (0 in slots) != ins.variable_latency, {"op": ins.name, "slot": 0}, None,
             f"{ins.name!r} {what} the variable-latency slot 0 (iff rule)"),
        )  # fmt: skip
        out.extend(
            Violation("warp", at, value=sorted(slots), limit=limit, message=message)
            for broken, at, limit, message in rules_broken
            if broken
        )
    return sets, out


def verify_warp_schedule(
    graph: DependenceGraph | WarpSchedule,
    schedule: Mapping[str, int] | None = None,
    assignment: Mapping[str, int | Sequence[int]] | None = None,
    II: int | None = None,
    L: int | None = None,
    *,
    rules: WarpRules | None = None,
) -> list[Violation]:
    """Check a joint modulo schedule and warp assignment (Twill Figs. 4–6).

    Parameters
    ----------
    graph
        The dependence graph with its machine, or a whole
        :class:`~twill.results.WarpSchedule` (then the next four are left out).
    schedule
        ``M``: start cycle of every op in copy 0.
    assignment
        Warp slot of every op (an int, or a sequence of slots for a multi-slot op).
    II
        Initiation interval ``I >= 1``.
    L
        Length bound of the program (default: ``LEN(M)``); fixes ``n`` and ``T``.
    rules
        Warp-model settings (default: :meth:`WarpRules.for_graph`).

    Returns
    -------
    list of Violation
        Every broken rule; empty when the pair is valid.

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> g = flash_attention_forward_simplified()
    >>> verify_warp_schedule(g, {"S": 0, "P": 2, "O": 3}, {"S": 0, "P": 0, "O": 0}, 2, 4)
    []
    """
    if isinstance(graph, WarpSchedule):
        graph, schedule, assignment, II, L = (graph.graph, graph.schedule, graph.assignment,
                                              graph.I, graph.L)  # fmt: skip
    if schedule is None or assignment is None or II is None:
        raise TypeError("verify_warp_schedule needs schedule, assignment and II")
    rules = rules or WarpRules.for_graph(graph)
    ins_of = {ins.name: ins for ins in graph.instructions}
    out = _check_start_types(ins_of, schedule)
    if out:
        return out
    if L is None:
        L = max(schedule[v] + ins_of[v].cycles for v in ins_of)
    out += _check_length_bound(ins_of, schedule, L)
    sets, warp_viol = _slot_sets(graph, assignment, rules)
    out += warp_viol
    if warp_viol:
        return out
    case = _Case(graph, ins_of, schedule, sets, II, L, rules)
    for check in (_check_dependences, _check_unit_capacity, _check_liveness, _check_blocking):
        out += check(case)
    return out


@dataclass(frozen=True)
class _Case:
    """One schedule under check, once its starts and slot sets are known to be well formed."""

    graph: DependenceGraph
    ins_of: Mapping[str, Instruction]
    schedule: Mapping[str, int]
    sets: Mapping[str, frozenset[int]]
    II: int  # noqa: N815
    L: int  # noqa: N815
    rules: WarpRules

    @property
    def copies(self) -> int:
        """``n``: overlapped copies of the loop body in the straight-line program."""
        return program_shape(self.II, self.L)[0]


def _over_limit(
    use: Mapping[tuple[Any, int], int],
    limit_of: Callable[[Any], int | None],
    rule: str,
    key: str,
    message: str,
) -> list[Violation]:
    """A violation per ``(resource, t)`` whose use exceeds its limit (``None``: unlimited);
    ``message`` is formatted with ``res``, ``t``, ``used`` and ``cap``."""
    out = []
    for (res, t), used in sorted(use.items()):
        cap = limit_of(res)
        if cap is not None and used > cap:
            text = message.format(res=res, t=t, used=used, cap=cap)
            out.append(Violation(rule, {key: res, "t": t}, value=used, limit=cap, message=text))
    return out


def _check_start_types(ins_of: Mapping[str, Any], schedule: Mapping[str, int]) -> list[Violation]:
    """Every op has an integer start cycle."""
    out = []
    for name in ins_of:
        t = schedule.get(name)
        if not isinstance(t, int) or isinstance(t, bool):
            out.append(Violation("start", {"op": name}, value=t, message=f"{name!r}: bad start"))
    return out


def _check_length_bound(
    ins_of: Mapping[str, Any],
    schedule: Mapping[str, int],
    L: int,  # noqa: N803
) -> list[Violation]:
    """Every op of copy 0 starts at 0 or later and ends within ``L``."""
    out = []
    for name, ins in ins_of.items():
        s = schedule[name]
        if s < 0 or s + max(ins.cycles, 1) > L:
            out.append(
                Violation(
                    "start",
                    {"op": name},
                    value=s,
                    limit=L,
                    message=f"{name!r}@{s} does not fit the length bound L={L}",
                )
            )
    return out


def _check_dependences(c: _Case) -> list[Violation]:
    """Dependences with the cross-warp spill delay (Fig. 4), and no cross-warp edge when it
    is disabled."""
    out = []
    for e in c.graph.edges:
        differ = c.sets[e.src] != c.sets[e.dst]
        need = e.delay + (c.ins_of[e.src].spill_cost if differ else 0)
        slack = c.schedule[e.dst] + e.distance * c.II - c.schedule[e.src]
        if slack < need:
            out.append(
                Violation(
                    "dependence",
                    {"edge": f"{e.src}->{e.dst}", "distance": e.distance},
                    value=slack,
                    limit=need,
                    message=f"{e.dst} issues {slack} cycles after {e.src}, needs >= {need}",
                )
            )
        if not c.rules.cross_warp and not c.ins_of[e.src].variable_latency and differ:
            out.append(
                Violation(
                    "cross_warp",
                    {"edge": f"{e.src}->{e.dst}"},
                    message="cross-warp communication is disabled",
                )
            )
    return out


def _check_unit_capacity(c: _Case) -> list[Violation]:
    """Functional-unit capacity at every cycle of the straight-line program."""
    fu_use: dict[tuple[str, int], int] = defaultdict(int)
    for name, ins in c.ins_of.items():
        for i in range(c.copies):
            t0 = c.schedule[name] + i * c.II
            for fu, row in ins.reservation.items():
                for col, units in enumerate(row):
                    fu_use[fu, t0 + col] += units
    units = c.graph.machine.functional_units
    return _over_limit(
        fu_use,
        lambda fu: cap if (cap := units.get(fu, -1)) >= 0 else None,
        "capacity",
        "fu",
        "{res} at t={t}: {used} > {cap}",
    )


def _live(c: _Case) -> tuple[dict[str, list], dict[int, list]]:
    """Live intervals ``(start, end, size)`` over ``[0, T]`` (Fig. 5): per memory (bytes) and
    per warp slot (registers per thread)."""
    t_end = program_shape(c.II, c.L)[1]
    mem_live: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    reg_live: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for name, ins in c.ins_of.items():
        if not ins.regs and not any(ins.footprint.values()):
            continue
        for i in range(c.copies):
            start, end = live_interval(c.graph, c.schedule, name, i, c.II, c.L)
            end = min(end, t_end + 1)
            for mem, size in ins.footprint.items():
                mem_live[mem].append((start, end, size))
            for w in c.sets[name]:
                reg_live[w].append((start, end, ins.regs))
    return mem_live, reg_live


def register_peaks(ws: WarpSchedule) -> dict[int, int]:
    """Warp slot -> the most registers per thread live on it at once in the program of ``ws``
    (the quantity the ``registers`` rule bounds): what ptxas is compared with when a compiled
    schedule spills (:func:`twill.triton.peer.compile_spill_free`).

    >>> from twill.kernels import flash_attention_forward_simplified
    >>> g = flash_attention_forward_simplified()
    >>> ws = WarpSchedule.of(g, {"S": 0, "P": 2, "O": 3}, dict.fromkeys("SPO", 0), 2, 4)
    >>> register_peaks(ws)
    {0: 256}
    """
    sets = {v: frozenset([w] if isinstance(w, int) else w) for v, w in ws.assignment.items()}
    ins_of = {i.name: i for i in ws.graph.instructions}
    case = _Case(ws.graph, ins_of, ws.schedule, sets, ws.I, ws.L, WarpRules.for_graph(ws.graph))
    reg_live = _live(case)[1]
    return {w: _peak(reg_live.get(w, [])) for w in sorted(set().union(*sets.values()))}


def _check_liveness(c: _Case) -> list[Violation]:
    """Memories and registers per slot, over ``t`` in ``[0, T]`` (Fig. 5)."""
    mem_live, reg_live = _live(c)
    memories = c.graph.machine.memories.get
    out = _over_limit(
        _excess(mem_live, memories), memories, "memory", "mem",
        "{res} at t={t}: {used} bytes live > {cap}",
    )  # fmt: skip
    if c.rules.registers_per_warp is not None:
        regs = c.rules.registers_per_warp
        out += _over_limit(
            _excess(reg_live, lambda _: regs), lambda _: regs, "registers", "slot",
            "slot {res} at t={t}: {used} registers live",
        )  # fmt: skip
    limit = c.rules.registers_per_sm
    used = register_file_use({w: _peak(v) for w, v in reg_live.items()}, c.rules)
    if limit is not None and used > limit:
        out.append(Violation("register_file", {"used": used, "limit": limit},
                             message=f"the slots' register peaks take {used} registers of "
                             f"the SM's {limit}"))  # fmt: skip
    return out


def register_file_use(peaks: Mapping[int, int], rules: WarpRules) -> int:
    """Registers of the SM that slots with these peaks (registers per thread) take: each
    rounded up to :data:`REGISTER_GRANULE`, times the slot's threads."""
    g = REGISTER_GRANULE
    return sum(-(-p // g) * g for p in peaks.values()) * 32 * rules.warps_per_slot


def _peak(intervals: list[tuple[int, int, int]]) -> int:
    """The largest sum of sizes live at once over half-open intervals ``[start, end)``."""
    delta: dict[int, int] = defaultdict(int)
    for start, end, size in intervals:
        if start < end:
            delta[start] += size
            delta[end] -= size
    best = used = 0
    for t in sorted(delta):
        used += delta[t]
        best = max(best, used)
    return best


def _excess(
    live: Mapping[Any, list[tuple[int, int, int]]], limit_of: Callable[[Any], int | None]
) -> dict[tuple[Any, int], int]:
    """``(resource, t) -> use`` at every ``t`` where the live intervals ``[start, end)`` of a
    resource (each with its size) add up to more than its limit, by a sweep over the interval
    ends: the time is that of the intervals, not of their lengths (a 3,000-op sequential
    schedule has values live for thousands of cycles; counting cycle by cycle took 1.4 s)."""
    out: dict[tuple[Any, int], int] = {}
    for res, intervals in live.items():
        cap = limit_of(res)
        if cap is None:
            continue
        delta: dict[int, int] = defaultdict(int)
        for start, end, size in intervals:
            if start < end:
                delta[start] += size
                delta[end] -= size
        used, points = 0, sorted(delta)
        for t0, t1 in zip(points, points[1:], strict=False):
            used += delta[t0]
            if used > cap:
                out.update({(res, t): used for t in range(t0, t1)})
    return out


def _check_blocking(c: _Case) -> list[Violation]:
    """Blocking (Fig. 6): the consumer's slot is idle (no other op executing) when it issues."""
    blockers = {e.dst for e in c.graph.edges if e.blocking}
    spill_blockers = {
        (e.src, e.dst)
        for e in c.graph.edges
        if c.rules.spill_blocking
        and spill_blocking_edge(c.graph, e)
        and c.sets[e.src] != c.sets[e.dst]
    }
    busy = _busy_by_slot(c)
    order = {o: k for k, o in enumerate(c.ins_of)}
    out = []
    for v in sorted(blockers | {v for _, v in spill_blockers}):
        why = "blocking edge" if v in blockers else "cross-warp hand-off"
        for i in range(c.copies):
            t = c.schedule[v] + i * c.II
            hits = {(o, j) for w in c.sets[v] for o, j in busy.at(w, t) if o != v}
            for o, j in sorted(hits, key=lambda h: (order[h[0]], h[1])):
                out.append(
                    Violation(
                        "blocking",
                        {"op": v, "copy": i, "t": t, "other": o},
                        message=f"{v} ({why}) issues at t={t} while {o} "
                        f"(copy {j}) executes on the same slot",
                    )
                )
    return out


@dataclass(frozen=True)
class _Busy:
    """Per warp slot, the execution intervals ``[start, start + cycles)`` of every op copy,
    sorted by start, with the slot's longest interval: the ops executing at ``t`` are found
    by bisection among those that started in the last ``longest`` cycles (the pairwise scan
    over ops and copies took 5 s on a 3,000-op sequential schedule, issue 49)."""

    starts: Mapping[int, list[int]]
    spans: Mapping[int, list[tuple[int, int, str, int]]]
    longest: Mapping[int, int]

    def at(self, slot: int, t: int) -> list[tuple[str, int]]:
        starts, spans = self.starts.get(slot, []), self.spans.get(slot, [])
        lo = bisect.bisect_left(starts, t - self.longest.get(slot, 0) + 1)
        hi = bisect.bisect_right(starts, t)
        return [(o, j) for t0, t1, o, j in spans[lo:hi] if t0 <= t < t1]


def _busy_by_slot(c: _Case) -> _Busy:
    spans: dict[int, list[tuple[int, int, str, int]]] = defaultdict(list)
    for o, ins in c.ins_of.items():
        for j in range(c.copies):
            t0 = c.schedule[o] + j * c.II
            for w in c.sets[o]:
                spans[w].append((t0, t0 + ins.cycles, o, j))
    for rows in spans.values():
        rows.sort()
    return _Busy(
        {w: [r[0] for r in rows] for w, rows in spans.items()},
        spans,
        {w: max((r[1] - r[0] for r in rows), default=0) for w, rows in spans.items()},
    )
