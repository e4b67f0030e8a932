"""Mapping problems as types: ``check()`` before solving, ``verify()`` after (issue 40, point 1).

* :class:`LayerMappingProblem`: map one layer (:class:`~twill.mapping.workload.Layer`) onto
  an accelerator (:class:`~twill.mapping.arch.Arch`): what CoSA and the search mappers solve
  (``docs/mapping.md``).
* :class:`NetworkMappingProblem`: map every layer of a network
  (:class:`~twill.mapping.network.Network`) onto an accelerator, with layer fusion on
  or off: what FADiff solves (``docs/fadiff.md``).

``check()`` raises :class:`~twill.errors.InvalidProblemError` listing every defect of the
layer (or network) and the architecture; ``verify()`` returns a
:class:`~twill.results.Verdict` from the independent verifiers
:func:`~twill.mapping.mapping.verify_mapping` and
:func:`~twill.mapping.fadiff.fusion.verify_plan`, which import no solver.

Examples
--------
>>> from twill.mapping.arch import gemmini_arch
>>> from twill.mapping.mapping import parse_dosa_mapping
>>> p = LayerMappingProblem(Layer.gemm(128, 64, 128), gemmini_arch())
>>> p.check()
>>> m = parse_dosa_mapping("L3[WIO] K2 - L2[WI] N1 K16X - L1[O] K2 C8 P16 C16X - L0[W] P8")
>>> p.verify(m).ok
True
>>> LayerMappingProblem(Layer("bad", {"P": 0}), gemmini_arch()).check()
Traceback (most recent call last):
...
twill.errors.InvalidProblemError: bad: P: must be an integer from 1 to at most 16,777,216, got 0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twill.errors import InvalidProblemError
from twill.mapping.arch import Arch
from twill.mapping.fadiff.plan import FusionPlan
from twill.mapping.mapping import Mapping, verify_mapping
from twill.mapping.network import Network
from twill.mapping.workload import Layer
from twill.results import Verdict, Violation

__all__ = ["LayerMappingProblem", "NetworkMappingProblem"]


def _verdict(found: list[Any]) -> Verdict:
    """The mapping verifiers' violations as the shared :class:`Verdict`."""
    return Verdict(tuple(Violation(v.rule, dict(v.at), v.value, v.limit, v.message)
                         for v in found))  # fmt: skip


def _type_defect(name: str, value: object, kind: type) -> list[str]:
    if isinstance(value, kind):
        return []
    return [f"{name} must be a {kind.__name__}, found {type(value).__name__}"]


@dataclass(frozen=True)
class LayerMappingProblem:
    """Map ``layer`` onto ``arch``: a tiling, spatial unrolling and loop order per level.

    Parameters
    ----------
    layer
        The layer (its seven loop bounds, strides, dilations and groups).
    arch
        The accelerator: storage levels, fan-outs, capacities and energies.
    """

    layer: Layer
    arch: Arch

    @property
    def name(self) -> str:
        """The layer's name."""
        return getattr(self.layer, "name", "layer")

    def defects(self) -> list[str]:
        """Every defect of the layer and the architecture, one line each (empty when valid)."""
        bad = _type_defect("layer", self.layer, Layer) + _type_defect("arch", self.arch, Arch)
        if bad:
            return bad
        return self.layer.check() + [f"arch {self.arch.name}: {d}" for d in self.arch.check()]

    def check(self) -> None:
        """Raise :class:`~twill.errors.InvalidProblemError` listing every defect."""
        found = self.defects()
        if found:
            raise InvalidProblemError(found, source=self.name)

    def verify(self, solution: Any) -> Verdict:
        """Every violated rule of a mapping (a :class:`~twill.mapping.mapping.Mapping`, or a
        solution payload holding one as ``.mapping``): factor products, capacities, fan-outs,
        spatial dimensions, keeps (:func:`~twill.mapping.mapping.verify_mapping`)."""
        mapping = solution if isinstance(solution, Mapping) else solution.mapping
        return _verdict(verify_mapping(self.layer, self.arch, mapping))


@dataclass(frozen=True)
class NetworkMappingProblem:
    """Map every layer of ``network`` onto ``arch``; with ``fusion``, also choose which
    producer-consumer boundaries to fuse (intermediates kept on chip).

    Parameters
    ----------
    network
        Layers in execution order and their edges (the fusion candidates among them).
    arch
        The accelerator.
    fusion
        Whether fused boundaries are allowed (``False``: every layer round-trips DRAM, the
        layer-wise problem).
    init
        A verified plan to start from (FADiff sets its log-factors to this plan's factors).
    candidates
        Verified plans the answer is compared with: the solver returns a plan no worse than
        each (e.g. the best layer-wise plan).
    """

    network: Network
    arch: Arch
    fusion: bool = True
    init: FusionPlan | None = None
    candidates: tuple[FusionPlan, ...] = ()

    @property
    def name(self) -> str:
        """The network's name."""
        return getattr(self.network, "name", "network")

    def defects(self) -> list[str]:
        """Every defect of the network, the architecture and the flag (empty when valid)."""
        bad = _type_defect("network", self.network, Network)
        bad += _type_defect("arch", self.arch, Arch) + _type_defect("fusion", self.fusion, bool)
        if bad:
            return bad
        bad = self.network.check() + [f"arch {self.arch.name}: {d}" for d in self.arch.check()]
        if bad:
            return bad
        given = ([("init", self.init)] if self.init is not None else []) + [
            (f"candidates[{i}]", c) for i, c in enumerate(self.candidates)
        ]
        for where, plan in given:
            if not isinstance(plan, FusionPlan):
                bad.append(f"{where} must be a FusionPlan, found {type(plan).__name__}")
            else:
                bad += [f"{where}: {v}" for v in self.verify(plan).violations]
        return bad

    def check(self) -> None:
        """Raise :class:`~twill.errors.InvalidProblemError` listing every defect."""
        found = self.defects()
        if found:
            raise InvalidProblemError(found, source=self.name)

    def verify(self, solution: Any) -> Verdict:
        """Every violated rule of a plan (a :class:`~twill.mapping.fadiff.plan.FusionPlan`, or
        a solution payload holding one as ``.plan``): each layer's mapping and the fusion rules
        (:func:`~twill.mapping.fadiff.fusion.verify_plan`); without ``fusion``, every fused
        boundary is a violation too."""
        from twill.mapping.fadiff.fusion import verify_plan

        plan = solution if isinstance(solution, FusionPlan) else solution.plan
        found = _verdict(verify_plan(self.network, self.arch, plan)).violations
        if not self.fusion and plan.fused:
            why = "the problem has fusion off, the plan fuses boundaries"
            found += (Violation("fusion.off", {"network": self.name}, len(plan.fused), 0, why),)
        return Verdict(found)
