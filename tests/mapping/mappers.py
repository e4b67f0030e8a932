"""One call for the tests of the layer mappers: ``mapped("cosa", layer, arch, time_limit=20)``
is :func:`twill.mapping.pipeline.map_layer` on a
:class:`~twill.mapping.problems.LayerMappingProblem` with the knobs sorted into the options
(``time_limit``, ``threads``, ``seed``, ``extra``), ``options.cosa`` (the
:class:`~twill.mapping.cosa.solve.CoSASettings` fields) and ``options.search`` (the
:class:`~twill.mapping.search.common.SearchSettings` fields)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from twill.mapping.cosa.solve import CoSASettings
from twill.mapping.pipeline import map_layer
from twill.mapping.problems import LayerMappingProblem
from twill.mapping.search.common import SearchSettings
from twill.options import SolverOptions
from twill.results import SolveResult

_SHARED = ("time_limit", "threads", "seed", "extra", "on_progress")


def mapped(method: str, layer: Any, arch: Any, settings: Any = None, **knobs: Any) -> SolveResult:
    """Map ``layer`` on ``arch`` with ``method``, ``knobs`` sorted into the options."""
    shared = {k: knobs.pop(k) for k in _SHARED if k in knobs}
    cosa = {k: knobs.pop(k) for k in [f.name for f in fields(CoSASettings)] if k in knobs}
    search = {k: knobs.pop(k) for k in [f.name for f in fields(SearchSettings)] if k in knobs}
    if knobs:
        raise TypeError(f"unknown knobs {sorted(knobs)}")
    options = SolverOptions(**shared)
    if method.startswith("cosa") or settings is not None or cosa:
        options = replace(options, cosa=replace(settings or CoSASettings(), **cosa))
    if search:
        options = replace(options, search=SearchSettings(**search))
    return map_layer(LayerMappingProblem(layer, arch), method, options)


def fused(
    net: Any, arch: Any, settings: Any = None, *, init: Any = None, candidates: Any = (),
    **knobs: Any,
) -> SolveResult:  # fmt: skip
    """FADiff (:func:`twill.mapping.fadiff.train.solve`) on ``net``: ``fusion`` (default the
    settings', on) goes to the problem with ``init`` and ``candidates``; ``seed``,
    ``threads``, ``time_limit`` and ``on_progress`` to the options (``seed`` default: the
    settings'); every other knob is a :class:`~twill.mapping.fadiff.train.FADiffSettings`
    field."""
    from twill.mapping.fadiff.train import FADiffSettings, solve
    from twill.mapping.problems import NetworkMappingProblem

    cfg = settings or FADiffSettings()
    shared = {k: knobs.pop(k) for k in _SHARED if k in knobs}
    shared.setdefault("seed", cfg.seed)
    fusion = knobs.pop("fusion", cfg.fusion)
    problem = NetworkMappingProblem(net, arch, fusion, init, tuple(candidates))
    return solve(problem, SolverOptions(fadiff=replace(cfg, **knobs), **shared))
