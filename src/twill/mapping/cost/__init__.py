"""Cost models of mapped layers (``docs/mapping.md``, "Cost model").

:mod:`twill.mapping.cost.analytical` is the NumPy model, scalar (:func:`evaluate`) and batched
(:func:`evaluate_batch`, one implementation for both).
"""

from twill.mapping.cost.analytical import (
    BatchCost,
    CostOptions,
    CostReport,
    MappingBatch,
    batch_from_mappings,
    evaluate,
    evaluate_batch,
)

__all__ = [
    "BatchCost",
    "CostOptions",
    "CostReport",
    "MappingBatch",
    "batch_from_mappings",
    "evaluate",
    "evaluate_batch",
]
