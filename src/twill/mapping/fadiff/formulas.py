"""The fusion rewrite of the per-level access counts and the energy/cycle roll-up, shared by
the exact NumPy evaluation (:mod:`twill.mapping.fadiff.fusion`) and the torch relaxation
(:mod:`twill.mapping.fadiff.train`); DOSA's energies and roofline. See
:mod:`twill.mapping.fadiff.fusion` for the model these formulas implement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import BatchCost
from twill.mapping.cost.twin import array_module

if TYPE_CHECKING:  # torch only for annotations: the NumPy paths never import it
    import torch

    #: The shared formulas take NumPy arrays (exact evaluation) or torch tensors (relaxation)
    #: and return the same kind.
    Array = TypeVar("Array", np.ndarray, torch.Tensor)

_W, _I, _O = 0, 1, 2

__all__ = ["check_gemmini", "energy_and_cycles", "fused_batch_costs", "fused_level_accesses"]


# ------------------------------------------------------------------------ shared formulas
def fused_level_accesses(
    level_acc: Array,
    o_dram: Array,
    i_dram: Array,
    i_fill: Array,
    s_in: Array,
    s_out: Array,
    s_buf: Array | None = None,
) -> Array:
    """The fusion traffic rewrite on per-level accesses ``(B, L)`` (NumPy or torch) between DRAM
    (the last level) and the scratchpad below it (the fused data's on-chip level).

    ``o_dram`` = producer's DRAM output updates + reads, ``i_dram`` = DRAM input reads,
    ``i_fill`` = scratchpad input fills (all ``(B,)`` totals over utilised instances);
    ``s_in`` the fusion value of the layer's data input, ``s_out`` that of "no reader needs
    the output in DRAM", ``s_buf`` that of "some reader takes it from the scratchpad"
    (default ``s_out``).
    """
    xp = array_module(level_acc)
    s_buf = s_out if s_buf is None else s_buf
    top = level_acc.shape[1] - 1
    sp = top - 1
    cols = [level_acc[:, m] for m in range(level_acc.shape[1])]
    cols[top] = cols[top] - s_out * o_dram - s_in * i_dram
    cols[sp] = cols[sp] + s_buf * o_dram - s_in * i_fill
    return xp.stack(cols, 1) if xp is np else xp.stack(cols, dim=1)


def energy_and_cycles(
    level_acc: Array, used: Array, compute: Array, macs: Array, arch: Arch
) -> tuple[Array, Array]:
    """Energy (pJ) and roofline cycles (DOSA) from per-level accesses (NumPy or torch).

    The ``ceil`` of the NumPy model is applied; in torch it is straight-through.
    """
    xp = array_module(level_acc)
    e_lvl = [lv.energy_pj for lv in arch.levels]
    energy = macs * arch.mac_energy_pj
    terms = [compute]
    for m, lv in enumerate(arch.levels):
        energy = energy + level_acc[:, m] * e_lvl[m]
        if lv.bandwidth:
            src = level_acc[:, m] if lv.bandwidth_shared else level_acc[:, m] / used[:, m]
            terms.append(src / lv.bandwidth)
    if xp is np:
        raw = np.max(np.stack(terms, 1), axis=1)
        return energy, np.ceil(raw - 1e-9)
    raw = xp.stack(terms, dim=1).max(dim=1).values
    return energy, raw + (xp.ceil(raw - 1e-9) - raw).detach()


def fused_batch_costs(
    cost: BatchCost, macs: float, arch: Arch, s_in: float, s_out: float, s_buf: float
) -> tuple[np.ndarray, np.ndarray]:
    """Energy (pJ) and cycles of every row of one layer's batch ``cost`` under the traffic
    rewrite with the layer's fusion values ``s_in``, ``s_out``, ``s_buf`` (module docstring).
    """
    top = arch.n_levels - 1
    sp = top - 1
    used = cost.instances_used
    o_dram = (cost.updates[:, top, _O] + cost.reads[:, top, _O]) * used[:, top]
    i_dram = cost.reads[:, top, _I] * used[:, top]
    i_fill = cost.fills[:, sp, _I] * used[:, sp]
    n = len(cost.cycles)

    def col(x: float) -> np.ndarray:
        return np.full(n, float(x))

    acc = fused_level_accesses(
        cost.level_accesses, o_dram, i_dram, i_fill, col(s_in), col(s_out), col(s_buf)
    )
    return energy_and_cycles(acc, used, cost.compute_cycles, col(macs), arch)


def check_gemmini(arch: Arch) -> list[str]:
    """Defects that make ``arch`` unusable for the fusion model (empty when usable)."""
    bad = []
    if arch.n_levels < 2:
        bad.append("need an on-chip level and DRAM")
        return bad
    from twill.mapping.workload import Operand

    if Operand.I not in arch.levels[-2].keeps:
        bad.append(f"the outermost on-chip level {arch.levels[-2].name} must keep inputs")
    if arch.levels[-2].entries is None:
        bad.append(f"the outermost on-chip level {arch.levels[-2].name} must be bounded")
    return bad
