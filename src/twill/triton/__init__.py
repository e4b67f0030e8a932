"""Public API of the Triton front end: a Triton kernel or saved TTGIR -> dependence graph.

A ``FILE.py:KERNEL`` is compiled with Triton (``signature`` and ``constexprs`` as on the
command line, or from a YAML beside the file); a saved ``.ttgir`` needs no Triton:

>>> from twill.triton import SHIPPED_DIR, import_triton
>>> g = import_triton(str(SHIPPED_DIR / "fa_fwd.sm_90a.ttgir"), "sm_90a")
>>> g.name, len(g.instructions)
('fa_fwd', 32)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from twill.deadline import Deadline
from twill.errors import ArgumentTypeError, InvalidProblemError
from twill.sched.front import explain_joint_I as explain_joint_I  # `twill solve` explains I
from twill.sched.ir import DependenceGraph
from twill.triton.importer import (
    KernelOptions,
    TritonImport,
    import_triton,
    import_triton_loops,
    kernel_option_files,
    kernel_options,
)
from twill.validation import check_int, check_num_warps, check_real

__all__ = [
    "import_triton",
    "import_triton_loops",
    "TritonImport",
    "KernelOptions",
    "kernel_options",
    "kernel_option_files",
    "SHIPPED_DIR",
    "SHIPPED_VARIANTS",
    "shipped_spec",
    "compile",
    "compile_summary",
    "kernel_spec",
    "twill_schedule",
]

SHIPPED_DIR = Path(__file__).parents[1] / "data" / "triton"
#: The shipped kernels as the benchmarks, tests and checked-in TTGIR take them: name ->
#: (kernel of ``kernels.py``, constexprs over ``kernels.yaml``'s, ``num_warps`` or ``None`` for
#: the YAML's). ``fa_fwd_plain`` is the forward without sub-tiles: one 128-row Q tile on 8
#: warps on both architectures (a 128 x 128 FP32 tile is 64 registers per thread; on 4 warps,
#: or as a 256-row tile, it spills or exceeds the B200's tensor memory).
SHIPPED_VARIANTS: dict[str, tuple[str, dict[str, Any], int | None]] = {
    "gemm": ("gemm", {}, None),
    "fa_fwd": ("fa_fwd", {}, None),
    "fa_fwd_plain": ("fa_fwd", {"SUBTILES": 1, "BM": 128}, 8),
    "fa_bwd": ("fa_bwd", {}, None),
}


def shipped_spec(name: str, arch: str, *, specialize: bool = False) -> Any:  # noqa: ANN401
    """The :class:`~twill.triton.peer.KernelSpec` of shipped variant ``name``
    (:data:`SHIPPED_VARIANTS`) for ``arch``."""
    kernel, consts, warps = SHIPPED_VARIANTS[name]
    return kernel_spec(f"{SHIPPED_DIR / 'kernels.py'}:{kernel}", arch, constexprs=consts,
                       num_warps=warps, specialize=specialize)  # fmt: skip


def parse_assignments(items: list[str] | None, what: str, numeric: bool) -> dict[str, Any]:
    """``NAME=VALUE`` strings -> dict. With ``numeric`` (constexprs) a value is an integer, a
    float, ``true``/``false``, ``None`` (an optional argument left out), or else kept as a
    string: a Triton dtype name (``fp16``, ``tl.bfloat16``) becomes that dtype when the kernel
    is compiled, and ``'text'`` in quotes is the string ``text``."""
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier() or not value:
            raise InvalidProblemError(f"{what}: expected NAME=VALUE, found {item!r}")
        if name in out:
            raise InvalidProblemError(f"{what}: {name} is given twice")
        out[name] = _constexpr_value(value) if numeric else value
    return out


def _constexpr_value(value: str) -> Any:  # noqa: ANN401 (a number, a bool, None or a string)
    if value == "None":  # an optional argument left out, as a launch with None passes it
        return None
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return value


def _path_to(graph: DependenceGraph, v: str) -> dict[str, int]:
    """Longest sum of delays along distance-0 edges from each op that reaches ``v``."""
    best: dict[str, int] = {v: 0}
    order = [i.name for i in graph.instructions]
    for _ in order:  # Bellman-Ford style relaxation: the distance-0 graph is acyclic
        changed = False
        for e in graph.edges:
            if e.distance == 0 and e.src != e.dst and e.dst in best:
                if best.get(e.src, -1) < best[e.dst] + e.delay:
                    best[e.src] = best[e.dst] + e.delay
                    changed = True
        if not changed:
            break
    return best


def register_conflict(graph: DependenceGraph, num_warps: int | None = None) -> str | None:
    """A proof that no schedule of ``graph`` exists at any I for want of registers, as a
    sentence (``None`` when this test finds none). With the kernel's ``num_warps`` the proof
    must also cover the union's one partition (:func:`_one_partition_conflict`): else
    ``None``, and the search decides.

    Two results ``a`` and ``b`` read by one op ``v`` (distance 0), each with a path to ``v``
    whose delays sum to at least 1, both issue before ``v`` and stay live until ``v`` issues
    (a value is live from its issue to its last user's), so both are live the cycle before.
    Each holds ``regs`` registers per thread on each of its ``k`` warp slots. Two
    variable-latency results share the variable-latency slot; two others share a slot when
    ``k_a + k_b`` exceeds the slots open to them (all but the variable-latency one). If their
    registers together exceed the limit there, no placement and no I fits them. Wide
    element-wise loops meet this where a row must be held whole (docs/triton.md,
    Limitations: a row read by a reduction and by the chain after it).
    """
    proof = _warp_conflict(graph)
    if proof is None or num_warps is None:
        return proof
    one = _one_partition_conflict(graph, num_warps)
    return None if one is None else f"{proof}; {one}"


def _one_partition_conflict(graph: DependenceGraph, num_warps: int) -> str | None:
    """The same argument for the one partition (every op on the same warp groups): two
    results live together before their reader take ``a + b`` registers per thread on every
    group, which must fit the per-group limit and, rounded to ``setmaxnreg``'s granule, the
    SM's register file over all the groups."""
    from twill.sched.front import single_partition_graph
    from twill.sched.verify_warps import WarpRules, register_file_use, slots_needed

    sp = single_partition_graph(graph, num_warps)
    rules = WarpRules.for_graph(sp)
    for _, a, b in _live_pairs(sp):
        both, groups = a.regs + b.regs, slots_needed(a, rules.warps_per_slot)
        used = register_file_use(dict.fromkeys(range(groups), both), rules)
        over_slot = rules.registers_per_warp is not None and both > rules.registers_per_warp
        over_file = rules.registers_per_sm is not None and used > rules.registers_per_sm
        if over_slot or over_file:
            where = (f"over the limit of {rules.registers_per_warp}" if over_slot else
                     f"{used} registers of the SM's {rules.registers_per_sm}")  # fmt: skip
            return (f"one partition on all {num_warps} warps neither: {a.name} and {b.name} "
                    f"take {a.regs} + {b.regs} registers per thread on each of its {groups} "
                    f"warp groups, {where}")  # fmt: skip
    return None


def _live_pairs(graph: DependenceGraph) -> Iterator[tuple[Any, Any, Any]]:
    """``(v, a, b)``: two results ``a``, ``b`` that op ``v`` reads (distance 0), each on a
    path to ``v`` whose delays sum to at least one clock: both live the cycle before ``v``."""
    for v in graph.instructions:
        path = _path_to(graph, v.name)
        srcs = {e.src for e in graph.in_edges(v.name) if e.distance == 0 and e.src != v.name}
        ins = [graph.instruction(u) for u in sorted(srcs) if path.get(u, 0) >= 1]
        for k, a in enumerate(ins):
            for b in ins[k + 1 :]:
                yield v, a, b


def _warp_conflict(graph: DependenceGraph) -> str | None:
    """:func:`register_conflict` for the warp-specialised placements."""
    from twill.sched.verify_warps import WarpRules, slots_needed

    rules = WarpRules.for_graph(graph)
    limit, slots = rules.registers_per_warp, rules.num_warps(graph)
    if limit is None:
        return None
    slots -= any(i.variable_latency for i in graph.instructions)  # slot 0: theirs alone
    for v, a, b in _live_pairs(graph):
        ka, kb = slots_needed(a, rules.warps_per_slot), slots_needed(b, rules.warps_per_slot)
        if a.variable_latency and b.variable_latency:
            where = "both on the variable-latency slot"
        elif not a.variable_latency and not b.variable_latency and ka + kb > slots:
            where = f"each spans {ka} and {kb} of the {slots} slots open to them"
        else:
            continue
        if a.regs + b.regs > limit:
            what = v.note or v.unit or v.name
            if "streamed" in what:  # the note lists every member: say how many
                what = f"a streamed chain of {what.count(' + ') + 1} ops"
            return (
                f"no schedule at any I: {v.name} ({what}) reads {a.name} and "
                f"{b.name}, {a.regs} + {b.regs} registers per thread on a warp slot they "
                f"must share ({where}), over the limit of {limit}; the kernel's tiles "
                "are too wide for Twill's warp groups (a smaller block size, or fewer "
                "live tiles, fits)"
            )
    return None


def kernel_spec(
    spec: str,
    arch: str,
    signature: Mapping[str, str] | None = None,
    constexprs: Mapping[str, Any] | None = None,
    num_warps: int | None = None,
    *,
    config: int | None = None,
    loop: int | None = None,
    specialize: bool = False,
) -> Any:
    """``FILE.py:KERNEL`` with its options, the command line's over the YAML beside the file
    (a :class:`~twill.triton.peer.KernelSpec`). ``num_warps`` defaults to the YAML's, else
    the ``@triton.autotune`` config's (``config``, default the first), else 8, as
    ``import-triton`` takes it; ``loop`` is the kernel source line of the loop to schedule."""
    from twill.triton.compiler import (
        CAPABILITY,
        DEFAULT_NUM_WARPS,
        load_kernel,
        parse_kernel_spec,
        unwrap_kernel,
    )
    from twill.triton.peer import KernelSpec

    _check_spec_args(spec, arch, signature, constexprs, num_warps, config, loop)
    if arch not in CAPABILITY:
        raise InvalidProblemError(f"unknown --arch {arch!r}; expected sm_90a or sm_100a")
    path, kernel = parse_kernel_spec(spec)
    found = kernel_options(path, kernel, arch)
    warps = num_warps or found.num_warps
    if warps is None:  # the autotune config's, as compile_ttgir takes it
        warps = unwrap_kernel(load_kernel(path, kernel), kernel, config)[2]
    return KernelSpec(
        path,
        kernel,
        arch,
        {**found.signature, **(signature or {})},
        {**found.constexprs, **(constexprs or {})},
        warps or DEFAULT_NUM_WARPS,
        config,
        loop,
        specialize,
    )


def _check_spec_args(
    spec: object,
    arch: object,
    signature: object,
    constexprs: object,
    num_warps: object,
    config: object,
    loop: object,
) -> None:
    """The arguments of a ``FILE.py:KERNEL`` call from Python, checked at the entry as the
    command line's argparse checks them (``TypeError`` for a wrong type, naming it)."""
    for name, value in (("spec", spec), ("arch", arch)):
        if not isinstance(value, str):
            raise ArgumentTypeError(f"{name} must be a string, found {type(value).__name__}")
    for name, value in (("signature", signature), ("constexprs", constexprs)):
        if value is not None and not isinstance(value, Mapping):
            raise ArgumentTypeError(f"{name} must be a mapping or None, found {value!r}")
    check_num_warps(num_warps)
    check_int(config, "config", minimum=0, none=True)
    check_int(loop, "loop", none=True)


#: The keyword choices of :func:`compile_summary` beside ``total_time_limit``, with defaults.
KERNEL_CHOICES: dict[str, Any] = {
    "num_warps": None,
    "config": None,
    "loop": None,
    "specialize": True,
}


def compile_summary(
    spec: str,
    arch: str,
    signature: Mapping[str, str] | None = None,
    constexprs: Mapping[str, Any] | None = None,
    *,
    total_time_limit: float = 600.0,
    **kernel_choice: Any,
) -> Any:
    """What ``twill compile`` does, from Python: solve ``FILE.py:KERNEL`` with Twill (Algorithm
    1, within ``total_time_limit`` seconds for the whole search) and compile it with Twill's
    stages and clusters. ``config`` picks the ``@triton.autotune`` config (default the first),
    ``loop`` the loop by kernel source line (default the costliest; the kernel's other loops keep
    Triton's own schedule, listed in the summary's ``other_loops``). Returns the
    :class:`~twill.triton.peer.CompileSummary` (``.data``: the dict written as
    ``summary.json``, with ``optimal``, ``L_optimal`` and the ``problem`` they refer to;
    ``.build.kernel``: Triton's compiled kernel), or ``None`` when Twill finds no schedule
    within the limit. ``specialize`` (default on) compiles as a launch on aligned tensors
    does: every pointer argument divisible by 16 (``SPECIALIZE_RULE`` of
    :mod:`twill.triton.compiler`; the summary's ``assumed`` says what was taken). Needs the
    ``triton`` extra; Triton's cache is private to the call.

    Raises
    ------
    InvalidProblemError
        The loop provably has no schedule at any I for want of registers
        (:func:`register_conflict`), as ``twill solve`` refuses it; or Triton cannot take it.
    """

    import time

    from twill.triton.build import private_cache
    from twill.triton.peer import (
        SPILL_SHARE,
        compile_spill_free,
        compile_twill,
        solve_for_compile,
        twill_graph,
        twill_slots,
    )

    check_real(total_time_limit, "total_time_limit")
    deadline = Deadline.after(total_time_limit)  # the whole call: reading, search, compile
    unknown = sorted(set(kernel_choice) - set(KERNEL_CHOICES))
    if unknown:
        raise TypeError(
            f"compile_summary got unknown option(s) {', '.join(map(repr, unknown))}; it takes "
            f"total_time_limit and {', '.join(KERNEL_CHOICES)}"
        )
    choice = {**KERNEL_CHOICES, **kernel_choice}
    ks = kernel_spec(
        spec, arch, signature, constexprs, choice["num_warps"], config=choice["config"],
        loop=choice["loop"], specialize=choice["specialize"],
    )  # fmt: skip
    with private_cache():
        t0 = time.perf_counter()
        extracted, ttgir = twill_graph(ks)
        # kept for the final compile, which also lowers to PTX and a cubin: measured 2-6 times
        # as long as this extraction (FlashAttention forward on sm_100a: 2.4 s against 0.4 s),
        # and for writing the artefacts; the upper end, so that a loaded machine holds the limit
        build = max(6.0 * (time.perf_counter() - t0), 0.1 * total_time_limit)
        proof = register_conflict(extracted.graph, ks.num_warps)
        if proof is not None:
            raise InvalidProblemError(
                f"loop at line {extracted.line}: {proof}. Twill does not model register "
                "spilling (docs/triton.md, Limitations: no register spilling)",
                source=ks.label,
            )
        # a share is kept for the register corrections of a schedule that spills
        search = deadline.child(max(0.0, (deadline.within() or 0.0) - build) * (1 - SPILL_SHARE))
        r = solve_for_compile(extracted.graph, total_time_limit, search, ks.num_warps)
        if r.I is None or r.L is None or r.schedule is None:
            return None
        summary, why_not_gluon = _gluon_route(ks, r, extracted, ttgir, deadline)
        if summary is None:
            summary = compile_twill(ks, r.schedule, twill_slots(r), r.I, r.L, extracted, ttgir)

            def solve(graph: DependenceGraph, within: Deadline) -> Any:  # noqa: ANN401
                return solve_for_compile(graph, total_time_limit, within, ks.num_warps)

            r, summary = compile_spill_free(ks, r, summary, extracted, ttgir, deadline, solve,
                                            build)  # fmt: skip
            summary.data["route"] = "attributes"
            if why_not_gluon:
                summary.data["gluon"] = {"why": why_not_gluon}
    problem = summary.data.get("gluon", {}).get("problem") or r.problem  # pinned roles named
    if summary.data.get("registers", {}).get("corrected"):  # the problem actually solved
        problem = f"{problem}+registers<={summary.data['registers']['limit']}"
    summary.data.update(optimal=r.optimal, L_optimal=r.L_optimal, problem=problem,
                        picked=r.extra.get("picked"), union=r.extra.get("union"))  # fmt: skip
    if r.assignment and not twill_slots(r):
        from twill.triton.peer import ONE_PARTITION_NOTE

        summary.data["partitions"]["why"] = ONE_PARTITION_NOTE
    return summary


def _gluon_route(
    ks: Any, r: Any, extracted: Any, ttgir: str, deadline: Deadline
) -> tuple[Any, str | None]:  # noqa: ANN401, E501
    """The Gluon route's summary when it applies to a warp-specialised answer
    (:func:`twill.triton.gluon_route.gluon_summary`), else ``(None, why)``; ``why`` is
    ``None`` where Twill's answer has no partitions to write."""
    from twill.triton.gluon_route import gluon_summary
    from twill.triton.peer import twill_slots

    if not twill_slots(r):
        return None, None

    return gluon_summary(ks, r, extracted, ttgir, deadline.within())


def compile(spec: str, arch: str, *args: Any, **kwargs: Any) -> Any:  # noqa: A001
    """Triton's compiled kernel of ``FILE.py:KERNEL`` with Twill's schedule (``asm["cubin"]``,
    ``asm["ttgir"]``, ...); the arguments of :func:`compile_summary`. Raises
    :class:`~twill.errors.InvalidProblemError` when Twill finds no schedule (nothing is silently
    compiled with Triton's own)."""
    summary = compile_summary(spec, arch, *args, **kwargs)
    if summary is None:
        raise InvalidProblemError(f"Twill found no schedule for {spec} within the limits")
    return summary.build.kernel


@contextmanager
def twill_schedule(total_time_limit: float = 600.0) -> Iterator[list[dict[str, Any]]]:
    """Within the block, every Triton kernel compiled (``kernel[grid](...)``,
    ``triton.compile``) is solved by Twill and pipelined with Twill's stages and clusters:

    >>> with twill.triton.twill_schedule() as log:  # doctest: +SKIP
    ...     kernel[grid](a, b, c, M, N, K, BM=128, BN=128, BK=64)

    ``log`` lists, per compiled kernel, whether Twill's schedule was applied (with its I, L and
    stages); a kernel Twill finds no schedule for within ``total_time_limit`` seconds, or whose
    schedule cannot be written (no loop, a loop Triton leaves unscheduled, an architecture
    other than sm_90a and sm_100a), keeps Triton's, with a warning and ``why`` in the log.
    Triton caches these kernels under a key that names this mode, apart from its own.
    """
    from twill.triton.build import schedule_hook
    from twill.triton.peer import auto_edit

    log: list[dict[str, Any]] = []
    record: dict[str, str] = {}
    key = f"twill-auto-{total_time_limit}"
    with schedule_hook(auto_edit(total_time_limit, log), key, record):
        yield log
