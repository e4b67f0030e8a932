"""Chip area of an accelerator from per-component figures (40 nm), for design-space sweeps.

The figures are Accelergy's 40 nm estimates (CACTI SRAMs, Aladdin MACs) as DOSA recorded them:
``ucb-bar/dosa``, ``data/timeloop_dataset/dataset.csv.tar.gz`` (commit ``d3f101c6``, BSD-2),
column ``target.area`` in mm², one value per Gemmini configuration (95 distinct ones: 4 to
16,384 PEs, 1 kB to 2 MB of scratchpad and of accumulator). A weighted least-squares fit of
those 95 areas (relative error) to one figure per component gives

==========================  ===================  =========================================
component                   figure               what it counts
==========================  ===================  =========================================
PE                          4.216e-4 mm² each    one 8-bit MAC and its weight register
SRAM of 8-bit words         2.597e-3 mm² per kB  Gemmini's scratchpad (wide, 8-bit words)
SRAM of wider words         5.545e-3 mm² per kB  Gemmini's accumulator (32-bit words)
fixed                       1.965e-2 mm²         controller, DMA, what does not scale
==========================  ===================  =========================================

within 18.5 % of every one of the 95 Accelergy areas (median 5.1 %, mean 5.6 %). The wider
words cost twice as much per kB because CACTI's banks of narrow rows carry more periphery per
bit.

:func:`area_mm2` applies the figures to any :class:`~twill.mapping.arch.Arch`: every bounded
level except the one-word registers (inside the PE figure) is an SRAM of
``entries x instances x word_bits`` bits; DRAM is off chip. :func:`gemmini_area_mm2` is the same
sum in Gemmini's three parameters, written with ``+`` and ``*`` only, so that it takes floats,
NumPy arrays or torch tensors alike (gradient-based co-design relaxes the parameters).

Preconditions: a valid architecture (:meth:`Arch.check`). Simba-family areas use the same
figures (Simba's MAC and SRAMs are 8-bit and 24-bit, 40 nm too), a transfer, not a fit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from twill.mapping.arch import Arch

__all__ = [
    "PE_MM2",
    "SRAM8_MM2_PER_KB",
    "SRAM_WIDE_MM2_PER_KB",
    "FIXED_MM2",
    "AreaBreakdown",
    "area_breakdown",
    "area_mm2",
    "gemmini_area_mm2",
]

#: Area of one PE (an 8-bit MAC with its weight register), mm², 40 nm (module docstring).
PE_MM2 = 4.216e-4
#: Area of one kB of SRAM with words of at most 8 bits, mm².
SRAM8_MM2_PER_KB = 2.597e-3
#: Area of one kB of SRAM with words wider than 8 bits, mm².
SRAM_WIDE_MM2_PER_KB = 5.545e-3
#: Area that does not scale with the parameters, mm².
FIXED_MM2 = 1.965e-2

T = TypeVar("T")


@dataclass(frozen=True)
class AreaBreakdown:
    """An architecture's area by component, mm² (see :mod:`twill.mapping.area`)."""

    pes_mm2: float
    levels_mm2: tuple[tuple[str, float], ...]
    fixed_mm2: float = FIXED_MM2

    @property
    def total_mm2(self) -> float:
        return self.pes_mm2 + sum(a for _, a in self.levels_mm2) + self.fixed_mm2


def _sram_mm2_per_kb(word_bits: int) -> float:
    return SRAM8_MM2_PER_KB if word_bits <= 8 else SRAM_WIDE_MM2_PER_KB


def area_breakdown(arch: Arch) -> AreaBreakdown:
    """The area of ``arch`` by component: the PEs, each on-chip SRAM level, the fixed part.

    Parameters
    ----------
    arch
        A valid architecture; levels with one entry per instance are the PEs' registers
        (counted in :data:`PE_MM2`), the unbounded outermost level is DRAM (off chip).

    Returns
    -------
    AreaBreakdown

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch
    >>> b = area_breakdown(gemmini_arch())
    >>> [(n, round(a, 4)) for n, a in b.levels_mm2], round(b.total_mm2, 4)
    ([('Accumulator', 0.1774), ('Scratchpad', 0.3324)], 0.6374)
    """
    levels = tuple(
        (lv.name, lv.entries * lv.instances * lv.word_bits / 8 / 1024
         * _sram_mm2_per_kb(lv.word_bits))
        for lv in arch.levels
        if lv.entries is not None and lv.entries > 1
    )  # fmt: skip
    return AreaBreakdown(arch.macs * PE_MM2, levels)


def area_mm2(arch: Arch) -> float:
    """Total chip area of ``arch`` in mm² (:func:`area_breakdown`).

    Examples
    --------
    >>> from twill.mapping.arch import gemmini_arch, simba_arch
    >>> round(area_mm2(gemmini_arch(32, 512, 128)), 3), round(area_mm2(simba_arch()), 3)
    (2.491, 6.236)
    """
    return area_breakdown(arch).total_mm2


def gemmini_area_mm2(pe_dim: T, scratchpad_kb: T, accumulator_kb: T, pe_cols: T | None = None) -> T:
    """Area in mm² of a Gemmini with a ``pe_dim x pe_dim`` array (``pe_dim x pe_cols`` when
    given) and the two buffers in kB; arithmetic only, so arrays and tensors (with their
    gradients) pass through.

    Equals :func:`area_mm2` of :func:`~twill.mapping.arch.gemmini_arch` with the same
    parameters (up to the accumulator's rounding to whole words per column).

    Examples
    --------
    >>> round(gemmini_area_mm2(16, 128, 32), 4)
    0.6374
    """
    return (
        pe_dim * (pe_dim if pe_cols is None else pe_cols) * PE_MM2  # type: ignore[operator]
        + scratchpad_kb * SRAM8_MM2_PER_KB  # type: ignore[operator]
        + accumulator_kb * SRAM_WIDE_MM2_PER_KB  # type: ignore[operator]
        + FIXED_MM2
    )
