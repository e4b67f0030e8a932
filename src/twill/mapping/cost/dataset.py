"""Cost-model accuracy on a dataset of (hardware, layer, mapping, Timeloop targets) rows, such
as DOSA's ``timeloop_sample.csv`` (``ucb-bar/dosa``; :mod:`twill.io.timeloop` reads the CSV).

The rows travel as columns (:class:`DatasetColumns`): every mapping is costed in batches by
:func:`twill.mapping.cost.analytical.evaluate_many`, which gives each row exactly the numbers
of :func:`~twill.mapping.cost.analytical.evaluate` (``tests/mapping/cost/test_dataset.py``
compares all of them); the rows the batch finds invalid are checked again by
:func:`twill.mapping.mapping.verify_mapping`, which names the violations. The relative errors
against the targets are summarised by :func:`error_stats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import (
    ArchArrays,
    LayerArrays,
    MappingBatch,
    evaluate_many,
)
from twill.mapping.mapping import Mapping, parse_dosa_mapping, verify_mapping
from twill.mapping.workload import OPERANDS, Layer

__all__ = [
    "DatasetColumns",
    "MappingColumns",
    "DatasetRow",
    "columns_from_rows",
    "error_stats",
    "evaluate_columns",
    "evaluate_rows",
]

#: Rows costed per :func:`evaluate_many` call (its arrays stay in the cache).
CHUNK_ROWS = 4096


@dataclass(frozen=True)
class DatasetRow:
    """One row of DOSA's ``timeloop_sample.csv``: hardware, layer, mapping and Timeloop's
    targets (``None`` where absent)."""

    index: int
    layer: Layer
    arch: Arch
    mapping_text: str
    mapping: Mapping | None
    error: str | None
    target_cycles: float | None
    target_energy_uj: float | None
    target_edp: float | None


def error_stats(pred: list[float], target: list[float]) -> dict[str, float]:
    """Relative-error distribution of ``pred`` against ``target`` (|p - t| / t)."""
    import numpy as np

    p = np.asarray(pred, dtype=float)
    t = np.asarray(target, dtype=float)
    if p.size == 0:
        return {
            "n": 0,
            "exact_fraction": 0.0,
            "median": 0.0,
            "p95": 0.0,
            "max": 0.0,
            "mean_signed": 0.0,
        }
    rel = np.abs(p - t) / np.maximum(np.abs(t), 1e-300)
    return {
        "n": int(p.size),
        "exact_fraction": float(np.mean(np.abs(p - t) <= 0.5)),
        "median": float(np.median(rel)),
        "p95": float(np.percentile(rel, 95)),
        "max": float(rel.max()),
        "mean_signed": float(np.mean((p - t) / t)),
    }


@dataclass(frozen=True)
class DatasetColumns:
    """A dataset as columns, one entry per row (``B`` rows, ``L`` levels).

    ``index`` ``(B,)`` the row numbers (0 = the first data row); ``layers`` and ``archs`` the
    distinct layers and architectures (one level structure), ``layer_of`` and ``arch_of``
    ``(B,)`` each row's; ``mapping_text`` the mapping strings; ``temporal``, ``spatial`` and
    ``order`` ``(B, L, 7)`` and ``group_temporal``, ``group_spatial`` ``(B, L)`` the parsed
    mappings (G factors placed), ``keeps`` ``(B, L, 3)`` their kept W, I, O; ``error`` the
    parse error of each row (``None``: parsed); ``target_cycles``, ``target_energy_uj`` and
    ``target_edp`` ``(B,)`` (NaN where absent).
    """

    index: np.ndarray
    layers: tuple[Layer, ...]
    layer_of: np.ndarray
    archs: tuple[Arch, ...]
    arch_of: np.ndarray
    mapping_text: list[str]
    mappings: MappingColumns
    error: list[str | None]
    target_cycles: np.ndarray
    target_energy_uj: np.ndarray
    target_edp: np.ndarray

    def __len__(self) -> int:
        return int(self.index.shape[0])


def _target(value: float | None) -> float:
    return np.nan if value is None else value


@dataclass(frozen=True)
class MappingColumns:
    """Mappings as the columns of :class:`DatasetColumns` (``B`` rows, ``L`` levels): factors
    and orders ``(B, L, 7)``, G factors ``(B, L)``, kept W, I, O ``(B, L, 3)``; a row no
    mapping was put in holds ones, the canonical order and no kept tensor."""

    temporal: np.ndarray
    spatial: np.ndarray
    order: np.ndarray
    group_temporal: np.ndarray
    group_spatial: np.ndarray
    keeps: np.ndarray

    @classmethod
    def empty(cls, B: int, L: int) -> MappingColumns:
        return cls(
            np.ones((B, L, 7), dtype=np.int64),
            np.ones((B, L, 7), dtype=np.int64),
            np.tile(np.arange(7, dtype=np.int64), (B, L, 1)),
            np.ones((B, L), dtype=np.int64),
            np.ones((B, L), dtype=np.int64),
            np.zeros((B, L, 3), dtype=bool),
        )

    def put(self, b: int, mapping: Mapping, layer: Layer, arch: Arch) -> None:
        """Write ``mapping`` (of ``layer`` on ``arch``) into row ``b``."""
        placed = mapping.placed(layer.groups)
        self.temporal[b], self.spatial[b] = mapping.temporal, mapping.spatial
        self.order[b] = [[d.index for d in lv] for lv in mapping.order]
        self.group_temporal[b] = placed.group_temporal
        self.group_spatial[b] = placed.group_spatial
        self.keeps[b] = [[v in k for v in OPERANDS] for k in mapping.keeps_for(arch)]


def columns_from_rows(data: Sequence[DatasetRow]) -> DatasetColumns:
    """The rows of :func:`twill.io.timeloop.read_dosa_dataset` as :class:`DatasetColumns`."""
    layers: dict[str, Layer] = {}  # by key: bounds, strides, dilations, groups
    archs: dict[int, Arch] = {}  # by identity: the reader builds each architecture once
    maps = MappingColumns.empty(len(data), data[0].arch.n_levels if data else 1)
    for b, r in enumerate(data):
        if r.mapping is not None:
            maps.put(b, r.mapping, r.layer, r.arch)
    return DatasetColumns(
        index=np.array([r.index for r in data], dtype=np.int64),
        layer_of=_distinct(layers, [(r.layer.key, r.layer) for r in data]),
        arch_of=_distinct(archs, [(id(r.arch), r.arch) for r in data]),
        layers=tuple(layers.values()),
        archs=tuple(archs.values()),
        mapping_text=[r.mapping_text for r in data],
        mappings=maps,
        error=[None if r.mapping is not None else (r.error or "no mapping") for r in data],
        target_cycles=np.array([_target(r.target_cycles) for r in data], dtype=np.float64),
        target_energy_uj=np.array([_target(r.target_energy_uj) for r in data], np.float64),
        target_edp=np.array([_target(r.target_edp) for r in data], dtype=np.float64),
    )


def _distinct(seen: dict[Any, Any], items: list[tuple[Any, Any]]) -> np.ndarray:
    """Each item's number among the distinct keys (``seen`` collects key → first item)."""
    number: dict[Any, int] = {}
    for key, item in items:
        if key not in number:
            number[key] = len(seen)
            seen[key] = item
    return np.array([number[key] for key, _ in items], dtype=np.int64)


def _costs(cols: DatasetColumns) -> tuple[np.ndarray, ...]:
    """Cycles, energy (pJ), utilisation and validity ``(B,)`` of every parsed row, costed in
    chunks of :data:`CHUNK_ROWS` rows sharing one keep/bypass assignment."""
    B = len(cols)
    cycles, energy, util = np.zeros(B), np.zeros(B), np.zeros(B)
    valid = np.zeros(B, dtype=bool)
    parsed = np.array([e is None for e in cols.error], dtype=bool)
    if not parsed.any():
        return cycles, energy, util, valid
    layers = LayerArrays.of(cols.layers)
    archs = ArchArrays.of(cols.archs)
    mc = cols.mappings
    sig = np.packbits(mc.keeps.reshape(B, -1), axis=1, bitorder="little")
    sig = sig.astype(np.int64) @ (256 ** np.arange(sig.shape[1], dtype=np.int64))
    for s in np.unique(sig[parsed]):
        rows = np.flatnonzero(parsed & (sig == s))
        k = mc.keeps[rows[0]]
        keeps = tuple(
            frozenset(v for vi, v in enumerate(OPERANDS) if k[m, vi]) for m in range(len(k))
        )
        for lo in range(0, rows.size, CHUNK_ROWS):
            r = rows[lo : lo + CHUNK_ROWS]
            batch = MappingBatch(
                mc.temporal[r], mc.spatial[r], mc.order[r], mc.group_temporal[r],
                mc.group_spatial[r],
            )  # fmt: skip
            bc = evaluate_many(
                layers.take(cols.layer_of[r]), archs.take(cols.arch_of[r]), batch, keeps=keeps
            )
            cycles[r], energy[r], util[r] = bc.cycles, bc.energy_pj, bc.utilisation
            valid[r] = bc.valid & bool(k[-1].all())
    return cycles, energy, util, valid


def evaluate_columns(
    cols: DatasetColumns, *, rows: bool = True
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Evaluate every dataset row with the cost model and verify its mapping.

    Parameters
    ----------
    cols
        The rows (:func:`twill.io.timeloop.read_dosa_columns`, or :func:`columns_from_rows`).
    rows
        Build the per-row dicts (``False``: only the statistics, an empty list of rows).

    Returns
    -------
    rows, errors
        One dict per row (``cycles``, ``energy_uJ``, ``edp``, ``valid``, targets, mapping) and,
        when ``target.*`` columns exist, error statistics of cycles, energy and EDP against
        them (median, 95th percentile, max of the relative error; fraction exact), with the
        counts of ``rows`` and ``valid`` ones.

    Notes
    -----
    Every number is the one :func:`~twill.mapping.cost.analytical.evaluate` gives the row's
    layer, architecture and mapping, and ``valid`` is :func:`verify_mapping`'s verdict (the
    rows the batch finds invalid are verified one by one, for the names of the violations).
    """
    cycles, energy_pj, util, valid = _costs(cols)
    energy_uj = energy_pj * 1e-6
    edp = energy_uj * cycles
    out = _row_dicts(cols, (cycles, energy_uj, edp, valid, util)) if rows else []
    ok = np.array([e is None for e in cols.error], dtype=bool)
    tc, te, td = cols.target_cycles, cols.target_energy_uj, cols.target_edp
    errors: dict[str, Any] = {}
    has_c, has_e = ok & ~np.isnan(tc), ok & ~np.isnan(te)
    if has_c.any():
        errors["cycles"] = error_stats(cycles[has_c], tc[has_c])
    if has_e.any():
        errors["energy_uJ"] = error_stats(energy_uj[has_e], te[has_e])
    has_d = has_e & ~np.isnan(td) & ~np.isnan(tc) & (np.nan_to_num(tc) != 0)
    if has_d.any():
        errors["edp"] = error_stats(edp[has_d], te[has_d] * tc[has_d])
    errors["rows"] = len(cols)
    errors["valid"] = int(np.count_nonzero(valid))
    return out, errors


def _row_dicts(cols: DatasetColumns, costs: tuple[np.ndarray, ...]) -> list[dict[str, Any]]:
    """One JSON-ready dict per row from the cost columns (cycles, energy µJ, EDP, valid,
    utilisation); the invalid rows get the verifier's violations."""
    cycles, energy_uj, edp, valid, util = costs
    keys = [ly.key for ly in cols.layers]
    target = [
        [None if x != x else x for x in a.tolist()]
        for a in (cols.target_cycles, cols.target_energy_uj, cols.target_edp)
    ]
    it = zip(
        cols.index.tolist(), cols.layer_of.tolist(), cols.arch_of.tolist(), cols.mapping_text,
        cycles.astype(np.int64).tolist(), energy_uj.tolist(), edp.tolist(), valid.tolist(),
        util.tolist(), cols.error, *target, strict=True,
    )  # fmt: skip
    out: list[dict[str, Any]] = []
    for i, lo, ao, text, cyc, en, ed, ok, ut, err, tc, te, td in it:
        if err is not None:
            out.append(
                {
                    "row": i,
                    "layer": keys[lo],
                    "mapping": text,
                    "cycles": None,
                    "energy_uJ": None,
                    "edp": None,
                    "valid": False,
                    "error": err,
                    "target_cycles": tc,
                    "target_energy_uJ": te,
                    "target_edp": td,
                }
            )
            continue
        viol = [] if ok else _violations(cols.layers[lo], cols.archs[ao], text)
        out.append({"row": i, "layer": keys[lo], "mapping": text, "cycles": cyc,
                    "energy_uJ": en, "edp": ed, "valid": ok, "utilisation": ut,
                    "violations": viol, "target_cycles": tc, "target_energy_uJ": te,
                    "target_edp": td})  # fmt: skip
    return out


def _violations(layer: Layer, arch: Arch, text: str) -> list[str]:
    """The violations :func:`verify_mapping` names for ``text`` (parsed again: only the rows
    the batch found invalid come here)."""
    return [str(v) for v in verify_mapping(layer, arch, parse_dosa_mapping(text, layer, arch))]


def evaluate_rows(
    data: Sequence[DatasetRow],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Evaluate every dataset row (read by :func:`twill.io.timeloop.read_dosa_dataset`) with
    the cost model and verify its mapping: :func:`evaluate_columns` of
    :func:`columns_from_rows`."""
    return evaluate_columns(columns_from_rows(data))
