"""Formulas written once for the NumPy cost model (:mod:`twill.mapping.cost.analytical`) and
its torch twin (:mod:`twill.mapping.fadiff.model`): DOSA's access counts and
sliding-window input fills.

Both models flatten each mapping's temporal loops inner → outer and walk them the same way;
what they share is held in a :class:`LoopNest` of NumPy arrays or of torch tensors, and the
formulas here use only operations both libraries spell alike (indexing, arithmetic and
``where``/``minimum`` from :func:`array_module`), so one text gives the same numbers in both.

Preconditions: every array of one call comes from the same library; torch is imported only
when a tensor is passed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

if TYPE_CHECKING:  # torch only for annotations: the NumPy paths never import it
    import torch

    #: A NumPy array (exact evaluation) or a torch tensor (relaxation).
    Array = TypeVar("Array", np.ndarray, torch.Tensor)
else:
    Array = TypeVar("Array")

__all__ = ["LoopNest", "array_module", "served_accesses", "sliding_input_fills", "tile_footprints"]

_R, _S, _P, _Q, _C, _K, _N, _G = range(8)  # ALL_DIMS: R, S, P, Q, C, K, N, G


def array_module(a: Any) -> ModuleType:
    """The array module of ``a``: NumPy for an ndarray, else torch (imported only then)."""
    if isinstance(a, np.ndarray):
        return np
    import torch

    return torch


@dataclass(frozen=True)
class LoopNest(Generic[Array]):
    """A batch of mappings' loops as both cost models walk them (``B`` rows, ``L`` levels,
    ``W`` loops per level in ALL_DIMS order, ``G = L·W`` temporal loops in all).

    ``T`` ``(B, L, W)`` temporal factors; ``ext`` ``(B, L, W)`` extent of each dimension over
    levels ``0..m`` (temporal and spatial); ``D`` and ``F`` ``(B, G)`` the dimension and the
    factor of temporal loop ``g = m·W + k`` (``k = 0`` innermost in level ``m``); ``suffix``
    ``(B, G + 1)`` the product of ``F`` over loops ``g' >= g`` (``1`` at ``G``); ``rows`` the
    row indices ``0..B-1``.
    """

    T: Array
    ext: Array
    D: Array
    F: Array
    suffix: Array
    rows: Array


def tile_footprints(ext: Array, strides: tuple[Any, Any], dilations: tuple[Any, Any]) -> tuple:
    """``(w, i, o)``: the words of the weight, input (with its halo) and output tiles of
    extents ``ext`` (``(..., 8)`` in :data:`~twill.mapping.workload.ALL_DIMS` order);
    ``strides`` and ``dilations`` are ``(width, height)``, broadcast against ``ext[..., 0]``."""
    (ws, hs), (wd, hd) = strides, dilations
    g = ext[..., _G]
    w = g * ext[..., _R] * ext[..., _S] * ext[..., _C] * ext[..., _K]
    o = g * ext[..., _P] * ext[..., _Q] * ext[..., _K] * ext[..., _N]
    width = (ext[..., _P] - 1) * ws + (ext[..., _R] - 1) * wd + 1
    height = (ext[..., _Q] - 1) * hs + (ext[..., _S] - 1) * hd + 1
    return w, g * ext[..., _N] * ext[..., _C] * width * height, o


def sliding_input_fills(
    nest: LoopNest[Array],
    stride: tuple[Any, Any],
    dilation: tuple[Any, Any],
    fills: Array,
    tile: Array,
    first: Array,
    m: int,
) -> Array:
    """Level ``m``'s input fills with sliding-window deltas, ``(B,)``.

    ``fills`` are the plain fills (``tile`` times ``suffix`` at ``first``, the index of the
    first relevant temporal loop above ``m``, ``G`` when none). Where that loop runs over P,
    Q, R or S and each step moves the input window by less than its span, the level loads
    the whole tile once and then only the new columns (rows) on every further step of that
    loop, all of it repeated for every loop outside it. ``stride`` and ``dilation`` are
    (width, height) pairs: scalars (one layer) or ``(B,)`` arrays (a layer per row).
    """
    xp = array_module(fills)
    G = nest.F.shape[1]
    rows = nest.rows
    ok = first < G
    g = xp.where(ok, first, 0)
    dim = nest.D[rows, g]
    lvl = g // nest.T.shape[2]
    n = nest.F[rows, g]
    step = nest.ext[rows, lvl, dim] / nest.T[rows, lvl, dim]  # dim's extent inside this loop
    mult = xp.where(
        dim == _P,
        stride[0],
        xp.where(
            dim == _R,
            dilation[0],
            xp.where(dim == _Q, stride[1], xp.where(dim == _S, dilation[1], 0)),
        ),
    )
    e = nest.ext[:, m, :]
    width = (e[:, _P] - 1) * stride[0] + (e[:, _R] - 1) * dilation[0] + 1
    height = (e[:, _Q] - 1) * stride[1] + (e[:, _S] - 1) * dilation[1] + 1
    span = xp.where((dim == _P) | (dim == _R), width, height)
    new = xp.minimum(span, step * mult)
    slide = ok & (mult > 0) & (new < span)
    delta = tile * new / span
    sliding = nest.suffix[rows, g + 1] * (tile + (n - 1) * delta)  # g < G where ok
    return xp.where(slide, sliding, fills)


def served_accesses(
    keeps: np.ndarray,
    compute: Array,
    cprel: Array,
    fill: Callable[[int, int], Array],
    tiles: Array,
    above_o: Array,
    psum_fills: bool,
) -> dict[tuple[int, int], tuple[Array, Array | None]]:
    """What each kept level serves (DOSA's access counts): ``{(m, v): (reads, updates)}``,
    columns ``(B,)``; ``updates`` only for outputs (operand 2), else ``None``.

    A level serves its nearest kept child's fills (``fill(child, v)``; at the innermost kept
    level, every MAC: ``compute``) times the spatial fan-out relevant to the operand between
    them (``cprel`` ``(B, L, 3)``, its running product). Outputs are updated as often and read
    back except for their first writes: the level's own fills when ``psum_fills`` (below the
    outermost level), else its distinct outputs, ``tiles[:, m, 2] * above_o[:, m]``.
    """
    L = keeps.shape[0]
    served: dict[tuple[int, int], tuple[Array, Array | None]] = {}
    for v in range(3):
        child = None
        for m in range(L):
            if not keeps[m, v]:
                continue
            if child is None:
                base = compute * cprel[:, m, v]
            else:
                base = fill(child, v) * cprel[:, m, v] / cprel[:, child, v]
            if v == 2:
                first = fill(m, v) if psum_fills and m < L - 1 else tiles[:, m, v] * above_o[:, m]
                served[m, v] = ((base - first).clip(min=0.0), base)
            else:
                served[m, v] = (base, None)
            child = m
    return served
