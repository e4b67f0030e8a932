"""Exact solvers: Twill Phase 1 (:mod:`.phase1`) and the search for the minimum I (:mod:`.search`).

Solver libraries (PuLP/CBC, OR-Tools) are imported only when a backend runs.
"""

__all__: list[str] = []
