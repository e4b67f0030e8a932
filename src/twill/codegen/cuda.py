"""CUDA C++ skeleton of a warp-specialised, software-pipelined loop (Twill paper §6).

One ``__device__`` function per warp role (a warp group of 128 threads per slot), dispatched on
``threadIdx.x / 128``; each has the prologue, the steady-state ``for`` loop and the epilogue of
:mod:`twill.codegen.plan`. Every cross-warp dependence gets a ring of ``kDepth`` ``mbarrier``
pairs in shared memory: the producer's elected thread arrives on ``full`` after its op and the
consumer waits on it (phase parity) before its op; the consumer arrives on ``empty`` when done and
the producer waits on it before reusing the slot. Tile operations are placeholders
(``op_<name>``) with a comment naming the unit and the work. Barriers use inline PTX
(``mbarrier.init/arrive/try_wait.parity``), so the file compiles with ``nvcc -arch=sm_90a -c``
and ``-arch=sm_100a`` without CUTLASS.

Preconditions: as :func:`twill.codegen.plan.make_plan`.
"""

from __future__ import annotations

from twill.codegen.plan import LoopPlan, Role, comment_text, ident, make_plan
from twill.errors import InvalidProblemError
from twill.results import WarpSchedule, takes_warp_schedule
from twill.sched.ir import DependenceGraph

__all__ = ["generate_cuda", "ARCHES"]

ARCHES = ("sm_90a", "sm_100a")

_HELPERS = r"""
namespace twill_rt {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

__device__ __forceinline__ bool elected() { return (threadIdx.x % 128) == 0; }

}  // namespace twill_rt
"""


def _op_call(plan: LoopPlan, v: str, slot: int, it: str, pad: str) -> list[str]:
    t = comment_text
    out = [f"{pad}{{  // {t(v)}, iteration {it}", f"{pad}  const int it = {it};"]
    for c in plan.in_channels(v, slot):
        d = c.edge.distance
        out.append(f"{pad}  if (it - {d} >= 0) {{  // wait for {t(c.edge.src)} (warp {c.src_slot})")
        out.append(f"{pad}    const int j = it - {d};")
        out.append(f"{pad}    twill_rt::mbar_wait(&full[{c.index}][j % kDepth], (j / kDepth) & 1);")
        out.append(f"{pad}  }}")
    for c in plan.out_channels(v, slot):
        out.append(f"{pad}  if (it >= kDepth) {{  // buffer of {t(v)}->{t(c.edge.dst)} released?")
        out.append(f"{pad}    const int j = it - kDepth;")
        out.append(
            f"{pad}    twill_rt::mbar_wait(&empty[{c.index}][j % kDepth], (j / kDepth) & 1);"
        )
        out.append(f"{pad}  }}")
    out.append(f"{pad}  op_{plan.idents[v]}(it);")
    for c in plan.in_channels(v, slot):
        d = c.edge.distance
        out.append(f"{pad}  if (it - {d} >= 0 && twill_rt::elected())"
                   f" twill_rt::mbar_arrive(&empty[{c.index}][(it - {d}) % kDepth]);")  # fmt: skip
    for c in plan.out_channels(v, slot):
        out.append(f"{pad}  if (twill_rt::elected()) "
                   f"twill_rt::mbar_arrive(&full[{c.index}][it % kDepth]);")  # fmt: skip
    out.append(f"{pad}}}")
    return out


@takes_warp_schedule
def generate_cuda(
    ws: WarpSchedule,
    *,
    arch: str = "sm_90a",
) -> str:
    """CUDA C++ skeleton (one ``__device__`` function per warp role) of the pipelined loop.

    Parameters
    ----------
    graph
        The loop body.
    schedule, assignment, II, L
        A verified joint schedule (or one :class:`~twill.results.WarpSchedule` as ``graph``).
    arch
        ``"sm_90a"`` (Hopper) or ``"sm_100a"`` (Blackwell); recorded in the header and checked
        with ``__CUDA_ARCH__``.

    Returns
    -------
    str
        A translation unit that compiles with ``nvcc -arch=<arch> -c``.

    Raises
    ------
    InvalidProblemError
        Unknown ``arch``.

    Examples
    --------
    >>> from twill.kernels import flash_attention_forward_simplified
    >>> src = generate_cuda(flash_attention_forward_simplified(), {"S": 0, "P": 2, "O": 3},
    ...                     {"S": 0, "P": 0, "O": 0}, 2, 4)
    >>> "__global__" in src
    True
    """
    if arch not in ARCHES:
        raise InvalidProblemError(f"--arch must be one of {', '.join(ARCHES)}, found {arch!r}")
    plan = make_plan(ws)
    out = _header(ws.graph, plan, ws.I, arch)
    out += _op_placeholders(ws.graph, plan)
    for role in plan.roles:
        out += _role_function(plan, role, ws.I)
    out += _kernel(plan, ident(ws.graph.name))
    return "\n".join(out)


def _header(graph: DependenceGraph, plan: LoopPlan, II: int, arch: str) -> list[str]:  # noqa: N803
    """Comments naming the schedule, the architecture guard, the runtime helpers and the
    schedule's constants."""
    s = plan.stages
    kname = ident(graph.name)
    nslots = max(r.slot for r in plan.roles) + 1
    need = 900 if arch == "sm_90a" else 1000
    out = [
        f"// Generated by twill codegen: {comment_text(graph.name)} for {arch}",
        f"// I = {II}, L = {plan.length}, {s} stage(s), {len(plan.roles)} warp role(s)",
        "// M: " + ", ".join(f"{comment_text(v)}@{plan.schedule[v]}" for v in plan.order),
        "#include <cstdint>",
        "",
        f"#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < {need}",
        f'#error "this skeleton targets {arch}"',
        "#endif",
        _HELPERS,
        f"namespace {kname} {{",
        "",
        f"constexpr int kI = {II};          // initiation interval (normalised cycles)",
        f"constexpr int kStages = {s};     // pipeline stages",
        f"constexpr int kDepth = {s + 1};      // buffers per cross-warp channel",
        f"constexpr int kChannels = {max(len(plan.channels), 1)};",
        f"constexpr int kSlots = {nslots};       // warp groups (128 threads each)",
        'static_assert(kI >= 1 && kStages >= 1, "invalid schedule");',
        "",
        "// Tile-operation placeholders: replace each body with the real instruction sequence.",
    ]
    return out


def _op_placeholders(graph: DependenceGraph, plan: LoopPlan) -> list[str]:
    """One ``__device__`` placeholder per tile operation, and a comment per channel."""
    out: list[str] = []
    for v in graph.names:
        ins = graph.instruction(v)
        unit = "TMA (variable latency)" if ins.variable_latency else (ins.main_unit or "ALU")
        out.append(f"__device__ __forceinline__ void op_{plan.idents[v]}(int it) {{  // "
                   f"{comment_text(unit)}: {comment_text(ins.note or v)}")  # fmt: skip
        out.append("  (void)it;")
        out.append('  asm volatile("" ::: "memory");')
        out.append("}")
    for c in plan.channels:
        e = c.edge
        out.append(f"// channel {c.index}: {comment_text(e.src)} (warp {c.src_slot}) -> "
                   f"{comment_text(e.dst)} "
                   f"(warp {c.dst_slot}), distance {e.distance}")  # fmt: skip
    return out


def _role_function(plan: LoopPlan, role: Role, II: int) -> list[str]:  # noqa: N803
    """The ``__device__`` function of one warp role: prologue, steady state, epilogue."""
    s = plan.stages
    out: list[str] = []
    out += ["", f"// warp {role.slot}: {comment_text(role.name)}",
            f"__device__ void role_{role.slot}(uint64_t (*full)[kDepth], "
            "uint64_t (*empty)[kDepth], int num_iters) {",
            "  (void)full; (void)empty;"]  # fmt: skip
    if s > 1:
        out.append("  // prologue")
        for k in range(s - 1):
            for v in role.ops:
                st = plan.stage(v)
                if st <= k:
                    out.append(f"  if ({k - st} < num_iters)")
                    out += _op_call(plan, v, role.slot, str(k - st), "  ")
    out.append(f"  // steady state: one iteration every kI = {II} cycles")
    out.append("  for (int k = kStages - 1; k < num_iters; ++k) {")
    for v in role.ops:
        st = plan.stage(v)
        out += _op_call(plan, v, role.slot, f"k - {st}", "    ")
    out.append("  }")
    if s > 1:
        out.append("  // epilogue")
        out.append("  const int base = num_iters > kStages - 1 ? num_iters : kStages - 1;")
        out.append("  (void)base;")
        for e_ in range(s - 1):
            for v in role.ops:
                st = plan.stage(v)
                if st >= e_ + 1:
                    it = f"base + {e_ - st}"
                    out.append(f"  if ({it} >= 0 && {it} < num_iters)")
                    out += _op_call(plan, v, role.slot, it, "  ")
    out.append("}")
    return out


def _kernel(plan: LoopPlan, kname: str) -> list[str]:
    """The ``__global__`` kernel: barrier set-up, then one warp group per role."""
    out = [
        "",
        f"__global__ void __launch_bounds__(kSlots * 128) {kname}_kernel(int num_iters) {{",
        "  __shared__ __align__(8) uint64_t full[kChannels][kDepth];",
        "  __shared__ __align__(8) uint64_t empty[kChannels][kDepth];",
        "  if (threadIdx.x == 0) {",
        "    for (int c = 0; c < kChannels; ++c)",
        "      for (int d = 0; d < kDepth; ++d) {",
        "        twill_rt::mbar_init(&full[c][d], 1);",
        "        twill_rt::mbar_init(&empty[c][d], 1);",
        "      }",
        '    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");',
        "  }",
        "  __syncthreads();",
        "  switch (threadIdx.x / 128) {",
    ]
    for role in plan.roles:
        out.append(f"    case {role.slot}: role_{role.slot}(full, empty, num_iters); break;")
    out += ["    default: break;", "  }", "}", "", f"}}  // namespace {kname}", ""]
    return out
