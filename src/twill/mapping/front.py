"""What the command line takes from the mapping family, in one module.

Issue 51 (orchestration out of ``cli/``): ``twill map``, ``map-network``, ``map-eval``,
``fuse`` and ``sweep`` reach ``twill.mapping`` through this front only, so the CLI imports a
handful of core modules instead of every mapper's internals. Nothing here computes: each name
is the family's own object (:func:`map_layer`, :func:`map_network`, the FADiff pipeline's
:func:`fuse`, the sweep's :func:`sweep`, ...), re-exported.

A name's module is imported when the name is first read (PEP 562), so building the parser,
which reads ``MAPPERS`` and ``OBJECTIVES`` (:mod:`twill.mapping.methods`, from the registry),
imports no mapper, cost model or pipeline. The imports under ``TYPE_CHECKING`` are the same
table, for readers, type checkers and ``tests/test_layering.py``.

Examples
--------
>>> from twill.mapping.front import MAPPERS, builtin_arch
>>> "cosa-edp" in MAPPERS, builtin_arch("gemmini").name.startswith("gemmini")
(True, True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from twill._lazy import lazy_exports

if TYPE_CHECKING:
    from twill.mapping.arch import ARCH_ALIASES, BUILTIN_ARCHS, Arch, builtin_arch
    from twill.mapping.cosa.solve import CoSASettings
    from twill.mapping.cost import evaluate
    from twill.mapping.cost.dataset import evaluate_columns
    from twill.mapping.fadiff.pipeline import FuseSettings, check_arch, fuse, fuse_json
    from twill.mapping.mapping import parse_dosa_mapping, to_timeloop_yaml, verify_mapping
    from twill.mapping.methods import MAPPERS, OBJECTIVES
    from twill.mapping.network import NETWORKS, network_key, network_name
    from twill.mapping.pipeline import map_layer, map_network
    from twill.mapping.problems import LayerMappingProblem
    from twill.mapping.ray_cluster import connect, parse_ray_address
    from twill.mapping.result import layer_json, objective_meaning
    from twill.mapping.search.common import SearchSettings
    from twill.mapping.sweep import SweepSettings, sweep
    from twill.mapping.workload import OPERANDS, Dim

__all__ = [
    "ARCH_ALIASES",
    "Arch",
    "BUILTIN_ARCHS",
    "CoSASettings",
    "Dim",
    "FuseSettings",
    "LayerMappingProblem",
    "MAPPERS",
    "NETWORKS",
    "OBJECTIVES",
    "OPERANDS",
    "SearchSettings",
    "SweepSettings",
    "builtin_arch",
    "check_arch",
    "connect",
    "evaluate",
    "evaluate_columns",
    "fuse",
    "fuse_json",
    "layer_json",
    "map_layer",
    "map_network",
    "network_key",
    "network_name",
    "objective_meaning",
    "parse_dosa_mapping",
    "parse_ray_address",
    "sweep",
    "to_timeloop_yaml",
    "verify_mapping",
]

#: module (under ``twill.mapping``) -> the names this front takes from it
_FROM: dict[str, tuple[str, ...]] = {
    "arch": ("ARCH_ALIASES", "BUILTIN_ARCHS", "Arch", "builtin_arch"),
    "cosa.solve": ("CoSASettings",),
    "cost": ("evaluate",),
    "cost.dataset": ("evaluate_columns",),
    "fadiff.pipeline": ("FuseSettings", "check_arch", "fuse", "fuse_json"),
    "mapping": ("parse_dosa_mapping", "to_timeloop_yaml", "verify_mapping"),
    "network": ("NETWORKS", "network_key", "network_name"),
    "methods": ("MAPPERS", "OBJECTIVES"),
    "pipeline": ("map_layer", "map_network"),
    "problems": ("LayerMappingProblem",),
    "ray_cluster": ("connect", "parse_ray_address"),
    "result": ("layer_json", "objective_meaning"),
    "search.common": ("SearchSettings",),
    "sweep": ("SweepSettings", "sweep"),
    "workload": ("OPERANDS", "Dim"),
}
_MODULE_OF = {name: f"twill.mapping.{module}" for module, names in _FROM.items() for name in names}
__getattr__, __dir__ = lazy_exports(globals(), _MODULE_OF)
