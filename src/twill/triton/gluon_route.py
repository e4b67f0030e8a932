"""``twill compile``'s Gluon route: the FlashAttention forward (two Q sub-tiles) compiled from
a Gluon template whose partitions are Twill's warp slots (:mod:`twill.codegen.gluon.plan`).

:func:`gluon_summary` is tried on a warp-specialised Twill answer; it returns ``(summary,
None)``, or ``(None, why)`` when the route does not apply (another kernel family, tiles the
template is not written for, no template for the architecture, roles Twill's model cannot keep
whole at its I and L): the attribute route then compiles the kernel, and the summary's
``gluon`` says why.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from twill.codegen.gluon.plan import (
    AttentionPlan,
    attention_roles,
    pin_roles,
    plan_from_schedule,
    split_roles,
)
from twill.errors import InvalidProblemError

__all__ = ["PINNED_SUFFIX", "gluon_summary", "template_for"]

#: Appended to the problem's name when Twill's model was re-solved with each template role's
#: ops pinned to one slot.
PINNED_SUFFIX = "+gluon-roles-pinned"
#: What each Gluon template takes for granted of the launch.
GLUON_ASSUMED = {
    "sm_100a": "Gluon template: q, k, v, o are fp16 [batch*heads*seq_len, 128] TMA descriptors "
    "with 128 x 128 blocks; seq_len a multiple of 256 (two 128-row Q tiles per program, 128-key "
    "blocks, no masking); grid (seq_len / 256, batch*heads)",
    "sm_90a": "Gluon template: q, k, v, o are fp16 [batch*heads*seq_len, 128]; seq_len a "
    "multiple of 128 (a 128-row Q block per program in two 64-row halves, 128-key blocks, no "
    "masking); grid (seq_len / 128, batch*heads)",
}
#: What a template does not take of Twill's schedule, per architecture.
ORDER_NOTE = {
    "sm_100a": ("each partition runs its roles in ROLE_ORDER per K/V block (not by Twill's "
                "start times); Twill's stages set the K/V ring depth",),
}  # fmt: skip
#: Seconds for the Phase-2 check of the pinned roles at Twill's I and L.
PIN_CHECK_SECONDS = 60.0


def template_for(arch: str) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """``(roles, compile)`` of ``arch``'s Gluon FlashAttention-forward template: the
    function finding each role's instructions in the loop, and the one compiling a plan
    (``None`` when there is no template)."""
    if arch == "sm_100a":
        from twill.codegen.gluon.attention_sm100 import attention_forward_sm100

        return attention_roles, lambda plan, schedule: attention_forward_sm100(plan)
    if arch == "sm_90a":
        from twill.codegen.gluon.attention_sm90 import (
            attention_forward_sm90,
            attention_roles_sm90,
        )

        return attention_roles_sm90, attention_forward_sm90
    return None


def _tiles_fit(arch: str, ttgir_lines: list[str]) -> str | None:
    """Why the loop's tensor-core ops are not the template's tiles (sm_100a: 128 x 128 fp16
    operands, fp32 accumulators), or ``None``; another architecture's template checks its
    own."""
    if arch != "sm_100a":
        return None
    for line in ttgir_lines:
        shapes = set(re.findall(r"memdesc<(\d+x\d+x\w+?)[,>]", line))
        if shapes - {"128x128xf16", "128x128xf32", "1xi64"}:
            return (
                f"the template is written for 128 x 128 x 128 tiles; the loop has {sorted(shapes)}"
            )
    return None


def _pinned(graph: Any, roles: dict, r: Any, seconds: float) -> tuple[dict, dict, dict]:  # noqa: ANN401
    """Twill's model at its own I and L with each role's ops on one slot (Twill's answer as
    the hint): ``(schedule, assignment, moved)``. Raises when the model refutes or cannot
    decide it in :data:`PIN_CHECK_SECONDS`."""
    from twill.sched.front import at_fixed_warps

    pins = pin_roles(roles, r.assignment, graph)
    got = at_fixed_warps(graph, r, pins, seconds)
    if got.answer != "sat":
        raise InvalidProblemError(
            f"Twill's answer splits template roles over slots and its model with each role on "
            f"one slot is {got.answer} at I = {r.I}, L = {r.L} (within {seconds:.0f} s)"
        )
    slots = {v: (w,) if isinstance(w, int) else tuple(w) for v, w in r.assignment.items()}
    moved = {v: {"twill": list(slots[v]), "gluon": list(pins[v])} for v in pins
             if tuple(pins[v]) != slots[v]}  # fmt: skip
    return got.schedule, got.assignment, moved


def gluon_summary(
    ks: Any,  # noqa: ANN401 (a KernelSpec)
    r: Any,  # noqa: ANN401 (Twill's answer)
    extracted: Any,  # noqa: ANN401 (the ExtractedLoop)
    ttgir: str,
    seconds_left: float | None = None,
) -> tuple[Any, str | None]:
    """The Gluon route's :class:`~twill.triton.peer.CompileSummary` of ``ks`` with Twill's
    answer ``r``, or ``(None, why)``; ``seconds_left`` bounds the check of pinned roles (at
    most :data:`PIN_CHECK_SECONDS`; half of what is left, the rest for the compiles)."""
    from twill.triton.peer import CompileSummary
    from twill.triton.schedule import graph_ops

    t0 = time.perf_counter()
    template = template_for(ks.arch)
    if template is None:
        return None, f"no Gluon template for {ks.arch}"
    find_roles, build = template
    graph = extracted.graph
    try:
        ops = graph_ops(extracted, ttgir)
        roles = find_roles(ops, graph)
        lines = ttgir.splitlines()
        why = _tiles_fit(ks.arch, [lines[n - 1] for n in _tc_lines(extracted)])
        if why:
            return None, why
        schedule, assignment, moved, problem = r.schedule, r.assignment, {}, r.problem
        if split_roles(roles, assignment):
            budget = PIN_CHECK_SECONDS if seconds_left is None else seconds_left / 2
            schedule, assignment, moved = _pinned(graph, roles, r, min(PIN_CHECK_SECONDS, budget))
            problem = f"{r.problem}{PINNED_SUFFIX}"
        plan = plan_from_schedule(ks.arch, roles, schedule, assignment, r.I, r.L, problem)
        kernel = build(plan, schedule)
    except InvalidProblemError as exc:
        return None, str(exc)
    data = _summary_data(ks, r, extracted, plan, kernel, schedule, assignment, moved)
    data["seconds"] = round(time.perf_counter() - t0, 2)
    return CompileSummary(data, kernel), None


def _tc_lines(extracted: Any) -> list[int]:  # noqa: ANN401 (an ExtractedLoop)
    """The TTGIR lines (1-based) of the loop's tensor-core instructions."""
    made = [line for line, _, what in extracted.accounting if what == "instruction"]
    ins = extracted.graph.instructions
    return [line for line, i in zip(made, ins, strict=True) if i.unit == "TC"]


def _summary_data(
    ks: Any,  # noqa: ANN401
    r: Any,  # noqa: ANN401
    extracted: Any,  # noqa: ANN401
    plan: AttentionPlan,
    kernel: Any,  # noqa: ANN401 (a GluonKernel)
    schedule: dict,
    assignment: dict,
    moved: dict,
) -> dict[str, Any]:
    """``summary.json`` of the Gluon route: the keys of the attribute route (docs/triton.md),
    ``route: "gluon"``, and ``gluon`` (the plan)."""
    from twill.triton.peer import assumed_notes

    stages = {v: schedule[v] // r.I for v in sorted(schedule)}
    slots = {v: [w] if isinstance(w, int) else list(w) for v, w in sorted(assignment.items())}
    on = {v: p.function for p in plan.partitions for role in p.roles for v in plan.roles[role]}
    data = {
        "kernel": ks.kernel, "arch": ks.arch, "route": "gluon", "loop": extracted.line,
        "other_loops": {}, "config": ks.config, "I": r.I, "L": r.L, "stages": stages,
        "clusters": {}, "max_stage": max(stages.values(), default=0), "prologue_depth": 0,
        "partitions": {"twill": slots, "applied": True, "functions": kernel.partitions,
                       "regions": on, "moved_to_keep_roles_whole": moved},
        **kernel.resources(),
        "kept": {"stages": [], "partitions": sorted(on)},
        "changed": {"stages": {}, "not_expressed": sorted(stages), "matched_by_location_only": {},
                    "partitions": []},
        "num_warps": kernel.num_warps, "assumed": [*assumed_notes(ks), GLUON_ASSUMED[ks.arch]],
        "triton_scheduled": True,
        "gluon": {**plan.to_dict(), "notes": [*ORDER_NOTE.get(ks.arch, ()), *kernel.notes],
                  "ran_on_gpu": False},
    }  # fmt: skip
    return data
