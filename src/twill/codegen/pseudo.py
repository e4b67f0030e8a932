"""Readable pseudocode of a warp-specialised, software-pipelined loop (Twill paper §4.1, §6).

For each warp role: the prologue (stages filling), the steady-state loop body and the epilogue
(stages draining), with the barrier waits and arrivals that every cross-warp dependence needs.
Iteration ``k`` of the steady state executes op ``v`` of iteration ``k - stage(v)``.

Preconditions: as :func:`twill.codegen.plan.make_plan`.
"""

from __future__ import annotations

from twill.codegen.plan import LoopPlan, comment_text, make_plan
from twill.results import WarpSchedule, takes_warp_schedule

__all__ = ["generate_pseudocode"]


def _op_lines(plan: LoopPlan, v: str, slot: int, it: str, indent: str) -> list[str]:
    ins = plan.graph.instruction(v)
    t = comment_text
    out = []
    for c in plan.in_channels(v, slot):
        d = c.edge.distance
        src_it = f"{it} - {d}" if d else it
        out.append(f"{indent}wait(full[{t(c.edge.src)}->{t(v)}], iteration {src_it})"
                   + ("   # skipped when < 0" if d else ""))  # fmt: skip
    unit = "TMA" if ins.variable_latency else (ins.main_unit or "ALU")
    note = f"  # {t(ins.note)}" if ins.note else ""
    out.append(f"{indent}{t(v)}[{it}] = {t(unit.lower())}_{t(v)}(...){note}")
    for c in plan.out_channels(v, slot):
        out.append(f"{indent}arrive(full[{t(v)}->{t(c.edge.dst)}], iteration {it})")
    return out


@takes_warp_schedule
def generate_pseudocode(ws: WarpSchedule) -> str:
    """Pseudocode of the pipelined loop, one block per warp role.

    Parameters
    ----------
    graph
        The loop body.
    schedule, assignment, II, L
        A verified joint schedule (``M``, op -> warp slot(s), ``I``, ``L``), or one
        :class:`~twill.results.WarpSchedule` as ``graph``.

    Returns
    -------
    str
        The pseudocode.

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> text = generate_pseudocode(flash_attention_forward_simplified(),
    ...                            {"S": 0, "P": 2, "O": 3}, {"S": 0, "P": 0, "O": 0}, 2, 4)
    >>> "steady state" in text
    True
    """
    plan = make_plan(ws)
    graph, II = ws.graph, ws.I
    s = plan.stages
    lines = [
        f"# {comment_text(graph.name)}: I = {II}, L = {plan.length}, {s} stage(s);"
        " N = loop trip count",
        "# M: "
        + ", ".join(
            f"{comment_text(v)}@{plan.schedule[v]} (stage {plan.stage(v)})" for v in plan.order
        ),
    ]
    for c in plan.channels:
        e = c.edge
        t = comment_text
        lines.append(f"# barrier full[{t(e.src)}->{t(e.dst)}]: warp {c.src_slot} -> "
                     f"warp {c.dst_slot} (distance {e.distance}); "
                     "empty[...] returns the buffer")  # fmt: skip
    for role in plan.roles:
        lines += ["", f"warp {role.slot} ({comment_text(role.name)}, {role.threads} threads):"]
        ops = role.ops
        if s > 1:
            lines.append("  # prologue")
            for k in range(s - 1):
                for v in ops:
                    if plan.stage(v) <= k:
                        lines += _op_lines(plan, v, role.slot, str(k - plan.stage(v)), "  ")
        lines.append(f"  # steady state: one iteration every I = {II} cycles")
        lines.append(f"  for k in range({s - 1}, N):")
        for v in ops:
            st = plan.stage(v)
            lines += _op_lines(plan, v, role.slot, f"k - {st}" if st else "k", "    ")
        if s > 1:
            lines.append("  # epilogue")
            for e_ in range(s - 1):
                for v in ops:
                    st = plan.stage(v)
                    if st >= e_ + 1:
                        lines += _op_lines(plan, v, role.slot, f"N + {e_ - st}", "  ")
    return "\n".join(lines) + "\n"
