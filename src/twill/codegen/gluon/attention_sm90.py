"""The FlashAttention forward for sm_90a (H100) through Gluon, its structure read from a plan.

:func:`attention_forward_sm90` takes an :class:`~twill.codegen.gluon.plan.AttentionPlan` (Twill's
slots, the roles each runs, warps, registers, the K/V ring depth) and compiles the FA3-style
template of :mod:`~twill.codegen.gluon.fa_fwd_sm90_kernel` to a cubin without a GPU: one
``warp_specialize`` function per Twill slot in use, the producer (TMA loads of K and V) on the
slot of ``load_k``/``load_v``, one consumer warp group per Q sub-tile on the slot that runs that
sub-tile's ``qk``, ``softmax``, ``correction`` and ``pv``. With Twill's start times it also
makes the two consumers take turns at the tensor core in Twill's order (``tc_order``). A plan the
template cannot run is refused (:class:`~twill.errors.InvalidProblemError`, with the reason).

For ``twill compile``'s route on sm_90a: the roles come from :func:`attention_roles_sm90` (the
accumulator is in registers there, with no tensor-memory store for
:func:`~twill.codegen.gluon.plan.attention_roles` to find), and Twill's start times go to
:func:`attention_forward_sm90` beside the plan; the result's ``notes`` say what was applied.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twill.codegen.gluon.common import (
    GluonKernel,
    check_attention_rows,
    compile_gluon,
    fp16_descriptor,
)
from twill.codegen.gluon.plan import AttentionPlan, Partition, roles_by_tile
from twill.errors import InvalidProblemError

__all__ = [
    "SM90_TILES",
    "attention_forward_sm90",
    "attention_roles_sm90",
    "launch_sm90",
    "tensor_core_turns",
]

#: (BLOCK_M, BLOCK_N, HEAD_DIM) of the template: a 128-row Q block as two 64-row halves (wgmma
#: is 64 rows per warp group), 128-key K/V blocks, head dimension 128, FP16.
SM90_TILES = (128, 128, 128)
#: Warps of the default partition (a consumer warp group) = the kernel's ``num_warps``.
NUM_WARPS = 4
#: The tensor-core order the template's turns give (per iteration, cyclically): each consumer
#: issues the P V of its previous block with the S of its next one, half 0 then half 1.
TURN_ORDER = ("pv0", "qk0", "pv1", "qk1")
#: The most registers per thread ``setmaxnreg`` gives.
SETMAXNREG_MAX = 256


@dataclass(frozen=True)
class _Layout:
    """The template's reading of a plan: the default partition's half, the consumer worker,
    the producer."""

    default: Partition
    default_half: int
    consumer: Partition
    producer: Partition


def attention_roles_sm90(ops: Sequence[Any], graph: Any) -> dict[str, tuple[str, ...]]:  # noqa: ANN401
    """Role -> Twill instructions of the sm_90a forward loop (two Q sub-tiles; the roles of
    :mod:`~twill.codegen.gluon.plan`, read by its :func:`~twill.codegen.gluon.plan.roles_by_tile`).
    On sm_90a the accumulator lives in registers (no tensor memory store), so a sub-tile's
    ``correction`` is what reads its ``pv`` of the iteration before (O rescaled by alpha);
    ``softmax`` the rest beside the two ``wgmma``. ``ops``: the loop's
    :func:`~twill.triton.schedule.graph_ops`, in body order."""
    return roles_by_tile(ops, graph, "sm_90a", _tile_roles_sm90)


def _tile_roles_sm90(t: int, ops: list[Any], graph: Any) -> dict[str, tuple[str, ...]]:  # noqa: ANN401
    """One sub-tile's qk, softmax, correction and pv roles on sm_90a (see
    :func:`attention_roles_sm90`)."""
    mine = [o.name for o in ops]
    mma = [v for v in mine if graph.instruction(v).unit == "TC"]
    if len(mma) != 2:
        raise InvalidProblemError(f"{graph.name}: sub-tile {t} has {len(mma)} wgmma, not 2")
    corr = {e.dst for e in graph.out_edges(mma[1]) if e.distance > 0 and e.dst in mine}
    corr.discard(mma[1])
    return {
        f"qk{t}": (mma[0],),
        f"pv{t}": (mma[1],),
        f"correction{t}": tuple(v for v in mine if v in corr),
        f"softmax{t}": tuple(v for v in mine if v not in corr and v not in mma),
    }


def _half_of(p: Partition) -> int | None:
    """The Q sub-tile whose four roles ``p`` runs (and nothing else), else ``None``."""
    for t in (0, 1):
        if set(p.roles) == {f"qk{t}", f"softmax{t}", f"correction{t}", f"pv{t}"}:
            return t
    return None


def _layout(plan: AttentionPlan) -> _Layout:
    """Check that the template can run ``plan``; raise with the reason when not."""
    tiles = (plan.block_m, plan.block_n, plan.head_dim)
    if plan.arch != "sm_90a":
        raise InvalidProblemError(f"the sm_90a template got a plan for {plan.arch}")
    if tiles != SM90_TILES:
        raise InvalidProblemError(f"the sm_90a template has tiles {SM90_TILES}, the plan {tiles}")
    loads = [p for p in plan.partitions if set(p.roles) == {"load_k", "load_v"}]
    halves = {_half_of(p): p for p in plan.partitions if _half_of(p) is not None}
    if len(plan.partitions) != 3 or len(loads) != 1 or set(halves) != {0, 1}:
        what = "; ".join(f"slot {p.slot}: {', '.join(p.roles)}" for p in plan.partitions)
        raise InvalidProblemError(
            "the sm_90a template runs three partitions: the K and V loads on one slot, each "
            f"Q sub-tile's qk, softmax, correction and pv on a slot of its own; the plan has {what}"
        )
    default = next(p for p in plan.partitions if p.default)
    if default is loads[0]:
        raise InvalidProblemError("the sm_90a template's default partition is a consumer")
    for p in halves.values():
        if p.warps != NUM_WARPS:
            raise InvalidProblemError(
                f"slot {p.slot}: a consumer is one warp group ({NUM_WARPS} warps), not {p.warps}"
            )
    half = _half_of(default)
    assert half is not None
    return _Layout(default, half, halves[1 - half], loads[0])


def tensor_core_turns(plan: AttentionPlan, schedule: Mapping[str, int]) -> list[str] | None:
    """The cyclic order of the four tensor-core roles in Twill's modulo schedule (start time
    ``M(v) mod I``), started at ``pv0``, when it is the template's turn order
    (:data:`TURN_ORDER`); ``None`` when Twill orders them otherwise (the consumers then run
    without turns)."""
    offset = {r: schedule[plan.roles[r][0]] % plan.I for r in TURN_ORDER}
    ring = sorted(TURN_ORDER, key=lambda r: (offset[r], TURN_ORDER.index(r)))
    k = ring.index("pv0")
    ring = ring[k:] + ring[:k]
    return ring if tuple(ring) == TURN_ORDER else None


def _granted_registers(lay: _Layout) -> tuple[int, int, int]:
    """Registers per thread ``setmaxnreg`` gives the default partition, the consumer worker and
    the producer, by Triton 3.9's rule (``AllocateWarpGroups``): the workers are padded to whole
    warp groups, each group gets its largest request (rounded up to 8), the default what is left
    of the 64K file at the launch's even share, at most ``setmaxnreg``'s 256."""
    worker = -(-lay.consumer.regs // 8) * 8
    producer = max(-(-lay.producer.regs // 8) * 8, 16)
    groups = -(-(lay.consumer.warps + lay.producer.warps) // 4)
    share = 65536 // ((NUM_WARPS + 4 * groups) * 32) // 8 * 8
    budget = share * NUM_WARPS + (share - worker) * 4 + (share - producer) * 4 * (groups - 1)
    return min(budget // NUM_WARPS // 8 * 8, SETMAXNREG_MAX), worker, producer


def _signature() -> dict[str, str]:
    from triton.experimental.gluon import language as gl

    bm, bn, d = SM90_TILES
    half = gl.NVMMASharedLayout.get_default_for([bm // 2, d], gl.float16)
    kv = gl.NVMMASharedLayout.get_default_for([bn, d], gl.float16)
    q_desc = f"tensordesc<fp16[{bm // 2},{d}],{half!r}>"
    kv_desc = f"tensordesc<fp16[{bn},{d}],{kv!r}>"
    return {"q_desc": q_desc, "k_desc": kv_desc, "v_desc": kv_desc, "o_desc": q_desc,
            "seq_len": "i32", "sm_scale": "fp32"}  # fmt: skip


def _constexprs(plan: AttentionPlan, lay: _Layout, pingpong: bool) -> dict[str, Any]:
    cfg = (plan.kv_stages, plan.kv_stages, pingpong, lay.default_half)
    return {
        "CFG": cfg,
        "WORKER_WARPS": (lay.consumer.warps, lay.producer.warps),
        "WORKER_REGS": (lay.consumer.regs, lay.producer.regs),
    }


def _turns(plan: AttentionPlan, schedule: Mapping[str, int] | None) -> list[str] | None:
    return None if schedule is None else tensor_core_turns(plan, schedule)


def attention_forward_sm90(
    plan: AttentionPlan, schedule: Mapping[str, int] | None = None
) -> GluonKernel:
    """Compile the sm_90a FlashAttention forward that ``plan`` describes. ``schedule``
    (Twill's start times, instruction -> ``M(v)``) lets the consumers take turns at the tensor
    core in Twill's order; without it, or when Twill's order is not the template's, they do not
    (a note says so). ``partitions`` of the result: one entry per ``warp_specialize``
    function, with the registers its ``setmaxnreg`` gives (``regs``) beside the plan's
    (``regs_planned``)."""
    from twill.codegen.gluon.fa_fwd_sm90_kernel import fa_fwd_sm90_kernel

    lay = _layout(plan)
    turns = _turns(plan, schedule)
    kernel = compile_gluon(
        fa_fwd_sm90_kernel,
        "sm_90a",
        _signature(),
        _constexprs(plan, lay, turns is not None),
        num_warps=NUM_WARPS,
    )
    kernel.partitions = _partitions_applied(lay, kernel)
    kernel.notes += _notes(plan, schedule, turns)
    return kernel


def _partitions_applied(lay: _Layout, kernel: GluonKernel) -> list[dict[str, Any]]:
    """Slot -> function, warps and registers, each ``setmaxnreg`` value checked in the PTX."""
    granted = dict(zip(("default", "consumer", "producer"), _granted_registers(lay), strict=True))
    found = {int(n) for n in re.findall(r"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32\s+(\d+)",
                                        kernel.ptx)}  # fmt: skip
    if granted["default"] < lay.default.regs:
        kernel.notes.append(
            f"slot {lay.default.slot} (default partition): setmaxnreg gives "
            f"{granted['default']} registers, the plan {lay.default.regs} (Triton pads the TMA "
            "warp to a warp group, whose 128 threads keep its registers)"
        )
    warps, requested = _read_back(kernel.ttgir)
    if warps != [lay.consumer.warps, lay.producer.warps]:
        kernel.notes.append(f"the TTGIR's worker partitions have {warps} warps")
    if requested != [lay.consumer.regs, lay.producer.regs]:
        kernel.notes.append(f"the TTGIR's worker partitions request {requested} registers")
    rows = []
    for kind, p, fn in (
        ("default", lay.default, f"_fa_consumer(H={lay.default_half})"),
        ("consumer", lay.consumer, f"_fa_consumer(H={1 - lay.default_half})"),
        ("producer", lay.producer, "_fa_producer"),
    ):
        regs = granted[kind]
        if regs not in found:
            kernel.notes.append(f"slot {p.slot}: no setmaxnreg {regs} in the PTX")
        rows.append({"slot": p.slot, "function": fn, "default": p.default, "roles": list(p.roles),
                     "warps": p.warps, "regs": regs, "regs_planned": p.regs})  # fmt: skip
    return rows


def _read_back(ttgir: str) -> tuple[list[int], list[int]]:
    """The worker partitions' warps and requested registers in the compiled TTGIR."""
    regs = re.search(r"requestedRegisters = array<i32: ([\d, ]+)>", ttgir)
    warps = re.findall(r"^\s*partition\d+\(.*\bnum_warps\((\d+)\)", ttgir, re.M)
    return [int(w) for w in warps], [int(r) for r in regs.group(1).split(",")] if regs else []


def _notes(
    plan: AttentionPlan, schedule: Mapping[str, int] | None, turns: list[str] | None
) -> list[str]:
    ring = f"K and V rings of {plan.kv_stages} buffers each"
    if schedule is None:
        return [f"{ring}; no schedule given: the consumers do not take turns at the tensor core"]
    if turns is None:
        return [f"{ring}; Twill's tensor-core order is not the template's turns "
                f"({', '.join(TURN_ORDER)}): the consumers do not take turns"]  # fmt: skip
    return [f"{ring}; the consumers take turns at the tensor core in Twill's order: "
            + ", ".join(turns)]  # fmt: skip


def launch_sm90(
    plan: AttentionPlan,
    q: Any,  # noqa: ANN401 (torch tensors: [batch*heads*seq_len, 128] FP16 on the GPU)
    k: Any,  # noqa: ANN401
    v: Any,  # noqa: ANN401
    seq_len: int,
    sm_scale: float,
    schedule: Mapping[str, int] | None = None,
) -> Any:  # noqa: ANN401
    """Run the kernel of ``plan`` on the GPU (the layout of the shipped ``fa_fwd``: rows of
    every batch·head one after another, ``seq_len`` a multiple of 128); returns O."""
    import torch

    from twill.codegen.gluon.fa_fwd_sm90_kernel import fa_fwd_sm90_kernel

    lay = _layout(plan)
    bm, bn, d = SM90_TILES
    check_attention_rows(q, seq_len, bm, d)
    o = torch.empty_like(q)
    desc = fp16_descriptor
    grid = (seq_len // bm, q.shape[0] // seq_len)
    fa_fwd_sm90_kernel[grid](
        desc(q, bm // 2, d), desc(k, bn, d), desc(v, bn, d), desc(o, bm // 2, d), seq_len, sm_scale,
        **_constexprs(plan, lay, _turns(plan, schedule) is not None), num_warps=NUM_WARPS,
    )  # fmt: skip
    return o
