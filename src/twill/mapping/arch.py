"""Architecture spec: a spatial accelerator as a chain of memory levels (CoSA's Simba and DOSA's
Gemmini; ``docs/mapping.md``).

Levels are listed innermost (registers) to outermost (DRAM). Level ``m`` has ``instances[m]``
copies; the spatial fan-out *below* level ``m`` is ``instances[m-1] / instances[m]`` (for the
innermost level: ``macs / instances[0]``). A spatial factor "at level m" is split across those
children, as in Timeloop and CoSA.

Energies are per word access in pJ. Bandwidths are words per cycle per instance unless
``bandwidth_shared`` (then for all instances of the level together, as DOSA's register term).

Two built-in accelerators: :func:`simba_arch` (CoSA's Simba-like target, golden-run energies)
and :func:`gemmini_arch` (DOSA's "Gemmini-TL" with its fitted 40 nm energies, ``ucb-bar/dosa``).
Readers for Timeloop YAML live in :mod:`twill.io.timeloop`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from twill.mapping.workload import Dim, Operand

__all__ = [
    "ARCH_LIMITS",
    "arch_value_defects",
    "MemoryLevel",
    "Arch",
    "simba_arch",
    "gemmini_arch",
    "BUILTIN_ARCHS",
    "ARCH_ALIASES",
    "builtin_arch",
    "SIMBA_ENERGY_PJ",
    "gemmini_energies",
]


@dataclass(frozen=True)
class MemoryLevel:
    """One storage level of the hierarchy.

    Parameters
    ----------
    name
        Level name (``Registers``, ``GlobalBuffer``, ``DRAM``, ...).
    entries
        Capacity in words of ``word_bits`` per instance; ``None`` is unbounded (DRAM).
    instances
        Number of physical copies.
    word_bits
        Word width.
    keeps
        Tensors this level stores (the others bypass it).
    energy_pj
        Energy of one word access (read, fill or update).
    bandwidth
        Words per cycle, per instance (``None``: unlimited).
    bandwidth_shared
        When true, ``bandwidth`` is for all instances of the level together.
    spatial_dims
        Dimensions that may be unrolled over the fan-out below this level (``None``: any).
    partition
        CoSA's per-tensor share of ``entries`` (``M[m][v] = entries * share``); ``None`` gives
        the whole level to each kept tensor. Only the CoSA MIP reads it; the verifier uses
        Timeloop's rule (the kept tiles together fit ``entries``).
    block_size
        Words per physical access (informational; energies are already per word).
    """

    name: str
    entries: int | None
    instances: int = 1
    word_bits: int = 8
    keeps: frozenset[Operand] = field(default_factory=frozenset)
    energy_pj: float = 0.0
    bandwidth: float | None = None
    bandwidth_shared: bool = False
    spatial_dims: frozenset[Dim] | None = None
    partition: tuple[tuple[Operand, float], ...] | None = None
    block_size: int = 1

    def share(self, operand: Operand) -> float:
        """CoSA's capacity share of ``operand`` at this level (0 when not kept)."""
        if operand not in self.keeps:
            return 0.0
        if self.partition is None:
            return 1.0
        return dict(self.partition).get(operand, 0.0)

    def keeps_str(self) -> str:
        return "".join(v.value for v in (Operand.W, Operand.I, Operand.O) if v in self.keeps)


ARCH_LIMITS: dict[str, tuple[float, float]] = {
    "instances": (1, 2**24),  # mesh size, MAC count, instances of a level
    "entries": (1, 2**40),  # words
    "word_bits": (1, 1024),
    "block_size": (1, 2**16),  # words per access
    "energy_pj": (0.0, 1e9),  # pJ per access, finite
    "bandwidth": (1e-9, 1e12),  # words per cycle, finite and > 0
}
"""Accepted ``(smallest, largest)`` value of each numeric architecture field."""


def arch_value_defects(where: str, value: object, kind: str, lo: float | None = None) -> list[str]:
    """``[]`` when ``value`` is a finite number inside ``ARCH_LIMITS[kind]`` (an integer for
    integer kinds), else one message naming ``where``, the range and the value."""
    low, high = ARCH_LIMITS[kind]
    low = low if lo is None else lo
    integer = isinstance(low, int)
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and (not integer or float(value).is_integer())  # type: ignore[arg-type]
    ok = ok and math.isfinite(value) and low <= value <= high  # type: ignore[arg-type]
    if ok:
        return []
    what = "an integer" if integer else "a finite number"
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:36] + "..."
    return [f"{where}: must be {what} from {low:g} to at most {high:g}, got {shown}"]


def _level_defects(where: str, lv: MemoryLevel) -> list[str]:
    bad = arch_value_defects(f"{where}.instances", lv.instances, "instances")
    if lv.entries is not None:
        bad += arch_value_defects(f"{where}.entries", lv.entries, "entries")
    bad += arch_value_defects(f"{where}.word_bits", lv.word_bits, "word_bits")
    bad += arch_value_defects(f"{where}.block_size", lv.block_size, "block_size")
    bad += arch_value_defects(f"{where}.energy_pj", lv.energy_pj, "energy_pj")
    if lv.bandwidth is not None:
        bad += arch_value_defects(f"{where}.bandwidth", lv.bandwidth, "bandwidth")
    return bad


def _order_defects(levels: tuple[MemoryLevel, ...]) -> list[str]:
    """Level names are unique and levels run innermost (next to the PEs) first, the backing
    store last: only the outermost level may be unbounded, and no level holds fewer entries
    per instance than the innermost or more than the outermost bounded one. (A reversed
    hierarchy or a repeated name was accepted and mapped, issue 49.)"""
    bad: list[str] = []
    seen: dict[str, int] = {}
    for i, lv in enumerate(levels):
        if lv.name in seen:
            bad.append(
                f"levels[{i}] ({lv.name}): duplicate level name (also levels[{seen[lv.name]}])"
            )
        seen.setdefault(lv.name, i)
    for i, lv in enumerate(levels[:-1]):
        if lv.entries is None:
            bad.append(f"levels[{i}] ({lv.name}): unbounded (no entries) but not the outermost "
                       "level; levels run innermost first, DRAM last")  # fmt: skip
    sized = [(i, lv) for i, lv in enumerate(levels) if isinstance(lv.entries, int)]
    if bad or len(sized) < 2:
        return bad
    (i0, inner), (i1, outer) = sized[0], sized[-1]
    low, high = int(inner.entries or 0), int(outer.entries or 0)
    if low > high:
        return [f"levels[{i0}] ({inner.name}) holds {low} entries per instance, more than "
                f"the outermost bounded levels[{i1}] ({outer.name}) with {high}: levels run "
                "innermost (next to the PEs) first, DRAM last (reversed order?)"]  # fmt: skip
    for i, lv in sized[1:-1]:
        if not low <= int(lv.entries or 0) <= high:
            bad.append(
                f"levels[{i}] ({lv.name}): {lv.entries} entries per instance, outside "
                f"[{low}, {high}] of levels[{i0}] ({inner.name}) and levels[{i1}] "
                f"({outer.name}); levels run innermost (next to the PEs) first, DRAM last"
            )
    return bad


@dataclass(frozen=True)
class Arch:
    """A spatial accelerator: memory levels innermost → outermost plus a MAC array.

    Parameters
    ----------
    name
        Architecture name.
    levels
        Memory levels, innermost first; the last one is the backing store (DRAM).
    macs
        Number of MAC units.
    mac_energy_pj
        Energy of one MAC operation.

    Examples
    --------
    >>> arch = simba_arch()
    >>> [arch.fanout(m) for m in range(arch.n_levels)]
    [1, 8, 1, 8, 16, 1]
    >>> gemmini_arch().level("Scratchpad").entries
    131072
    """

    name: str
    levels: tuple[MemoryLevel, ...]
    macs: int
    mac_energy_pj: float = 0.0

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    @property
    def top(self) -> int:
        return len(self.levels) - 1

    def level(self, name: str) -> MemoryLevel:
        for lv in self.levels:
            if lv.name == name:
                return lv
        raise KeyError(name)

    def level_index(self, name: str) -> int:
        for i, lv in enumerate(self.levels):
            if lv.name == name:
                return i
        raise KeyError(name)

    def fanout(self, m: int) -> int:
        """Children of one level-``m`` instance: ``instances[m-1] / instances[m]``."""
        below = self.macs if m == 0 else self.levels[m - 1].instances
        return max(1, below // self.levels[m].instances)

    def capacity(self, m: int, operand: Operand) -> float:
        """CoSA's per-tensor capacity ``M[m][v]`` in words (``inf`` for unbounded levels)."""
        lv = self.levels[m]
        if lv.entries is None:
            return math.inf
        return lv.entries * lv.share(operand)

    def keeps_matrix(self) -> tuple[tuple[bool, bool, bool], ...]:
        """``B[m][v]`` as booleans, v in W, I, O order."""
        return tuple(
            tuple(v in lv.keeps for v in (Operand.W, Operand.I, Operand.O)) for lv in self.levels
        )

    def check(self) -> list[str]:
        """Every defect of the architecture (empty when valid); ranges in :data:`ARCH_LIMITS`."""
        bad: list[str] = []
        if len(self.levels) < 2:
            bad.append("levels: need at least two storage levels (on-chip and DRAM)")
        bad += arch_value_defects("macs", self.macs, "instances")
        bad += arch_value_defects("mac_energy_pj", self.mac_energy_pj, "energy_pj", lo=0.0)
        for i, lv in enumerate(self.levels):
            where = f"levels[{i}] ({lv.name})"
            bad += _level_defects(where, lv)
            if i > 0 and lv.instances > 0 and self.levels[i - 1].instances % max(lv.instances, 1):
                bad.append(
                    f"{where}.instances: {lv.instances} does not divide the level below "
                    f"({self.levels[i - 1].instances})"
                )
        bad += _order_defects(self.levels)
        if self.levels and set(self.levels[-1].keeps) != {Operand.W, Operand.I, Operand.O}:
            bad.append(
                f"levels[{len(self.levels) - 1}] ({self.levels[-1].name}): the outermost "
                "level must keep W, I and O"
            )
        if bad:
            return bad
        if self.levels and self.macs % self.levels[0].instances:
            bad.append(
                f"macs: {self.macs} is not a multiple of the innermost instances "
                f"({self.levels[0].instances})"
            )
        return bad

    def with_level(self, name: str, **changes: object) -> Arch:
        """Copy with one level's fields replaced."""
        levels = tuple(replace(lv, **changes) if lv.name == name else lv for lv in self.levels)
        return replace(self, levels=levels)


# --------------------------------------------------------------------------- Simba (CoSA)
#: Per-access energies of the golden Timeloop run shipped with ``ucb-bar/cosa``: pJ per *block*
#: access and the block size the energy was measured at. Per-word energy = block energy / block
#: size.
SIMBA_ENERGY_PJ: dict[str, tuple[float, int]] = {
    "MAC": (0.561, 1),
    "Registers": (516.10 / (1024 * 14336), 1),  # stats: 516.10 pJ over 14,336 accesses x 1024
    "AccumulationBuffer": (0.0814375, 1),
    "WeightBuffer": (5.212, 8),
    "InputBuffer": (5.212, 8),
    "GlobalBuffer": (5.212, 64),
    "DRAM": (512.0, 64),
}

_W, _I, _O = Operand.W, Operand.I, Operand.O


def simba_energy(level: str, block_size: int) -> float:
    """Per-word energy of a Simba level at ``block_size`` (the golden table scaled by
    block size; SRAMs are 5.212 pJ per block access, DRAM 512 pJ per 64 words)."""
    block_pj, _measured_block = SIMBA_ENERGY_PJ[level]
    if level in ("WeightBuffer", "InputBuffer", "GlobalBuffer", "DRAM"):
        return block_pj / max(block_size, 1)
    return block_pj


def simba_arch(
    *,
    gb_block_size: int = 64,
    gb_partition: tuple[float, float] = (0.25, 0.75),
    dram_bandwidth: float | None = None,
    pes: int = 16,
    name: str | None = None,
) -> Arch:
    """CoSA's Simba-like accelerator (``ucb-bar/cosa``), with the golden run's settings by default.

    The two variants one meets differ only in the GlobalBuffer block size, which sets its
    per-word energy: ``simba_golden`` (block 64, 0.081 pJ per word; the golden Timeloop run and
    CoSA's ``simba_golden.yaml``) and ``simba_cosa`` (block 8; CoSA's released ``simba.yaml``).

    Parameters
    ----------
    gb_block_size
        GlobalBuffer block size; 64 reproduces the golden run, 8 is ``simba.yaml``.
    gb_partition
        CoSA's (I, O) share of the GlobalBuffer (0.25/0.75 in CoSA v0.1.0).
    dram_bandwidth
        Words per cycle of DRAM; ``None`` (default) does not throttle (as in the golden run).
    pes
        Number of PEs (16; 64 gives ``simba_large``).
    name
        The name reports show; by default ``simba_golden`` (block 64), ``simba_cosa`` (block 8)
        or ``simba_gbN``, with ``_Npe`` appended when ``pes`` is not 16.

    Examples
    --------
    >>> simba_arch().name, simba_arch(gb_block_size=8).name, simba_arch(pes=64).name
    ('simba_golden', 'simba_cosa', 'simba_golden_64pe')
    """
    lanes, macs_per_lane = 8, 8
    macs = pes * lanes * macs_per_lane
    levels = (
        MemoryLevel("Registers", 1, macs, 8, frozenset({_W}), simba_energy("Registers", 1)),
        MemoryLevel(
            "AccumulationBuffer",
            64,
            pes * lanes,
            24,
            frozenset({_O}),
            simba_energy("AccumulationBuffer", 1),
        ),
        MemoryLevel(
            "WeightBuffer",
            16384,
            pes * lanes,
            8,
            frozenset({_W}),
            simba_energy("WeightBuffer", 8),
            block_size=8,
        ),
        MemoryLevel(
            "InputBuffer",
            4096,
            pes,
            8,
            frozenset({_I}),
            simba_energy("InputBuffer", 8),
            block_size=8,
        ),
        MemoryLevel(
            "GlobalBuffer",
            65536,
            1,
            8,
            frozenset({_I, _O}),
            simba_energy("GlobalBuffer", gb_block_size),
            partition=((_I, gb_partition[0]), (_O, gb_partition[1])),
            block_size=gb_block_size,
        ),
        MemoryLevel(
            "DRAM",
            None,
            1,
            8,
            frozenset({_W, _I, _O}),
            simba_energy("DRAM", 64),
            bandwidth=dram_bandwidth,
            block_size=64,
        ),
    )
    if name is None:
        variant = {64: "golden", 8: "cosa"}.get(gb_block_size, f"gb{gb_block_size}")
        name = f"simba_{variant}" + ("" if pes == 16 else f"_{pes}pe")
    return Arch(name, levels, macs, SIMBA_ENERGY_PJ["MAC"][0])


#: The architectures the CLI's ``--arch`` knows by name (no file is read), and old spellings.
BUILTIN_ARCHS = ("simba_golden", "simba_cosa", "gemmini")
ARCH_ALIASES = {"simba": "simba_golden"}


def builtin_arch(name: str) -> Arch | None:
    """The built-in architecture called ``name`` (an alias is accepted), or ``None``.

    ``simba_golden``: :func:`simba_arch` with the golden run's settings (the ``simba`` of
    earlier releases); ``simba_cosa``: the same machine as CoSA's released ``simba.yaml``
    (GlobalBuffer block 8, dearer per word); ``gemmini``: :func:`gemmini_arch`.

    Examples
    --------
    >>> builtin_arch("simba").name, builtin_arch("simba_cosa").name, builtin_arch("x")
    ('simba_golden', 'simba_cosa', None)
    """
    name = ARCH_ALIASES.get(name, name)
    if name == "simba_golden":
        return simba_arch()
    if name == "simba_cosa":
        return simba_arch(gb_block_size=8)
    if name == "gemmini":
        return gemmini_arch()
    return None


# --------------------------------------------------------------------------- Gemmini (DOSA)
def gemmini_energies(pe_dim: int, scratchpad_kb: float, accumulator_kb: float) -> dict[str, float]:
    """DOSA's fitted 40 nm per-access energies (``ucb-bar/dosa``), pJ."""
    return {
        "MAC": 0.5608,
        "Registers": 0.48746172,
        "Accumulator": 1.94 + 0.1005 * accumulator_kb / pe_dim,
        "Scratchpad": 0.49 + 0.02513 * scratchpad_kb,
        "DRAM": 100.0,
    }


def gemmini_arch(
    pe_dim: int = 16,
    scratchpad_kb: float = 128,
    accumulator_kb: float = 32,
    *,
    dram_bandwidth: float = 8.0,
    name: str | None = None,
    pe_cols: int | None = None,
) -> Arch:
    """DOSA's "Gemmini-TL" (Hong et al., MICRO 2023): registers, accumulator, scratchpad, DRAM.

    C is unrolled at the accumulator → register boundary and K at the scratchpad → accumulator
    boundary (weight-stationary array, ``pe_dim x pe_dim`` MACs). ``pe_cols`` makes the array
    ``pe_dim`` rows (C) by ``pe_cols`` columns (K, one accumulator slice each); the scratchpad
    then feeds ``pe_dim + pe_cols`` words per cycle (DOSA's ``2 x pe_dim`` when square).

    Examples
    --------
    >>> a = gemmini_arch()
    >>> a.macs, a.level("Accumulator").entries, round(a.level("Scratchpad").energy_pj, 3)
    (256, 512, 3.707)
    """
    cols = pe_dim if pe_cols is None else pe_cols
    e = gemmini_energies(cols, scratchpad_kb, accumulator_kb)
    acc_words = int(round(accumulator_kb * 1024 / 4 / cols))
    sp_words = int(round(scratchpad_kb * 1024))
    levels = (
        MemoryLevel(
            "Registers",
            1,
            pe_dim * cols,
            8,
            frozenset({_W}),
            e["Registers"],
            bandwidth=10000.0,
            bandwidth_shared=True,
            spatial_dims=frozenset(),
        ),
        MemoryLevel(
            "Accumulator",
            max(acc_words, 1),
            cols,
            32,
            frozenset({_O}),
            e["Accumulator"],
            bandwidth=2.0,
            spatial_dims=frozenset({Dim.C}),
        ),
        MemoryLevel(
            "Scratchpad",
            max(sp_words, 1),
            1,
            8,
            frozenset({_W, _I}),
            e["Scratchpad"],
            bandwidth=float(pe_dim + cols),
            spatial_dims=frozenset({Dim.K}),
        ),
        MemoryLevel(
            "DRAM",
            None,
            1,
            8,
            frozenset({_W, _I, _O}),
            e["DRAM"],
            bandwidth=dram_bandwidth,
            spatial_dims=frozenset(),
        ),
    )
    label = name or f"gemmini_{pe_dim}x{cols}_sp{scratchpad_kb:g}k_acc{accumulator_kb:g}k"
    return Arch(label, levels, pe_dim * cols, e["MAC"])
