"""Result vocabulary shared by every solver of both families (house rule 6)."""

from __future__ import annotations

from enum import Enum

__all__ = ["Status"]


class Status(str, Enum):
    """Outcome of one solver call.

    ``UNKNOWN`` means a time or node limit was hit before a proof: it is never read as
    ``INFEASIBLE``.
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)

    @property
    def is_proof(self) -> bool:
        """True when the verdict is proven (optimal or infeasible)."""
        return self in (Status.OPTIMAL, Status.INFEASIBLE)
