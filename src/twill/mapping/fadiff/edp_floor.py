"""EDP lower bounds from per-layer (energy, cycles) floors that cannot all be met at once.

A layer's least DRAM words, its least on-chip energy and its least compute cycles may need
different scratchpad tiles: the tile that reads every word once may leave too few output
channels to fill the array's columns (a RetinaNet 3×3 head on a 16×16 Gemmini: the input
slab fills the 128 KB scratchpad, four columns compute, four times the cycles). Bounding
energy and cycles apart, each at its own best tile, allows both at once. Here every tile
gives one point ``(energy, cycles)``
(:meth:`twill.mapping.fadiff.floors.TileRows.energy_and_cycles`), and every mapping with
that tile lies above and to the right of it.

The network's EDP is ``(Σ E_j)·(Σ D_j)``. Over a set of points in the positive quadrant the
product ``x·y`` is least at a vertex of the set's lower-left convex hull (along an edge
going down and right it is concave; along any other direction it grows). Two ways to use
that:

* layers priced apart: the hull of the sums is the Minkowski sum of the layers' hulls,
  whose vertices come from merging the layers' edges by slope
  (:func:`min_product_of_sums`, exact);
* layers priced together (the group bound's dynamic programme): for a weight ``(a, b)`` the
  programme gives ``L = min Σ (a·E_j + b·D_j)``, a line that every plan's ``(ΣE, ΣD)``
  lies on or above; the least product over the polygon that several such lines cut out is
  a lower bound of every plan's EDP (:func:`min_product_over_lines`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from twill.mapping.arch import Arch

if TYPE_CHECKING:
    from twill.mapping.fadiff.floors import TileRows

__all__ = ["Pricing", "lower_hull", "min_product_of_sums", "min_product_over_lines"]


def lower_hull(energy: np.ndarray, cycles: np.ndarray) -> list[tuple[float, float]]:
    """Vertices of the lower-left convex hull of the points, by energy ascending (cycles
    descending); ``[]`` when no point is finite."""
    ok = np.isfinite(energy) & np.isfinite(cycles)
    e, c = energy[ok], cycles[ok]
    if not len(e):
        return []
    order = np.lexsort((c, e))
    e, c = e[order], c[order]
    keep = c < np.minimum.accumulate(np.concatenate(([np.inf], c[:-1])))  # Pareto front
    hull: list[tuple[float, float]] = []
    for x, y in zip(e[keep].tolist(), c[keep].tolist(), strict=True):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (y - y1) - (y2 - y1) * (x - x1) > 0:
                break
            hull.pop()  # on or above the segment from hull[-2] to the new point
        hull.append((x, y))
    return hull


def min_product_of_sums(hulls: Sequence[list[tuple[float, float]]]) -> tuple[float, float]:
    """The point ``(ΣE, ΣD)`` with the least product over one point per layer, each layer's
    points given by their :func:`lower_hull` (exact: the vertices of the Minkowski sum)."""
    energy = sum(h[0][0] for h in hulls)
    cycles = sum(h[0][1] for h in hulls)
    steps = [
        ((y2 - y1) / (x2 - x1), x2 - x1, y2 - y1)
        for h in hulls
        for (x1, y1), (x2, y2) in zip(h, h[1:], strict=False)
    ]
    best = (energy, cycles)
    for _, dx, dy in sorted(steps):
        energy, cycles = energy + dx, cycles + dy
        if energy * cycles < best[0] * best[1]:
            best = (energy, cycles)
    return best


def min_product_over_lines(lines: Sequence[tuple[float, float, float]]) -> float:
    """The least ``x·y`` over ``x, y ≥ 0`` with ``a·x + b·y ≥ L`` for every ``(a, b, L)``
    (``a, b ≥ 0``, not both 0): the least product over the polygon's vertices."""
    cuts = [(a, b, lim) for a, b, lim in lines if math.isfinite(lim) and lim > 0]
    x_min = max([lim / a for a, b, lim in cuts if b == 0], default=0.0)
    y_min = max([lim / b for a, b, lim in cuts if a == 0], default=0.0)
    cuts += [(1.0, 0.0, x_min), (0.0, 1.0, y_min)]

    def feasible(x: float, y: float) -> bool:
        return all(a * x + b * y >= lim * (1 - 1e-9) for a, b, lim in cuts)

    best = math.inf
    for i, (a1, b1, l1) in enumerate(cuts):
        for a2, b2, l2 in cuts[i + 1 :]:
            det = a1 * b2 - a2 * b1
            if det == 0:
                continue
            x, y = (l1 * b2 - l2 * b1) / det, (a1 * l2 - a2 * l1) / det
            if x >= 0 and y >= 0 and feasible(x, y):
                best = min(best, x * y)
    return best


@dataclass(frozen=True)
class Pricing:
    """How a charge of the group bound values a layer's rows, one component each: its DRAM
    words (``words``, first), and per weight ``(a, b)`` of ``weights`` its
    ``a·energy + b·cycles`` (:meth:`twill.mapping.fadiff.floors.TileRows.energy_and_cycles`).
    """

    weights: tuple[tuple[float, float], ...] = ()
    words: bool = True

    @property
    def size(self) -> int:
        return int(self.words) + len(self.weights)

    def least(self, rows: TileRows, words: np.ndarray, arch: Arch) -> np.ndarray:
        """Per component, the least value over the rows moving ``words`` (``inf`` for
        none)."""
        ok = np.isfinite(words)
        if not ok.any():
            return np.full(self.size, np.inf)
        least = [float(words[ok].min())] if self.words else []
        if self.weights:
            energy, cycles = rows.energy_and_cycles(words, arch)
            energy, cycles = energy[ok], cycles[ok]
            least += [float((a * energy + b * cycles).min()) for a, b in self.weights]
        return np.array(least)

    @classmethod
    def around(cls, scale: float, words: bool = False) -> Pricing:
        """Energy alone, cycles alone and seven weights ``(1, λ)`` with ``λ`` from
        ``scale / 8`` to ``8·scale`` (``scale`` about energy over cycles at the optimum),
        after the DRAM words if ``words``."""
        ratios = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
        return cls(((1.0, 0.0), (0.0, 1.0), *((1.0, scale * r) for r in ratios)), words)
