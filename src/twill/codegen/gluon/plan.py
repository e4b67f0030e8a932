"""Twill's schedule of the FlashAttention forward loop -> an :class:`AttentionPlan` for a Gluon
kernel template: which partition (Twill warp slot) runs each role, with how many warps and
registers, and the depth of the K/V ring.

The template's roles (per Q sub-tile ``t``, two sub-tiles): ``load_k``, ``load_v`` (TMA);
``qk{t}`` (S = Q K^T), ``pv{t}`` (O += P V), the tensor-core ops; ``softmax{t}`` (row max,
exp2, row sum, P, the rescale factor alpha); ``correction{t}`` (O *= alpha: the accumulator's
load, product and store). Each role is a set of Twill's instructions, found from the graph's
structure and source locations (:func:`attention_roles`). A role runs in one partition: a
schedule that splits a role over slots is not expressible by the template
(:func:`split_roles` names them), and :func:`pin_roles` gives the slot assignment that keeps
each role whole, to re-solve Twill's model with (:func:`plan_attention`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from twill.errors import InvalidProblemError

__all__ = [
    "ROLE_ORDER",
    "AttentionPlan",
    "Partition",
    "attention_roles",
    "pin_roles",
    "plan_from_schedule",
    "roles_by_tile",
    "split_roles",
]

#: The template's roles of one iteration in program order (a topological order of their
#: dependences; every partition runs its roles in this order, so no two partitions wait on
#: each other).
ROLE_ORDER = (
    "load_k",
    "load_v",
    "qk0",
    "qk1",
    "softmax0",
    "softmax1",
    "correction0",
    "correction1",
    "pv0",
    "pv1",
)
#: Registers per thread of the TMA partition (``setmaxnreg``'s floor is 24).
LOAD_REGS = 24
#: Hardware warps of a compute slot (a warp group) and of the variable-latency (TMA) slot.
GROUP_WARPS, LOAD_WARPS = 4, 1
#: The SM's register file.
REGISTER_FILE = 65536


@dataclass(frozen=True)
class Partition:
    """One ``warp_specialize`` function: Twill's slot, the roles it runs, warps, registers
    per thread (``setmaxnreg``; the default partition takes what the kernel gives)."""

    slot: int
    roles: tuple[str, ...]
    warps: int
    regs: int
    default: bool = False

    @property
    def function(self) -> str:
        return "default" if self.default else f"worker_slot{self.slot}"

    def to_dict(self) -> dict[str, Any]:
        return {"slot": self.slot, "function": self.function, "roles": list(self.roles),
                "warps": self.warps, "regs": self.regs}  # fmt: skip


@dataclass(frozen=True)
class AttentionPlan:
    """What the Gluon FlashAttention-forward template reads of Twill's schedule.

    ``partitions``: the default partition first, then the workers; ``kv_stages``: K/V ring
    depth (buffers of each); ``I``, ``L``: Twill's answer the plan comes from; ``problem``:
    the problem it answers; ``roles``: role -> Twill's instructions."""

    arch: str
    partitions: tuple[Partition, ...]
    kv_stages: int
    I: int  # noqa: E741 (the paper's name)
    L: int
    problem: str
    roles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    block_m: int = 128
    block_n: int = 128
    head_dim: int = 128

    def slot_of(self, role: str) -> int:
        for p in self.partitions:
            if role in p.roles:
                return p.slot
        raise KeyError(role)

    def to_dict(self) -> dict[str, Any]:
        return {
            "arch": self.arch,
            "partitions": [p.to_dict() for p in self.partitions],
            "kv_stages": self.kv_stages,
            "I": self.I,
            "L": self.L,
            "problem": self.problem,
            "tiles": {
                "BLOCK_M": self.block_m,
                "BLOCK_N": self.block_n,
                "HEAD_DIM": self.head_dim,
                "subtiles": 2,
            },  # fmt: skip
        }


def _tile_of(loc: Sequence[str]) -> str | None:
    """The call site that makes an op one sub-tile's (the outermost location of a chain)."""
    return loc[-1] if len(loc) > 1 else None


def roles_by_tile(
    ops: Sequence[Any],
    graph: Any,  # noqa: ANN401
    template: str,
    tile_roles: Callable[[int, list[Any], Any], dict[str, tuple[str, ...]]],
) -> dict[str, tuple[str, ...]]:
    """Role -> Twill instructions of a FlashAttention-forward loop with two Q sub-tiles, for
    any template: the two TMA ops are ``load_k`` and ``load_v``; the others fall to a sub-tile
    by their outermost call site, and ``tile_roles(t, ops of sub-tile t, graph)`` names the
    sub-tile's roles (the part in which the templates differ). One frame for every template,
    so each reads the loop's loads and sub-tiles the same way.

    ``ops``: :func:`~twill.triton.schedule.graph_ops` of the loop (name, TTGIR operation,
    location chain, in body order); ``graph``: its dependence graph; ``template``: the name the
    errors give. Raises :class:`InvalidProblemError` when the loop has not two loads and two
    sub-tiles, or when an op falls in no role."""
    loads = [o.name for o in ops if graph.instruction(o.name).unit == "TMA"]
    tiles: list[str] = []
    for o in ops:
        t = _tile_of(o.loc)
        if t is not None and t not in tiles and o.name not in loads:
            tiles.append(t)
    if len(loads) != 2 or len(tiles) != 2:
        raise InvalidProblemError(
            f"{graph.name}: the {template} attention template needs two TMA loads (K, V) and "
            f"two Q sub-tiles; found {len(loads)} load(s), {len(tiles)} sub-tile(s)"
        )
    roles: dict[str, tuple[str, ...]] = {"load_k": (loads[0],), "load_v": (loads[1],)}
    for t, site in enumerate(tiles):
        mine = [o for o in ops if _tile_of(o.loc) == site and o.name not in loads]
        roles.update(tile_roles(t, mine, graph))
    placed = [v for r in roles.values() for v in r]
    missing = sorted(set(graph.names) - set(placed))
    if missing:
        raise InvalidProblemError(f"{graph.name}: ops in no sub-tile: {', '.join(missing)}")
    return roles


def attention_roles(ops: Sequence[Any], graph: Any) -> dict[str, tuple[str, ...]]:  # noqa: ANN401
    """Role -> Twill instructions of a FlashAttention-forward loop with two Q sub-tiles
    (:func:`roles_by_tile`; a sub-tile's correction is what its one accumulator store
    needs).

    ``ops``: :func:`~twill.triton.schedule.graph_ops` of the loop (name, TTGIR operation,
    location chain, in body order); ``graph``: its dependence graph. Raises
    :class:`InvalidProblemError` when the loop is not of that family (not two sub-tiles each
    with two tensor-core ops and one accumulator store, or a TMA op other than the K and V
    loads)."""
    return roles_by_tile(ops, graph, "Gluon", _tile_roles)


def _tile_roles(t: int, mine: list[Any], graph: Any) -> dict[str, tuple[str, ...]]:  # noqa: ANN401
    """One sub-tile's qk, softmax, correction and pv roles."""
    mma = [o.name for o in mine if graph.instruction(o.name).unit == "TC"]
    stores = [o.name for o in mine if o.op == "ttng.tmem_store"]
    if len(mma) != 2 or len(stores) != 1:
        raise InvalidProblemError(
            f"{graph.name}: sub-tile {t} needs two tensor-core ops (QK^T, PV) and one "
            f"accumulator store; found {len(mma)} and {len(stores)}"
        )
    names = {o.name for o in mine}
    corr = {stores[0]}
    grew = True
    while grew:  # the store's ancestors used only by the correction
        grew = False
        for e in graph.edges:
            u = e.src
            if e.distance or e.dst not in corr or u in corr or u not in names or u in mma:
                continue
            users = {f.dst for f in graph.out_edges(u) if f.distance == 0}
            if users <= corr:
                corr.add(u)
                grew = True
    soft = tuple(o.name for o in mine if o.name not in corr and o.name not in mma)
    return {f"qk{t}": (mma[0],), f"pv{t}": (mma[1],), f"softmax{t}": soft,
            f"correction{t}": tuple(o.name for o in mine if o.name in corr)}  # fmt: skip


def _slots(assignment: Mapping[str, Any], v: str) -> tuple[int, ...]:
    w = assignment[v]
    return (w,) if isinstance(w, int) else tuple(w)


def split_roles(
    roles: Mapping[str, Sequence[str]], assignment: Mapping[str, Any]
) -> dict[str, list[int]]:
    """Roles whose instructions Twill's warp assignment puts on more than one slot (or an op
    on several slots): role -> the slots used. Empty when the template expresses it."""
    out = {}
    for role, vs in roles.items():
        used = sorted({w for v in vs for w in _slots(assignment, v)})
        if len(used) != 1 or any(len(_slots(assignment, v)) != 1 for v in vs):
            out[role] = used
    return out


def pin_roles(
    roles: Mapping[str, Sequence[str]],
    assignment: Mapping[str, Any],
    graph: Any,  # noqa: ANN401
) -> dict[str, tuple[int, ...]]:
    """A warp assignment that keeps each role on one slot: the slot where Twill's answer
    runs most of the role's cycles (ties: the lower slot). Op -> slot, for
    :class:`~twill.sched.exact.pinned.Pins`."""
    out: dict[str, tuple[int, ...]] = {}
    for vs in roles.values():
        weight: Counter[int] = Counter()
        for v in vs:
            for w in _slots(assignment, v):
                weight[w] += max(graph.instruction(v).cycles, 1)
        best = min(weight, key=lambda w: (-weight[w], w))
        out.update({v: (best,) for v in vs})
    return out


def plan_from_schedule(
    arch: str,
    roles: Mapping[str, Sequence[str]],
    schedule: Mapping[str, int],
    assignment: Mapping[str, Any],
    II: int,
    L: int,
    problem: str,
) -> AttentionPlan:
    """The plan of a Twill answer that keeps every role on one slot (else
    :class:`InvalidProblemError` naming the split roles: the template cannot run one role in
    two partitions)."""
    split = split_roles(roles, assignment)
    if split:
        what = "; ".join(f"{r} on slots {ws}" for r, ws in sorted(split.items()))
        raise InvalidProblemError(
            f"Twill's warp assignment splits template roles over slots ({what}): the Gluon "
            "template runs each role in one partition"
        )
    slot_roles: dict[int, list[str]] = {}
    for role in ROLE_ORDER:
        slot_roles.setdefault(_slots(assignment, roles[role][0])[0], []).append(role)
    if any(r.startswith("load") for w, rs in slot_roles.items() for r in rs) and any(
        not r.startswith("load") for r in slot_roles[_slots(assignment, roles["load_k"][0])[0]]
    ):
        raise InvalidProblemError("Twill put compute roles on the TMA slot: not expressible")
    return AttentionPlan(
        arch=arch,
        partitions=_partitions(slot_roles, roles, assignment, arch),
        kv_stages=kv_ring_depth(roles, schedule, II),
        I=II,
        L=L,
        problem=problem,
        roles={r: tuple(v) for r, v in roles.items()},
    )


#: Registers per thread of a partition running a softmax role (``setmaxnreg``): the S half
#: tile, P and the row statistics without spilling (ptxas: 0 spills at 184, 88 B at 152).
SOFTMAX_REGS = 184


def _partitions(
    slot_roles: Mapping[int, list[str]],
    roles: Mapping[str, Sequence[str]],
    assignment: Mapping[str, Any],
    arch: str,
) -> tuple[Partition, ...]:
    """Default partition: the compute slot holding the correction of sub-tile 0 (it writes
    the output); the TMA slot a 1-warp worker. Registers (the templates' rule): on sm_100a a
    partition with a softmax role :data:`SOFTMAX_REGS`, the others share what is left of the
    file (the TMA warp and the three warps padding it to a warp group at
    :data:`LOAD_REGS`); on sm_90a the compute groups share it evenly."""
    load_slot = _slots(assignment, roles["load_k"][0])[0]
    compute = sorted(w for w in slot_roles if w != load_slot)
    first = _slots(assignment, roles["correction0"][0])[0]
    soft = [w for w in compute if any(r.startswith("softmax") for r in slot_roles[w])]
    if arch != "sm_100a":
        soft = []
    pad = GROUP_WARPS if arch == "sm_100a" else LOAD_WARPS  # Triton pads the TMA warp there
    left = REGISTER_FILE - 32 * (pad * LOAD_REGS + GROUP_WARPS * SOFTMAX_REGS * len(soft))
    others = len(compute) - len(soft)
    rest = min(255, left // max(others, 1) // (32 * GROUP_WARPS) // 8 * 8)
    if rest < 64:
        raise InvalidProblemError(
            f"{len(soft)} softmax partitions at {SOFTMAX_REGS} registers leave {rest} per "
            "thread to the others: the template does not fit the register file"
        )

    def part(w: int, default: bool = False) -> Partition:
        regs = SOFTMAX_REGS if w in soft else rest
        return Partition(w, tuple(slot_roles[w]), GROUP_WARPS, regs, default=default)

    parts = [part(first, default=True)] + [part(w) for w in compute if w != first]
    if load_slot in slot_roles:
        parts.append(Partition(load_slot, tuple(slot_roles[load_slot]), LOAD_WARPS, LOAD_REGS))
    return tuple(parts)


def kv_ring_depth(roles: Mapping[str, Sequence[str]], schedule: Mapping[str, int], II: int) -> int:
    """Buffers of the K (and of the V) ring: one per iteration in flight between a load and
    its last reader, by Twill's stages (``floor(M / I)``), at least 2 (a load of the next
    block while the current one is read)."""

    def stage(v: str) -> int:
        return schedule[v] // II

    depth = 2
    for load, readers in (("load_k", ("qk0", "qk1")), ("load_v", ("pv0", "pv1"))):
        last = max(stage(roles[r][0]) for r in readers)
        depth = max(depth, last - stage(roles[load][0]) + 1)
    return depth
