"""Compile a ``@triton.jit`` kernel to TTGIR on a machine without a GPU (``triton`` extra).

Only this module imports Triton, and only inside :func:`compile_ttgir`. The kernel is compiled
with ``num_stages=1``, and the loops' own requests (``tl.range(num_stages=..., warp_specialize=...,
flatten=...)``) are removed from the TTIR before the TTGIR passes, so the loop reaches TTGIR
before Triton's software pipeliner and warp specialisation would rewrite it: the scheduling is
Twill's. A kernel under ``@triton.autotune`` takes one config's constexprs and ``num_warps``
(``config``, default the first); ``@triton.heuristics`` fill the constexprs they compute.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twill.errors import BackendUnavailableError, InvalidProblemError
from twill.validation import check_num_warps

__all__ = [
    "compile_ttgir",
    "CompiledKernel",
    "as_constexpr",
    "PIPELINING_NOTE",
    "parse_kernel_spec",
    "CAPABILITY",
    "DEFAULT_NUM_WARPS",
    "INSTALL_HINT",
    "load_kernel",
    "unwrap_kernel",
    "apply_heuristics",
    "fill_constexpr_defaults",
    "triton_reason",
    "launch_hints",
    "SPECIALIZE_RULE",
]

CAPABILITY = {"sm_90a": 90, "sm_100a": 100}
INSTALL_HINT = "Triton is not installed; install the extra with: pip install -e '.[triton]'"


def parse_kernel_spec(spec: str) -> tuple[Path, str]:
    """Split ``FILE.py:KERNEL`` (error when the kernel name is missing; a kernel file given
    alone is told the form and its kernels)."""
    path, sep, kernel = spec.rpartition(":")
    if spec.endswith(".py") and Path(spec).is_file():
        raise InvalidProblemError(kernel_file_hint(Path(spec)), source=spec)
    if not sep or not path.endswith(".py") or not kernel.isidentifier():
        raise InvalidProblemError(f"expected FILE.py:KERNEL, found {spec!r}")
    return Path(path), kernel


def kernel_file_hint(path: Path) -> str:
    """What to write for a Triton kernel file given without ``:KERNEL``: the form, and the
    ``@triton.jit`` functions the file defines, found by parsing it (never running it)."""
    import ast

    form = f"a Triton kernel is given as FILE.py:KERNEL (e.g. {path.name}:my_kernel)"
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return form
    found = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and any("jit" in ast.unparse(d) for d in node.decorator_list)
    ]
    if not found:
        return f"{form}; no @triton.jit function found in the file"
    return f"{form}; its kernels: {', '.join(f'{path.name}:{k}' for k in found[:10])}"


def load_kernel(path: Path, kernel: str) -> object:
    from twill.triton.user_code import import_user_file, user_code

    module = import_user_file(path, f"_twill_triton_{path.stem}")
    try:
        with user_code():  # a module-level __getattr__ is the user's code too
            fn = getattr(module, kernel, None)
    except Exception:  # noqa: BLE001 (a module-level __getattr__ of the user's)
        fn = None
    if fn is None or not hasattr(fn, "arg_names"):
        raise InvalidProblemError(f"no @triton.jit kernel named {kernel!r}", source=str(path))
    return fn


#: Triton's ``num_warps`` when neither the command line, the autotune config nor the kernel's
#: YAML sets it.
DEFAULT_NUM_WARPS = 8

#: Loop attributes that ask Triton to pipeline, warp-specialise or flatten a loop; they are
#: removed before the TTGIR passes, so the loop Twill reads is the one the kernel wrote.
_LOOP_ATTRS = re.compile(
    r"(?:tt\.(?:num_stages|warp_specialize|flatten|disallow_acc_multi_buffer|loop_unroll_factor)"
    r"(?:\s*=\s*[^,}]+)?)"
)
PIPELINING_NOTE = (
    "compiled for extraction with num_stages=1 and the loops' num_stages, "
    "warp_specialize, flatten and loop_unroll_factor requests removed: the loop is the "
    "kernel's own, before Triton's pipelining, warp specialisation and unrolling"
)


#: What a launch specialises (Triton 3.9: ``runtime/jit.py`` builds each argument's key with
#: ``native_specialize_impl``, ``python/src/specialize.cc``; ``BaseBackend.parse_attr`` turns a
#: ``D`` key into ``tt.divisibility = 16``), and what twill assumes of it without the values.
SPECIALIZE_RULE = (
    "as a Triton 3.9 launch specialises its arguments: a tensor whose data pointer is a "
    "multiple of 16 bytes is passed as a pointer divisible by 16, an integer that is a "
    "multiple of 16 as divisible by 16, an integer equal to 1 as the constant 1 (floats and "
    "bools are not specialised); without the values, twill assumes every pointer argument "
    "aligned (tensors from torch's allocator are) and nothing of the integers: give "
    "NAME=i32:16 or NAME=i32:1 for them, *fp16:16 for a pointer, --no-specialize for none"
)


def launch_hints(
    signature: Mapping[str, str], specialize: bool
) -> tuple[dict[str, str], dict[str, int], list[str], list[str]]:
    """A signature with launch-time hints (``*fp16:16``, ``i32:16``, ``i32:1``) split into
    Triton types, the arguments specialised to the constant 1, the arguments marked divisible
    by 16 (every pointer without a hint too when ``specialize``: :data:`SPECIALIZE_RULE`) and
    notes saying what was assumed. A hint other than 16 or 1 is an error naming it."""
    types: dict[str, str] = {}
    ones: dict[str, int] = {}
    div: list[str] = []
    assumed: list[str] = []
    for name, text in signature.items():
        ty, sep, hint = str(text).partition(":")
        types[name] = ty
        if sep and hint == "16":
            div.append(name)
        elif sep and hint == "1" and not ty.startswith("*"):
            ones[name] = 1
            del types[name]
        elif sep:
            raise InvalidProblemError(
                f"--signature {name}={text}: the hint after ':' is 16 (divisible by 16) or, "
                "for an integer, 1 (equal to 1), as a Triton launch specialises them"
            )
        elif specialize and ty.startswith("*"):
            div.append(name)
            assumed.append(name)
    notes = []
    if div or ones:
        notes.append(
            "launch specialisation: "
            + ", ".join([f"{n} divisible by 16" for n in div] + [f"{n} = 1" for n in ones])
            + (f" (assumed for {', '.join(assumed)}: aligned tensors)" if assumed else "")
        )
    return types, ones, div, notes


@dataclass(frozen=True)
class CompiledKernel:
    """TTGIR of a kernel and what was done to obtain it (``notes``, shown to the user)."""

    ttgir: str
    notes: tuple[str, ...] = ()


def unwrap_kernel(
    fn: Any, kernel: str, config: int | None
) -> tuple[Any, dict[str, Any], int | None, list[Any], list[str]]:
    """The ``@triton.jit`` function under ``@triton.autotune``/``@triton.heuristics``, the
    constexprs and ``num_warps`` of the autotune config, the heuristics (outermost first) and
    notes saying what was taken."""
    consts: dict[str, Any] = {}
    warps: int | None = None
    heuristics: list[Any] = []
    notes: list[str] = []
    for _ in range(8):
        configs = getattr(fn, "configs", None)
        if configs is not None and hasattr(fn, "fn"):
            k = 0 if config is None else config
            if not 0 <= k < len(configs):
                raise InvalidProblemError(
                    f"kernel {kernel!r}: --config {k} out of range; its "
                    f"@triton.autotune has {len(configs)} config(s)"
                )
            cfg = configs[k]
            consts.update(dict(getattr(cfg, "kwargs", {}) or {}))
            warps = check_num_warps(
                getattr(cfg, "num_warps", None),
                f"kernel {kernel!r}: @triton.autotune config {k}'s num_warps",
            )
            shown = ", ".join(f"{n}={v}" for n, v in consts.items())
            notes.append(
                f"@triton.autotune config {k} of {len(configs)}: {shown}"
                f"{f', num_warps={warps}' if warps else ''}"
            )
        elif isinstance(getattr(fn, "values", None), dict) and hasattr(fn, "fn"):
            heuristics.append(fn)
        else:
            break
        fn = fn.fn
    if config is not None and not notes:
        raise InvalidProblemError(f"kernel {kernel!r}: --config needs a @triton.autotune kernel")
    return fn, consts, warps, heuristics, notes


def apply_heuristics(
    heuristics: list[Any],
    kernel: str,
    known: dict[str, Any],
    given: Mapping[str, Any],
    notes: list[str],
) -> None:
    """Fill constexprs from ``@triton.heuristics`` (innermost first, as Triton runs them); a
    value the user gave wins; a heuristic that needs a runtime argument is an error naming it."""
    from twill.triton.user_code import user_code

    for h in reversed(heuristics):
        for name, rule in h.values.items():
            if name in given:
                continue
            try:
                with user_code():
                    known[name] = rule(dict(known))
            except KeyError as exc:
                raise InvalidProblemError(
                    f"kernel {kernel!r}: @triton.heuristics for {name} needs argument {exc}; give "
                    f"--constexpr {name}=VALUE"
                ) from None
            except Exception as exc:  # noqa: BLE001 (the user's code)
                raise InvalidProblemError(
                    f"kernel {kernel!r}: @triton.heuristics for {name} "
                    f"failed: {type(exc).__name__}: {exc}"
                ) from None
            notes.append(f"@triton.heuristics: {name}={known[name]!r}")


def as_constexpr(value: Any) -> Any:  # noqa: ANN401 (any constexpr value)
    """A command-line or YAML constexpr as Triton takes it: a string that names a Triton dtype
    (``fp16``, ``float16``, ``tl.float16``) is that ``tl.dtype``; ``'text'`` in quotes stays
    the string ``text``; other values are kept."""
    if not isinstance(value, str):
        return value
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    import triton.language as tl

    name = value.removeprefix("tl.").removeprefix("triton.language.")
    name = {
        "fp16": "float16",
        "fp32": "float32",
        "fp64": "float64",
        "bf16": "bfloat16",
        "fp8e4nv": "float8e4nv",
        "fp8e5": "float8e5",
    }.get(name, name)
    dtype = getattr(tl, name, None)
    return dtype if isinstance(dtype, tl.dtype) else value


def compile_ttgir(
    path: str | Path,
    kernel: str,
    arch: str,
    signature: Mapping[str, str],
    constexprs: Mapping[str, Any],
    num_warps: int | None = None,
    config: int | None = None,
    specialize: bool = False,
) -> CompiledKernel:
    """TTGIR of ``kernel`` in ``path`` for ``arch`` (``sm_90a`` or ``sm_100a``), compiled for
    extraction: ``num_stages=1`` and the loops' pipelining, warp-specialisation and flattening
    requests removed (:data:`PIPELINING_NOTE`).

    Parameters
    ----------
    signature
        Triton type of every non-constexpr argument (``*fp16``, ``*bf16``, ``fp32``, ``i32``).
    constexprs
        Value of ``tl.constexpr`` arguments (:func:`as_constexpr`); an autotune config's and
        the heuristics' values fill the others.
    num_warps
        Triton's ``num_warps`` (default: the autotune config's, else :data:`DEFAULT_NUM_WARPS`).
    config
        Index of the ``@triton.autotune`` config to take (default: the first).
    specialize
        Mark every pointer argument divisible by 16, as a launch on aligned tensors does
        (:data:`SPECIALIZE_RULE`); hints in ``signature`` (``*fp16:16``, ``i32:1``) apply
        either way.

    Raises
    ------
    BackendUnavailableError
        Triton is not installed (the message says how to install it).
    InvalidProblemError
        Unknown arch, an argument without a type or value (named), a bad ``config``, or
        Triton's own compile error.
    """
    if arch not in CAPABILITY:
        raise InvalidProblemError(f"unknown --arch {arch!r}; expected sm_90a or sm_100a")
    try:
        import triton  # noqa: F401 (first: a missing or blocked package is ImportError here)
        from triton.compiler import ASTSource
    except ImportError:
        raise BackendUnavailableError(INSTALL_HINT) from None
    fn, tuned, tuned_warps, heuristics, notes = unwrap_kernel(
        load_kernel(Path(path), kernel), kernel, config
    )
    names = list(fn.arg_names)
    signature, ones, div, hinted = launch_hints(signature, specialize)
    known = {**tuned, **{n: as_constexpr(v) for n, v in constexprs.items()}, **ones}
    apply_heuristics(heuristics, kernel, known, constexprs, notes)
    fill_constexpr_defaults(fn, signature, known, notes)
    extra = sorted((set(signature) | set(known)) - set(names))
    if extra:
        raise InvalidProblemError(f"kernel {kernel!r} has no argument(s) {', '.join(extra)}")
    missing = [n for n in names if n not in signature and n not in known]
    if missing:
        raise InvalidProblemError(
            f"kernel {kernel!r}: no type for argument(s) {', '.join(missing)}; give "
            f"--signature NAME=TYPE (e.g. *fp16, fp32, i32) or --constexpr NAME=VALUE"
        )
    _check_types(kernel, signature)
    full = {n: signature.get(n, "constexpr") for n in names}
    consts = {(names.index(n),): v for n, v in known.items() if n not in signature}
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in div}
    src = ASTSource(fn, signature=full, constexprs=consts, attrs=attrs)
    warps = num_warps or tuned_warps or DEFAULT_NUM_WARPS
    try:
        ttgir = _compile_without_pipelining(src, arch, warps)
    except InvalidProblemError:
        raise
    except Exception as exc:  # Triton's compile errors have many types
        raise InvalidProblemError(
            f"Triton could not compile {kernel!r}: {triton_reason(exc)}"
        ) from None
    return CompiledKernel(ttgir, (*notes, *hinted, PIPELINING_NOTE))


def fill_constexpr_defaults(
    fn: Any,  # noqa: ANN401 (a JITFunction)
    signature: Mapping[str, str],
    known: dict[str, Any],
    notes: list[str],
) -> None:
    """A ``tl.constexpr`` argument with a default (``BLOCK: tl.constexpr = 512``) that nothing
    else gave takes it, as a launch without it does; the notes say which."""
    import inspect

    taken = {}
    for p in getattr(fn, "params", ()):
        if p.is_constexpr and p.default is not inspect.Parameter.empty:
            if p.name not in known and p.name not in signature:
                taken[p.name] = known[p.name] = p.default  # the Python value, as launched
    if taken:
        shown = ", ".join(f"{n}={v}" for n, v in taken.items())
        notes.append(f"constexpr default(s) of the kernel taken: {shown}")


def _check_types(kernel: str, signature: Mapping[str, str]) -> None:
    """Each signature type is one Triton reads (``*fp16``, ``i32``, ...), else an error naming
    the argument (Triton's own is a bare ``KeyError: 'fp99'``)."""
    from triton.language import str_to_ty

    for name, ty in signature.items():
        try:
            str_to_ty(ty, None)
        except Exception:  # noqa: BLE001 (KeyError, IndexError: Triton's parser)
            raise InvalidProblemError(
                f"kernel {kernel!r}: --signature {name}={ty}: not a Triton type (e.g. *fp16, "
                "*bf16, *fp32, *fp8e4nv, *i32, fp32, i32, i64)"
            ) from None


def triton_reason(exc: BaseException) -> str:
    """Why Triton refused a kernel, and where: its compile errors are chained, the outer one
    quoting the kernel's line (a caret under it, the last line of its text), the innermost
    saying why (``Shape element 0 must be a power of 2``)."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 32:
        chain.append(e)
        e = e.__cause__ or e.__context__
    why = ""
    for e in reversed(chain):  # the innermost reason first
        text = getattr(e, "error_message", None) or str(e)
        lines = [ln.strip() for ln in text.strip().splitlines() if re.search(r"[A-Za-z0-9]", ln)]
        if lines:
            why = lines[-1]
            break
    lines = str(exc).rstrip().splitlines()
    at = [k for k, ln in enumerate(lines) if k and ln.strip() == "^"]
    where = f" (at `{lines[at[-1] - 1].strip()}`)" if at else ""
    return (why or type(exc).__name__) + where


def _compile_without_pipelining(src: Any, arch: str, num_warps: int) -> str:  # noqa: ANN401
    """Triton's own stages up to TTGIR, with the loop attributes removed before the TTIR
    stage (which unrolls loops that ask for it) and from the TTIR."""
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    target = GPUTarget("cuda", CAPABILITY[arch], 32)
    backend = make_backend(target)
    # enable_fp_fusion: Triton's default, said aloud (no warning)
    options = backend.parse_options(
        {"num_stages": 1, "num_warps": num_warps, "enable_fp_fusion": True}
    )
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    codegen = backend.get_codegen_implementation(options)
    module = src.make_ir(target, options, codegen, backend.get_module_map(), context)
    stages: dict[str, Any] = {}
    backend.add_stages(stages, options, src.language)
    metadata: dict[str, Any] = {}
    # before the TTIR stage too: its loop_unroll pass reads tt.loop_unroll_factor
    ttir = stages["ttir"](_without_loop_attributes(module, context), metadata)
    return str(stages["ttgir"](_without_loop_attributes(ttir, context), metadata))


def _without_loop_attributes(module: Any, context: Any) -> Any:  # noqa: ANN401 (MLIR modules)
    """``module`` with its loops' attributes removed (:func:`_strip_loop_attributes`),
    re-parsed; the module itself when it has none (Triton's own, as Triton would go on)."""
    import tempfile

    from triton._C.libtriton import ir

    text = _strip_loop_attributes(str(module))
    if text == str(module):
        return module
    with tempfile.TemporaryDirectory(prefix="twill-ttir-") as tmp:
        file = Path(tmp) / "kernel.ttir"
        file.write_text(text, encoding="utf-8")
        module = ir.parse_mlir_module(str(file), context)
    module.context = context  # as Triton's own parse() does: the passes read it
    return module


def _strip_loop_attributes(ttir: str) -> str:
    """Remove pipelining requests from every loop's attribute dictionary (``} {...}``)."""

    def clean(m: re.Match[str]) -> str:
        kept = [
            a.strip()
            for a in m.group(2).split(",")
            if a.strip() and not _LOOP_ATTRS.fullmatch(a.strip())
        ]
        return m.group(1) + ("} {" + ", ".join(kept) + "}" if kept else "}")

    return re.sub(r"^(\s*)\}\s*\{([^{}]*)\}", clean, ttir, flags=re.M)
