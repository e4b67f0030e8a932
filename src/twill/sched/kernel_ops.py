"""Building blocks of the kernel loop bodies of :mod:`twill.sched.kernels` and
:mod:`twill.sched.kernels_backward`: an op on one unit, and a TMA load.

Preconditions: none (factories).
"""

from __future__ import annotations

from typing import Any

from twill.sched.ir import Instruction

__all__ = ["one", "unit_op", "tma_load"]


def one(fu: str, cycles: int = 1) -> dict[str, tuple[int, ...]]:
    """RRT of an op holding one unit of ``fu`` for ``cycles`` cycles."""
    return {fu: (1,) * cycles}


def unit_op(
    name: str, unit: str, note: str, *, cycles: int = 1, spill_cost: int = 1, **annotations: Any
) -> Instruction:
    """An op holding one ``unit`` for ``cycles`` cycles, shown on that unit; ``annotations``
    are the other :class:`~twill.sched.ir.Instruction` fields (``regs``, ``warps``, ...)."""
    return Instruction(name, cycles, one(unit, cycles), spill_cost=spill_cost, unit=unit,
                       note=note, **annotations)  # fmt: skip


def tma_load(name: str, smem_bytes: int, note: str) -> Instruction:
    """A streaming TMA load of ``smem_bytes`` into shared memory (paper §5.3): variable
    latency, one cycle of the TMA issue unit."""
    return Instruction(name, 1, one("TMA"), footprint={"smem": smem_bytes},
                       variable_latency=True, streaming=True, unit="TMA", note=note)  # fmt: skip
