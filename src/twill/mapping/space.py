"""Accelerator design spaces: a template and the values of its parameters, as a grid of
architectures for ``twill sweep`` (``docs/mapping.md``, "Design-space sweeps").

Two templates, each a family of the built-in accelerators of :mod:`twill.mapping.arch`:

* ``gemmini``: DOSA's Gemmini-TL (:func:`~twill.mapping.arch.gemmini_arch`), a ``pe_rows x
  pe_cols`` weight-stationary array, its scratchpad and accumulator sizes and bandwidths and the
  DRAM bandwidth (DOSA's hardware search space, Hong et al., MICRO 2023, Sec. 5);
* ``simba``: CoSA's Simba (:func:`~twill.mapping.arch.simba_arch`), the PE count and the sizes of
  the global, input and weight buffers, and the DRAM bandwidth.

A parameter the space does not name keeps the template's default (:data:`TEMPLATES`). The points
are the Cartesian product of the values, in the order the parameters are given. Each point is
checked before any work: values inside their range, and every buffer able to hold the smallest
tile (one word of each tensor it keeps), without which no mapping of any layer exists.

Preconditions: none; :meth:`DesignSpace.check` lists every defect, :meth:`DesignSpace.points`
raises :class:`~twill.errors.InvalidProblemError` with them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from twill.errors import InvalidProblemError
from twill.mapping.arch import Arch, gemmini_arch, simba_arch
from twill.mapping.area import area_mm2

__all__ = [
    "MAX_POINTS",
    "Param",
    "TEMPLATES",
    "DesignPoint",
    "DesignSpace",
]

#: Most points one space may have (a sweep maps points x unique layers pairs).
MAX_POINTS = 100_000


@dataclass(frozen=True)
class Param:
    """One parameter of a template: its default, the range of its values (a ``low`` of 0 is
    excluded: sizes and bandwidths are positive) and its meaning."""

    name: str
    default: float | None
    low: float
    high: float
    integer: bool
    meaning: str


def _p(name: str, default: float | None, low: float, high: float, meaning: str) -> Param:
    return Param(name, default, low, high, isinstance(low, int), meaning)


#: The parameters of each template (``None``: the template's own rule, see ``meaning``).
TEMPLATES: dict[str, tuple[Param, ...]] = {
    "gemmini": (
        _p("pe_dim", None, 1, 4096, "a square array: pe_rows = pe_cols = pe_dim"),
        _p("pe_rows", 16, 1, 4096, "PE rows: C unrolled over them"),
        _p("pe_cols", 16, 1, 4096, "PE columns: K unrolled, one accumulator slice each"),
        _p("scratchpad_kB", 128, 0.0, 2.0**20, "scratchpad (weights, inputs), kB"),
        _p("accumulator_kB", 32, 0.0, 2.0**20, "accumulator (outputs, 32-bit), kB"),
        _p("scratchpad_bandwidth", None, 0.0, 1e6, "words/cycle (default pe_rows + pe_cols)"),
        _p("accumulator_bandwidth", 2.0, 0.0, 1e6, "words/cycle per column"),
        _p("dram_bandwidth", 8.0, 0.0, 1e6, "words (bytes)/cycle"),
    ),
    "simba": (
        _p("pes", 16, 1, 4096, "PEs, each 8 vector lanes of 8 MACs"),
        _p("global_buffer_kB", 64, 0.0, 2.0**20, "global buffer (inputs, outputs), kB"),
        _p("input_buffer_kB", 4, 0.0, 2.0**20, "input buffer per PE, kB"),
        _p("weight_buffer_kB", 16, 0.0, 2.0**20, "weight buffer per lane, kB"),
        _p("dram_bandwidth", None, 0.0, 1e6, "words/cycle (default: not throttled)"),
    ),
}


@dataclass(frozen=True)
class DesignPoint:
    """One architecture of a space: its parameter values, the accelerator, its area."""

    params: tuple[tuple[str, float], ...]
    arch: Arch
    area_mm2: float


@dataclass(frozen=True)
class DesignSpace:
    """A template and, per parameter it sweeps, the values to take (see the module docstring).

    Examples
    --------
    >>> s = DesignSpace("gemmini", (("pe_rows", (8, 16)), ("pe_cols", (8, 16))))
    >>> [p.arch.name for p in s.points()][:2]
    ['gemmini_8x8_sp128k_acc32k', 'gemmini_8x16_sp128k_acc32k']
    >>> DesignSpace("gemmini", (("scratchpad_kB", (-1,)),)).check()
    ['scratchpad_kB[0]: must be a number above 0 and at most 1.04858e+06, got -1']
    """

    template: str
    axes: tuple[tuple[str, tuple[float, ...]], ...]

    @property
    def size(self) -> int:
        return math.prod(len(v) for _, v in self.axes)

    def check(self) -> list[str]:
        """Every defect of the space, one line each, naming the parameter (empty when valid)."""
        if self.template not in TEMPLATES:
            return [f"template: unknown template {self.template!r} (choose from "
                    f"{', '.join(TEMPLATES)})"]  # fmt: skip
        bad = _axis_defects(self.template, self.axes)
        if bad:
            return bad
        if self.size > MAX_POINTS:
            return [f"the space has {self.size:,} points, more than {MAX_POINTS:,}"]
        seen: set[str] = set()
        for values in self._grid():
            bad += [d for d in _point_defects(self.template, values) if d not in seen]
            seen.update(bad)
            if len(bad) >= 5:  # enough to fix the file; a large space would list thousands
                break
        return bad

    def points(self) -> list[DesignPoint]:
        """The architectures of the space, in grid order.

        Raises
        ------
        InvalidProblemError
            With every defect of :meth:`check`.
        """
        bad = self.check()
        if bad:
            raise InvalidProblemError(bad)
        out = []
        for values in self._grid():
            arch = _build(self.template, values, given={n for n, _ in self.axes})
            out.append(DesignPoint(tuple(values.items()), arch, area_mm2(arch)))
        return out

    def _grid(self) -> list[dict[str, float]]:
        names = [n for n, _ in self.axes]
        defaults = {p.name: p.default for p in TEMPLATES[self.template]}
        combos = itertools.product(*(v for _, v in self.axes))
        grid = [{**defaults, **dict(zip(names, c, strict=True))} for c in combos]
        for v in grid:  # the template's rules for the parameters that depend on others
            if self.template == "gemmini" and v["pe_dim"] is not None:
                v["pe_rows"] = v["pe_cols"] = v["pe_dim"]
            if self.template == "gemmini" and v["scratchpad_bandwidth"] is None:
                v["scratchpad_bandwidth"] = v["pe_rows"] + v["pe_cols"]
        return grid


def _axis_defects(template: str, axes: tuple[tuple[str, tuple[float, ...]], ...]) -> list[str]:
    params = {p.name: p for p in TEMPLATES[template]}
    if not axes:
        return ["the space is empty: give at least one parameter of the template "
                f"({', '.join(params)})"]  # fmt: skip
    bad: list[str] = []
    for name, values in axes:
        if name not in params:
            bad.append(f"{name}: not a parameter of template {template!r} (choose from "
                       f"{', '.join(params)})")  # fmt: skip
            continue
        if not values:
            bad.append(f"{name}: empty list, no value to sweep")
        p = params[name]
        for i, v in enumerate(values):
            ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            ok = ok and (p.low <= v if p.low else v > 0) and v <= p.high
            if not ok or (p.integer and not float(v).is_integer()):
                what = "an integer" if p.integer else "a number"
                low = f"from {p.low:g} to" if p.low else "above 0 and"
                bad.append(f"{name}[{i}]: must be {what} {low} at most {p.high:g}, got {v!r}")
        if len(set(values)) < len(values):
            bad.append(f"{name}: a value is repeated (each point would be mapped twice)")
    both = [n for n, _ in axes if n in ("pe_rows", "pe_cols")]
    if template == "gemmini" and both and "pe_dim" in dict(axes):
        bad.append(f"pe_dim: sets pe_rows and pe_cols; give either pe_dim or {both[0]}")
    return bad


def _point_defects(template: str, v: dict[str, float]) -> list[str]:
    """Buffers that cannot hold the smallest tile (one word of each tensor kept) at ``v``."""
    if template == "gemmini":
        per_col = v["accumulator_kB"] * 1024 / 4 / v["pe_cols"]
        if per_col < 1:
            return [f"accumulator_kB: {v['accumulator_kB']:g} kB holds {per_col:.3g} 32-bit "
                    f"words per PE column with pe_cols {v['pe_cols']:g}: too small for any "
                    f"mapping (at least {v['pe_cols'] * 4 / 1024:g} kB)"]  # fmt: skip
        if v["scratchpad_kB"] * 1024 < 2:
            need = 2 / 1024
            return [
                f"scratchpad_kB: {v['scratchpad_kB']:g} kB holds less than one weight and "
                f"one input word: too small for any mapping (at least {need:g} kB)"
            ]
    arch = _build(template, v, given=set())
    where = {"GlobalBuffer": "global_buffer_kB", "InputBuffer": "input_buffer_kB",
             "WeightBuffer": "weight_buffer_kB"}  # fmt: skip
    small = [
        f"{where.get(lv.name, lv.name)}: {lv.entries} words per {lv.name} cannot hold one "
        f"word of each tensor it keeps ({lv.keeps_str()}): too small for any mapping"
        for lv in arch.levels
        if lv.entries is not None and lv.entries < len(lv.keeps)
    ]
    return small or arch.check()


_SHORT = {"scratchpad_bandwidth": "spbw", "accumulator_bandwidth": "accbw",
          "dram_bandwidth": "dram"}  # fmt: skip


def _build(template: str, v: dict[str, float], given: set[str]) -> Arch:
    """The architecture at ``v``; its name shows every parameter of the space."""
    extra = "".join(f"_{_SHORT[n]}{v[n]:g}" for n in _SHORT if n in given)
    if template == "gemmini":
        rows, cols = int(v["pe_rows"]), int(v["pe_cols"])
        arch = gemmini_arch(rows, v["scratchpad_kB"], v["accumulator_kB"], pe_cols=cols,
                            dram_bandwidth=v["dram_bandwidth"])  # fmt: skip
        if v["scratchpad_bandwidth"] is not None:
            arch = arch.with_level("Scratchpad", bandwidth=float(v["scratchpad_bandwidth"]))
        arch = arch.with_level("Accumulator", bandwidth=float(v["accumulator_bandwidth"]))
        return Arch(arch.name + extra, arch.levels, arch.macs, arch.mac_energy_pj)
    pes = int(v["pes"])
    arch = simba_arch(pes=pes, dram_bandwidth=v["dram_bandwidth"])
    sizes = {"GlobalBuffer": v["global_buffer_kB"], "InputBuffer": v["input_buffer_kB"],
             "WeightBuffer": v["weight_buffer_kB"]}  # fmt: skip
    for level, kb in sizes.items():
        arch = arch.with_level(level, entries=int(kb * 1024 * 8 // arch.level(level).word_bits))
    name = (f"simba_{pes}pe_gb{v['global_buffer_kB']:g}k_ib{v['input_buffer_kB']:g}k"
            f"_wb{v['weight_buffer_kB']:g}k{extra}")  # fmt: skip
    return Arch(name, arch.levels, arch.macs, arch.mac_energy_pj)
