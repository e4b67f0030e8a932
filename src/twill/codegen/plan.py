"""The loop structure shared by the code generators (Twill paper §3.1, §4.1, §6).

From a joint schedule (``M``, warp assignment, ``I``) this module derives what every warp role
executes: stage ``s(v) = floor(M(v) / I)``, the steady-state order (by ``M(v) mod I``), the
prologue (stages filling), the epilogue (stages draining) and the synchronisation needed by every
edge whose endpoints are on different warps (one "full" barrier producer -> consumer, one "empty"
barrier back). Pure data; no solver is imported.

Preconditions: the schedule and assignment passed
:func:`twill.sched.verify_warps.verify_warp_schedule`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from twill.results import WarpSchedule, takes_warp_schedule
from twill.sched.ir import DependenceGraph, Edge

__all__ = ["LoopPlan", "Role", "Channel", "make_plan", "ident", "unique_idents", "comment_text"]

# C/C++/CUDA keywords that a sanitised name could spell; such names get a prefix.
_KEYWORDS = frozenset(
    "alignas alignof asm auto bool break case catch char class const constexpr continue default "
    "delete do double else enum explicit extern false float for friend goto if inline int long "
    "mutable namespace new noexcept nullptr operator private protected public register return "
    "short signed sizeof static struct switch template this throw true try typedef typename "
    "union unsigned using virtual void volatile while".split()
)


def ident(name: str) -> str:
    """A C identifier for a user-given name: ASCII letters, digits and ``_`` only.

    Every other character becomes ``_``; a name that would start with a digit, be empty or be a
    C++ keyword gets the prefix ``op_``. Different names can give the same identifier; use
    :func:`unique_idents` where identifiers must not clash.
    """
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return out if out and not out[0].isdigit() and out not in _KEYWORDS else f"op_{out}"


def unique_idents(names: Sequence[str]) -> dict[str, str]:
    """Collision-free identifiers for ``names``, in order: a clash gets ``_2``, ``_3``, ...

    Deterministic: the same names in the same order always give the same identifiers.
    """
    used: set[str] = set()
    out: dict[str, str] = {}
    for name in names:
        base = ident(name)
        cand, k = base, 2
        while cand in used:
            cand, k = f"{base}_{k}", k + 1
        used.add(cand)
        out[name] = cand
    return out


def comment_text(text: object) -> str:
    """User text made safe for a one-line comment of generated code.

    Keeps printable ASCII except ``\\`` (a trailing backslash would splice the next line into
    a C++ ``//`` comment) and ``?`` (trigraphs); every other character, newlines included, is
    written as ``<U+XXXX>``, so user text can never start a new line of code.
    """
    return "".join(
        c if " " <= c <= "~" and c not in "\\?" else f"<U+{ord(c):04X}>" for c in str(text)
    )


@dataclass(frozen=True)
class Channel:
    """A cross-warp dependence ``src -> dst`` (distance ``delta``) synchronised by barriers."""

    index: int
    edge: Edge
    src_slot: int
    dst_slot: int


@dataclass(frozen=True)
class Role:
    """One warp slot: its ops in steady-state order and a readable role name."""

    slot: int
    name: str
    ops: tuple[str, ...]
    threads: int


@dataclass(frozen=True)
class LoopPlan:
    graph: DependenceGraph
    schedule: dict[str, int]
    assignment: dict[str, tuple[int, ...]]
    ii: int
    length: int
    stages: int
    order: tuple[str, ...]
    roles: tuple[Role, ...]
    channels: tuple[Channel, ...]
    idents: dict[str, str]  # op name -> collision-free C identifier

    def stage(self, v: str) -> int:
        return self.schedule[v] // self.ii

    def in_channels(self, v: str, slot: int) -> list[Channel]:
        return [c for c in self.channels if c.edge.dst == v and c.dst_slot == slot]

    def out_channels(self, v: str, slot: int) -> list[Channel]:
        return [c for c in self.channels if c.edge.src == v and c.src_slot == slot]


def _role_name(graph: DependenceGraph, ops: Sequence[str]) -> str:
    units = []
    for v in ops:
        ins = graph.instruction(v)
        u = "TMA" if ins.variable_latency else (ins.main_unit or "ALU")
        if u not in units:
            units.append(u)
    if units == ["TMA"]:
        return "producer (TMA)"
    if units == ["TC"]:
        return "MMA issue"
    if "EXP" in units:
        return "softmax" if "TC" not in units else "consumer (MMA + softmax)"
    if "TMEM" in units:
        return "correction"
    return "compute (" + "+".join(units) + ")"


@takes_warp_schedule
def make_plan(ws: WarpSchedule) -> LoopPlan:
    """The loop structure of a joint schedule (``assignment=None``: everything on warp 0).

    Takes a :class:`~twill.results.WarpSchedule`, or its parts.
    """
    graph, II, length = ws.graph, ws.I, ws.L
    sched = dict(ws.schedule)
    assign = dict(ws.assignment)
    stages = max(sched.values()) // II + 1
    order = tuple(sorted(graph.names, key=lambda v: (sched[v] % II, sched[v], v)))
    slots = sorted({w for used in assign.values() for w in used})
    roles = []
    for w in slots:
        ops = tuple(v for v in order if w in assign[v])
        threads = max(32 * max(graph.instruction(v).warps, 1) for v in ops)
        roles.append(Role(w, _role_name(graph, ops), ops, min(threads, 128)))
    channels = []
    for e in graph.edges:
        if set(assign[e.src]) == set(assign[e.dst]):
            continue
        for ws in assign[e.src][:1]:
            for wd in assign[e.dst]:
                channels.append(Channel(len(channels), e, ws, wd))
    return LoopPlan(graph, sched, assign, II, length, stages, order, tuple(roles),
                    tuple(channels), unique_idents(graph.names))  # fmt: skip
