"""Shared pieces of the Gluon route: compile a Gluon kernel for an architecture without a GPU
(``GluonASTSource`` and ``triton.compile`` with an explicit target), read its resources
(``ptxas -v``: registers and spills; Triton's metadata: shared and tensor memory), and decide
whether it can launch.

The result, :class:`GluonKernel`, is what every Gluon kernel template returns
(:func:`~twill.codegen.gluon.attention_sm100.attention_forward_sm100`, and the sm_90a one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twill.errors import BackendUnavailableError, InvalidProblemError

__all__ = [
    "REG_LIMIT",
    "SMEM_LIMIT",
    "TMEM_COLUMNS",
    "GluonKernel",
    "compile_gluon",
    "fp16_descriptor",
    "check_attention_rows",
    "why_not_runnable",
]

#: Shared memory one thread block may use (bytes), H100 and B200: 227 KiB.
SMEM_LIMIT = 227 * 1024
#: Tensor memory of one SM on B200 (32-bit columns of 128 lanes).
TMEM_COLUMNS = 512
#: Registers one thread may hold.
REG_LIMIT = 255
#: Compute capability per architecture name.
CAPABILITY = {"sm_90a": 90, "sm_100a": 100}


@dataclass
class GluonKernel:
    """One compiled Gluon kernel: its texts, binary and resources, and the partitions it runs
    (one entry per ``warp_specialize`` function: ``slot``, ``function``, ``warps``, ``regs``,
    ``roles``)."""

    name: str
    arch: str
    ttgir: str
    ptx: str
    cubin: bytes
    regs: int | None
    spills: int | None
    smem_bytes: int
    tmem_columns: int
    num_warps: int
    partitions: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    kernel: Any = field(default=None, repr=False)  # Triton's CompiledKernel

    @property
    def why_not_runnable(self) -> str | None:
        return why_not_runnable(self.arch, self.ptx, self.regs, self.smem_bytes,
                                self.tmem_columns)  # fmt: skip

    @property
    def runnable(self) -> bool:
        return self.why_not_runnable is None

    def resources(self) -> dict[str, Any]:
        """The summary's resource keys (``regs``, ``spills``, ``smem_bytes``,
        ``tmem_columns``, ``runnable`` and, when false, ``why_not_runnable``)."""
        out: dict[str, Any] = {
            "regs": self.regs,
            "spills": self.spills,
            "smem_bytes": self.smem_bytes,
            "tmem_columns": self.tmem_columns,
            "runnable": self.runnable,
        }
        if not self.runnable:
            out["why_not_runnable"] = self.why_not_runnable
        return out


def why_not_runnable(
    arch: str, ptx: str, regs: int | None, smem_bytes: int, tmem_columns: int
) -> str | None:
    """Why the kernel cannot launch, or ``None``: a ``trap`` in its body, more than 255
    registers per thread, more than 227 KiB of shared memory, more than 512 tensor-memory
    columns (sm_100a)."""
    if "trap;" in ptx:
        return "the kernel's PTX holds a trap"
    if regs is None:
        return "ptxas gave no register count"
    if regs > REG_LIMIT:
        return f"ptxas gives it {regs} registers per thread, more than {REG_LIMIT}"
    if smem_bytes > SMEM_LIMIT:
        return f"it needs {smem_bytes:,} bytes of shared memory, more than {SMEM_LIMIT:,}"
    if arch == "sm_100a" and tmem_columns > TMEM_COLUMNS:
        return f"it needs {tmem_columns} tensor-memory columns, more than {TMEM_COLUMNS}"
    return None


def compile_gluon(
    fn: Any,  # noqa: ANN401 (a @gluon.jit function)
    arch: str,
    signature: dict[str, str],
    constexprs: dict[str, Any],
    *,
    num_warps: int,
) -> GluonKernel:
    """Compile the Gluon kernel ``fn`` for ``arch`` (``sm_90a`` or ``sm_100a``) without a GPU:
    ``signature`` maps each non-constexpr argument to Triton's type string (a TMA descriptor
    ``tensordesc<fp16[128, 128]>``), ``constexprs`` each ``gl.constexpr`` to its value.
    Triton's cache is private to the call. Raises :class:`InvalidProblemError` when Triton
    cannot compile it (its first diagnostic)."""
    from twill._ptxas import ptxas_resources, scratch_cache

    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.experimental.gluon._runtime import GluonASTSource
    except ImportError:
        raise BackendUnavailableError("the Gluon route needs the triton extra") from None
    if arch not in CAPABILITY:
        raise InvalidProblemError(f"the Gluon route builds sm_90a and sm_100a, not {arch!r}")
    names = list(fn.arg_names)
    full = {n: signature.get(n, "constexpr") for n in names}
    consts = {(names.index(n),): v for n, v in constexprs.items()}
    with scratch_cache():
        try:
            compiled = triton.compile(
                GluonASTSource(fn, signature=full, constexprs=consts),
                target=GPUTarget("cuda", CAPABILITY[arch], 32),
                options={"num_warps": num_warps},
            )
        except Exception as exc:  # Triton's errors have many types
            name = getattr(fn, "__name__", "the Gluon kernel")
            raise InvalidProblemError(
                f"Triton could not compile {name}: {_first_line(exc)}"
            ) from None
    ptx = compiled.asm["ptx"]
    regs, spills = ptxas_resources(ptx, arch)
    meta = compiled.metadata
    return GluonKernel(
        name=getattr(meta, "name", getattr(fn, "__name__", "kernel")),
        arch=arch,
        ttgir=compiled.asm["ttgir"],
        ptx=ptx,
        cubin=compiled.asm["cubin"],
        regs=regs,
        spills=spills,
        smem_bytes=int(getattr(meta, "shared", 0) or 0),
        tmem_columns=int(getattr(meta, "tmem_size", 0) or 0),
        num_warps=int(getattr(meta, "num_warps", num_warps) or num_warps),
        kernel=compiled,
    )


def check_attention_rows(q: Any, seq_len: int, rows: int, head_dim: int) -> None:  # noqa: ANN401
    """Refuse a ``q`` the attention kernels cannot tile: the shipped ``fa_fwd``'s layout puts
    every batch*head's ``seq_len`` rows one after another, so ``q`` (``k``, ``v`` alike) has
    a whole number of ``seq_len`` rows, ``seq_len`` a positive multiple of a program's
    ``rows``, and ``head_dim`` columns. Checked before any launch (:class:`InvalidProblemError`)."""
    if seq_len <= 0 or seq_len % rows or q.shape[0] % seq_len or tuple(q.shape[1:]) != (head_dim,):
        raise InvalidProblemError(
            f"q of shape {tuple(q.shape)}: rows a multiple of seq_len {seq_len}, itself a "
            f"positive multiple of {rows}, and {head_dim} columns"
        )


def fp16_descriptor(t: Any, block_rows: int, head_dim: int) -> Any:  # noqa: ANN401
    """A TMA descriptor of the FP16 matrix ``t`` in ``[block_rows, head_dim]`` blocks, with
    the default swizzled shared layout (needs Triton with Gluon)."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for([block_rows, head_dim], gl.float16)
    return TensorDescriptor(t, list(t.shape), list(t.stride()), [block_rows, head_dim], layout)


def _first_line(exc: BaseException) -> str:
    """Triton's diagnostic, its first non-empty line (at most 300 characters)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return (lines[0] if lines else type(exc).__name__)[:300]
