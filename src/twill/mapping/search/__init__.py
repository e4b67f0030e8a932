"""Search baselines under the same cost model (CoSA spec §7): random best-of-N,
Timeloop-Hybrid-like best of 16,000, exhaustive enumeration for small layers."""

from twill.mapping.search.exhaustive import exhaustive_search
from twill.mapping.search.hybrid import hybrid_search
from twill.mapping.search.random import random_search, sample_batch

__all__ = ["random_search", "hybrid_search", "exhaustive_search", "sample_batch"]
