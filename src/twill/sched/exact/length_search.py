"""Phase 1's minimum length ``L`` at a fixed ``I`` by bounded feasibility questions.

Once ``I`` is decided, Phase 1 minimises ``L`` on the residue + stage model (:mod:`.phase1`). Asked
as an objective, CP-SAT on one worker improves a schedule from above and then has to prove the last
step: on the FlashAttention forward graphs that proof took 8-9 s of CPU, while the question "is
there a schedule with ``L <= t``?" was answered in 0.01-0.5 s for every ``t`` (the bound shrinks
every start's domain to ``[earliest, t - tail]`` before the search). So the minimum is found here by
asking that question for a few ``t``:

* ``low`` starts at a bound that needs no solver (:func:`length_lower_bound`), ``high`` is the
  length of the schedule at hand.
* Exponential search upward from ``low``: ask ``t = low, low + 1, low + 3, low + 7, ...``
  (below ``high``) while the answer is "no" (each raises ``low`` to ``t + 1``); a "yes" gives
  a schedule of length ``<= t``, which becomes ``high``, and the search starts again from
  ``low`` with a step of one. Questions below the optimum are the cheap ones (a short bound
  empties domains), so the search starts there rather than in the middle.
* It stops when ``low = high`` (the minimum, proven), or when a question hits its share of
  the time (the caller then minimises ``L`` as an objective from the best schedule, with
  ``L >= low`` added, which is proven).

Soundness: each question is the same residue + stage model (same variables, same rows) plus one row
``L <= t``. "No" is the solver's proof that no modulo schedule at this ``I`` has ``L <= t``,
so ``L* >= t + 1``; "yes" comes with a schedule whose kept starts the caller completes and
verifies. A question that hits its limit proves nothing and ends the search.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from twill.deadline import NO_DEADLINE, Deadline
from twill.results import Status
from twill.sched.exact.reduced import ReducedModel

__all__ = ["LengthSearch", "length_lower_bound", "search_length"]

# (t, seconds or None) -> (answer, kept starts when a schedule of L <= t was found)
LengthQuestion = Callable[[int, float | None], tuple[Status, dict[int, int] | None]]


@dataclass(frozen=True)
class LengthSearch:
    """Outcome of :func:`search_length`: ``low`` is proven (no schedule is shorter),
    ``values`` are the kept starts of the shortest schedule found, of length ``length``."""

    low: int
    values: dict[int, int]
    length: int
    questions: int

    @property
    def proven(self) -> bool:
        """``length`` is the minimum ``L`` at this ``I``."""
        return self.low >= self.length


def schedule_length(data: ReducedModel, kept_starts: dict[int, int]) -> int:
    """``L`` of the reduced model for the kept starts (the eliminated ops placed earliest)."""
    return max([data.l_const] + [kept_starts[x] + t for x, t in data.tail])


def length_lower_bound(data: ReducedModel) -> int:
    """A lower bound on ``L`` without a solver: the longest path of the difference system
    (``M(x) >= h``, ``M(y) - M(x) >= w`` over the reduced arcs, ``M >= 0``) to each kept op,
    plus its tail, and the projected ops' own chains (``l_const``). Every schedule meets each
    of these rows, so its ``L`` is at least this. Finite because ``II >= RecMII`` (no
    positive circuit), so at most ``|kept|`` rounds of relaxation settle it."""
    earliest = {x: 0 for x in data.kept}
    for x, h in data.lower:
        earliest[x] = max(earliest[x], h)
    for _ in range(len(data.kept) + 1):
        changed = False
        for x, y, w in data.arcs:
            if x != y and earliest[x] + w > earliest[y]:
                earliest[y] = earliest[x] + w
                changed = True
        if not changed:
            break
    return max([data.l_const] + [earliest[x] + t for x, t in data.tail])


def search_length(
    question: LengthQuestion,
    data: ReducedModel,
    values: dict[int, int],
    budget: float | None,
    *,
    deadline: Deadline = NO_DEADLINE,
) -> LengthSearch:
    """The minimum ``L`` from ``values`` (kept starts of a schedule at ``data.ii``) by
    feasibility questions (module docstring). ``question(t, seconds)`` answers "is there a
    schedule with ``L <= t``" as INFEASIBLE (proven no), a status with a solution (its kept
    starts), or anything else (no verdict). ``budget`` caps the seconds of all questions
    together (``None``: no cap), within the caller's ``deadline``."""
    low = length_lower_bound(data)
    best, high = values, schedule_length(data, values)
    end = deadline.child(budget)
    step, asked = 1, 0
    while low < high:
        left = end.remaining()
        if left is not None and left <= 0:
            break
        t = min(low + step - 1, high - 1)
        answer, found = question(t, left)
        asked += 1
        if answer is Status.INFEASIBLE:
            low, step = t + 1, step * 2
        elif found is not None:
            best, high, step = found, schedule_length(data, found), 1
        else:  # limit hit: no verdict
            break
    return LengthSearch(low, best, high, asked)
