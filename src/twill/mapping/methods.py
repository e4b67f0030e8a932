"""The names of the layer mappers and sweep objectives, known without importing any of them.

The registry reads every solver's registration from its source (:mod:`twill.registry`), so the
CLI can offer ``--method`` choices without importing the mapping pipeline and its cost model
(a quarter of a second at every start of every command, ``twill solve`` included).
"""

from __future__ import annotations

from twill.registry import solvers

__all__ = ["MAPPERS", "OBJECTIVES", "PRESETS"]

#: Presets of a registered mapper: name -> (the mapper, the number of valid samples it draws).
PRESETS = {"random16k": ("random", 16_000)}
#: Mapper names accepted by :func:`twill.mapping.pipeline.map_layer`: every solver of the
#: registry that maps a layer (``LayerMappingProblem``), and the presets.
MAPPERS = tuple(s.name for s in solvers() if "LayerMappingProblem" in s.problems) + tuple(PRESETS)
#: What a design-space sweep ranks its frontier by (:mod:`twill.mapping.sweep`).
OBJECTIVES = ("edp", "energy", "cycles")
