"""Compile a ``@triton.jit`` kernel to TTGIR on a machine without a GPU (``triton`` extra).

Only this module imports Triton, and only inside :func:`compile_ttgir`. The kernel is compiled
with ``num_stages=1``, so the loop reaches TTGIR before Triton's software pipeliner and warp
specialisation have rewritten it: the scheduling is Twill's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from twill.errors import BackendUnavailableError, InvalidProblemError

__all__ = ["compile_ttgir", "parse_kernel_spec", "CAPABILITY", "DEFAULT_NUM_WARPS", "INSTALL_HINT"]

CAPABILITY = {"sm_90a": 90, "sm_100a": 100}
INSTALL_HINT = "Triton is not installed; install the extra with: pip install -e '.[triton]'"


def parse_kernel_spec(spec: str) -> tuple[Path, str]:
    """Split ``FILE.py:KERNEL`` (error when the kernel name is missing)."""
    path, sep, kernel = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not kernel.isidentifier():
        raise InvalidProblemError(f"expected FILE.py:KERNEL, found {spec!r}")
    return Path(path), kernel


def _load_kernel(path: Path, kernel: str) -> object:
    from twill.io.user_code import import_user_file

    module = import_user_file(path, f"_twill_triton_{path.stem}")
    try:
        fn = getattr(module, kernel, None)
    except Exception:  # noqa: BLE001 (a module-level __getattr__ of the user's)
        fn = None
    if fn is None or not hasattr(fn, "arg_names"):
        raise InvalidProblemError(f"no @triton.jit kernel named {kernel!r}", source=str(path))
    return fn


#: Triton's ``num_warps`` when neither the command line nor the kernel's YAML sets it.
DEFAULT_NUM_WARPS = 8


def compile_ttgir(
    path: str | Path,
    kernel: str,
    arch: str,
    signature: Mapping[str, str],
    constexprs: Mapping[str, int | float | bool],
    num_warps: int = DEFAULT_NUM_WARPS,
) -> str:
    """TTGIR text of ``kernel`` in ``path`` for ``arch`` (``sm_90a`` or ``sm_100a``).

    Parameters
    ----------
    signature
        Triton type of every non-constexpr argument (``*fp16``, ``*bf16``, ``fp32``, ``i32``).
    constexprs
        Value of every ``tl.constexpr`` argument.

    Raises
    ------
    BackendUnavailableError
        Triton is not installed (the message says how to install it).
    InvalidProblemError
        Unknown arch, or an argument without a type or value (named).
    """
    if arch not in CAPABILITY:
        raise InvalidProblemError(f"unknown --arch {arch!r}; expected sm_90a or sm_100a")
    try:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError:
        raise BackendUnavailableError(INSTALL_HINT) from None
    fn = _load_kernel(Path(path), kernel)
    names = list(fn.arg_names)  # type: ignore[attr-defined]
    extra = sorted((set(signature) | set(constexprs)) - set(names))
    if extra:
        raise InvalidProblemError(f"kernel {kernel!r} has no argument(s) {', '.join(extra)}")
    missing = [n for n in names if n not in signature and n not in constexprs]
    if missing:
        raise InvalidProblemError(
            f"kernel {kernel!r}: no type for argument(s) {', '.join(missing)}; give "
            f"--signature NAME=TYPE (e.g. *fp16, fp32, i32) or --constexpr NAME=VALUE"
        )
    full = {n: signature.get(n, "constexpr") for n in names}
    consts = {(names.index(n),): v for n, v in constexprs.items()}
    src = ASTSource(fn, signature=full, constexprs=consts)
    target = GPUTarget("cuda", CAPABILITY[arch], 32)
    try:
        compiled = triton.compile(src, target=target,
                                  options={"num_stages": 1, "num_warps": num_warps,
                                           # Triton's default, said aloud: no warning
                                           "enable_fp_fusion": True})  # fmt: skip
    except Exception as exc:  # Triton's compile errors have many types
        raise InvalidProblemError(f"Triton could not compile {kernel!r}: {exc}") from None
    return str(compiled.asm["ttgir"])
