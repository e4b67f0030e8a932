"""Public verifiers (``twill.verify``): check any schedule independently of the solvers.

Re-exports :mod:`twill.sched.verify`; see there for the rules checked.
"""

from twill.results import Violation
from twill.sched.verify import verify_dag_schedule, verify_modulo_schedule
from twill.sched.verify_warps import WarpRules, verify_warp_schedule

__all__ = [
    "Violation",
    "verify_modulo_schedule",
    "verify_dag_schedule",
    "verify_warp_schedule",
    "WarpRules",
]
