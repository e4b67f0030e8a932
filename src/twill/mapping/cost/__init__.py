"""Cost models of mapped layers (``docs/mapping.md``, "Cost model").

:mod:`twill.mapping.cost.analytical` is the NumPy model, scalar (:func:`evaluate`) and batched
(:func:`evaluate_batch`: one layer and architecture; :func:`evaluate_many`: a layer and an
architecture per row), one implementation for all three.
"""

from twill.mapping.cost.analytical import (
    ArchArrays,
    BatchCost,
    CostOptions,
    CostReport,
    LayerArrays,
    MappingBatch,
    batch_from_mappings,
    evaluate,
    evaluate_batch,
    evaluate_many,
)

__all__ = [
    "ArchArrays",
    "BatchCost",
    "CostOptions",
    "CostReport",
    "LayerArrays",
    "MappingBatch",
    "batch_from_mappings",
    "evaluate",
    "evaluate_batch",
    "evaluate_many",
]
