"""Compile a Triton kernel with its loop schedule read, and optionally rewritten, between passes.

Only this module (and :mod:`twill.triton.compiler`) imports Triton, and only inside
functions. Triton 3.9's NVIDIA backend builds TTGIR in one pass manager (``make_ttgir``); here
the same pass list runs in three parts, with the module printed in between:

1. up to ``schedule_loops``: the loop carries Triton's software-pipelining schedule
   (``loop.stage``/``loop.cluster`` on each operation, ``tt.scheduled_max_stage`` on the loop;
   ``ttg.partition`` where the kernel asked for warp specialisation). The text is recorded and
   may be replaced (``edit``): this is where Twill's schedule is written in;
2. ``warp_specialize`` (Blackwell; on Hopper only where an edit wrote partitions) and
   ``pipeline``: the schedule is expanded (prologue,
   steady-state loop, epilogue; ``ttg.warp_specialize`` regions); the text is recorded for the
   read-back check;
3. the rest of ``make_ttgir``, then Triton's own LLVM, PTX and cubin stages.

The stage is swapped in through ``triton.knobs.runtime.add_stages_inspection_hook`` for the
duration of one compilation, with a cache key naming the edit, and Triton's cache lives in a
private temporary folder that is removed afterwards (:func:`private_cache`). The pass list is
Triton 3.9.0's (the version the ``triton`` extra pins); another version is refused.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twill._ptxas import ptxas_resources, scratch_cache
from twill.errors import BackendUnavailableError, InvalidProblemError

__all__ = ["Build", "build_kernel", "private_cache", "schedule_hook", "TRITON_VERSION"]

TRITON_VERSION = "3.9.0"
#: ``edit(text, base)``: the scheduled TTGIR rewritten; ``base()`` gives the same kernel's TTGIR
#: at ``num_stages=1`` (what Twill's graph is extracted from), computed on demand.
Edit = Callable[[str, Callable[[], str]], str]


def _triton() -> Any:
    try:
        import triton
    except ImportError:
        from twill.triton.compiler import INSTALL_HINT

        raise BackendUnavailableError(INSTALL_HINT) from None
    if triton.__version__ != TRITON_VERSION:
        raise BackendUnavailableError(
            f"twill compile needs Triton {TRITON_VERSION} (its pass list is copied from that "
            f"version); found {triton.__version__}"
        )
    return triton


def _pre(pm: Any, opt: Any, cap: int) -> None:
    """``make_ttgir`` up to ``schedule_loops`` (Triton 3.9.0, NVIDIA)."""
    from triton._C.libtriton import nvidia, passes

    tg, nv = passes.ttgpuir, nvidia.passes.ttnvgpuir
    passes.ttir.add_convert_to_ttgpuir(pm, f"cuda:{cap}", opt.num_warps, 32, opt.num_ctas)
    if opt.clc:
        nv.add_to_clc(pm)
    tg.add_coalesce(pm)
    tg.add_f32_dot_tc(pm, cap // 10 >= 8)
    nv.add_assign_cga_layouts(pm)
    tg.add_remove_layout_conversions(pm)
    nv.add_optimize_cta_locality(pm)
    tg.add_remove_layout_conversions(pm)
    tg.add_optimize_thread_locality(pm)
    tg.add_accelerate_matmul(pm)
    nv.add_check_matmul_two_cta(pm)
    tg.add_remove_layout_conversions(pm)
    tg.add_optimize_dot_operands(pm, cap >= 80)
    nv.add_optimize_descriptor_encoding(pm)
    passes.ttir.add_loop_aware_cse(pm)
    tg.add_fuse_nested_loops(pm)
    passes.common.add_canonicalizer(pm)
    passes.ttir.add_triton_licm(pm)
    if cap // 10 == 9:
        passes.common.add_canonicalizer(pm)
        tg.add_combine_tensor_select_and_if(pm)
        nvidia.passes.hopper.add_hopper_warpspec(pm, opt.num_stages, False)
    else:
        tg.add_optimize_accumulator_init(pm)
        tg.add_hoist_tmem_alloc(pm, False)
        nv.add_promote_lhs_to_tmem(pm)
    tg.add_assign_latencies(pm, opt.num_stages)
    tg.add_schedule_loops(pm)


def _mid(pm: Any, opt: Any, cap: int, ws: bool) -> None:
    """Warp specialisation (Blackwell; Hopper only with partitions written, ``ws``) and the
    software pipeliner."""
    from triton._C.libtriton import passes

    if ws:
        passes.ttgpuir.add_warp_specialize(pm, opt.num_stages)
    passes.ttgpuir.add_pipeline(pm, opt.num_stages, False)


def _post(pm: Any, opt: Any, cap: int, ws: bool) -> None:
    """The rest of ``make_ttgir`` (Triton 3.9.0, NVIDIA; no sanitizers); the partitions' warps
    and registers are sized wherever ``warp_specialize`` ran."""
    from triton._C.libtriton import nvidia, passes

    tg, nv = passes.ttgpuir, nvidia.passes.ttnvgpuir
    if ws:
        tg.add_optimize_partition_warps(pm)
    if cap // 10 >= 10:
        tg.add_combine_tensor_select_and_if(pm)
        tg.add_hoist_tmem_alloc(pm, True)
        nv.add_remove_tmem_tokens(pm)
    passes.common.add_canonicalizer(pm)
    passes.ttir.add_loop_aware_cse(pm)
    tg.add_optimize_dot_operands(pm, cap >= 80)
    tg.add_coalesce_async_copy(pm)
    nv.add_optimize_tmem_layouts(pm)
    nv.add_tmem_load_reduce(pm)
    nv.add_tma_lowering(pm)
    if cap // 10 >= 10:
        nv.add_lower_clc(pm)
    tg.add_remove_layout_conversions(pm)
    nv.add_interleave_tmem(pm)
    tg.add_reduce_data_duplication(pm)
    tg.add_reorder_instructions(pm)
    passes.ttir.add_loop_aware_cse(pm)
    passes.common.add_symbol_dce(pm)
    nv.add_fence_insertion(pm, cap)
    nv.add_lower_mma(pm)
    nv.add_hoist_mbarrier_lifecycle(pm, cap)
    passes.common.add_sccp(pm)
    passes.common.add_cse(pm)
    passes.common.add_canonicalizer(pm)


@contextmanager
def _captured_stderr() -> Iterator[list[str]]:
    """Within the block, what MLIR prints on file descriptor 2 (its diagnostics and the
    failing pipeline's reproducer) goes to a temporary file; its text is appended to the
    yielded list afterwards."""
    import sys

    out: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield out
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode("utf-8", "replace"))


def mlir_error(log: str) -> str:
    """The first ``error:`` diagnostic of an MLIR log (its location by file name only) and the
    pass that failed, in one line; ``""`` when there is none."""
    first = next(
        (ln for ln in log.splitlines() if ": error: " in ln and "Failures have been" not in ln),
        "",
    )
    where, _, msg = first.partition(": error: ")
    parts = [f"{where.rsplit('/', 1)[-1]}: {msg.strip()}" if msg else ""]
    failed = re.search(r"Pipeline failed while executing \[([^\]]*)\]", log)
    names = re.findall(r"`(\w+)`", failed.group(1)) if failed else []
    if names:  # the pass manager's nesting: the innermost pass is the one that failed
        parts.append(f"(in pass {names[-1]}{f', within {names[0]}' if len(names) > 1 else ''})")
    return " ".join(p for p in parts if p)


def _run(
    mod: Any, ctx: Any, part: Callable[[Any, Any, int], None], opt: Any, cap: int, what: str
) -> None:
    import sys

    from triton._C.libtriton import ir

    pm = ir.pass_manager(ctx)
    part(pm, opt, cap)
    failed = None
    with _captured_stderr() as log:
        try:
            pm.run(mod, what)
        except RuntimeError as exc:
            failed = exc
    if failed is not None:
        why = mlir_error(log[0]) or str(failed)
        raise InvalidProblemError(f"Triton's {what} passes failed: {why}") from None
    if log[0].strip():  # a pass's warnings on success: passed on
        sys.stderr.write(log[0])


def _parse(text: str, context: Any) -> Any:
    from triton._C.libtriton import ir

    failed = None
    with tempfile.TemporaryDirectory(prefix="twill-ttgir-") as tmp:
        path = Path(tmp) / "scheduled.ttgir"
        path.write_text(text, encoding="utf-8")
        with _captured_stderr() as log:  # MLIR prints its diagnostic there: kept for the message
            try:
                module = ir.parse_mlir_module(str(path), context)
            except RuntimeError as exc:
                failed = exc
    if failed is not None:
        m = re.search(r'":(\d+):(\d+)\): error: (.*)', log[0])
        why = f"line {m.group(1)}, column {m.group(2)}: {m.group(3).strip()}" if m else str(failed)
        raise InvalidProblemError(f"the rewritten schedule does not parse: {why}") from None
    module.context = context  # as Triton's own parse() does; later stages read it
    return module


def _make_ttgir(
    backend: Any,
    mod: Any,
    metadata: dict,
    opt: Any,
    cap: int,
    edit: Edit | None,
    record: dict[str, str],
) -> Any:
    import dataclasses

    from triton._C.libtriton import ir

    ctx = mod.context
    ttir = mod.str()

    def base() -> str:
        copy = _parse(ttir, ctx)
        backend.make_ttgir(copy, {}, dataclasses.replace(opt, num_stages=1), cap)
        return str(copy.str())

    if opt.maxnreg is not None:
        mod.set_attr("ttg.maxnreg", ir.builder(ctx).get_int32_attr(opt.maxnreg))
    _run(mod, ctx, _pre, opt, cap, "scheduling")
    record["triton"] = text = mod.str()
    if edit is not None:
        text = edit(text, base)
        mod = _parse(text, ctx)
    record["scheduled"] = text
    # Triton's generic warp_specialize: its own on Blackwell; on Hopper only for partitions
    # written by an edit (Triton 3.9 itself runs hopper_warpspec there, before scheduling)
    ws = cap // 10 >= 10 or (edit is not None and "ttg.partition.stages" in text)
    _run(mod, ctx, lambda pm, o, c: _mid(pm, o, c, ws), opt, cap, "pipelining")
    record["pipelined"] = mod.str()
    _run(mod, ctx, lambda pm, o, c: _post(pm, o, c, ws), opt, cap, "TTGIR")
    metadata["tensordesc_meta"] = mod.get_tensordesc_metadata()
    return mod


@contextmanager
def schedule_hook(edit: Edit | None, key: str, record: dict[str, str]) -> Iterator[None]:
    """Within the block, Triton builds TTGIR with the split pass list above: ``edit`` rewrites
    the scheduled loop; ``record`` receives the texts ``triton`` (Triton's schedule),
    ``scheduled`` (what was pipelined) and ``pipelined``. ``key`` enters Triton's cache key."""
    _triton()
    from triton import knobs
    from triton.backends.compiler import Language

    digest = hashlib.sha256(key.encode()).hexdigest()

    def hook(
        backend: Any = None,
        stages: Any = None,
        options: Any = None,
        language: Any = None,
        capability: Any = None,
    ) -> Any:
        if backend is None:  # the cache-key query of triton.compile and JITFunction.run
            return f"twill-schedule-{digest}", digest
        if language == Language.TRITON:
            stages["ttgir"] = lambda src, md: _make_ttgir(
                backend, src, md, options, capability, edit, record
            )
        return None

    previous = knobs.runtime.add_stages_inspection_hook
    knobs.runtime.add_stages_inspection_hook = hook
    try:
        yield
    finally:
        knobs.runtime.add_stages_inspection_hook = previous


@contextmanager
def private_cache() -> Iterator[str]:
    """Triton's kernel cache in a fresh temporary folder, removed on exit (so a compile never
    reads a stale kernel nor leaves files behind); Triton's version checked first."""
    _triton()
    with scratch_cache() as tmp:
        yield tmp


@dataclass
class Build:
    """One compilation: Triton's compiled kernel, the IR at each recorded point, and the
    resources ptxas reports."""

    kernel: Any
    texts: dict[str, str] = field(default_factory=dict)
    regs: int | None = None
    spills: int | None = None
    smem_bytes: int | None = None

    @property
    def ttgir(self) -> str:
        return str(self.kernel.asm["ttgir"])

    @property
    def ptx(self) -> str:
        return str(self.kernel.asm["ptx"])

    @property
    def cubin(self) -> bytes:
        return bytes(self.kernel.asm["cubin"])


#: Triton's default ``num_stages``; the stages Twill's edit writes per op take precedence in the
#: loop it schedules, the kernel's other loops keep what Triton derives from this.
DEFAULT_NUM_STAGES = 3


def build_kernel(
    fn: Any,
    arch: str,
    signature: dict[str, str],
    constexprs: dict[str, Any],
    *,
    num_warps: int,
    edit: Edit | None = None,
    key: str = "",
    specialize: bool = False,
) -> Build:
    """Compile ``fn`` (a ``@triton.jit`` function) for ``arch`` with the split pass list.

    ``edit`` rewrites the loop's schedule (the TTGIR text after ``schedule_loops``); ``key``
    names it in the cache key; ``specialize`` and the signature's hints (``*fp16:16``) give
    the launch-time divisibility (:func:`twill.triton.compiler.launch_hints`). Raises
    :class:`InvalidProblemError` when Triton fails (the message names the part: scheduling,
    pipelining, TTGIR or later).
    """
    from twill.triton.compiler import CAPABILITY, fill_constexpr_defaults, launch_hints

    triton = _triton()
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature, ones, div, _ = launch_hints(signature, specialize)
    constexprs = {**constexprs, **ones}  # the kernel's defaults where not given, as extracted
    fill_constexpr_defaults(fn, signature, constexprs, [])
    names = list(fn.arg_names)
    full = {n: signature.get(n, "constexpr") for n in names}
    consts = {(names.index(n),): v for n, v in constexprs.items()}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in div}
    record: dict[str, str] = {}
    with private_cache(), schedule_hook(edit, key or "triton-default", record):
        try:
            compiled = triton.compile(
                ASTSource(fn, signature=full, constexprs=consts, attrs=attrs),
                target=GPUTarget("cuda", CAPABILITY[arch], 32),
                options={"num_warps": num_warps, "num_stages": DEFAULT_NUM_STAGES},
            )
        except InvalidProblemError:
            raise
        except Exception as exc:  # Triton's errors have many types
            from twill.triton.compiler import triton_reason

            name = getattr(fn, "__name__", "the kernel")
            raise InvalidProblemError(
                f"Triton could not compile {name}: {triton_reason(exc)}"
            ) from None
    b = Build(compiled, record)
    b.regs, b.spills = ptxas_resources(b.ptx, arch)
    b.smem_bytes = int(getattr(compiled.metadata, "shared", 0) or 0)
    return b
