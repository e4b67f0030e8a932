"""Public API of the Triton front end: a Triton kernel or saved TTGIR -> dependence graph.

A ``FILE.py:KERNEL`` is compiled with Triton (``signature`` and ``constexprs`` as on the
command line, or from a YAML beside the file); a saved ``.ttgir`` needs no Triton:

>>> from twill.triton import SHIPPED_DIR, import_triton
>>> g = import_triton(str(SHIPPED_DIR / "fa_fwd.sm_90a.ttgir"), "sm_90a")
>>> g.name, len(g.instructions)
('fa_fwd', 28)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from twill.errors import InvalidProblemError
from twill.sched.ir import DependenceGraph

__all__ = ["import_triton", "kernel_options", "kernel_option_files", "SHIPPED_DIR"]

SHIPPED_DIR = Path(__file__).parent / "data" / "triton"


def kernel_option_files(path: Path) -> list[Path]:
    """The YAML files that may give a kernel's signature and constexprs: ``FILE.yaml`` and
    ``kernels.yaml`` beside ``FILE.py``."""
    return [path.with_suffix(".yaml"), path.parent / "kernels.yaml"]


def kernel_options(path: Path, kernel: str) -> tuple[dict[str, str], dict[str, Any]]:
    """Signature and constexprs of ``kernel`` from a YAML file beside ``path`` (if any).

    The file is ``FILE.yaml`` or ``kernels.yaml`` in the same folder, with one mapping per
    kernel: ``{KERNEL: {signature: {ARG: TYPE}, constexpr: {NAME: VALUE}}}``.
    """
    from twill.io.yaml_safe import load_yaml_file

    for candidate in kernel_option_files(path):
        if candidate.is_file():
            data = load_yaml_file(candidate) or {}
            entry = data.get(kernel) if isinstance(data, dict) else None
            if not isinstance(entry, dict):
                continue
            sig, const = entry.get("signature") or {}, entry.get("constexpr") or {}
            if not isinstance(sig, dict) or not isinstance(const, dict):
                raise InvalidProblemError(
                    f"{kernel}: 'signature' and 'constexpr' must be mappings (NAME: VALUE)",
                    source=str(candidate),
                )
            return {str(k): str(v) for k, v in sig.items()}, dict(const)
    return {}, {}


def import_triton(
    spec: str | Path,
    arch: str,
    signature: Mapping[str, str] | None = None,
    constexprs: Mapping[str, Any] | None = None,
    *,
    normalize: bool = True,
) -> DependenceGraph:
    """Dependence graph of a Triton kernel's innermost loop for ``arch``.

    Parameters
    ----------
    spec
        ``FILE.py:KERNEL`` (compiled with Triton, the ``triton`` extra) or a saved ``.ttgir``.
    arch
        ``"sm_90a"`` (H100) or ``"sm_100a"`` (B200).
    signature, constexprs
        Argument types and constexpr values; the command line's wins over a YAML beside the file.
    normalize
        Apply the §5.2 cost normalisation (U = 300).

    Raises
    ------
    InvalidProblemError
        Bad spec, missing argument type, no loop, nested loops, unmapped operation.
    BackendUnavailableError
        A ``.py`` kernel without Triton installed.
    """
    from twill.io.triton_extract import extract_graph

    text = str(spec)
    if text.endswith(".ttgir"):
        path = Path(text)
        if not path.is_file():
            raise FileNotFoundError(2, "No such file or directory", text)
        return extract_graph(path.read_text(encoding="utf-8"), arch, source=text,
                             normalize=normalize)  # fmt: skip
    from twill.io.triton_compile import compile_ttgir, parse_kernel_spec

    path, kernel = parse_kernel_spec(text)
    sig, consts = kernel_options(path, kernel)
    sig.update(signature or {})
    consts.update(constexprs or {})
    ttgir = compile_ttgir(path, kernel, arch, sig, consts)
    return extract_graph(ttgir, arch, source=text, name=kernel, normalize=normalize)


def parse_assignments(items: list[str] | None, what: str, numeric: bool) -> dict[str, Any]:
    """``NAME=VALUE`` strings -> dict (numbers parsed when ``numeric``)."""
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier() or not value:
            raise InvalidProblemError(f"{what}: expected NAME=VALUE, found {item!r}")
        if numeric:
            try:
                out[name] = int(value)
            except ValueError:
                try:
                    out[name] = float(value)
                except ValueError:
                    raise InvalidProblemError(
                        f"{what}: {name} is not a number: {value!r}"
                    ) from None
        else:
            out[name] = value
    return out
