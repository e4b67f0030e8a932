"""Fast heuristic modulo schedulers: a legal schedule in seconds, no proof.

* :mod:`.ims`: Rau's iterative modulo scheduling (MICRO-27, 1994), the incumbent that seeds and
  bounds the exact minimum-I search of :mod:`twill.sched.exact.search`.
* :mod:`.slack`: slack scheduling (Huff, PLDI 1993) with Rau's eviction on the window model,
  below IMS's I: at the proven optimum on the large CHStone loops where IMS is 2-22 above.
"""

from twill.sched.heuristics.ims import (
    HeuristicSchedule,
    heuristic_schedule,
    iterative_modulo_schedule,
)

__all__ = ["HeuristicSchedule", "heuristic_schedule", "iterative_modulo_schedule"]
