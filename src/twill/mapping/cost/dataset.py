"""Cost-model accuracy on a dataset of (hardware, layer, mapping, Timeloop targets) rows, such
as DOSA's ``timeloop_sample.csv`` (``ucb-bar/dosa``; :mod:`twill.io.timeloop` reads the CSV).

Every row's mapping is costed by :func:`twill.mapping.cost.analytical.evaluate` and checked by
:func:`twill.mapping.mapping.verify_mapping`; the relative errors against the targets are
summarised by :func:`error_stats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from twill.mapping.arch import Arch
from twill.mapping.cost.analytical import evaluate
from twill.mapping.mapping import Mapping, verify_mapping
from twill.mapping.workload import Layer

__all__ = ["DatasetRow", "error_stats", "evaluate_rows"]


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


def evaluate_rows(
    data: Sequence[DatasetRow],
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Evaluate every dataset row (read by :func:`twill.io.timeloop.read_dosa_dataset`) with
    the cost model and verify its mapping.

    Returns
    -------
    rows, errors
        One dict per row (``cycles``, ``energy_uJ``, ``edp``, ``valid``, targets, mapping) and,
        when ``target.*`` columns exist, error statistics of cycles, energy and EDP against
        them (median, 95th percentile, max of the relative error; fraction exact).
    """
    rows: list[dict[str, Any]] = []
    pc, tc, pe, te, pd, td = [], [], [], [], [], []
    for r in data:
        out: dict[str, Any] = {"row": r.index, "layer": r.layer.key, "mapping": r.mapping_text}
        if r.mapping is None:
            out.update(cycles=None, energy_uJ=None, edp=None, valid=False, error=r.error)
        else:
            rep = evaluate(r.layer, r.arch, r.mapping)
            viol = verify_mapping(r.layer, r.arch, r.mapping)
            out.update(
                cycles=rep.cycles,
                energy_uJ=rep.energy_uj,
                edp=rep.edp,
                valid=not viol,
                utilisation=rep.utilisation,
                violations=[str(v) for v in viol],
            )
            if r.target_cycles is not None:
                pc.append(rep.cycles)
                tc.append(r.target_cycles)
            if r.target_energy_uj is not None:
                pe.append(rep.energy_uj)
                te.append(r.target_energy_uj)
            if r.target_edp is not None and r.target_energy_uj is not None and r.target_cycles:
                pd.append(rep.edp)
                td.append(r.target_energy_uj * r.target_cycles)
        out.update(
            target_cycles=r.target_cycles,
            target_energy_uJ=r.target_energy_uj,
            target_edp=r.target_edp,
        )
        rows.append(out)
    errors: dict[str, Any] = {}
    if tc:
        errors["cycles"] = error_stats(pc, tc)
    if te:
        errors["energy_uJ"] = error_stats(pe, te)
    if td:
        errors["edp"] = error_stats(pd, td)
    errors["rows"] = len(rows)
    errors["valid"] = sum(1 for x in rows if x["valid"])
    return rows, errors
