"""CoSA: one-shot mapping by a MIP over prime-factor placements (CoSA spec §4-§5).

:func:`cosa_map` builds the linearised model (:mod:`~twill.mapping.cosa.mip`), solves it with
CBC or CP-SAT (:mod:`~twill.mapping.cosa.model`), decodes and verifies the mapping
(:mod:`~twill.mapping.cosa.decode`) and evaluates it with the cost model.
:func:`cosa_rerank_map` (method ``cosa-rerank``) is a documented extension, not CoSA: a few MIP
solutions, loop orders polished and the best picked under the cost model
(:mod:`~twill.mapping.cosa.rerank`).
"""

from twill.mapping.cosa.mip import CosaWeights, build_cosa_model
from twill.mapping.cosa.rerank import cosa_rerank_map, polish_loop_orders
from twill.mapping.cosa.solve import cosa_map

__all__ = ["cosa_map", "cosa_rerank_map", "polish_loop_orders", "build_cosa_model", "CosaWeights"]
