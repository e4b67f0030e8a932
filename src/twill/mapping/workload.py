"""Workload spec: one DNN layer as a 7-D convolution loop nest (CoSA and DOSA).

A layer is the nest ``for n, k, c, q, p, s, r: O[n][k][q][p] += W[k][c][s][r] *
I[n][c][q*Hs + s*Hd][p*Ws + r*Wd]`` with the dimension order fixed as R, S, P, Q, C, K, N.
R and P go with the width stride/dilation, S and Q with the height ones. A GEMM
``(M x K) . (K x N)`` is the special case P = M, C = K, K = N, every other dimension 1.

Grouped and depthwise convolutions carry a group count G (:attr:`Layer.groups`); C and K
are then per group. G is an eighth loop, :attr:`Dim.G`, relevant to weights, inputs and
outputs alike (the groups share nothing, so a G loop gives no reuse to any tensor). Its prime
factors can be placed like any other dimension's: temporally at any level, spatially where a
level allows G (:class:`~twill.mapping.mapping.Mapping` keeps them apart from the seven
others; a mapping that places none runs the groups one after another at the outermost
level). :data:`DIMS` stays the seven dimensions of one group's nest; :data:`ALL_DIMS` adds G.
A depthwise convolution is C = K = 1 with G channels.

Preconditions: dimensions are positive integers (checked by :meth:`Layer.check`). Readers for
Timeloop-style problem YAML live in :mod:`twill.io.timeloop`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from enum import Enum
from types import MappingProxyType
from typing import Any

__all__ = [
    "Dim",
    "Operand",
    "DIMS",
    "ALL_DIMS",
    "OPERANDS",
    "RELEVANT",
    "Layer",
    "prime_factors",
    "divisors",
    "MAX_DIM",
    "MAX_STRIDE",
    "unique_layers",
]

MAX_DIM = 2**24
"""Largest loop bound accepted for a layer dimension (16,777,216); factorising stays cheap."""

MAX_STRIDE = 1024
"""Largest stride or dilation accepted."""


class Dim(str, Enum):
    """Loop dimension of the 7-D convolution nest (index order R, S, P, Q, C, K, N)."""

    R = "R"
    S = "S"
    P = "P"
    Q = "Q"
    C = "C"
    K = "K"
    N = "N"
    G = "G"  # convolution groups (not in DIMS: see ALL_DIMS)

    @property
    def index(self) -> int:
        return _DIM_INDEX[self]


class Operand(str, Enum):
    """Tensor of the layer: weights, inputs, outputs."""

    W = "W"
    I = "I"  # noqa: E741 - the paper's name
    O = "O"  # noqa: E741

    @property
    def timeloop_name(self) -> str:
        return {"W": "Weights", "I": "Inputs", "O": "Outputs"}[self.value]


DIMS: tuple[Dim, ...] = (Dim.R, Dim.S, Dim.P, Dim.Q, Dim.C, Dim.K, Dim.N)
"""The seven dimensions of one group's nest, in index order."""
ALL_DIMS: tuple[Dim, ...] = (*DIMS, Dim.G)
"""The seven dimensions and the group dimension G (index 7)."""
OPERANDS: tuple[Operand, ...] = tuple(Operand)
_DIM_INDEX = {d: i for i, d in enumerate(ALL_DIMS)}

#: Dimensions relevant to each tensor (R and S count for inputs through the halo; G counts for
#: all three).
RELEVANT: dict[Operand, frozenset[Dim]] = {
    Operand.W: frozenset({Dim.R, Dim.S, Dim.C, Dim.K, Dim.G}),
    Operand.I: frozenset({Dim.R, Dim.S, Dim.P, Dim.Q, Dim.C, Dim.N, Dim.G}),
    Operand.O: frozenset({Dim.P, Dim.Q, Dim.K, Dim.N, Dim.G}),
}


def prime_factors(n: int) -> list[int]:
    """Ascending prime factorisation of ``n`` (``[1]`` for 1), as CoSA indexes factors.

    Examples
    --------
    >>> prime_factors(56)
    [2, 2, 2, 7]
    >>> prime_factors(1)
    [1]
    """
    if n < 1:
        raise ValueError(f"prime_factors needs a positive integer, got {n}")
    if n == 1:
        return [1]
    out: list[int] = []
    p = 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def divisors(n: int) -> list[int]:
    """All divisors of ``n`` in ascending order.

    Examples
    --------
    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


@dataclass(frozen=True)
class Layer:
    """One DNN layer as a 7-D convolution.

    Parameters
    ----------
    name
        Layer name (file stem for layers read from disk).
    dims
        Loop bound of every dimension; missing dimensions default to 1.
    w_stride, h_stride
        Strides along the width (P, R) and the height (Q, S).
    w_dilation, h_dilation
        Dilations; a dilation of 0 in a file is read as 1.
    count
        How many times this layer occurs in its network (weights network totals).
    groups
        Convolution groups G (1 for a plain layer); ``dims`` C and K are per group.

    Examples
    --------
    >>> layer = Layer.gemm(128, 768, 768)
    >>> layer.macs
    75497472
    >>> layer.dim(Dim.P), layer.dim(Dim.C), layer.dim(Dim.K)
    (128, 768, 768)
    """

    name: str
    dims: Any = field(default_factory=dict)
    w_stride: int = 1
    h_stride: int = 1
    w_dilation: int = 1
    h_dilation: int = 1
    count: int = 1
    groups: int = 1

    def __post_init__(self) -> None:
        full = {d: int(self.dims.get(d, self.dims.get(d.value, 1))) for d in DIMS}
        object.__setattr__(self, "dims", MappingProxyType(full))

    def __reduce__(
        self,
    ) -> tuple[type[Layer], tuple[str, dict[Dim, int], int, int, int, int, int, int]]:
        # MappingProxyType does not pickle; rebuild from a plain dict
        return (
            Layer,
            (
                self.name,
                dict(self.dims),
                self.w_stride,
                self.h_stride,
                self.w_dilation,
                self.h_dilation,
                self.count,
                self.groups,
            ),
        )

    # ----------------------------------------------------------------- constructors
    @classmethod
    def gemm(cls, m: int, n: int, k: int, *, name: str | None = None) -> Layer:
        """Matrix product ``(m x k) . (k x n)``: P = m, C = k, K = n."""
        return cls(name or f"gemm_{m}x{n}x{k}", {Dim.P: m, Dim.C: k, Dim.K: n})

    @classmethod
    def from_key(cls, key: str, *, name: str | None = None, count: int = 1) -> Layer:
        """Build from DOSA's key ``R_S_P_Q_C_K_N[_Ws_Hs[_Wd_Hd]]`` (``_gG`` for G groups)."""
        body, _, grp = key.strip("'\"").partition("_g")
        parts = [int(x) for x in body.split("_")]
        dims = dict(zip(DIMS, parts[:7], strict=False))
        ws, hs, wd, hd = (parts[7:11] + [1, 1, 1, 1])[:4]
        return cls(name or key, dims, ws, hs, wd or 1, hd or 1, count, int(grp or 1))

    # ------------------------------------------------------------------ properties
    def dim(self, d: Dim) -> int:
        """Loop bound of ``d``; :attr:`Dim.G` gives :attr:`groups`."""
        return self.groups if d is Dim.G else self.dims[d]

    @property
    def bounds(self) -> tuple[int, ...]:
        """Loop bounds in R, S, P, Q, C, K, N order."""
        return tuple(self.dims[d] for d in DIMS)

    @property
    def strides(self) -> tuple[int, int]:
        return (self.w_stride, self.h_stride)

    @property
    def dilations(self) -> tuple[int, int]:
        return (self.w_dilation, self.h_dilation)

    @functools.cached_property
    def key(self) -> str:
        """DOSA's layer key ``R_S_P_Q_C_K_N_Ws_Hs_Wd_Hd``, plus ``_gG`` when G > 1 (computed
        once: the fusion search and the cost caches key on it hundreds of thousands of times)."""
        vals = [*self.bounds, self.w_stride, self.h_stride, self.w_dilation, self.h_dilation]
        key = "_".join(str(v) for v in vals)
        return key if self.groups == 1 else f"{key}_g{self.groups}"

    @property
    def macs(self) -> int:
        """MACs of one group (the nest the mappers see); :attr:`total_macs` for all groups."""
        out = 1
        for v in self.bounds:
            out *= v
        return out

    @property
    def total_macs(self) -> int:
        """MACs of the whole layer, all groups, one occurrence."""
        return self.macs * self.groups

    def footprint(self, operand: Operand, extents: dict[Dim, int] | None = None) -> int:
        """Words of ``operand`` touched by a tile with the given extents (whole layer, all
        groups, if None).

        Inputs use the halo ``(P-1)*Ws + (R-1)*Wd + 1`` by ``(Q-1)*Hs + (S-1)*Hd + 1``; a
        G extent (absent: 1) multiplies every tensor.
        """
        if extents is None:
            extents = {**self.dims, Dim.G: self.groups}
        e = {d: extents.get(d, 1) for d in ALL_DIMS}
        g = e.get(Dim.G, 1)
        if operand is Operand.W:
            return g * e[Dim.R] * e[Dim.S] * e[Dim.C] * e[Dim.K]
        if operand is Operand.O:
            return g * e[Dim.P] * e[Dim.Q] * e[Dim.K] * e[Dim.N]
        width = (e[Dim.P] - 1) * self.w_stride + (e[Dim.R] - 1) * self.w_dilation + 1
        height = (e[Dim.Q] - 1) * self.h_stride + (e[Dim.S] - 1) * self.h_dilation + 1
        return g * e[Dim.N] * e[Dim.C] * width * height

    def check(self) -> list[str]:
        """Every defect of the layer, one line each (empty when valid)."""
        bad = [
            f"{d.value}: must be an integer from 1 to at most {MAX_DIM:,}, got {v}"
            for d, v in self.dims.items()
            if not 1 <= v <= MAX_DIM
        ]
        for key in ("w_stride", "h_stride", "w_dilation", "h_dilation"):
            if not 1 <= getattr(self, key) <= MAX_STRIDE:
                bad.append(
                    f"{key}: must be an integer from 1 to at most {MAX_STRIDE}, "
                    f"got {getattr(self, key)}"
                )
        for key in ("count", "groups"):
            if getattr(self, key) < 1:
                bad.append(f"{key}: must be a positive integer, got {getattr(self, key)}")
        return bad

    def describe(self) -> str:
        s = " ".join(f"{d.value}{v}" for d, v in self.dims.items())
        g = f", {self.groups} groups" if self.groups > 1 else ""
        return f"{self.name} ({s}, stride {self.w_stride}x{self.h_stride}{g})"


def unique_layers(layers: tuple[Layer, ...] | list[Layer]) -> list[Layer]:
    """Distinct shapes in first-seen order, each with ``count`` = how often it occurs."""
    first: dict[str, Layer] = {}
    counts: dict[str, int] = {}
    for ly in layers:
        first.setdefault(ly.key, ly)
        counts[ly.key] = counts.get(ly.key, 0) + ly.count
    return [replace(first[k], count=counts[k]) for k in first]
