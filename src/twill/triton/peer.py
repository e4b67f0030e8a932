"""Twill and Triton on the same loop: Triton's schedule priced in Twill's model, and Twill's
schedule compiled by Triton.

* :func:`price_triton` compiles the kernel as Triton does by default (``num_stages=3``, the
  kernel's ``num_warps``, warp specialisation only where the kernel asks for it), reads the
  stage, cluster and partition of every loop operation after ``schedule_loops``, maps them onto
  Twill's graph (:mod:`twill.triton.schedule`) and asks Twill's model for the smallest
  ``(I, L)`` at which those decisions are feasible (a
  :class:`~twill.sched.exact.pinned.PinnedProblem`, solved through the registry).
* :func:`compile_twill` writes Twill's schedule onto the loop, lets Triton finish the
  compilation and reads the pipelined IR back (:func:`~twill.triton.schedule.read_back`).

Warp assignment. Without warp specialisation every operation of Triton's loop, its loads
included, runs on all ``num_warps`` warps: it is priced on the single-partition graph
(:func:`~twill.sched.exact.single.single_partition_graph`: each op on the slots those warps
fill, ``num_warps / 4`` warp groups, each tensor spread over them, no hand-off between warps),
the point of Twill's own problem that holds it.
With warp specialisation (``ttg.partition``) each partition is one compute slot, a partition of
loads only the variable-latency slot. Twill's variable-latency ops always sit on that slot (a
rule of the model). Twill's partitions are written on both architectures: Triton's generic
``warp_specialize`` pass keeps a given grouping (Blackwell's own path; on Hopper Triton 3.9
runs ``hopper_warpspec`` instead, and twill runs the generic pass where it wrote partitions).
When Triton rejects them, the stages alone are compiled and the summary says why.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from twill.deadline import MIN_SLICE, Deadline
from twill.errors import InvalidProblemError
from twill.options import SolverOptions
from twill.registry import solve_with
from twill.results import SolveResult, Status
from twill.sched.front import (
    PinnedProblem,
    Pins,
    pinned_answer,
    single_partition_graph,
    solve_for_compile,
)
from twill.sched.ir import DependenceGraph
from twill.sched.machines import SMEM_PER_CTA
from twill.sched.verify_warps import (
    WARPS_PER_SLOT,
    WarpRules,
    register_peaks,
    verify_warp_schedule,
)
from twill.triton.extract import ExtractedLoop
from twill.triton.schedule import (
    Match,
    graph_ops,
    match_graph,
    read_back,
    scheduled_loop,
    twill_stages,
    with_empty_schedule,
    write_partitions,
    write_schedule,
)

__all__ = [
    "KernelSpec",
    "solve_for_compile",
    "price_triton",
    "compile_twill",
    "compile_spill_free",
    "SPILL_TRIES",
    "SPILL_SHARE",
    "auto_edit",
    "TritonPeer",
    "CompileSummary",
    "compile_file_names",
    "PARTITION_NOTE",
    "ONE_PARTITION_NOTE",
    "twill_slots",
    "SUMMARY_KEYS",
]

#: Why no partitions are written when Twill's answer runs without warp specialisation.
ONE_PARTITION_NOTE = "not applied: Twill's answer is one partition (no warp specialisation)"
#: Why Twill's warp assignment is not written (recorded in the summary when it is not).
PARTITION_NOTE = {
    "sm_90a": "not applied: Twill's answer has no warp assignment",
    "sm_100a": "not applied: Twill's answer has no warp assignment",
}
#: How a loop Triton does not software-pipeline is priced.
NOT_PIPELINED = (
    "Triton does not pipeline this loop (schedule_loops leaves it without a schedule): priced "
    "as it runs, every op in stage 0, in program order, on all num_warps warps"
)
SUMMARY_KEYS = (
    "kernel",
    "arch",
    "I",
    "L",
    "stages",
    "partitions",
    "regs",
    "smem_bytes",
    "spills",
    "kept",
    "changed",
)


@dataclass(frozen=True)
class KernelSpec:
    """One kernel to compile: file, name, target and the options of ``import-triton``."""

    path: Path
    kernel: str
    arch: str
    signature: dict[str, str]
    constexprs: dict[str, Any]
    num_warps: int
    config: int | None = None  # the @triton.autotune config (None: the first)
    loop: int | None = None  # kernel source line of the loop to schedule (None: costliest)
    specialize: bool = False  # pointers divisible by 16, as a launch on aligned tensors

    @property
    def label(self) -> str:
        return f"{self.path}:{self.kernel}"


def twill_graph(ks: KernelSpec) -> tuple[ExtractedLoop, str]:
    """Twill's loop of the kernel (the one at ``ks.loop``, else the costliest, as ``twill
    solve`` picks) and the ``num_stages=1`` TTGIR it was extracted from."""
    from twill.triton.compiler import compile_ttgir
    from twill.triton.extract import extract_loops, pick_loop

    ttgir = compile_ttgir(
        ks.path,
        ks.kernel,
        ks.arch,
        ks.signature,
        ks.constexprs,
        num_warps=ks.num_warps,
        config=ks.config,
        specialize=ks.specialize,
    ).ttgir
    loops = extract_loops(ttgir, ks.arch, source=ks.label, name=ks.kernel)
    return pick_loop(loops, ks.loop, ks.label), ttgir


def _build(ks: KernelSpec, edit: Any = None, key: str = "") -> Any:
    from twill.triton.build import build_kernel
    from twill.triton.compiler import apply_heuristics, as_constexpr, load_kernel, unwrap_kernel

    # under @triton.autotune / @triton.heuristics, as the extraction takes it (ks.config)
    fn, tuned, _, heuristics, notes = unwrap_kernel(
        load_kernel(ks.path, ks.kernel), ks.kernel, ks.config
    )
    known = {**tuned, **{n: as_constexpr(v) for n, v in ks.constexprs.items()}}
    apply_heuristics(heuristics, ks.kernel, known, ks.constexprs, notes)
    consts = {n: v for n, v in known.items() if n not in ks.signature}
    return build_kernel(
        fn,
        ks.arch,
        ks.signature,
        consts,
        num_warps=ks.num_warps,
        edit=edit,
        key=key,
        specialize=ks.specialize,
    )


def _slots(graph: DependenceGraph, match: Match, num_warps: int) -> tuple[dict, list[str]]:
    """Twill warp slots of Triton's assignment (module docstring), and what cannot be put."""
    notes: list[str] = []
    slots: dict[str, tuple[int, ...]] = {}
    vl = any(i.variable_latency for i in graph.instructions)
    first = 1 if vl else 0
    compute = graph.machine.warps - first
    parts = {op.partition for op in match.pairs.values() if op.partition}
    for i in graph.instructions:
        if i.variable_latency:
            continue
        op = match.pairs.get(i.name)
        if parts and op is not None and op.partition:
            slots[i.name] = tuple(first + p for p in op.partition)
            continue
        k = max(-(-num_warps // WARPS_PER_SLOT), -(-max(i.warps, 1) // WARPS_PER_SLOT))
        if k > compute:
            notes.append(
                f"{i.name}: {num_warps} warps need {k} warp groups, the machine has {compute}"
            )
            k = compute
        slots[i.name] = tuple(range(first, first + k))
    if any(max(s) >= graph.machine.warps for s in slots.values()):
        raise InvalidProblemError(
            f"Triton's partitions need more than the machine's {graph.machine.warps} warp slots"
        )
    return slots, notes


def triton_pins(graph: DependenceGraph, match: Match, num_warps: int) -> tuple[Pins, list[str]]:
    """Stages (from 0), body order per partition and warp slots of Triton's schedule."""
    staged = {v: op for v, op in match.pairs.items() if op.stage is not None}
    base = min((op.stage for op in staged.values()), default=0)
    stages = {v: op.stage - base for v, op in staged.items()}  # type: ignore[operator]
    chains: dict[tuple[int, ...] | None, list[str]] = {}
    for v, op in sorted(staged.items(), key=lambda kv: (kv[1].cluster or 0, kv[1].index)):
        chains.setdefault(op.partition, []).append(v)
    slots, notes = _slots(graph, match, num_warps)
    return Pins(stages, tuple(chains.values()), slots), notes


def order_contradictions(graph: DependenceGraph, pins: Pins) -> list[tuple[str, str]]:
    """Edges ``(u, v)`` of one iteration whose ops share a stage and a chain with ``v`` ordered
    before ``u``: no start times meet them, so the matched operations are not the ones the
    graph reads."""
    rank = {v: (k, n) for k, chain in enumerate(pins.order) for n, v in enumerate(chain)}
    st = pins.stages
    return [
        (e.src, e.dst)
        for e in graph.edges
        if e.distance == 0
        and e.src in st
        and e.dst in st
        and st[e.src] == st[e.dst]
        and e.src in rank
        and e.dst in rank
        and rank[e.src][0] == rank[e.dst][0]
        and rank[e.dst][1] < rank[e.src][1]
    ]


@dataclass
class TritonPeer:
    """Triton's default schedule of one kernel, mapped and priced in Twill's model."""

    kernel: str
    arch: str
    num_stages: int
    max_stage: int | None
    stages: dict[str, int]
    clusters: dict[str, int]
    partitions: dict[str, list[int]]
    match: Match
    pinned: SolveResult  # the pinned search's (a WarpSchedule when feasible)
    notes: list[str] = field(default_factory=list)
    build: Any = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "arch": self.arch,
            "num_stages": self.num_stages,
            "max_stage": self.max_stage,
            "pipelined": NOT_PIPELINED not in self.notes,
            "stages": self.stages,
            "clusters": self.clusters,
            "partitions": self.partitions or None,
            "status": pinned_answer(self.pinned),
            "I": self.pinned.objective,
            "L": self.pinned.stats.get("L"),
            "optimal": self.pinned.status.is_proof,  # optimal, or proven infeasible
            "match": self.match.to_dict(),
            "notes": self.notes,
            "seconds": round(self.pinned.timings.solve, 3),
        }


def price_triton(
    ks: KernelSpec,
    extracted: ExtractedLoop | None = None,
    ttgir: str | None = None,
    *,
    total_time_limit: float | None = 300.0,
) -> TritonPeer:
    """Triton's default schedule of ``ks`` priced in Twill's model (module docstring).

    ``extracted``/``ttgir``: Twill's loop of the kernel and its TTGIR when already at hand.
    The graph is priced in SM clock cycles normalised as Twill's (the same graph Twill
    solves); ``total_time_limit`` bounds the pinned search.
    """
    if extracted is None or ttgir is None:
        extracted, ttgir = twill_graph(ks)
    graph = extracted.graph
    b = _build(ks)
    loop = scheduled_loop(b.texts["triton"], extracted.line, unscheduled=True)
    pipelined = loop.max_stage is not None or any(op.stage is not None for op in loop.ops)
    if not pipelined:  # Triton runs the loop as written: one stage, program order
        for op in loop.ops:
            op.stage, op.cluster = 0, 0
    match = match_graph(graph_ops(extracted, ttgir), loop)
    parts = any(op.partition for op in match.pairs.values())
    priced = graph if parts else single_partition_graph(graph, ks.num_warps)
    pins, notes = triton_pins(priced, match, ks.num_warps)
    if not pipelined:
        notes.insert(0, NOT_PIPELINED)
    if match.twill_only:
        notes.append(f"not in Triton's loop (left free): {', '.join(match.twill_only)}")
    wrong = order_contradictions(graph, pins)
    if wrong:  # not Triton's schedule but a wrong match: no price, never "infeasible"
        notes.append(
            "not priced: the match contradicts the graph (Triton's body order puts "
            + "; ".join(f"{v} before {u}, which it depends on" for u, v in wrong)
            + " in the same stage); a predicated scf.if body is matched at loop level only"
        )
        result = SolveResult(Status.UNKNOWN, stats={"L": None, "lower_I": 0, "max_I": 0})
    else:
        pinned = PinnedProblem(priced, pins=pins)  # solved by the registry's "pinned"
        result = solve_with(pinned, SolverOptions(time_limit=total_time_limit))
    return TritonPeer(
        ks.kernel,
        ks.arch,
        3,
        loop.max_stage,
        dict(pins.stages),
        {v: op.cluster for v, op in match.pairs.items() if op.cluster is not None},
        {v: list(op.partition) for v, op in match.pairs.items() if op.partition},
        match,
        result,
        notes,
        b,
    )


@dataclass
class CompileSummary:
    """What ``twill compile`` did: Twill's schedule, what Triton kept of it, the resources."""

    data: dict[str, Any]
    build: Any = field(default=None, repr=False)

    def files(self) -> dict[str, str | bytes]:
        """File name -> content: ``KERNEL.ttgir``, ``KERNEL.ptx``, ``KERNEL.cubin``,
        ``summary.json``."""
        contents = (self.build.ttgir, self.build.ptx, self.build.cubin,
                    json.dumps(self.data, indent=2) + "\n")  # fmt: skip
        return dict(zip(compile_file_names(self.data["kernel"]), contents, strict=True))


def compile_file_names(kernel: str) -> tuple[str, ...]:
    """The files ``twill compile`` writes for ``kernel``, in :meth:`CompileSummary.files`'s
    order (the CLI checks each before any work)."""
    return (f"{kernel}.ttgir", f"{kernel}.ptx", f"{kernel}.cubin", "summary.json")


#: Shared memory one thread block may use (bytes), H100 and B200 alike: 227 KiB (the model's
#: capacity too: :data:`twill.sched.machines.SMEM_PER_CTA`).
SMEM_LIMIT = SMEM_PER_CTA
#: Registers one thread may hold (sm_90, sm_100).
REG_LIMIT = 255


def why_not_runnable(build: Any) -> str | None:  # noqa: ANN401 (a Build)
    """Why the compiled kernel cannot launch, or ``None``: a ``trap`` body, or more shared
    memory than the SM gives one block (Triton refuses it at launch)."""
    if _trap_only(build.ptx):
        return (
            "Triton lowered the kernel to a trap: its buffers exceed the SM's shared or "
            "tensor memory"
        )
    if build.regs is not None and build.regs > REG_LIMIT:
        return f"ptxas gives it {build.regs} registers per thread, more than {REG_LIMIT}"
    if build.smem_bytes and build.smem_bytes > SMEM_LIMIT:
        return (
            f"it needs {build.smem_bytes:,} bytes of shared memory, more than the "
            f"{SMEM_LIMIT:,} one block may use (Triton refuses it at launch)"
        )
    return None


def _trap_only(ptx: str) -> bool:
    """Triton lowers a kernel whose memory does not fit the SM to a single ``trap``."""
    return "trap;" in ptx and not any(w in ptx for w in ("wgmma", "tcgen05", "ld.global", "cp."))


def _slots_of(assignment: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    return {v: (w,) if isinstance(w, int) else tuple(w) for v, w in assignment.items()}


def _build_twill(
    ks: KernelSpec,
    extracted: ExtractedLoop,
    gops: list[Any],
    schedule: Mapping[str, int],
    II: int,
    slots: dict[str, tuple[int, ...]] | None,
) -> tuple[Any, dict[str, Any]]:
    """Compile with Twill's stages and clusters, and its partitions when ``slots`` is given."""
    state: dict[str, Any] = {}

    def edit(text: str, base: Any) -> str:
        loop = scheduled_loop(text, extracted.line, unscheduled=True)
        if loop.max_stage is None and all(op.stage is None for op in loop.ops):
            state["unscheduled"] = True  # Triton found no latencies: Twill's stages go on
            text = with_empty_schedule(text, loop)
            loop = scheduled_loop(text, extracted.line)
        state["match"] = match = match_graph(gops, loop)
        new, state["written"] = write_schedule(text, loop, match, schedule, II)
        if slots:
            new, state["parts"], state["wide"] = write_partitions(new, loop, match, slots)
        return new

    key = json.dumps({"I": II, "schedule": dict(sorted(schedule.items())), "ws": bool(slots)})
    return _build(ks, edit, key), state


def _partitions(arch: str, slots: dict, state: dict, rb: Any, error: str | None) -> tuple:
    """The summary's ``partitions`` entry, and the instructions whose partition (as a group:
    the same other ops beside it) Triton kept and changed."""
    entry: dict[str, Any] = {"twill": {v: list(w) for v, w in sorted(slots.items())}}
    if "parts" not in state:
        entry.update(applied=False, why=error or PARTITION_NOTE[arch])
        return entry, [], sorted(slots)
    group = {v: frozenset(u for u in slots if slots[u][0] == w[0]) for v, w in slots.items()}
    region = rb.partitions
    seen = {v: frozenset(u for u in region if region[u] == region[v]) for v in region}
    placed = set(region)
    kept = sorted(v for v in region if seen[v] == group[v] & placed)
    entry.update(
        applied=True,
        written=state["parts"],
        regions=region,
        wide_written_on_first_slot=state["wide"],
    )
    return entry, kept, sorted(v for v in slots if v not in kept)


def assumed_notes(ks: KernelSpec) -> list[str]:
    """What the compile took for granted of the launch (divisibility, constant 1), and the
    rule it follows."""
    from twill.triton.compiler import SPECIALIZE_RULE, launch_hints

    notes = launch_hints(ks.signature, ks.specialize)[3]
    return [*notes, SPECIALIZE_RULE] if ks.specialize else [*notes, "--no-specialize: none"]


def _other_loops(ks: KernelSpec, extracted: ExtractedLoop, ttgir: str) -> dict[str, str]:
    """The kernel's loops other than the one Twill schedules (by source line): each keeps
    Triton's own schedule."""
    from twill.triton.extract import extract_loops

    lines = [lp.line for lp in extract_loops(ttgir, ks.arch, source=ks.label, name=ks.kernel)]
    why = "Triton's own schedule (num_stages 3): Twill schedules one loop per compile (--loop)"
    return {str(n): why for n in lines if n != extracted.line}


def compile_twill(
    ks: KernelSpec,
    schedule: Mapping[str, int],
    assignment: Mapping[str, Any],
    II: int,
    L: int,
    extracted: ExtractedLoop,
    ttgir: str,
) -> CompileSummary:
    """Compile ``ks`` with Twill's schedule (``schedule`` at ``II``, length ``L``) written onto
    its loop, and Twill's warp assignment as partitions (if Triton rejects them, the stages
    alone, with Triton's message recorded); the summary records Twill's
    decisions, what the pipeliner kept or changed, and the cubin's resources."""
    t0 = time.perf_counter()
    gops = graph_ops(extracted, ttgir)
    slots = _slots_of(assignment)
    error = None
    try:
        b, state = _build_twill(ks, extracted, gops, schedule, II, slots or None)
    except InvalidProblemError as exc:
        if not slots:
            raise
        error = f"not applied: Triton rejected Twill's partitions: {str(exc)[:300]}"
        b, state = _build_twill(ks, extracted, gops, schedule, II, None)
    match, written = state["match"], state["written"]
    rb = read_back(b.texts["pipelined"], match)
    mine = twill_stages(schedule, II)
    kept = sorted(v for v in written if rb.stages.get(v) == mine[v][0])
    changed = {
        v: {"twill": mine[v][0], "triton": rb.stages.get(v)}
        for v in written
        if rb.stages.get(v) != mine[v][0]
    }
    parts, parts_kept, parts_changed = _partitions(ks.arch, slots, state, rb, error)
    data = {
        "kernel": ks.kernel,
        "arch": ks.arch,
        "loop": extracted.line,
        "other_loops": _other_loops(ks, extracted, ttgir),
        "config": ks.config,
        "I": II,
        "L": L,
        "stages": {v: mine[v][0] for v in sorted(mine)},
        "clusters": {v: c for v, (_, c) in sorted(written.items())},
        "max_stage": max((s for s, _ in mine.values()), default=0),
        "prologue_depth": rb.depth,
        "partitions": parts,
        "regs": b.regs,
        "smem_bytes": b.smem_bytes,
        "spills": b.spills,
        "kept": {"stages": kept, "partitions": parts_kept},
        "changed": {
            "stages": changed,
            "not_expressed": [v for v in mine if v not in written],
            "matched_by_location_only": match.lowered,
            "partitions": parts_changed,
        },
        "runnable": why_not_runnable(b) is None,
        "num_warps": ks.num_warps,
        "assumed": assumed_notes(ks),
        "triton_scheduled": not state.get("unscheduled", False),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if not data["runnable"]:
        data["why_not_runnable"] = why_not_runnable(b)
    return CompileSummary(data, b)


#: Re-solves :func:`compile_spill_free` makes after a compile that spills, at most.
SPILL_TRIES = 4
#: Share of the search's time ``twill compile`` keeps for them: the first search of a loop
#: whose proof takes the whole limit (the plain B200 forward) left none before.
SPILL_SHARE = 0.25


def with_register_limit(graph: DependenceGraph, limit: int) -> DependenceGraph:
    """``graph`` on a machine whose warp groups hold at most ``limit`` registers per thread."""
    return replace(graph, machine=replace(graph.machine, registers_per_warp=limit))


def compile_spill_free(
    ks: KernelSpec,
    result: Any,  # noqa: ANN401 (a TwillResult)
    summary: CompileSummary,
    extracted: ExtractedLoop,
    ttgir: str,
    deadline: Deadline,
    solve: Callable[[DependenceGraph, Deadline], Any],
    build_seconds: float,
) -> tuple[Any, CompileSummary]:
    """Where ptxas disagrees with the register model, the model is corrected: while the
    compiled schedule spills (``summary``'s ``spills`` > 0), the register limit per warp group
    is set one below that schedule's peak in the model (:func:`register_peaks`), the loop is
    solved again (``solve(graph, deadline)``), the answer verified under that limit and
    compiled; at most :data:`SPILL_TRIES` times, each solve and compile within ``deadline``
    (the command's: a solve gets half of what is left after its compile, all for the last
    try; the compile is ``build_seconds`` or twice the last compile's time if less). Returns
    the answer and summary of the compile that spilled least (the first of equals), its
    ``registers`` entry saying what was corrected and why: each compile's limit, I, L, model
    peak, ptxas registers and spill bytes, and why it stopped.

    The model counts the registers of the values a schedule holds; ptxas also needs the
    addresses, indices and masks Twill folds, so a schedule at the limit can spill (the H100
    backward: 225 registers in the model, 255 and 2,392 bytes spilled in ptxas).
    """
    default = extracted.graph.machine.registers_per_warp
    tries: list[dict[str, Any]] = []
    best = (result, summary, default)
    r, s, limit = result, summary, default
    while True:
        ws = r.warp_schedule
        peak = max(register_peaks(ws).values(), default=0) if ws is not None else None
        tries.append({"registers_per_warp": limit, "I": r.I, "L": r.L, "optimal": r.optimal,
                      "model_peak": peak, "ptxas_regs": s.data["regs"],
                      "spills": s.data["spills"]})  # fmt: skip
        if s.data["spills"] < best[1].data["spills"]:
            best = (r, s, limit)
        if not s.data["spills"]:
            break
        left = SPILL_TRIES + 1 - len(tries)  # re-solves still allowed, this one included
        # this try's compile kept (twice the last one's, for a loaded machine); of the rest half
        # (all for the last try): a first correction that succeeds gets time to solve well
        build_seconds = min(build_seconds, 2.0 * s.data["seconds"])
        share = ((deadline.remaining() or 0.0) - build_seconds) / min(max(left, 1), 2)
        why = _no_retry(peak, left, share)
        if why is None:
            limit = peak - 1  # type: ignore[operator]
            r2 = solve(with_register_limit(extracted.graph, limit), deadline.child(share))
            why = _rejected(r2, limit)
        if why is not None:
            tries[-1]["stopped"] = why
            break
        r = r2
        s = compile_twill(ks, r.schedule, twill_slots(r), r.I, r.L, extracted, ttgir)
    r, s, limit = best
    why = "ptxas spilled nothing: the model's limit stands"
    if len(tries) > 1:
        why = ("ptxas spilled the schedule solved at the machine's limit: the limit was set one "
               "below each spilled schedule's register peak in the model and the loop solved "
               "again")  # fmt: skip
    elif tries[0]["spills"]:
        why = "ptxas spilled; not corrected: " + tries[0]["stopped"]
    s.data["registers"] = {"limit": limit, "corrected": limit != default, "why": why,
                           "tries": tries}  # fmt: skip
    return r, s


def _no_retry(peak: int | None, left: int, share: float) -> str | None:
    """Why no corrected solve is tried (``None``: one is)."""
    if left <= 0:
        return f"{SPILL_TRIES} corrected solves made"
    if peak is None or peak <= 1:
        return "no register peak to lower in the model"
    if share < MIN_SLICE:
        return "no time left for another solve and compile"
    return None


def _rejected(r: Any, limit: int) -> str | None:  # noqa: ANN401 (a TwillResult)
    """Why a corrected solve's answer is not compiled: none found, or the independent
    verifier rejects it under ``limit`` (``None``: it is compiled)."""
    ws = r.warp_schedule
    if r.I is None or r.schedule is None or ws is None:
        return f"no schedule with at most {limit} registers per thread within the limit"
    bad = verify_warp_schedule(ws, rules=WarpRules.for_graph(ws.graph, registers_per_warp=limit))
    if bad:
        return f"the verifier rejects the schedule at {limit} registers: {bad[0].message}"
    return None


def twill_slots(result: Any) -> dict[str, Any]:  # noqa: ANN401 (a TwillResult)
    """The warp assignment to write as partitions: none when Twill's answer is one partition
    (or the sequential loop of one), which runs without warp specialisation."""
    if result.extra.get("picked") in ("single_partition", "sequential"):
        return {}
    return result.assignment or {}


def auto_edit(total_time_limit: float, log: list[dict[str, Any]]) -> Any:
    """An ``edit`` for :func:`~twill.triton.build.schedule_hook` that extracts Twill's graph
    of whatever kernel is being compiled, solves it (within ``total_time_limit`` seconds) and
    writes Twill's schedule. Where Twill's schedule cannot be written (no loop, a loop Triton
    leaves unscheduled, an architecture Twill does not model) or Twill has no schedule,
    Triton's stays, and ``log`` (``applied`` false, ``why``) and a warning say so: the user's
    launch still compiles."""
    import warnings

    from twill.triton.extract import extract_loops, pick_loop

    def keep(text: str, kernel: str, arch: str | None, why: str) -> str:
        """Triton's own schedule (``text`` unchanged), said in a warning and the log."""
        warnings.warn(f"Twill's schedule not applied to {kernel}: {why}; Triton's own is used",
                      stacklevel=3)  # fmt: skip
        log.append({"kernel": kernel, "arch": arch, "applied": False, "why": why})
        return text

    def edit(text: str, base: Any) -> str:
        # each compile is a call of its own: its deadline starts here, reading included
        deadline = SolverOptions(time_limit=total_time_limit).start().clock
        ttgir = base()
        target = re.search(r'ttg\.target = "cuda:(\d+)"', ttgir)
        arch = {"90": "sm_90a", "100": "sm_100a"}.get(target.group(1) if target else "")
        kernel = m.group(1) if (m := re.search(r"tt\.func public @(\w+)", ttgir)) else "<kernel>"
        if arch is None:
            return keep(text, kernel, arch, "Twill models sm_90a (H100) and sm_100a (B200) only")
        try:
            loops = extract_loops(ttgir, arch, deadline=deadline)
            extracted = pick_loop(loops, None, "<kernel>")
            graph = extracted.graph
            r = solve_for_compile(graph, total_time_limit, deadline, extracted.num_warps)
            if r.I is None or r.schedule is None:
                proven = getattr(r.status, "value", "") == "infeasible"
                why = "Twill proves there is none" if proven else "none within the limit"
                return keep(text, graph.name, arch, f"no Twill schedule: {why}")
            loop = scheduled_loop(text, extracted.line)
            match = match_graph(graph_ops(extracted, ttgir), loop)
            new, written = write_schedule(text, loop, match, r.schedule, r.I)
        except InvalidProblemError as exc:
            return keep(text, kernel, arch, str(exc))
        log.append(
            {
                "kernel": graph.name,
                "arch": arch,
                "applied": True,
                "I": r.I,
                "L": r.L,
                "stages": {v: s for v, (s, _) in written.items()},
                "not_expressed": match.twill_only,
            }
        )
        return new

    return edit
