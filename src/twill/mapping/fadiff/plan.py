"""The fusion plan (one mapping per layer plus the fused boundaries) and its exact report
(``docs/fadiff.md``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import EnergyDelay
from twill.mapping.mapping import Mapping, Violation
from twill.mapping.network import Network

_W, _I, _O = 0, 1, 2

__all__ = ["FusionPlan", "PlanReport", "NetworkPlan"]


# ------------------------------------------------------------------------------ the plan
@dataclass(frozen=True)
class FusionPlan:
    """Per-layer mappings of a network plus the set of fused boundaries.

    ``fused`` holds indices into ``Network.edges``. ``method`` names the algorithm that produced
    the plan; ``meta`` carries settings and statistics (seed, steps, timings).
    """

    network: str
    mappings: tuple[Mapping, ...]
    fused: tuple[int, ...] = ()
    method: str = ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def with_fused(self, fused: Iterable[int]) -> FusionPlan:
        return FusionPlan(
            self.network, self.mappings, tuple(sorted(set(fused))), self.method, self.meta
        )

    def to_dict(self, net: Network, arch: Arch) -> dict[str, Any]:
        """YAML/JSON-ready form: one DOSA mapping string per layer and the fused edges."""
        from twill.mapping.mapping import to_dosa_string

        return {
            "network": self.network,
            "arch": arch.name,
            "method": self.method,
            "layers": [
                {"name": ly.name, "mapping": to_dosa_string(m, arch)}
                for ly, m in zip(net.layers, self.mappings, strict=True)
            ],
            "fused": [
                {
                    "producer": net.layers[net.edges[i].src].name,
                    "consumer": net.layers[net.edges[i].dst].name,
                }
                for i in self.fused
            ],
        }


@dataclass(frozen=True)
class PlanReport(EnergyDelay):
    """Exact (NumPy) cost of a plan. Energies pJ, latencies cycles, traffic bytes.

    ``layer_*`` are per-layer arrays in network order; ``edp`` is µJ·cycles of the network
    (Σ latency × Σ energy, not a sum of per-layer EDPs).
    """

    energy_pj: float
    cycles: float
    dram_bytes: float
    layer_energy_pj: np.ndarray
    layer_cycles: np.ndarray
    layer_dram_bytes: np.ndarray
    layer_level_energy_pj: np.ndarray
    fused: tuple[int, ...]
    valid: bool
    violations: tuple[Violation, ...] = ()

    def summary(self) -> dict[str, float]:
        return {
            "edp": self.edp,
            "energy_uJ": self.energy_uj,
            "cycles": float(self.cycles),
            "dram_bytes": float(self.dram_bytes),
        }


def _finite(value: object) -> object:
    """``value`` with a non-finite float replaced by ``None`` (strict JSON has no NaN)."""
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


@dataclass(frozen=True)
class NetworkPlan:
    """A verified plan and its exact cost: the solution of a
    :class:`~twill.mapping.problems.NetworkMappingProblem`.

    ``source`` says which step of the solver produced the plan (``"gradient"``, a
    candidate's method, ``"group-search(...)"``, ...).
    """

    plan: FusionPlan
    report: PlanReport
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The plan (one DOSA mapping string per layer, fused edge indices) and its exact
        cost (strict JSON: a non-finite number is ``None``)."""
        from twill.mapping.mapping import to_dosa_string

        return {
            "network": self.plan.network,
            "method": self.plan.method,
            "mappings": [to_dosa_string(m) for m in self.plan.mappings],
            "fused": list(self.plan.fused),
            **{k: _finite(v) for k, v in self.report.summary().items()},
            "valid": bool(self.report.valid),
            "source": self.source,
        }
