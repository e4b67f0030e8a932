"""Post-legalisation local search for formulation A (an addition to GauS's legalisation; not in the
paper).

GauS ends with a legal integer schedule ``t`` (the rounded, legalised Gaussian means). On
GS-Schedule data the objective ``ratio * sum_k peak_k + sum_e c_e (t_v - t_u)`` is dominated by
the peak (``ratio = 100``, weights in the thousands), and single ops left on a peak step are the
typical remaining loss. :func:`polish_resource` is a best-improvement descent over single-op
moves that keeps legality by construction:

* an op ``i`` may move to any step ``b`` in ``[lo_i, hi_i]`` with
  ``lo_i = max(0, max_u t_u + d_ui)`` and ``hi_i = min(D - 1, min_v t_v - d_iv)`` over
  distance-0 edges, so every dependence and the latency bound stay satisfied;
* the gain of every (op, step) pair within ``radius`` steps is computed at once (flat arrays
  of ``O(n * radius)`` pairs, never ``[n, D]``): the new peak of
  each resource is ``max(peak without steps a and b, load_a - w, load_b + w)`` from the three
  largest loads, and the communication change is ``(b - a)(c_in,i - c_out,i)``;
* the best move is applied when it lowers the objective, or keeps it and lowers the number of
  (resource, step) cells at the peak (so ties between several peak steps can be broken one
  step at a time). Moves of ops without usage change only communication; they are applied in
  batches (no two moved ops adjacent), which keeps the pass fast on 10,000-node graphs.

The descent stops at a local optimum, after ``max_moves`` moves or ``time_limit`` seconds. Only
reservation tables of length 1 (GS-Schedule data, random DAGs) are handled; other graphs are
returned unchanged. The caller verifies the result like any other schedule.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from twill.sched.gaus.graph import GauSGraph

__all__ = ["MoveRule", "polish_resource", "resource_terms"]


@dataclass(frozen=True)
class MoveRule:
    """Which moves a pass of :func:`polish_resource` applies.

    Parameters
    ----------
    batch
        Moves of ops with usage per pass: 1 (default) is the best-improvement descent; more
        applies, after the best move, further improving moves of the pass (see
        :func:`_more_moves`), which reaches a good level in fewer passes but may end at a
        different local optimum.
    radius
        Candidate steps of an op are its legal steps within ``radius`` of its current one, so
        a pass costs ``O(n * radius)`` instead of ``O(n * D)`` (memory too); farther moves
        take several passes. Windows of ``D <= 2 radius + 1`` steps are searched whole.
    """

    batch: int = 1
    radius: int = 32


class _Bounds:
    """Per-op legal move range ``[lo, hi]`` over distance-0 edges (recomputed with reduceat)."""

    def __init__(self, g: GauSGraph, D: int) -> None:
        fwd = g.forward
        src, dst, d = g.src[fwd], g.dst[fwd], g.delay[fwd]
        self.D = D
        self.n = g.n
        oi = np.argsort(dst, kind="stable")
        self.in_src, self.in_d, self.in_dst = src[oi], d[oi], dst[oi]
        self.in_nodes, self.in_start = np.unique(self.in_dst, return_index=True)
        oo = np.argsort(src, kind="stable")
        self.out_dst, self.out_d, self.out_src = dst[oo], d[oo], src[oo]
        self.out_nodes, self.out_start = np.unique(self.out_src, return_index=True)
        self.src, self.dst = src, dst
        # undirected adjacency (CSR) for the batched moves: ops next to a moved op keep still
        ends = np.concatenate([src, dst])
        order = np.argsort(ends, kind="stable")
        self.nbr = np.concatenate([dst, src])[order]
        self.nbr_ptr = np.searchsorted(ends[order], np.arange(g.n + 1))

    def __call__(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo = np.zeros(self.n, dtype=np.int64)
        hi = np.full(self.n, self.D - 1, dtype=np.int64)
        if self.in_nodes.size:
            lo[self.in_nodes] = np.maximum.reduceat(t[self.in_src] + self.in_d, self.in_start)
            hi[self.out_nodes] = np.minimum(
                self.D - 1, np.minimum.reduceat(t[self.out_dst] - self.out_d, self.out_start)
            )
        return np.maximum(lo, 0), hi


@dataclass
class _Descent:
    """The state of one descent, shared by its passes: the start steps ``t`` and per-step
    loads ``load[k, s]`` (both updated in place by every applied move), the per-op usage ``w``
    of the used resources, each op's net incoming communication weight ``cnet``, the ops with
    usage ``heavy``, the legal ranges ``bounds``, the peak weight ``ratio``, the tie tolerance
    ``tol`` and the search ``radius`` around an op's current step."""

    t: np.ndarray
    load: np.ndarray
    w: np.ndarray
    cnet: np.ndarray
    heavy: np.ndarray
    bounds: _Bounds
    ratio: float
    tol: float
    radius: int


def _top3(load: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Three largest values per row and their columns (padded with ``-inf`` / ``-1``)."""
    K, D = load.shape
    idx = np.argsort(-load, axis=1, kind="stable")[:, :3]
    val = np.take_along_axis(load, idx, axis=1)
    if D < 3:
        val = np.concatenate([val, np.full((K, 3 - D), -np.inf)], axis=1)
        idx = np.concatenate([idx, np.full((K, 3 - D), -1)], axis=1)
    return val, idx


def _more_moves(
    run: _Descent,
    best: tuple[np.ndarray, np.ndarray, np.ndarray],
    lo: np.ndarray,
    hi: np.ndarray,
    first: int,
    limit: int,
) -> int:
    """Further moves in the same pass after the best one (op ``first``), at most ``limit``.

    ``best = (gain, step, count change)`` is each heavy op's best target from the pass's gain
    arrays (:func:`_row_best`). Targets are tried in order of that gain; a move is applied
    only if, evaluated exactly on the current loads, it lowers the objective or keeps it and
    lowers the number of peak cells (so the descent still cannot cycle), and only for ops not
    next to an op moved in this pass (their legal ranges are unchanged). Updates ``t`` and
    ``load`` in place and returns the number of moves applied.
    """
    if limit <= 0:
        return 0
    t, load, w, cnet, heavy = run.t, run.load, run.w, run.cnet, run.heavy
    bounds, ratio, tol = run.bounds, run.ratio, run.tol
    rowmin, col, cnt = best
    rows = np.flatnonzero(np.isfinite(rowmin))
    rows = rows[np.lexsort((cnt[rows], rowmin[rows]))][: 2 * limit]
    touched = np.zeros(t.size, dtype=bool)

    def touch(i: int) -> None:
        touched[i] = True
        touched[bounds.nbr[bounds.nbr_ptr[i] : bounds.nbr_ptr[i + 1]]] = True

    def state(ld: np.ndarray) -> tuple[float, int]:
        pk = ld.max(axis=1)
        return ratio * float(pk.sum()), int((ld >= pk[:, None] - tol).sum())

    touch(first)
    peak_obj, count = state(load)
    done = 0
    for r in rows:
        i = int(heavy[r])
        b = int(col[r])
        a = int(t[i])
        if touched[i] or b == a or not lo[i] <= b <= hi[i]:
            continue
        new = load.copy()
        new[:, a] -= w[i]
        new[:, b] += w[i]
        new_obj, new_count = state(new)
        change = new_obj - peak_obj + (b - a) * cnet[i]
        if change < -tol or (abs(change) <= tol and new_count < count):
            load[:] = new
            t[i] = b
            peak_obj, count = new_obj, new_count
            touch(i)
            done += 1
            if done >= limit:
                break
    return done


def _row_best(
    key: np.ndarray, d_cnt: np.ndarray, rows: np.ndarray, b: np.ndarray, nrows: int, tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of the flat candidate arrays: the best gain, the first step within ``tol`` of
    it with the smallest count change, and that count change (``inf`` for rows with none)."""
    rowmin = np.full(nrows, np.inf)
    col = np.zeros(nrows, dtype=np.int64)
    cnt = np.full(nrows, np.inf)
    if rows.size == 0:
        return rowmin, col, cnt
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    present = rows[starts]
    rowmin[present] = np.minimum.reduceat(key, starts)
    near = key <= rowmin[rows] + tol
    cv = np.where(near, d_cnt, np.inf)
    cnt[present] = np.minimum.reduceat(cv, starts)
    hit = np.flatnonzero(cv == cnt[rows])
    first_rows, first = np.unique(rows[hit], return_index=True)
    col[first_rows] = b[hit[first]]
    return rowmin, col, cnt


def _candidates(
    a: np.ndarray, lo: np.ndarray, hi: np.ndarray, radius: int
) -> tuple[np.ndarray, np.ndarray]:
    """Flat ``(row, step)`` pairs: every legal step of each op within ``radius`` of ``a``."""
    lo_r = np.maximum(lo, a - radius)
    hi_r = np.minimum(hi, a + radius)
    cnt = np.maximum(hi_r - lo_r + 1, 0)
    rows = np.repeat(np.arange(a.size), cnt)
    off = np.cumsum(cnt) - cnt
    return rows, lo_r[rows] + np.arange(rows.size) - off[rows]


def _light_moves(
    t: np.ndarray,
    light: np.ndarray,
    cnet: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    bounds: _Bounds,
    tol: float,
) -> int:
    """Comm-only moves of the ops without usage, in one batch of non-adjacent ops.

    Each improving op jumps to the end of its legal range that lowers communication
    (``lo`` when its net incoming weight ``cnet`` is positive, else ``hi``); of two movers
    joined by an edge only the source moves, so the ranges used stay valid. Updates ``t`` in
    place and returns the number of ops moved.
    """
    target = np.where(cnet[light] > 0, lo[light], hi[light])
    gain = (target - t[light]) * cnet[light]
    mv = light[gain < -tol]
    if not mv.size:
        return 0
    mark = np.zeros(t.size, dtype=bool)
    mark[mv] = True
    clash = mark[bounds.src] & mark[bounds.dst]
    mark[bounds.dst[clash]] = False  # keep one end of every edge between movers
    mv = np.flatnonzero(mark)
    t[mv] = np.where(cnet[mv] > 0, lo[mv], hi[mv])
    return int(mv.size)


def _move_deltas(
    run: _Descent, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Objective and peak-cell-count changes of every candidate move of the ops with usage.

    Returns flat arrays over the candidates of :func:`_candidates`: ``rows`` (index into
    ``heavy``), target step ``b``, objective change ``d_obj``, change ``d_cnt`` of the number
    of (resource, step) cells at the peak, and ``ok`` (the target differs from the current
    step). New peaks come from the three largest loads per resource (:func:`_top3`), so no
    ``[n, D]`` array is built.
    """
    t, load, w, cnet, heavy = run.t, run.load, run.w, run.cnet, run.heavy
    ratio, tol = run.ratio, run.tol
    peak = load.max(axis=1)
    count = (load >= peak[:, None] - tol).sum(axis=1)
    val, idx = _top3(load)
    rows, b = _candidates(t[heavy], lo[heavy], hi[heavy], run.radius)
    ar = t[heavy][rows]
    ok = b != ar
    d_obj = (b - ar) * cnet[heavy][rows]
    d_cnt = np.zeros(d_obj.shape)
    for k in range(w.shape[1]):
        wk = w[heavy, k][rows]
        excl = np.where(
            (idx[k, 0] != ar) & (idx[k, 0] != b),
            val[k, 0],
            np.where((idx[k, 1] != ar) & (idx[k, 1] != b), val[k, 1], val[k, 2]),
        )
        new_a = load[k, ar] - wk
        new_b = load[k, b] + wk
        new_peak = np.maximum(np.maximum(excl, new_a), new_b)
        d_obj = d_obj + ratio * (new_peak - peak[k])
        on = wk > 0
        same = np.abs(new_peak - peak[k]) <= tol
        dc = -((load[k, ar] >= peak[k] - tol) & on).astype(float) + ((new_b >= peak[k] - tol) & on)
        d_cnt = d_cnt + np.where(same, dc, np.where(new_peak < peak[k], -count[k], 0.0))
    return rows, b, d_obj, d_cnt, ok


def _heavy_moves(run: _Descent, lo: np.ndarray, hi: np.ndarray, batch: int, budget: int) -> int:
    """One pass over the ops with usage: apply the best improving move, then (``batch > 1``)
    up to ``batch - 1`` further ones (:func:`_more_moves`), within ``budget`` moves.

    The best move lowers the objective most, ties broken by the largest drop in peak cells
    and then by the first candidate. Updates ``t`` and ``load`` in place and returns the
    number of moves applied (0 at a local optimum).
    """
    t, load, w, heavy, tol = run.t, run.load, run.w, run.heavy, run.tol
    rows, b, d_obj, d_cnt, ok = _move_deltas(run, lo, hi)
    score_ok = ok & ((d_obj < -tol) | ((np.abs(d_obj) <= tol) & (d_cnt < 0)))
    if not score_ok.any():
        return 0
    key = np.where(score_ok, d_obj, np.inf)
    best = key.min()
    cand = score_ok & (key <= best + tol)
    flat = np.flatnonzero(np.where(cand, d_cnt, np.inf) == np.where(cand, d_cnt, np.inf).min())
    i = heavy[rows[flat[0]]]
    s = int(b[flat[0]])
    load[:, t[i]] -= w[i]
    load[:, s] += w[i]
    t[i] = s
    if batch <= 1:
        return 1
    best_rows = _row_best(key, d_cnt, rows, b, heavy.size, tol)
    return 1 + _more_moves(run, best_rows, lo, hi, int(i), min(batch - 1, budget - 1))


def resource_terms(
    g: GauSGraph, t: np.ndarray, D: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Formulation A's terms at integer start steps ``t``, which every descent on it reads:
    ``w`` ``(n, K)``, each op's usage of the ``K`` resources some op uses; ``cnet`` ``(n,)``,
    each op's net communication weight (in-edges minus out-edges, distance 0, so the
    communication term is ``t @ cnet``); ``load`` ``(K, D)``, the usage per step. ``None``
    when there is nothing to descend: usage of more than one dimension, no ops, or
    ``D <= 1``."""
    if g.usage.shape[2] != 1 or g.n == 0 or D <= 1:
        return None
    w = g.usage[:, :, 0]
    w = w[:, w.sum(axis=0) > 0]
    fwd = g.forward
    cnet = np.bincount(g.dst[fwd], g.comm[fwd], minlength=g.n) - np.bincount(
        g.src[fwd], g.comm[fwd], minlength=g.n
    )
    load = np.zeros((w.shape[1], D))
    for k in range(w.shape[1]):
        load[k] = np.bincount(t, w[:, k], minlength=D)[:D]
    return w, cnet, load


def polish_resource(
    g: GauSGraph,
    t: np.ndarray,
    D: int,
    ratio: float,
    *,
    max_moves: int | None = None,
    time_limit: float | None = None,
    trace: list[tuple[float, float]] | None = None,
    rule: MoveRule | None = None,
) -> tuple[np.ndarray, int]:
    """Local descent on ``ratio * sum_k peak_k + sum_e c_e (t_v - t_u)`` from a legal ``t``.

    Parameters
    ----------
    g
        The graph (only distance-0 edges are considered, as in formulation A).
    t
        A legal start-step vector (not modified).
    D
        Latency bound.
    ratio
        Weight of the peak.
    max_moves
        Cap on applied moves (default ``4 * n``).
    time_limit
        Wall-clock cap in seconds (``None``: none).
    trace
        When given, ``(time.perf_counter(), objective)`` is appended after every pass that
        changed ``t`` (each intermediate ``t`` is legal by construction), so a caller can tell
        when the descent reached a given objective (the any-time curve of the search).
    rule
        Which moves a pass applies (:class:`MoveRule`: ``batch`` and ``radius``; ``None``:
        its defaults, the best-improvement descent within 32 steps).

    Returns
    -------
    (t, moves)
        The improved schedule (legal whenever the input was) and the number of moves applied.
    """
    t = np.array(t, dtype=np.int64)
    terms = resource_terms(g, t, D)
    if terms is None:
        return t, 0
    w, cnet, load = terms
    start = time.perf_counter()
    max_moves = 4 * g.n if max_moves is None else int(max_moves)
    bounds = _Bounds(g, D)
    heavy = np.flatnonzero(w.any(axis=1))
    light = np.flatnonzero(~w.any(axis=1) & (cnet != 0))
    tol = 1e-9 * max(1.0, float(ratio) * float(w.sum(axis=0).max(initial=1.0)))
    rule = MoveRule() if rule is None else rule
    run = _Descent(t, load, w, cnet, heavy, bounds, ratio, tol, rule.radius)
    moves = 0
    while moves < max_moves:
        if time_limit is not None and time.perf_counter() - start > time_limit:
            break
        lo, hi = bounds(t)
        changed = False
        if light.size:
            done = _light_moves(t, light, cnet, lo, hi, bounds, tol)
            if done:
                moves += done
                changed = True
                lo, hi = bounds(t)
        if heavy.size:
            done = _heavy_moves(run, lo, hi, rule.batch, max_moves - moves)
            moves += done
            changed = changed or done > 0
        if not changed:
            break
        if trace is not None:
            obj = ratio * float(load.max(axis=1, initial=0.0).sum()) + float(t @ cnet)
            trace.append((time.perf_counter(), obj))
    return t, moves
