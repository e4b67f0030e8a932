"""Fast heuristic modulo schedulers: a legal schedule in seconds, no proof.

* :mod:`.ims`: Rau's iterative modulo scheduling (MICRO-27, 1994), the incumbent that seeds and
  bounds the exact minimum-I search of :mod:`twill.sched.exact.search`.
"""

from twill.sched.heuristics.ims import (
    HeuristicSchedule,
    heuristic_schedule,
    iterative_modulo_schedule,
)

__all__ = ["HeuristicSchedule", "heuristic_schedule", "iterative_modulo_schedule"]
