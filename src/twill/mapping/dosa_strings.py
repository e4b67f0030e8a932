"""Many DOSA mapping strings at once, as arrays (DOSA's string form; ``ucb-bar/dosa``).

:func:`parse_dosa_mappings` reads a column of strings such as
``L3[WIO] Q4 K8 P56 R3 - L2[WI] N1 K8X - L1[O] K2 S3 C2 Q14 C2X - L0[W] N1`` into the factor,
order and keep arrays of :class:`~twill.mapping.cost.analytical.MappingBatch` without a
Python step per loop: one regular expression per string admits it, then the tokens of every
admitted string are decoded together as a byte matrix.

Guarantee: an admitted row gives exactly the factors, loop orders and kept tensors of
:func:`twill.mapping.mapping.parse_dosa_mapping` (pinned over every shipped dataset row and
over edge cases by ``tests/mapping/test_dosa_strings.py``). A row is admitted only in DOSA's
own spelling: every level as ``L<digit>[tensors]``, one space between tokens, `` - `` between
levels, upper-case letters, no G loops, factors without leading zeros, each level once
(``L0`` to ``L<n-1>``) and each loop at most once per level and kind. Every other row is left
to :func:`~twill.mapping.mapping.parse_dosa_mapping` (``ok`` is false), which accepts it or
names what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from twill.mapping.workload import DIMS, OPERANDS

__all__ = ["DosaMappings", "parse_dosa_mappings"]

_LOOP = r"[RSPQCKN][1-9]\d{0,8}X?"
_LEVEL = rf"L\d\[[WIO]{{0,3}}\](?: {_LOOP})*"
_ADMIT = re.compile(rf"{_LEVEL}(?: - {_LEVEL})*")
_WIDTH = 12  # bytes of the longest admitted token: a letter, 9 digits and X ("L3[WIO]" is 7)
_DIM_OF = np.full(256, -1, dtype=np.int64)
for _i, _d in enumerate(DIMS):
    _DIM_OF[ord(_d.value)] = _i


@dataclass(frozen=True)
class DosaMappings:
    """Parsed strings, one row each (``B`` rows, ``L`` levels innermost first).

    ``temporal``/``spatial`` ``(B, L, 7)`` int64 factors in R, S, P, Q, C, K, N order;
    ``order`` ``(B, L, 7)`` dimension indices of each level's temporal loops, outer → inner
    (the written ones first, the others after in R…N order, as
    :meth:`~twill.mapping.mapping.Mapping.from_levels`); ``keeps`` ``(B, L, 3)`` kept W, I, O;
    ``ok`` ``(B,)``: admitted (the other rows hold ones and are to be parsed one by one).
    """

    temporal: np.ndarray
    spatial: np.ndarray
    order: np.ndarray
    keeps: np.ndarray
    ok: np.ndarray


def parse_dosa_mappings(texts: Sequence[str], n_levels: int) -> DosaMappings:
    """Parse a column of DOSA mapping strings of ``n_levels`` levels each.

    Parameters
    ----------
    texts
        The strings (e.g. a dataset's ``mapping.mapping`` column).
    n_levels
        The architecture's level count: a string with another count is not admitted.

    Returns
    -------
    DosaMappings
        Rows with ``ok`` false were not admitted (another spelling, a G loop, a repeated or
        missing level, a repeated loop, another level count): parse those with
        :func:`~twill.mapping.mapping.parse_dosa_mapping`.

    Examples
    --------
    >>> p = parse_dosa_mappings(["L1[WIO] K4 C2 - L0[W] C8 K2X", "L1[WIO] K4 - L0 C8"], 2)
    >>> p.ok.tolist(), int(p.temporal[0, 1, 5]), int(p.spatial[0, 0, 5]), p.order[0, 1, :2].tolist()
    ([True, False], 4, 2, [5, 4])
    """
    B, L = len(texts), int(n_levels)
    temporal = np.ones((B, L, 7), dtype=np.int64)
    spatial = np.ones((B, L, 7), dtype=np.int64)
    keeps = np.zeros((B, L, 3), dtype=bool)
    ok = np.fromiter(map(bool, map(_ADMIT.fullmatch, texts)), dtype=bool, count=B)
    rows = np.flatnonzero(ok)
    rank = np.tile(np.arange(7, 14, dtype=np.int64), (B, L, 1))  # unwritten loops: R..N last
    if rows.size:
        tok = _token_matrix([texts[r] for r in rows])
        bad = _decode(tok, rows, L, (temporal, spatial, keeps, rank))
        ok[bad] = False
    order = np.argsort(rank, axis=2, kind="stable")
    temporal[~ok], spatial[~ok], order[~ok], keeps[~ok] = 1, 1, np.arange(7), False
    return DosaMappings(temporal, spatial, order, keeps, ok)


def _token_matrix(texts: list[str]) -> np.ndarray:
    """The whitespace-separated tokens of ``texts`` (ASCII, admitted), a ``;`` token between
    two strings, as a zero-padded byte matrix ``(N, 12)``."""
    tokens = " ; ".join(texts).encode("ascii").split()
    return np.array(tokens, dtype=f"S{_WIDTH}").view(np.uint8).reshape(len(tokens), _WIDTH)


def _decode(
    tok: np.ndarray,
    rows: np.ndarray,
    L: int,
    out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """Write the factors, keeps and temporal-loop ranks of the admitted ``rows`` (their tokens
    in ``tok``) into ``out``; return the rows to reject (a level missing, repeated or beyond
    ``L``, a loop written twice)."""
    temporal, spatial, keeps, rank = out
    c0 = tok[:, 0]
    sep, level, loop = c0 == ord(";"), c0 == ord("L"), _DIM_OF[c0] >= 0
    row = rows[np.cumsum(sep)]  # the dataset row of every token
    idx = np.arange(len(tok))
    lvl_no = tok[:, 1].astype(np.int64) - ord("0")
    at = lvl_no[np.maximum.accumulate(np.where(level, idx, 0))]  # each token's level
    reject = np.zeros(temporal.shape[0], dtype=bool)
    reject[row[level & (lvl_no >= L)]] = True
    lv_rows, lv_no = row[level], np.minimum(lvl_no[level], L - 1)
    seen = np.bincount(lv_rows * L + lv_no, minlength=temporal.shape[0] * L).reshape(-1, L)
    reject[rows] |= np.any(seen[rows] != 1, axis=1)
    for vi, v in enumerate(OPERANDS):
        has = np.any(tok[level, 2:] == ord(v.value), axis=1)
        keeps[lv_rows, lv_no, vi] = has
    lt = tok[loop]  # loop tokens: a dimension letter, 1 to 9 digits, an optional X
    length = np.count_nonzero(lt, axis=1)
    lp_x = lt[np.arange(len(lt)), length - 1] == ord("X")
    lp_val = np.zeros(len(lt), dtype=np.int64)
    for j in range(1, int(length.max(initial=1))):
        digit = lt[:, j].astype(np.int64) - ord("0")
        lp_val = np.where((digit >= 0) & (digit <= 9), lp_val * 10 + digit, lp_val)
    lp_row, lp_lvl, lp_dim = row[loop], np.minimum(at[loop], L - 1), _DIM_OF[lt[:, 0]]
    key = ((lp_row * L + lp_lvl) * 7 + lp_dim) * 2 + lp_x
    twice = np.bincount(key, minlength=temporal.shape[0] * L * 14) > 1
    reject[np.unique(key[twice[key]] // (L * 14))] = True
    sp, tm = lp_x, ~lp_x
    spatial[lp_row[sp], lp_lvl[sp], lp_dim[sp]] = lp_val[sp]
    temporal[lp_row[tm], lp_lvl[tm], lp_dim[tm]] = lp_val[tm]
    group = lp_row[tm] * L + lp_lvl[tm]  # temporal loops of one level are contiguous
    k = np.arange(group.size)
    start = np.maximum.accumulate(np.where(np.diff(group, prepend=-1) != 0, k, 0))
    rank[lp_row[tm], lp_lvl[tm], lp_dim[tm]] = k - start
    return reject
