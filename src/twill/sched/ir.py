"""Dependence-graph IR of a loop body (Twill paper §3.1).

Plain frozen data, no algorithms (those live in :mod:`twill.sched.bounds`,
:mod:`twill.sched.validate`, the solvers and :mod:`twill.verify`).

* :class:`Instruction`: one tile-level operation with its resource reservation table (RRT),
  execution length ``cycles``, registers, per-memory footprint and warp annotations.
* :class:`Edge`: ``(src, dst, delay, distance)``: the instance of ``dst`` from iteration ``i``
  issues at least ``delay`` cycles after the instance of ``src`` from iteration ``i - distance``.
* :class:`MachineDescription`: functional-unit capacities, register limit, memories, warps.
* :class:`DependenceGraph`: instructions + edges + machine.

Preconditions: none are checked on construction; call
:func:`twill.sched.validate.check_graph` (every reader does) to get every defect at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

__all__ = ["Instruction", "Edge", "MachineDescription", "DependenceGraph"]


@dataclass(frozen=True)
class Instruction:
    """One operation of the loop body.

    Parameters
    ----------
    name
        Unique name within the graph.
    cycles
        Execution length: the number of rows of the RRT. May be 0 (the op reserves nothing).
    reservation
        RRT by functional unit: ``reservation[fu][c]`` is the number of units of ``fu`` the op
        occupies in its ``c``-th cycle; each list has length ``cycles``. A fully pipelined op on
        one unit is ``{"TC": [1]}``.
    regs
        Registers needed to hold the result, in 32-bit registers per thread of the owning warp
        (Phase 2 register limit).
    footprint
        Bytes of the result held in each memory (e.g. ``{"smem": 32768}``).
    variable_latency
        True for ops such as TMA transfers: they run on the reserved variable-latency warp.
    streaming
        A variable-latency op with no incoming data dependence (e.g. a TMA load of an input tile).
    spill_cost
        Extra delay when the result is consumed on a different warp (paper Fig. 6).
    warps
        Number of warps the op spans (a 4-warp warp-group op has ``warps=4``; paper Fig. 6).
    unit
        Optional display name of the op's main functional unit, for pictures and codegen.
    note
        Free text (where the cycle count comes from).
    """

    name: str
    cycles: int
    reservation: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    regs: int = 0
    footprint: Mapping[str, int] = field(default_factory=dict)
    variable_latency: bool = False
    streaming: bool = False
    spill_cost: int = 0
    warps: int = 1
    unit: str | None = None
    note: str = ""

    def usage(self, fu: str, cycle: int) -> int:
        """Units of ``fu`` occupied in the op's ``cycle``-th cycle (0 outside the table)."""
        row = self.reservation.get(fu, ())
        return row[cycle] if 0 <= cycle < len(row) else 0

    @property
    def main_unit(self) -> str | None:
        """The display unit, or the first unit of the RRT with a non-zero entry."""
        if self.unit is not None:
            return self.unit
        for fu, row in self.reservation.items():
            if any(row):
                return fu
        return None


@dataclass(frozen=True)
class Edge:
    """A dependence ``src -> dst`` with ``delay`` d >= 0 and iteration ``distance`` delta >= 0.

    ``blocking`` marks that ``dst`` needs a blocking wait on ``src`` (e.g. reading tensor-core
    accumulators from TMEM on Blackwell; paper Fig. 6). ``comm`` is the edge's communication
    weight in GauS formulation A (GS-Schedule GML binarises it to 0 or 1; 1 elsewhere).
    """

    src: str
    dst: str
    delay: int
    distance: int = 0
    blocking: bool = False
    comm: float = 1.0


@dataclass(frozen=True)
class MachineDescription:
    """The target: functional units, register file, memories and warps.

    Parameters
    ----------
    functional_units
        Capacity of every functional-unit kind (units usable in the same cycle). Use
        :data:`UNLIMITED` (``-1``) for a unit without a limit (HatScheT ``limit = -1``).
    registers_per_warp
        Register limit per warp in the same unit as :attr:`Instruction.regs` (``None``: no limit).
    memories
        Capacity in bytes of each memory named in footprints (``smem``, ``tmem``, ...).
    warps
        Number of warps (or warp groups) available to Phase 2, the variable-latency warp included.
    registers_per_sm
        The register file one CTA may use, in 32-bit registers (``None``: no limit): every warp
        slot's peak, rounded up to ``setmaxnreg``'s granule of 8, times its threads, summed.
    """

    name: str = "machine"
    functional_units: Mapping[str, int] = field(default_factory=dict)
    registers_per_warp: int | None = None
    memories: Mapping[str, int] = field(default_factory=dict)
    warps: int = 1
    note: str = ""
    registers_per_sm: int | None = None

    UNLIMITED = -1

    def capacity(self, fu: str) -> int | None:
        """Capacity of ``fu``, or ``None`` when it is unlimited."""
        cap = self.functional_units[fu]
        return None if cap < 0 else cap


@dataclass(frozen=True)
class DependenceGraph:
    """A loop body: instructions, dependences and the machine they run on.

    Examples
    --------
    >>> m = MachineDescription("toy", {"TC": 1, "EXP": 1})
    >>> g = DependenceGraph(
    ...     "fig1",
    ...     (Instruction("S", 1, {"TC": (1,)}), Instruction("P", 1, {"EXP": (1,)})),
    ...     (Edge("S", "P", 1),),
    ...     m,
    ... )
    >>> g.instruction("P").reservation["EXP"]
    (1,)

    ``memory_weight`` says which field GauS takes as an op's memory weight ``b_i``
    (``"footprint"``, ``"regs"``, ``"unit"`` or ``"auto"``: footprint when any op has one, else
    regs when any op has some, else 1); ``weight_note`` records how a reader chose the weights
    (empty: GauS describes the defaults). GauS works on the array view
    :func:`twill.sched.gaus.graph.gaus_view` of this graph, computed once per graph.
    """

    name: str
    instructions: tuple[Instruction, ...]
    edges: tuple[Edge, ...]
    machine: MachineDescription
    memory_weight: str = "auto"
    weight_note: str = ""

    @property
    def names(self) -> list[str]:
        """Instruction names in graph order."""
        return [ins.name for ins in self.instructions]

    def instruction(self, name: str) -> Instruction:
        """The instruction called ``name`` (``KeyError`` if absent)."""
        return self._lookup[0][name]

    def index(self) -> dict[str, int]:
        """Map from instruction name to its position."""
        return {ins.name: i for i, ins in enumerate(self.instructions)}

    def out_edges(self, name: str) -> list[Edge]:
        return list(self._lookup[1].get(name, ()))

    def in_edges(self, name: str) -> list[Edge]:
        return list(self._lookup[2].get(name, ()))

    @cached_property
    def _lookup(
        self,
    ) -> tuple[dict[str, Instruction], dict[str, list[Edge]], dict[str, list[Edge]]]:
        """Instructions by name and edges by source and by destination, built once per graph
        (the graph is frozen): the lookups were linear scans, and a 3,000-op graph spent
        84 s of a 2 s time limit in them (issue 49)."""
        by_name: dict[str, Instruction] = {}
        for ins in self.instructions:
            by_name.setdefault(ins.name, ins)  # the first of a duplicated name, as before
        out: dict[str, list[Edge]] = {}
        into: dict[str, list[Edge]] = {}
        for e in self.edges:
            out.setdefault(e.src, []).append(e)
            into.setdefault(e.dst, []).append(e)
        return by_name, out, into

    def replace(self, **changes: object) -> DependenceGraph:
        """A copy with some fields changed (``dataclasses.replace``)."""
        from dataclasses import replace

        return replace(self, **changes)  # type: ignore[arg-type]
