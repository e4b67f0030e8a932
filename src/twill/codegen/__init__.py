"""Code generation from a joint Twill schedule (paper §6): readable pseudocode
(:mod:`twill.codegen.pseudo`) and a CUDA C++ skeleton per warp role (:mod:`twill.codegen.cuda`).

Outer layer: it reads schedules, never runs a solver itself.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["generate_pseudocode", "generate_cuda"]


# lazy re-exports keep `import twill.codegen` cheap
def __getattr__(name: str) -> Callable[..., str]:
    if name == "generate_pseudocode":
        from twill.codegen.pseudo import generate_pseudocode

        return generate_pseudocode
    if name == "generate_cuda":
        from twill.codegen.cuda import generate_cuda

        return generate_cuda
    raise AttributeError(name)
