"""Triton kernels and saved TTGIR to dependence graphs: the reader behind
:func:`twill.triton.import_triton` and :func:`twill.io.load_graph`.

A ``FILE.py:KERNEL`` is compiled with Triton (signature and constexprs from the caller, or
from a YAML beside the file: :func:`kernel_options`); a saved ``.ttgir`` needs no Triton.
Every innermost loop becomes a scheduling problem (:mod:`twill.triton.extract`).
:mod:`twill.triton` is the public face of these functions; they live in ``io/`` so that the
loader reaches them without importing the front end that sits above it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph

if TYPE_CHECKING:
    from twill.triton.extract import ExtractedLoop

__all__ = [
    "KernelOptions",
    "TritonImport",
    "import_triton",
    "import_triton_loops",
    "kernel_options",
    "kernel_option_files",
]


def kernel_option_files(path: Path) -> list[Path]:
    """The YAML files that may give a kernel's signature and constexprs: ``FILE.yaml`` and
    ``kernels.yaml`` beside ``FILE.py``."""
    return [path.with_suffix(".yaml"), path.parent / "kernels.yaml"]


@dataclass(frozen=True)
class KernelOptions:
    """How to compile one kernel: argument types, constexpr values and Triton's ``num_warps``
    (``None``: the compiler's default of :func:`~twill.triton.compiler.compile_ttgir`)."""

    signature: dict[str, str] = field(default_factory=dict)
    constexprs: dict[str, Any] = field(default_factory=dict)
    num_warps: int | None = None


def _mapping(value: object, what: str, kernel: str, where: Path) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidProblemError(
            f"{kernel}: {what!r} must be a mapping (NAME: VALUE)", source=str(where)
        )
    return {str(k): v for k, v in value.items()}


def _num_warps(value: object, kernel: str, where: Path) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value not in (1, 2, 4, 8, 16, 32):
        raise InvalidProblemError(
            f"{kernel}: num_warps must be a power of two from 1 to 32, found {value!r}",
            source=str(where),
        )
    return value


def kernel_options(path: Path, kernel: str, arch: str | None = None) -> KernelOptions:
    """Signature, constexprs and ``num_warps`` of ``kernel`` from a YAML file beside ``path``.

    The file is ``FILE.yaml`` or ``kernels.yaml`` in the same folder, with one mapping per
    kernel: ``{KERNEL: {signature: {ARG: TYPE}, constexpr: {NAME: VALUE}, num_warps: N}}``.
    A mapping under the architecture's name (``sm_90a:`` or ``sm_100a:``) inside the kernel's
    entry overrides ``constexpr`` values and ``num_warps`` for that architecture only.
    """
    from twill.yaml_safe import load_yaml_file

    for candidate in kernel_option_files(path):
        if not candidate.is_file():
            continue
        data = load_yaml_file(candidate) or {}
        entry = data.get(kernel) if isinstance(data, dict) else None
        if not isinstance(entry, dict):
            continue
        sig = _mapping(entry.get("signature"), "signature", kernel, candidate)
        consts = _mapping(entry.get("constexpr"), "constexpr", kernel, candidate)
        warps = _num_warps(entry.get("num_warps"), kernel, candidate)
        if arch is not None and entry.get(arch) is not None:
            special = _mapping(entry[arch], arch, kernel, candidate)
            consts.update(_mapping(special.get("constexpr"), "constexpr", kernel, candidate))
            warps = _num_warps(special.get("num_warps"), kernel, candidate) or warps
        return KernelOptions({k: str(v) for k, v in sig.items()}, consts, warps)
    return KernelOptions()


@dataclass(frozen=True)
class TritonImport:
    """Every loop of a kernel as a scheduling problem, and the one picked.

    Attributes
    ----------
    loops
        One :class:`~twill.triton.extract.ExtractedLoop` per innermost loop, in program
        order.
    picked
        The loop at ``--loop LINE``, else the costliest (most SM clocks per iteration).
    arch
        ``sm_90a`` or ``sm_100a``.
    notes
        How the kernel was compiled for extraction (pipelining off, autotune config taken).
    """

    loops: tuple[ExtractedLoop, ...]
    picked: ExtractedLoop
    arch: str
    notes: tuple[str, ...] = ()


def _refuse_build_options(
    text: str, signature: object, constexprs: object, num_warps: object, config: object
) -> None:
    """A ``.ttgir`` is compiled already: options that shape its compilation cannot apply and
    are refused rather than ignored (``--num-warps 4`` on a file built for 8 warps)."""
    given = [flag for flag, value in (("--signature", signature), ("--constexpr", constexprs),
                                      ("--num-warps", num_warps), ("--config", config))
             if value not in (None, {}, [])]  # fmt: skip
    if given:
        raise InvalidProblemError(
            f"{', '.join(given)} cannot apply to a .ttgir: it is compiled already (its warps "
            "are its ttg.num-warps); give them with the FILE.py:KERNEL it came from",
            source=text,
        )


def import_triton_loops(
    spec: str | Path,
    arch: str | None,
    signature: Mapping[str, str] | None = None,
    constexprs: Mapping[str, Any] | None = None,
    *,
    normalize: bool = True,
    num_warps: int | None = None,
    loop: int | None = None,
    config: int | None = None,
) -> TritonImport:
    """Every loop of a Triton kernel for ``arch`` (see :func:`import_triton` for the
    parameters); ``loop`` picks the loop at that source line, ``config`` the
    ``@triton.autotune`` config (default: the first); a ``.ttgir`` file is read for its own
    ``ttg.target`` (``arch`` may be ``None`` there, and must not contradict it). Inside
    :func:`~twill.triton.extract.normalisation_deadline` the cost normalisation ends by
    that deadline."""
    from twill.triton.extract import extract_loops, pick_loop, read_ttgir_file, ttgir_arch

    text = str(spec)
    notes: tuple[str, ...] = ()
    if text.lower().endswith(".ttgir"):
        _refuse_build_options(text, signature, constexprs, num_warps, config)
        path = Path(text)
        ttgir, name = read_ttgir_file(path), None  # a missing file, a pipe: a clear error
        arch = ttgir_arch(ttgir, arch, text)
    else:
        from twill.triton.compiler import compile_ttgir, parse_kernel_spec

        if arch is None:
            raise InvalidProblemError("a Triton kernel needs --arch sm_90a or sm_100a", source=text)

        path, name = parse_kernel_spec(text)
        found = kernel_options(path, name, arch)
        sig = {**found.signature, **(signature or {})}
        consts = {**found.constexprs, **(constexprs or {})}
        compiled = compile_ttgir(
            path, name, arch, sig, consts, num_warps=num_warps or found.num_warps, config=config
        )
        ttgir, notes = compiled.ttgir, compiled.notes
    loops = extract_loops(ttgir, arch, source=text, name=name, normalize=normalize)
    return TritonImport(loops, pick_loop(loops, loop, text), arch, notes)


def import_triton(*args: Any, **kwargs: Any) -> DependenceGraph:
    """Dependence graph of one loop of a Triton kernel for ``arch``: the costliest, or the one
    at source line ``loop``.

    Parameters
    ----------
    spec
        ``FILE.py:KERNEL`` (compiled with Triton, the ``triton`` extra) or a saved ``.ttgir``.
    arch
        ``"sm_90a"`` (H100) or ``"sm_100a"`` (B200). A ``.ttgir`` file is read for the target it
        was compiled for (its ``ttg.target``): ``None`` takes it, another value is refused.
    signature, constexprs
        Argument types and constexpr values; the command line's wins over a YAML beside the file.
    normalize
        Apply the Twill paper's §5.2 cost normalisation (U = 300).
    num_warps
        Triton's ``num_warps`` (default: the autotune config's, else the YAML's, else 8).
    loop
        Kernel source line of the loop to take (default: the costliest loop).
    config
        Index of the ``@triton.autotune`` config that supplies constexprs and ``num_warps``
        (default: the first).

    Raises
    ------
    InvalidProblemError
        Bad spec, missing argument type, no loop, no loop at ``loop``, unmapped operation.
    BackendUnavailableError
        A ``.py`` kernel without Triton installed.
    """
    return import_triton_loops(*args, **kwargs).picked.graph


# import_triton takes import_triton_loops's parameters (one list, kept in one place)
import_triton.__signature__ = inspect.signature(import_triton_loops).replace(  # type: ignore[attr-defined]
    return_annotation="DependenceGraph"
)
