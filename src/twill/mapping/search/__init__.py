"""Search baselines under the same cost model (the CoSA paper's baselines): random best-of-N
(:mod:`~twill.mapping.search.random`), Timeloop-Hybrid-like best of 16,000
(:mod:`~twill.mapping.search.hybrid`), exhaustive enumeration for small layers
(:mod:`~twill.mapping.search.exhaustive`). Each is ``solve(problem, options)`` on a
:class:`~twill.mapping.problems.LayerMappingProblem`, its knobs in ``options.search`` (a
:class:`~twill.mapping.search.common.SearchSettings`)."""

from twill.mapping.search.common import SearchSettings
from twill.mapping.search.random import sample_batch

__all__ = ["SearchSettings", "sample_batch"]
