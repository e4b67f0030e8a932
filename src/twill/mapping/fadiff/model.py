"""Differentiable Gemmini cost model in PyTorch (DOSA (Hong et al., MICRO 2023)).

The torch twin of :func:`twill.mapping.cost.analytical.evaluate_batch`: the same access-count
derivation (tiles, fills by the stationarity walk, reads from the child's fills times
the relevant spatial fan-out, output reads with first-write elision, Timeloop sliding-window
input fills), the same energy table and the same latency roofline, written over a
batch whose rows may be *different layers* (a whole network at once).

Differentiability. Every count is a product of tiling factors; the discrete structure (which
loop is the first relevant one, whether a window slides) is decided on the detached factor
values and the counts are then products of the differentiable factor tensors. With the
straight-through Gumbel factors of :mod:`twill.mapping.fadiff.relax` the forward pass sees
integer divisors, so the forward numbers are exactly those of the NumPy model (pinned by
``tests/mapping/fadiff/test_model.py`` on hundreds of random valid mappings) while the
backward pass gets the gradient of the smooth products. The latency ``ceil`` uses a
straight-through estimator.

Grouped layers: the factors are one group's (seven dimensions); the model adds the group
loop G at the outermost (DRAM) level, as the NumPy model does for a mapping without G
factors, so every count and the energy and latency are the whole layer's (G times one group,
up to the rounding of cycles).

Preconditions: factors ≥ 1 in the forward pass; the batch shares the architecture's
keep/bypass assignment. Torch is imported lazily by the callers (this module imports it at
module level and is itself only imported on use).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from twill.mapping.arch import Arch
from twill.mapping.cost.twin import (
    LoopNest,
    served_accesses,
    sliding_input_fills,
    tile_footprints,
)
from twill.mapping.workload import ALL_DIMS, OPERANDS, RELEVANT, Layer

__all__ = ["LayerTable", "TorchCost", "layer_table", "torch_costs"]

_R, _S, _P, _Q, _C, _K, _N, _G = range(8)
_NL = len(ALL_DIMS)  # loops per level in the model: the seven dimensions and G
_W, _I, _O = range(3)
_REL = np.array([[d in RELEVANT[v] for d in ALL_DIMS] for v in OPERANDS], dtype=bool)


@dataclass(frozen=True)
class LayerTable:
    """Per-row layer constants of a batch (row b is one layer instance).

    ``bounds`` ``(B, 7)`` (one group); ``stride`` and ``dilation`` ``(B, 2)`` (width,
    height); ``macs`` ``(B,)`` and ``o_size`` ``(B,)`` output words, all groups; ``groups``
    ``(B,)``. All float64 tensors on the batch's device.
    """

    bounds: torch.Tensor
    stride: torch.Tensor
    dilation: torch.Tensor
    macs: torch.Tensor
    o_size: torch.Tensor
    groups: torch.Tensor


def layer_table(layers: list[Layer], device: str | torch.device = "cpu") -> LayerTable:
    """Stack the constants of ``layers`` (one row each)."""
    f64 = dict(dtype=torch.float64, device=device)
    bounds = torch.tensor([list(ly.bounds) for ly in layers], **f64)
    stride = torch.tensor([[ly.w_stride, ly.h_stride] for ly in layers], **f64)
    dil = torch.tensor([[ly.w_dilation, ly.h_dilation] for ly in layers], **f64)
    macs = torch.tensor([float(ly.total_macs) for ly in layers], **f64)
    groups = torch.tensor([float(ly.groups) for ly in layers], **f64)
    o_size = bounds[:, _P] * bounds[:, _Q] * bounds[:, _K] * bounds[:, _N] * groups
    return LayerTable(bounds, stride, dil, macs, o_size, groups)


@dataclass(frozen=True)
class TorchCost:
    """Differentiable per-row results (all ``(B, ...)`` float64 tensors).

    ``reads``/``fills``/``updates`` ``(B, L, 3)`` per instance; ``used`` ``(B, L)`` utilised
    instances; ``level_acc`` ``(B, L)`` accesses over the utilised instances; ``tiles``
    ``(B, L, 3)`` footprints in words; ``compute`` ``(B,)`` compute cycles; ``energy_pj`` and
    ``cycles`` ``(B,)`` of the unfused layer.
    """

    reads: torch.Tensor
    fills: torch.Tensor
    updates: torch.Tensor
    used: torch.Tensor
    level_acc: torch.Tensor
    tiles: torch.Tensor
    ext: torch.Tensor
    compute: torch.Tensor
    energy_pj: torch.Tensor
    cycles: torch.Tensor


def _footprints(ext: torch.Tensor, tab: LayerTable) -> torch.Tensor:
    """Footprints ``(B, L, 3)`` (W, I, O) of tiles with extents ``ext`` ``(B, L, 8)``."""
    strides = (tab.stride[:, 0:1], tab.stride[:, 1:2])
    dilations = (tab.dilation[:, 0:1], tab.dilation[:, 1:2])
    return torch.stack(tile_footprints(ext, strides, dilations), dim=-1)


def _with_groups(
    tab: LayerTable, T: torch.Tensor, Sp: torch.Tensor, order: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Append the G loop (all groups, temporal at the outermost level, outermost in its
    order): factors and orders ``(B, L, 8)``."""
    B, L, _ = T.shape
    g = torch.ones(B, L, 1, dtype=T.dtype, device=T.device)
    gt = torch.cat([g[:, :-1], tab.groups.to(T.dtype).view(B, 1, 1)], dim=1)
    first = torch.full((B, L, 1), _G, dtype=order.dtype, device=order.device)
    return torch.cat([T, gt], 2), torch.cat([Sp, g], 2), torch.cat([first, order], 2)


def _ste_ceil(x: torch.Tensor) -> torch.Tensor:
    """``ceil`` in the forward pass, identity gradient (straight-through)."""
    return x + (torch.ceil(x - 1e-9) - x).detach()


def torch_costs(
    tab: LayerTable,
    arch: Arch,
    temporal: torch.Tensor,
    spatial: torch.Tensor,
    order: torch.Tensor,
    *,
    sliding_window: bool = True,
    psum_reads: str = "distinct",
) -> TorchCost:
    """Access counts, energy and latency of a batch of mappings, differentiably.

    Parameters
    ----------
    tab
        Layer constants of each row (:func:`layer_table`).
    arch
        The accelerator (keep/bypass, energies, bandwidths, fan-outs).
    temporal, spatial
        ``(B, L, 7)`` float64 factors (may carry gradients).
    order
        ``(B, L, 7)`` long: dimension indices of each level's temporal loops, outer → inner
        (the convention of :class:`twill.mapping.mapping.Mapping`).
    sliding_window, psum_reads
        The modelling switches of :class:`twill.mapping.cost.analytical.CostOptions`; the
        defaults are the NumPy model's.

    Returns
    -------
    TorchCost

    Notes
    -----
    DOSA's access counts, energies and latency roofline (``docs/fadiff.md``). Identical forward
    numbers to :func:`twill.mapping.cost.analytical.evaluate_batch` on integer factors.
    """
    T, Sp, order = _with_groups(tab, temporal, spatial, order)
    B, L, _ = T.shape
    dev = T.device
    keeps = np.array([[v in lv.keeps for v in OPERANDS] for lv in arch.levels], dtype=bool)
    ext = torch.cumprod(T * Sp, dim=1)
    tiles = _footprints(ext, tab)
    compute = torch.prod(T.reshape(B, -1), dim=1)

    perm_io = torch.flip(order, dims=[2])  # inner -> outer within a level
    D = perm_io.reshape(B, L * _NL)
    F = torch.gather(T, 2, perm_io).reshape(B, L * _NL)
    G = L * _NL
    ones = torch.ones(B, 1, dtype=T.dtype, device=dev)
    # suffix[g] = prod_{g' >= g} F[g'] (products, not exp-log, so integers stay exact)
    suffix = torch.cat([torch.flip(torch.cumprod(torch.flip(F, [1]), 1), [1]), ones], dim=1)
    Fd = F.detach()
    gidx = torch.arange(G, device=dev)
    rel_t = torch.as_tensor(_REL, device=dev)
    rows = torch.arange(B, device=dev)
    nest = LoopNest(T, ext, D, F, suffix, rows)
    stride = (tab.stride[:, 0], tab.stride[:, 1])
    dilation = (tab.dilation[:, 0], tab.dilation[:, 1])

    fill_cols: dict[tuple[int, int], torch.Tensor] = {}
    for vi in range(3):
        rel = rel_t[vi][D] & (Fd > 1)
        first = torch.where(rel, gidx.expand(B, G), torch.full_like(D, G))
        nxt = torch.flip(torch.cummin(torch.flip(first, [1]), dim=1).values, [1])
        nxt = torch.cat([nxt, torch.full((B, 1), G, dtype=nxt.dtype, device=dev)], dim=1)
        for m in range(L - 1):
            if not keeps[m, vi]:
                continue
            gs = nxt[:, (m + 1) * _NL]
            f = tiles[:, m, vi] * suffix[rows, gs]
            if vi == _I and sliding_window:
                f = sliding_input_fills(nest, stride, dilation, f, tiles[:, m, vi], gs, m)
            fill_cols[(m, vi)] = f
    fills = _assemble(fill_cols, B, L, T)

    reads, updates = _reads_and_updates(T, Sp, tiles, compute, fill_cols, keeps, rel_t, psum_reads)

    fan = torch.prod(Sp, dim=2)
    rfan = torch.flip(torch.cumprod(torch.flip(fan, [1]), 1), [1])
    used = torch.cat([rfan[:, 1:], torch.ones(B, 1, dtype=T.dtype, device=dev)], dim=1)
    keeps_t = torch.as_tensor(keeps, device=dev, dtype=T.dtype)
    per_inst = ((reads + fills + updates) * keeps_t[None]).sum(dim=2)
    level_acc = per_inst * used
    e_lvl = torch.tensor([lv.energy_pj for lv in arch.levels], dtype=T.dtype, device=dev)
    energy = (level_acc * e_lvl[None]).sum(dim=1) + tab.macs * arch.mac_energy_pj
    cycles = _ste_ceil(torch.maximum(compute, bandwidth_cycles(arch, level_acc, per_inst)))
    return TorchCost(reads, fills, updates, used, level_acc, tiles, ext, compute, energy, cycles)


def _reads_and_updates(
    T: torch.Tensor,
    Sp: torch.Tensor,
    tiles: torch.Tensor,
    compute: torch.Tensor,
    fill_cols: dict[tuple[int, int], torch.Tensor],
    keeps: np.ndarray,
    rel_t: torch.Tensor,
    psum_reads: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reads and updates ``(B, L, 3)`` of every kept operand (DOSA's access counts).

    A level serves its nearest kept child's fills (or, at the innermost kept level, every MAC)
    times the spatial fan-out relevant to the operand between them; outputs are updated as
    often and read back except for their first writes (``psum_reads`` as in the NumPy model).
    """
    B, L, _ = T.shape
    dev = T.device
    sprel = torch.stack(
        [
            torch.prod(torch.where(rel_t[vi].expand_as(Sp), Sp, torch.ones_like(Sp)), dim=2)
            for vi in range(3)
        ],
        dim=-1,
    )
    cprel = torch.cumprod(sprel, dim=1)
    trel_o = torch.prod(torch.where(rel_t[_O].expand_as(T), T, torch.ones_like(T)), dim=2)
    rev = torch.flip(torch.cumprod(torch.flip(trel_o, [1]), 1), [1])  # prod over levels >= m
    above_o = torch.cat([rev[:, 1:], torch.ones(B, 1, dtype=T.dtype, device=dev)], dim=1)
    served = served_accesses(keeps, compute, cprel, lambda m, v: fill_cols[(m, v)], tiles,
                             above_o, psum_reads == "fills")  # fmt: skip
    read_cols = {key: r for key, (r, _) in served.items()}
    upd_cols = {key: u for key, (_, u) in served.items() if u is not None}
    return _assemble(read_cols, B, L, T), _assemble(upd_cols, B, L, T)


def bandwidth_cycles(arch: Arch, level_acc: torch.Tensor, per_inst: torch.Tensor) -> torch.Tensor:
    """Largest ``accesses / bandwidth`` over the throttled levels (roofline), ``(B,)``."""
    terms = [torch.zeros_like(level_acc[:, 0])]
    for m, lv in enumerate(arch.levels):
        if lv.bandwidth:
            src = level_acc[:, m] if lv.bandwidth_shared else per_inst[:, m]
            terms.append(src / lv.bandwidth)
    return torch.stack(terms, dim=1).max(dim=1).values


def _assemble(
    cols: dict[tuple[int, int], torch.Tensor], B: int, L: int, like: torch.Tensor
) -> torch.Tensor:
    """``(B, L, 3)`` from per-(level, operand) columns; missing columns are zeros."""
    zero = torch.zeros(B, dtype=like.dtype, device=like.device)
    return torch.stack(
        [torch.stack([cols.get((m, v), zero) for v in range(3)], dim=1) for m in range(L)], dim=1
    )
