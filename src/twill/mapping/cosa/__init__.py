"""CoSA: one-shot mapping by a MIP over prime-factor placements (Huang et al., ISCA 2021).

:func:`~twill.mapping.cosa.solve.solve` builds the linearised model
(:mod:`~twill.mapping.cosa.mip`), solves it with CP-SAT, SCIP, HiGHS or CBC
(:mod:`~twill.mapping.cosa.model`), decodes and verifies the mapping
(:mod:`~twill.mapping.cosa.decode`) and evaluates it with the cost model. Two documented
extensions, not CoSA, share its settings (:class:`~twill.mapping.cosa.solve.CoSASettings`):
``cosa-rerank`` (:mod:`~twill.mapping.cosa.rerank`: a few MIP solutions, loop orders polished
and the best picked under the cost model) and ``cosa-edp`` (:mod:`~twill.mapping.cosa.edp`).
Each is ``solve(problem, options)`` on a :class:`~twill.mapping.problems.LayerMappingProblem`.
"""

from twill.mapping.cosa.mip import CosaModelOptions, CosaWeights, build_cosa_model
from twill.mapping.cosa.rerank import polish_loop_orders
from twill.mapping.cosa.solve import CoSASettings, solve

__all__ = [
    "solve",
    "CoSASettings",
    "polish_loop_orders",
    "build_cosa_model",
    "CosaModelOptions",
    "CosaWeights",
]
