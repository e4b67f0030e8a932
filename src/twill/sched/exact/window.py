"""Deciding Phase 1 at a fixed II on the translation-reduced *window* model (exact).

The minimum-I proof needs, per ``II``, only the answer to "does any modulo schedule exist?"
(paper §5). That question has symmetries that the residue + stage model (:mod:`.phase1`, which also
minimises ``L``) leaves open; this module removes them, which turns the residue + stage
search over absolute times ``[0, K*II)`` into a search over short windows of *relative*
times. Input: the reduced model of :func:`.reduced.build_reduced_model` (kept ops, arcs
``M(y) - M(x) >= w`` with the projected ops eliminated exactly, modulo reservation rows).

Validity (each step keeps exactly the same yes/no answer):

1. **Translation.** If ``M`` is a modulo schedule at ``II``, so is ``M + c`` for every integer
   ``c``: the dependences are differences, and adding ``c`` rotates every residue by the same
   amount, which permutes the rows of the modulo reservation table. So one op, the *anchor*
   of the largest component below, may be pinned to ``M = 0``; the bounds ``M >= 0`` and
   ``M >= h`` of the residue + stage model are normalisations and are dropped here.
2. **Windows.** Inside one strongly connected component ``C`` of the arcs, with anchor
   ``a``, every schedule has ``dist(a, v) <= M(v) - M(a) <= -dist(v, a)`` (longest paths;
   finite because ``II >= RecMII`` leaves no positive circuit). So each op of the pinned
   component ranges over the window ``[dist(a, v), -dist(v, a)]``.
3. **Components.** Drop the arcs between different components. Conversely, from a solution
   of that relaxation, visit the components in a topological order of the (acyclic)
   condensation and add to each a multiple of ``II`` large enough for the arcs coming from
   the components already placed: residues, hence the reservation table, and the arcs inside
   the component are unchanged. So every component other than the pinned one may have its
   anchor in ``[0, II)`` (shift by multiples of ``II``), its ops in
   ``[dist(a, v), II - 1 - dist(v, a)]``.
4. **Free ops.** A *free* op is a component of its own (no circuit through it) whose only
   limited reservation is one unit of a *count-only* unit in its first cycle (every user of
   that unit reserves exactly one unit, first cycle only). Such an op can take any residue,
   so it is removed: if the rest is schedulable, every residue ``r`` of a count-only unit
   ``f`` has ``cap(f) - used(r) >= 0`` free places, ``cap(f)*II - (users kept)`` in all,
   which is at least the number of free users when ``users(f) <= cap(f)*II`` (checked; it is
   ``II >= ResMII`` for ``f``), so the free ops fill them greedily. Conversely a schedule
   restricted to the other ops is a solution of the rest.
5. **Back to the residue + stage model** (:func:`lift`): with the residues fixed, the least
   stages that satisfy every arc and ``M >= max(0, h)`` exist (by 3 and 1) and are found by longest
   paths; they are the least solution used in :func:`.reduced.stage_bounds`, so they lie
   inside the proven stage bounds and hint / warm-start the model that minimises ``L``.

Two complete backends decide the window model (:func:`decide`): CP-SAT (integer starts in
their windows, residues, all-different / cumulative or 0-1 rows, and the *pair windows*
below) and CBC (a time-indexed 0-1 program over the windows with the strong precedence rows,
whose LP relaxation is much tighter than the aggregated row).
INFEASIBLE is reported only on a finished proof; a time limit gives UNKNOWN.

Preconditions: ``II >= RecMII`` (no positive circuit; :func:`.phase1.solve_phase1` checks it
first) and the model comes from :func:`.reduced.build_reduced_model` at that ``II``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from twill._interrupt import solve_cpsat
from twill.deadline import Deadline
from twill.results import Status

if TYPE_CHECKING:  # pragma: no cover - typing only
    from twill.sched.exact.reduced import ReducedModel

__all__ = [
    "NO_PATH",
    "WindowModel",
    "build_window_model",
    "decide",
    "decide_cbc",
    "decide_cpsat",
    "least_starts",
    "lift",
    "to_window",
]

log = logging.getLogger(__name__)

_WINDOW_MAX = 4  # pair windows: only when M(y) - M(x) ranges over <= 4*II values
_ENERGY_BUDGET = 4 * 10**7  # energetic arcs: only while kept^2 * users^2 stays below this
_ENERGY_ROUNDS = 8  # ... and for at most this many rounds
_STRONG_MAX_NONZEROS = 500_000  # CBC: strong precedence rows while they stay this small
_PULP_RATE = 40_000  # nonzeros per second that PuLP builds and writes (a safe estimate)


@dataclass(frozen=True)
class WindowModel:
    """The decision model at one ``II`` (module docstring, steps 1-4).

    ``domain[v] = (lo, hi)``: the start of op ``v`` (model index) is in ``[lo, hi]``; ``arcs``
    are the arcs inside components; ``rows`` and ``groups`` are the modulo reservation rows and
    residue groups restricted to the decided ops; ``pairs`` are ``(x, y, lo, hi)`` with
    ``lo <= M(y) - M(x) <= hi`` for two users of one capacity-1 unit in one component;
    ``free`` maps each count-only unit to its capacity and free ops; ``anchor[v]`` is the
    anchor of ``v``'s component, ``pinned`` the anchor pinned at 0; ``overfull`` says why
    no schedule exists when that is already known (a count-only unit with more users than
    ``cap * II``, or a positive circuit of :func:`energetic_arcs`).
    """

    ii: int
    ops: tuple[int, ...]
    domain: dict[int, tuple[int, int]]
    arcs: tuple[tuple[int, int, int], ...]
    rows: tuple[tuple[str, int, int, tuple[tuple[int, int, int], ...]], ...]
    groups: tuple[tuple[str, int, tuple[tuple[int, int], ...]], ...]
    pairs: tuple[tuple[int, int, int, int], ...]
    free: dict[str, tuple[int, tuple[int, ...]]]
    components: int
    anchor: dict[int, int]
    pinned: int
    overfull: str | None = None
    twins: tuple[tuple[int, ...], ...] = ()

    def stats(self) -> dict[str, Any]:
        return {
            "decided_ops": len(self.ops),
            "free_ops": sum(len(ops) for _, ops in self.free.values()),
            "components": self.components,
            "domain_values": sum(hi - lo + 1 for lo, hi in self.domain.values()),
            "twins": sum(len(t) for t in self.twins),
        }


def _components(kept: tuple[int, ...], dist: dict[tuple[int, int], int]) -> list[list[int]]:
    """Strongly connected components of the arcs: ``x ~ y`` iff paths both ways."""
    seen: set[int] = set()
    comps = []
    for x in kept:
        if x in seen:
            continue
        comp = [y for y in kept if y not in seen and (x, y) in dist and (y, x) in dist]
        seen.update(comp)
        comps.append(comp)
    # pin the largest component (its anchor at 0); ties: the smallest op index
    comps.sort(key=lambda c: (-len(c), c[0]))
    return comps


def _count_only_units(m: ReducedModel) -> dict[str, int]:
    """Units (with rows in the model) whose every user reserves one unit, first cycle only."""
    return {fu: cap for fu, cap, users in m.residue_groups if all(u == 1 for _, u in users)}


NO_PATH = -(10**15)  # "no path" in the longest-path matrices


def longest_matrix(kept: tuple[int, ...], arcs: Iterable[tuple[int, int, int]]) -> Any:
    """All-pairs longest paths over ``arcs`` between the ``kept`` ops (Floyd-Warshall with
    NumPy): entry ``[i, j]`` bounds ``M(kept[j]) - M(kept[i])`` from below in every schedule,
    ``<= NO_PATH // 2`` where there is no path. Finite without positive circuits."""
    import numpy as np

    pos = {x: i for i, x in enumerate(kept)}
    n = len(kept)
    d = np.full((n, n), NO_PATH, dtype=np.int64)
    np.fill_diagonal(d, 0)
    for x, y, w in arcs:
        if x != y:
            d[pos[x], pos[y]] = max(d[pos[x], pos[y]], w)
    for k in range(n):
        _relax_through(d, k, k, 0)
    return d


def _relax_through(d: Any, i: int, j: int, w: int) -> None:
    """``d = max(d, d[:, i] + w + d[j, :])``, in place, keeping "no path" entries apart."""
    import numpy as np

    via = d[:, i : i + 1] + w + d[j : j + 1, :]
    via[(d[:, i] <= NO_PATH // 2), :] = NO_PATH
    via[:, (d[j, :] <= NO_PATH // 2)] = NO_PATH
    np.maximum(d, via, out=d)


def matrix_to_dict(kept: tuple[int, ...], d: Any) -> dict[tuple[int, int], int]:
    """The finite entries of a :func:`longest_matrix` result, keyed by op pairs."""
    import numpy as np

    return {
        (kept[i], kept[j]): int(d[i, j]) for i, j in zip(*np.nonzero(d > NO_PATH // 2), strict=True)
    }


def energetic_arcs(m: ReducedModel, d: Any) -> tuple[list[tuple[int, int, int]], bool]:
    """Implied arcs from unit capacities ("energetic" reasoning), tightened to a fixpoint.

    Let ``f`` be a count-only unit of capacity ``c`` (each user reserves one unit in its
    first cycle). Two users at the same time have the same residue, so at most ``c`` users
    start at any one time. For ops ``p, q`` and thresholds ``h, t``, every user ``v`` with
    ``dist(p, v) >= h`` and ``dist(v, q) >= t`` starts in ``[M(p) + h, M(q) - t]``; if there
    are ``s >= 1`` of them, that interval holds ``ceil(s / c)`` distinct times, so
    ``M(q) - M(p) >= h + t + ceil(s / c) - 1`` in every schedule. Where this beats
    ``dist(p, q)`` it is added as an arc (implied, so the answer is unchanged) and the
    longest paths are updated; a positive circuit then proves that no schedule exists.
    ``d`` (a :func:`longest_matrix` result) is updated in place. Returns the arcs and
    whether a positive circuit was found.
    """
    import numpy as np

    n = len(m.kept)
    pos = {x: i for i, x in enumerate(m.kept)}
    groups = []
    for _fu, cap, users in m.residue_groups:
        k = len(users)
        if all(u == 1 for _, u in users) and cap < k and n * n * k * k <= _ENERGY_BUDGET:
            groups.append((cap, np.array([pos[i] for i, _ in users])))
    added: list[tuple[int, int, int]] = []
    for _ in range(_ENERGY_ROUNDS if groups else 0):
        new = []
        for cap, users in groups:
            tails = d[users, :]  # [v, q] = dist(v, q)
            t_ok = tails > NO_PATH // 2
            # later[v, j, q] = 1 iff dist(v, q) >= dist(j, q), both finite
            later = (tails[:, None, :] >= tails[None, :, :]) & t_ok[:, None, :] & t_ok[None, :, :]
            later = later.astype(np.int32)
            for p in range(n):
                heads = d[p, users]
                idx = np.nonzero(heads > NO_PATH // 2)[0]
                if len(idx) <= cap:
                    continue
                # users by falling dist(p, v); the threshold h = each distinct value, and
                # count[h, j, q] = #{v : dist(p, v) >= h, dist(v, q) >= dist(j, q)}
                order = idx[np.argsort(-heads[idx], kind="stable")]
                falling = heads[order]
                last = np.r_[np.nonzero(falling[:-1] != falling[1:])[0], len(order) - 1]
                count = np.cumsum(later[order], axis=0)[last]
                levels = falling[last]
                span = levels[:, None, None] + tails[None, :, :] + (count + cap - 1) // cap - 1
                span[count == 0] = NO_PATH  # an empty set proves nothing
                bound = span.max(axis=(0, 1))
                for q in np.nonzero((bound > d[p, :]) & (d[p, :] > NO_PATH // 2))[0]:
                    if q != p:
                        new.append((p, int(q), int(bound[q])))
        if not new:
            break
        for p, q, bound in new:
            if bound > d[p, q]:
                _relax_through(d, p, q, bound)
                added.append((m.kept[p], m.kept[q], bound))
        if (np.diagonal(d) > 0).any():
            return added, True
    return added, False


def build_window_model(m: ReducedModel, *, energetic: bool = True) -> WindowModel:
    """The window model of ``m`` (module docstring), with :func:`energetic_arcs` (implied,
    so ``energetic=False`` leaves the same solutions: a heuristic caller's choice, since they
    can take seconds, 3 s of 3.3 at ChStone's adpcm/graph1)."""
    ii = m.ii
    d = longest_matrix(m.kept, m.arcs)
    extra, circuit = energetic_arcs(m, d) if energetic else ([], False)
    if circuit:
        proof = "a positive circuit of implied arcs (energetic_arcs)"
        return WindowModel(ii, (), {}, (), (), (), (), {}, 0, {}, -1, overfull=proof)
    dist = matrix_to_dict(m.kept, d)
    comps = _components(m.kept, dist)
    comp_of = {v: ci for ci, comp in enumerate(comps) for v in comp}
    count_only = _count_only_units(m)
    units_of: dict[int, set[str]] = {v: set() for v in m.kept}
    for fu, _r, _cap, terms in m.mrt_rows:
        for i, _res, _u in terms:
            units_of[i].add(fu)
    self_arc = {x for x, y, _w in m.arcs if x == y}
    free: dict[str, list[int]] = {fu: [] for fu in count_only}
    for comp in comps:
        (v,) = comp if len(comp) == 1 else (None,)
        if v is None or v in self_arc or len(units_of[v]) != 1:
            continue
        (fu,) = units_of[v]
        if fu in count_only:
            free[fu].append(v)
    overfull = None
    for fu, cap, users in m.residue_groups:
        if fu in count_only and len(users) > cap * ii:
            overfull = fu
    freed = {v for ops in free.values() for v in ops}
    domain: dict[int, tuple[int, int]] = {}
    for ci, comp in enumerate(comps):
        a = comp[0]
        top = 0 if ci == 0 else ii - 1  # step 1 pins comps[0]; step 3 the others to [0, II)
        for v in comp:
            if v not in freed:
                domain[v] = (dist[a, v], top - dist[v, a])
    ops = tuple(sorted(domain))
    arcs = tuple(
        (x, y, w)
        for x, y, w in (*m.arcs, *extra)
        if x != y and x in domain and y in domain and comp_of[x] == comp_of[y]
    )
    rows = []
    for fu, r, cap, terms in m.mrt_rows:
        kept_terms = tuple(t for t in terms if t[0] in domain)
        if sum(u for _, _, u in kept_terms) > cap:
            rows.append((fu, r, cap, kept_terms))
    groups = []
    for fu, cap, users in m.residue_groups:
        mine = tuple(t for t in users if t[0] in domain)
        if sum(u for _, u in mine) > cap:
            groups.append((fu, cap, mine))
    pairs = []
    for _fu, cap, users in groups:
        if cap != 1 or any(u != 1 for _, u in users):
            continue
        for k, (x, _) in enumerate(users):
            for y, _ in users[k + 1 :]:
                if comp_of[x] == comp_of[y]:
                    lo, hi = dist[x, y], -dist[y, x]
                    if hi - lo < _WINDOW_MAX * ii:
                        pairs.append((x, y, lo, hi))
    cap_of = {fu: cap for fu, cap, _ in m.residue_groups}
    wm = WindowModel(
        ii=ii,
        ops=ops,
        domain=domain,
        arcs=arcs,
        rows=tuple(rows),
        groups=tuple(groups),
        pairs=tuple(pairs),
        free={fu: (cap_of[fu], tuple(ops)) for fu, ops in free.items() if ops},
        components=len(comps),
        anchor={v: comp[0] for comp in comps for v in comp},
        pinned=comps[0][0] if comps else -1,
        overfull=overfull,
    )
    return replace(wm, twins=twin_classes(wm))


def twin_classes(wm: WindowModel) -> tuple[tuple[int, ...], ...]:
    """Classes of interchangeable ops of the window model (symmetry breaking).

    Two decided ops ``x, y`` are *twins* when swapping their starts maps the window model onto
    itself: the same window, the same arcs to and from every other op (none between them),
    the same reservation terms in every row and group, the same pair windows to every other
    op (and a pair window between them, if any, symmetric: ``lo = -hi``), and neither is a
    component's anchor (the translation steps move anchors). Then the swap of a solution is a
    solution, so ``M(x) <= M(y)`` for the twins of a class in a fixed order keeps one of
    every pair of swapped solutions: the yes/no answer is unchanged. Each class is returned
    sorted; classes of one op are left out.
    """
    anchors = set(wm.anchor.values())
    rel: dict[int, list[tuple[Any, ...]]] = {v: [] for v in wm.ops}
    for x, y, w in wm.arcs:
        rel[x].append(("out", y, w))
        rel[y].append(("in", x, w))
    for n, (_fu, _r, _cap, terms) in enumerate(wm.rows):
        for i, q, u in terms:
            rel[i].append(("row", n, q, u))
    for n, (_fu, _cap, users) in enumerate(wm.groups):
        for i, u in users:
            rel[i].append(("group", n, u))
    pairs: dict[int, dict[int, tuple[int, int]]] = {v: {} for v in wm.ops}
    for x, y, lo, hi in wm.pairs:
        pairs[y][x] = (lo, hi)  # M(y) - M(x) in [lo, hi]
        pairs[x][y] = (-hi, -lo)
    classes: dict[tuple[Any, ...], list[int]] = {}
    for v in wm.ops:
        if v not in anchors:
            key = (wm.domain[v], tuple(sorted(rel[v], key=repr)))
            classes.setdefault(key, []).append(v)
    out = []
    for ops in classes.values():
        kept = [v for v in ops if all(_swappable(pairs, v, u) for u in ops if u != v)]
        if len(kept) > 1:
            out.append(tuple(sorted(kept)))
    return tuple(out)


def ordered_hint(wm: WindowModel, hint: dict[int, int] | None) -> dict[int, int] | None:
    """``hint`` with each twin class's starts sorted onto its ops (a permutation of twins maps
    a solution to a solution), so that it meets the symmetry-breaking rows."""
    if not hint or not wm.twins:
        return hint
    out = dict(hint)
    for twins in wm.twins:
        if all(v in hint for v in twins):
            out.update(zip(twins, sorted(hint[v] for v in twins), strict=True))
    return out


def _swappable(pairs: dict[int, dict[int, tuple[int, int]]], x: int, y: int) -> bool:
    """The pair windows of ``x`` and ``y`` agree on every other op; between them symmetric."""
    px = {z: w for z, w in pairs[x].items() if z != y}
    py = {z: w for z, w in pairs[y].items() if z != x}
    between = pairs[x].get(y)
    return px == py and (between is None or between[0] == -between[1])


def to_window(wm: WindowModel, starts: dict[int, int]) -> dict[int, int]:
    """A schedule of the kept ops moved into the window model's domains (steps 1 and 3):
    translated so that the pinned anchor is at 0, each other component then by the multiple
    of ``II`` that brings its anchor into ``[0, II)``."""
    if not wm.ops:
        return {}
    ii = wm.ii
    shift0 = starts[wm.pinned]
    out = {}
    for v in wm.ops:
        base = starts[wm.anchor[v]] - shift0
        out[v] = starts[v] - shift0 - (0 if wm.anchor[v] == wm.pinned else ii * (base // ii))
    return out


def lift(m: ReducedModel, wm: WindowModel, times: dict[int, int]) -> dict[int, int] | None:
    """Kept starts of the residue + stage model from a window-model solution (steps 4 and 5).

    Free ops take the residues left over by the decided ones (greedily); then the least
    starts with these residues that satisfy every arc and ``M >= max(0, h)`` are computed
    by longest paths. Returns ``None`` only if that fails, which the module docstring
    proves impossible (the caller treats it as a bug through the verifier).
    """
    ii = m.ii
    res = {v: t % ii for v, t in times.items()}
    used: dict[tuple[str, int], int] = {}
    for fu, _cap, users in m.residue_groups:
        for i, u in users:
            if i in res:
                used[fu, res[i]] = used.get((fu, res[i]), 0) + u
    for fu, (cap, ops) in wm.free.items():
        slots = [r for r in range(ii) for _ in range(max(0, cap - used.get((fu, r), 0)))]
        if len(slots) < len(ops):
            return None
        for v, r in zip(ops, slots, strict=False):
            res[v] = r
    lower = dict(m.lower)
    floor = {v: max(0, lower.get(v, 0)) for v in m.kept}
    return least_starts(res, floor, m.arcs, ii)


def least_starts(
    res: dict[int, int],
    floor: dict[int, int],
    arcs: Iterable[tuple[int, int, int]],
    ii: int,
    deadline: Deadline | None = None,
    rounds: int | None = None,
) -> dict[int, int] | None:
    """Pointwise least starts ``M(v) >= floor[v]`` with ``M(v) = res[v] (mod ii)`` and
    ``M(y) - M(x) >= w`` for every arc, or ``None`` when there are none.

    Longest paths with each value rounded up to its residue: the update is monotone and every
    solution bounds it from above, so it settles on the least solution after at most
    ``|V| + 1`` rounds when one exists; a round budget running out means a positive circuit.
    Past ``deadline`` (a heuristic caller's) or after ``rounds`` rounds (a heuristic caller's
    cap; ``None``: ``|V| + 1``) it gives up: ``None``.
    """
    arcs, deadline = list(arcs), Deadline.of(deadline)
    least = {v: f + (res[v] - f) % ii for v, f in floor.items()}
    for _ in range(len(least) + 1 if rounds is None else min(rounds, len(least) + 1)):
        if deadline.passed():
            return None
        changed = False
        for x, y, w in arcs:
            need = least[x] + w
            if need > least[y]:
                least[y] = need + (res[y] - need) % ii
                changed = True
        if not changed:
            return least
    return None


#: The answer of a decision: (status, start per decided op; ``None`` without a schedule).
Decision = tuple[Status, dict[int, int] | None]


def decide(
    wm: WindowModel,
    time_limit: float | None,
    threads: int,
    hint: dict[int, int] | None = None,
    deadline: Deadline | None = None,
    *,
    backend: str = "cpsat",
) -> Decision:
    """Decide the window model with ``backend`` (``"cpsat"`` or ``"cbc"``): (status, start
    per decided op). Building the model (and importing the solver the first time) counts
    against ``deadline``: the solver call gets the smaller of ``time_limit`` and what is left
    of it. ``hint`` (starts per op) warm-starts the solver."""
    if wm.overfull is not None:
        return Status.INFEASIBLE, None
    if not wm.ops:
        return Status.OPTIMAL, {}
    hint, deadline = ordered_hint(wm, hint), Deadline.of(deadline)
    if backend == "cbc":
        return _decide_cbc(wm, hint, time_limit, threads, deadline)
    model, start = _cpsat_model(wm, hint)
    return _solve_cpsat(model, start, deadline.within(time_limit), threads)


def decide_cpsat(wm: WindowModel, time_limit: float | None, threads: int, **kw: Any) -> Decision:
    """:func:`decide` with CP-SAT (``hint``, ``deadline`` as there)."""
    return decide(wm, time_limit, threads, backend="cpsat", **kw)


def decide_cbc(wm: WindowModel, time_limit: float | None, threads: int, **kw: Any) -> Decision:
    """:func:`decide` with CBC through PuLP (``hint``, ``deadline`` as there)."""
    return decide(wm, time_limit, threads, backend="cbc", **kw)


# ---------------------------------------------------------------------------------------------
# CP-SAT
# ---------------------------------------------------------------------------------------------


def _cpsat_model(wm: WindowModel, hint: dict[int, int] | None) -> tuple[Any, dict[int, Any]]:
    """CP-SAT's model of ``wm`` and its start variables.

    Integer start ``M`` in its window, ``M = II*q + r``; the reservation table as a circular
    no-overlap / cumulative over the starts (:func:`_circular_slots`) where every user of a
    unit reserves only its first cycle, else as 0-1 rows over the residues ``r``. Labelled
    redundant *pair windows* (same solutions): two users of a capacity-1 unit never share a
    residue, so ``M(y) - M(x)`` avoids the multiples of ``II`` in its window ``[lo, hi]``;
    CP-SAT then propagates residue conflicts through the dependences.
    """
    from ortools.sat.python import cp_model

    ii = wm.ii
    model = cp_model.CpModel()
    start, res = {}, {}
    for v in wm.ops:
        lo, hi = wm.domain[v]
        start[v] = model.new_int_var(lo, hi, f"M[{v}]")
        q = model.new_int_var(lo // ii, hi // ii, f"q[{v}]")
        res[v] = model.new_int_var(0, ii - 1, f"r[{v}]")
        model.add(start[v] == ii * q + res[v])
    for x, y, w in wm.arcs:
        model.add(start[y] - start[x] >= w)
    grouped = {fu for fu, _, _ in wm.groups}
    for fu, cap, users in wm.groups:
        _circular_slots(model, wm, fu, cap, users, start)
    rows = [row for row in wm.rows if row[0] not in grouped]
    if rows:
        a: dict[tuple[int, int], Any] = {}
        for v in sorted({i for _, _, _, terms in rows for i, _, _ in terms}):
            lits = [model.new_bool_var(f"a[{v},{r}]") for r in range(ii)]
            model.add_exactly_one(lits)
            model.add(res[v] == sum(r * lit for r, lit in enumerate(lits)))
            a.update({(v, r): lit for r, lit in enumerate(lits)})
        for _fu, _r, cap, terms in rows:
            model.add(sum(u * a[i, q] for i, q, u in terms) <= cap)
    for x, y, lo, hi in wm.pairs:
        allowed = [d for d in range(lo, hi + 1) if d % ii]
        model.add_linear_expression_in_domain(
            start[y] - start[x], cp_model.Domain.from_values(allowed)
        )
    for twins in wm.twins:  # symmetry breaking (twin_classes)
        for x, y in zip(twins, twins[1:], strict=False):
            model.add(start[x] <= start[y])
    for v, t in (hint or {}).items():
        if v in start:
            model.add_hint(start[v], t)
            model.add_hint(res[v], t % ii)
    return model, start


def _circular_slots(
    model: Any,  # noqa: ANN401 (a cp_model.CpModel)
    wm: WindowModel,
    fu: str,
    cap: int,
    users: tuple[tuple[int, int], ...],
    start: dict[int, Any],
) -> None:
    """The residue group of unit ``fu`` (each user reserves ``u`` units in its first cycle
    only) as a *circular* no-overlap / cumulative over the starts themselves: every user gets
    one-cycle tasks at ``M + k*II`` for ``k = 0 .. K-1``, where ``K*II`` exceeds the span of
    the users' windows. Two users share a residue exactly when ``M(y) - M(x)`` is a multiple
    of ``II``, which inside the span is ``(b - a)*II`` with ``|b - a| < K``: their copies
    ``a`` and ``b`` then meet. So the tasks overlap exactly where the residues collide, and
    CP-SAT propagates the unit through the dependences (on ``M``), not through residues
    linked to ``M`` by ``M = II*q + r``: it refuted adpcm/graph1's I = 53, 54, 55 in
    3-7 s, which the all-different over residues left open after 25-30 s."""
    ii = wm.ii
    lows = [wm.domain[i][0] for i, _ in users]
    highs = [wm.domain[i][1] for i, _ in users]
    copies = (max(highs) - min(lows)) // ii + 1
    tasks, demands = [], []
    for i, u in users:
        for k in range(copies):
            at = start[i] + k * ii
            tasks.append(model.new_fixed_size_interval_var(at, 1, f"s[{fu},{i},{k}]"))
            demands.append(u)
    if cap == 1 and all(u == 1 for _, u in users):
        model.add_no_overlap(tasks)
    else:
        model.add_cumulative(tasks, demands, cap)


def _solve_cpsat(
    model: Any, start: dict[int, Any], time_limit: float | None, threads: int
) -> Decision:
    """Solve CP-SAT's ``model``. ``linearization_level = 2`` puts the all-different and
    difference rows into CP-SAT's LP, which proved aes2/graph4 at I = 30, 31 in under a
    second (seconds to minutes without; docs/benchmarks.md)."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = max(1, threads)
    solver.parameters.random_seed = 0
    solver.parameters.linearization_level = 2
    code = solve_cpsat(solver, model)
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Status.OPTIMAL, {v: int(solver.value(s)) for v, s in start.items()}
    if code == cp_model.INFEASIBLE:
        return Status.INFEASIBLE, None
    return Status.UNKNOWN, None


# ---------------------------------------------------------------------------------------------
# CBC
# ---------------------------------------------------------------------------------------------


def _decide_cbc(
    wm: WindowModel,
    hint: dict[int, int] | None,
    time_limit: float | None,
    threads: int,
    deadline: Deadline,
) -> Decision:
    """Decide ``wm`` with CBC (PuLP); UNKNOWN before a ``deadline`` too close for PuLP to
    build the model (:func:`_cbc_model`)."""
    import pulp

    from twill.sched.exact._cbc import run_cbc

    size = {v: hi - lo + 1 for v, (lo, hi) in wm.domain.items()}
    nonzeros = sum(size[a] * (size[a] + size[b]) for a, b, _ in wm.arcs)
    strong = nonzeros <= _STRONG_MAX_NONZEROS
    build = (nonzeros if strong else 2 * sum(size.values())) / _PULP_RATE
    left = deadline.remaining()
    if left is not None and left < 2 * build:  # PuLP's build is not interruptible
        log.info("window model (II=%d): about %.1f s to build, %.1f s left: UNKNOWN", wm.ii,
                 build, left)  # fmt: skip
        return Status.UNKNOWN, None
    prob, x = _cbc_model(wm, strong)
    warm = False
    if hint and all(v in hint and hint[v] in x[v] for v in wm.ops):
        for v in wm.ops:
            for t, var in x[v].items():
                var.setInitialValue(int(t == hint[v]))
        warm = True
    time_limit = deadline.within(time_limit)  # the model took time to build: what is left
    status = run_cbc(prob, time_limit, threads, warm)
    if not status.has_solution:
        return status, None
    return Status.OPTIMAL, {
        v: max(x[v], key=lambda t, v=v: pulp.value(x[v][t]) or 0.0) for v in wm.ops
    }


def _cbc_model(wm: WindowModel, strong: bool) -> tuple[Any, dict[int, dict[int, Any]]]:
    """CBC's time-indexed 0-1 program of ``wm`` and its variables ``x[v][t]``.

    ``x[v,t] = 1`` iff op ``v`` starts at ``t`` (its window), ``sum_t x[v,t] = 1``; the modulo
    reservation row of unit ``f`` and class ``r`` sums ``x[v,t]`` over the ``t`` with
    ``t + c = r (mod II)``. An arc ``M(y) - M(x) >= w`` is written (``strong``) as the strong
    precedence rows ``sum_{s >= t} x[x,s] + sum_{s < t+w} x[y,s] <= 1`` for every ``t`` (if
    ``x`` starts at ``t`` or later, ``y`` cannot start before ``t + w``); together they are
    equivalent to the arc on 0-1 points and their LP relaxation is the tightest of the usual
    encodings. Past ``_STRONG_MAX_NONZEROS`` the one aggregated row
    ``sum t*x[y,t] - sum t*x[x,t] >= w`` per arc is used instead (same 0-1 points).
    """
    import pulp

    ii = wm.ii
    prob = pulp.LpProblem(f"window_II{ii}", pulp.LpMinimize)
    x: dict[int, dict[int, Any]] = {}
    for v in wm.ops:
        lo, hi = wm.domain[v]
        x[v] = {t: pulp.LpVariable(f"x_{v}_{t - lo}", cat="Binary") for t in range(lo, hi + 1)}
        prob += pulp.lpSum(x[v].values()) == 1, f"one_{v}"
    for k, (a, b, w) in enumerate(wm.arcs):
        (alo, ahi), (blo, _bhi) = wm.domain[a], wm.domain[b]
        if not strong:
            prob += (
                pulp.lpSum(t * var for t, var in x[b].items())
                - pulp.lpSum(t * var for t, var in x[a].items())
                >= w,
                f"dep_{k}",
            )
            continue
        for t in range(alo + 1, ahi + 1):
            before = [var for s, var in x[b].items() if s < t + w]
            if before:
                later = [var for s, var in x[a].items() if s >= t]
                prob += pulp.lpSum(later + before) <= 1, f"dep_{k}_{t - alo}"
        # t = alo: y must not start before alo + w (its window already ensures it)
        for s, var in x[b].items():
            if s < alo + w:
                prob += var == 0, f"dep_{k}_win_{s - blo}"
    for n, (fu, r, cap, terms) in enumerate(wm.rows):
        expr = []
        for i, q, u in terms:
            expr += [u * var for t, var in x[i].items() if t % ii == q]
        prob += pulp.lpSum(expr) <= cap, f"mrt_{fu}_{r}_{n}"
    for n, twins in enumerate(wm.twins):  # symmetry breaking (twin_classes)
        for k, (a, b) in enumerate(zip(twins, twins[1:], strict=False)):
            prob += (
                pulp.lpSum(t * var for t, var in x[a].items())
                <= pulp.lpSum(t * var for t, var in x[b].items()),
                f"twin_{n}_{k}",
            )
    prob.setObjective(pulp.LpAffineExpression())
    return prob, x
