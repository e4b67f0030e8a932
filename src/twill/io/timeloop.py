"""Readers for Timeloop-style YAML and DOSA's CSV: problems, architectures, mappings
(CoSA spec §1.2, §2.1, §5.2; FADiff spec §2-§3).

Every reader validates first (collecting every defect with its key path), then builds typed
objects (:class:`~twill.mapping.workload.Layer`, :class:`~twill.mapping.arch.Arch`,
:class:`~twill.mapping.mapping.Mapping`). Malformed input raises
:class:`~twill.errors.InvalidProblemError` naming the file, the key path and what is wrong.

Supported formats:

* problem: ``problem: {R, S, P, Q, C, K, N, Wstride, Hstride, Wdilation, Hdilation}`` (CoSA,
  DOSA), plus an optional group count ``G`` (C and K per group); Timeloop v0.4
  ``problem: {instance: {...}}`` is accepted too. :func:`layer_yaml` writes one.
* architecture: Timeloop v1 ``arch: {arithmetic, storage: [...]}`` (CoSA's Simba) and the v0.3
  ``architecture: {subtree: ...}`` tree (DOSA's Gemmini). Energies: an optional per-level
  ``energy_pj`` (pJ per word access) wins; otherwise Simba levels take the golden-run table
  scaled by block size (DEC-8) and Gemmini levels DOSA's fitted formulas.
* mapping: Timeloop mapping YAML (``mapping: [{target, type, factors, permutation}, ...]``).
* dataset: DOSA's ``timeloop_sample.csv`` rows (``arch.*``, ``prob.*``, ``mapping.mapping``,
  ``target.*``).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from twill.errors import InputFormatError, InvalidProblemError
from twill.io.text import read_text_file
from twill.mapping.arch import (
    SIMBA_ENERGY_PJ,
    Arch,
    MemoryLevel,
    gemmini_arch,
    simba_energy,
)
from twill.mapping.mapping import Mapping, parse_dosa_mapping
from twill.mapping.workload import DIMS, OPERANDS, Dim, Layer, Operand

__all__ = [
    "load_yaml",
    "validate_layer",
    "build_layer",
    "read_layer",
    "read_network",
    "validate_arch",
    "build_arch",
    "read_arch",
    "read_mapping",
    "check_layer_fits",
    "DatasetRow",
    "read_dosa_dataset",
    "evaluate_dataset",
    "error_stats",
]

_TENSOR = {"weights": Operand.W, "inputs": Operand.I, "outputs": Operand.O}
_PROBLEM_KEYS = {
    "R": "R",
    "S": "S",
    "P": "P",
    "Q": "Q",
    "C": "C",
    "K": "K",
    "N": "N",
}
_STRIDE_KEYS = ("Wstride", "Hstride", "Wdilation", "Hdilation", "G")


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file; syntax errors become :class:`InputFormatError` naming the file."""
    import yaml

    p = Path(path)
    text = read_text_file(p)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputFormatError(
            f"invalid YAML{where}: {getattr(exc, 'problem', exc)}", source=str(p)
        ) from None


# --------------------------------------------------------------------------- problems
def _problem_section(data: Any) -> tuple[dict[str, Any] | None, str, list[str]]:
    if not isinstance(data, dict):
        return (
            None,
            "",
            [f"top level: expected a mapping with key 'problem', found {type(data).__name__}"],
        )
    prob = data.get("problem", data if "R" in data or "P" in data else None)
    if not isinstance(prob, dict):
        return None, "", ["problem: missing (expected 'problem: {R, S, P, Q, C, K, N, ...}')"]
    if isinstance(prob.get("instance"), dict):  # Timeloop v0.4
        return prob["instance"], "problem.instance", []
    return prob, "problem", []


def validate_layer(data: Any) -> list[str]:
    """Every defect of a parsed problem YAML, each with its key path (empty = valid)."""
    prob, base, bad = _problem_section(data)
    if prob is None:
        return bad
    for key in _PROBLEM_KEYS:
        if key not in prob:
            if key == "N" or key in ("R", "S", "P", "Q"):
                continue  # defaults to 1
            bad.append(f"{base}.{key}: missing (a positive integer is required)")
            continue
        v = prob[key]
        if isinstance(v, bool) or not isinstance(v, int):
            bad.append(f"{base}.{key}: must be a positive integer, found {v!r}")
        elif v < 1:
            bad.append(f"{base}.{key}: must be a positive integer, found {v}")
    for key in _STRIDE_KEYS:
        v = prob.get(key, 1)
        if (
            isinstance(v, bool)
            or not isinstance(v, int)
            or v < 0
            or (v == 0 and key[1:] != "dilation")
        ):
            bad.append(f"{base}.{key}: must be a positive integer, found {v!r}")
    unknown = set(prob) - set(_PROBLEM_KEYS) - set(_STRIDE_KEYS) - {"shape", "name", "count"}
    for key in sorted(unknown):
        bad.append(
            f"{base}.{key}: unknown key (allowed: R S P Q C K N G Wstride Hstride "
            "Wdilation Hdilation shape)"
        )
    return bad


def build_layer(data: Any, name: str) -> Layer:
    """Build a :class:`Layer` from validated problem data (dilation 0 is read as 1, DEC-12)."""
    prob, _base, _ = _problem_section(data)
    assert prob is not None
    dims = {Dim(k): int(prob.get(k, 1)) for k in _PROBLEM_KEYS}
    return Layer(
        name,
        dims,
        w_stride=int(prob.get("Wstride", 1)),
        h_stride=int(prob.get("Hstride", 1)),
        w_dilation=int(prob.get("Wdilation", 1)) or 1,
        h_dilation=int(prob.get("Hdilation", 1)) or 1,
        count=int(prob.get("count", 1)),
        groups=int(prob.get("G", 1)),
    )


def layer_yaml(layer: Layer) -> dict[str, Any]:
    """The Timeloop-style problem document of ``layer`` (``G`` written only when > 1).

    :func:`build_layer` reads it back to an equal layer (count aside).
    """
    prob: dict[str, Any] = {d.value: layer.dim(d) for d in Dim}
    if layer.groups > 1:
        prob["G"] = layer.groups
    prob.update(
        Wstride=layer.w_stride,
        Hstride=layer.h_stride,
        Wdilation=layer.w_dilation,
        Hdilation=layer.h_dilation,
        shape="cnn-layer",
    )
    return {"problem": prob}


def read_layer(path: str | Path, *, name: str | None = None, count: int = 1) -> Layer:
    """Read a Timeloop-style problem YAML (validate, then build).

    Raises
    ------
    InvalidProblemError
        Listing every defect with its key path, e.g. ``problem.K: must be a positive integer``.
    """
    p = Path(path)
    data = load_yaml(p)
    bad = validate_layer(data)
    if bad:
        raise InvalidProblemError(bad, source=str(p))
    layer = build_layer(data, name or p.stem)
    return replace(layer, count=count) if count != 1 else layer


def read_network(directory: str | Path, *, unique: bool = True) -> list[Layer]:
    """Read a network folder (CoSA ``*_graph`` or DOSA workload folder).

    Layer counts come from ``layer_count.yaml`` (DOSA) or from how often each layer's shape
    occurs in ``layers.yaml`` (CoSA). With ``unique`` (default) each distinct shape appears
    once, carrying its count; otherwise every entry of ``layers.yaml`` is returned.
    """
    d = Path(directory)
    if not d.is_dir():
        raise InvalidProblemError("not a directory", source=str(d))
    order_file = d / "layers.yaml"
    if order_file.exists():
        names = load_yaml(order_file)
        if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
            raise InvalidProblemError(
                "layers.yaml: expected a list of layer file stems", source=str(order_file)
            )
    else:
        names = sorted(
            p.stem for p in d.glob("*.yaml") if p.stem not in ("layer_count", "unique_layers")
        )
    if not names:
        raise InvalidProblemError("no layer YAML files (and no layers.yaml) in it", source=str(d))
    missing = [n for n in names if not (d / f"{n}.yaml").exists()]
    if missing:
        raise InvalidProblemError(
            [f"layers.yaml: layer file {n}.yaml not found" for n in missing], source=str(d)
        )
    layers = [read_layer(d / f"{n}.yaml") for n in names]
    if not unique:
        return layers
    counts: dict[str, int] = {}
    first: dict[str, Layer] = {}
    for layer in layers:
        counts[layer.key] = counts.get(layer.key, 0) + 1
        first.setdefault(layer.key, layer)
    lc = d / "layer_count.yaml"
    if lc.exists():
        data = load_yaml(lc) or {}
        for key, entry in data.items():
            k = str(key)
            if k in first and isinstance(entry, dict) and isinstance(entry.get("count"), int):
                counts[k] = entry["count"]
    return [replace(first[k], count=counts[k]) for k in first]


# ----------------------------------------------------------------------- architectures
_DEFAULT_KEEPS = {
    "registers": {Operand.W},
    "accumulationbuffer": {Operand.O},
    "accumulator": {Operand.O},
    "weightbuffer": {Operand.W},
    "inputbuffer": {Operand.I},
    "globalbuffer": {Operand.I, Operand.O},
    "scratchpad": {Operand.W, Operand.I},
    "dram": {Operand.W, Operand.I, Operand.O},
}


def _flatten_v03(node: dict[str, Any], mult: int, out: list[dict[str, Any]], path: str) -> None:
    """Walk a Timeloop v0.3 ``subtree`` outer → inner, collecting local components."""
    name = str(node.get("name", ""))
    mt = re.search(r"\[(\d+)\.\.(\d+)\]$", name)
    if mt:
        mult *= int(mt.group(2)) - int(mt.group(1)) + 1
    for i, comp in enumerate(node.get("local", []) or []):
        if isinstance(comp, dict):
            out.append({**comp, "_path": f"{path}.local[{i}]", "_mult": mult})
    for i, child in enumerate(node.get("subtree", []) or []):
        if isinstance(child, dict):
            _flatten_v03(child, mult, out, f"{path}.subtree[{i}]")


def _arch_components(data: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None, list[str]]:
    """Storage levels inner → outer (each with ``_path``) and the arithmetic entry."""
    bad: list[str] = []
    if not isinstance(data, dict):
        return (
            [],
            None,
            [f"top level: expected 'arch:' or 'architecture:', found {type(data).__name__}"],
        )
    if isinstance(data.get("arch"), dict):
        arch = data["arch"]
        storage = arch.get("storage")
        if not isinstance(storage, list) or not storage:
            return (
                [],
                None,
                ["arch.storage: missing or empty (expected a list of levels, inner to outer)"],
            )
        comps = [
            {**s, "_path": f"arch.storage[{i}]"}
            for i, s in enumerate(storage)
            if isinstance(s, dict)
        ]
        arith = arch.get("arithmetic") if isinstance(arch.get("arithmetic"), dict) else None
        if arith is None:
            bad.append("arch.arithmetic: missing (expected {instances, word-bits})")
        return comps, arith, bad
    if isinstance(data.get("architecture"), dict):
        flat: list[dict[str, Any]] = []
        for i, node in enumerate(data["architecture"].get("subtree", []) or []):
            if isinstance(node, dict):
                _flatten_v03(node, 1, flat, f"architecture.subtree[{i}]")
        comps, arith = [], None
        for c in flat:
            cls = str(c.get("class", "")).lower()
            if "mac" in cls or "intmac" in cls:
                arith = {
                    "instances": c.get("attributes", {}).get("instances", c["_mult"]),
                    "_path": c["_path"],
                }
                continue
            attrs = dict(c.get("attributes", {}) or {})
            attrs.setdefault("instances", c["_mult"])
            comps.append({"name": c.get("name"), **attrs, "technology": cls, "_path": c["_path"]})
        comps.reverse()  # inner first
        if not comps:
            bad.append("architecture.subtree: no storage levels found")
        if arith is None and comps:
            arith = {"instances": comps[0].get("instances", 1)}
        return comps, arith, bad
    return [], None, ["top level: missing 'arch' (Timeloop v1) or 'architecture' (v0.3)"]


def validate_arch(data: Any) -> list[str]:
    """Every defect of a parsed architecture YAML, each with its key path."""
    comps, arith, bad = _arch_components(data)
    if len(comps) < 2 and not bad:
        bad.append("storage: need at least two levels (an on-chip buffer and DRAM)")
    for i, c in enumerate(comps):
        path = c["_path"]
        if not c.get("name"):
            bad.append(f"{path}.name: missing")
        inst = c.get("instances", 1)
        if isinstance(inst, bool) or not isinstance(inst, int) or inst < 1:
            bad.append(f"{path}.instances: must be a positive integer, found {inst!r}")
        is_top = i == len(comps) - 1
        ent = c.get("entries", c.get("depth") if "width" not in c else None)
        if not is_top:
            if ent is None:
                bad.append(f"{path}.entries: missing (on-chip levels need a capacity in words)")
            elif isinstance(ent, bool) or not isinstance(ent, int) or ent < 1:
                bad.append(f"{path}.entries: must be a positive integer, found {ent!r}")
        wb = c.get("word-bits", 8)
        if isinstance(wb, bool) or not isinstance(wb, int) or wb < 1:
            bad.append(f"{path}.word-bits: must be a positive integer, found {wb!r}")
        e = c.get("energy_pj")
        if e is not None and (not isinstance(e, int | float) or e < 0):
            bad.append(f"{path}.energy_pj: must be a non-negative number, found {e!r}")
    if comps:
        top = comps[-1]
        tech = str(top.get("technology", top.get("class", ""))).lower()
        if "dram" not in tech and "dram" not in str(top.get("name", "")).lower():
            bad.append(f"{top['_path']}: the outermost level must be DRAM (missing level)")
    if arith is not None:
        inst = arith.get("instances")
        if isinstance(inst, bool) or not isinstance(inst, int) or inst < 1:
            bad.append(
                f"{arith.get('_path', 'arch.arithmetic')}.instances: must be a positive integer, "
                f"found {inst!r}"
            )
    ms = data.get("mapspace") if isinstance(data, dict) else None
    if ms is not None:
        bad.extend(_validate_mapspace(ms, {c.get("name") for c in comps}))
    return bad


def _validate_mapspace(ms: Any, names: set[Any]) -> list[str]:
    bad = []
    cons = ms.get("constraints") if isinstance(ms, dict) else None
    if not isinstance(cons, list):
        return ["mapspace.constraints: expected a list"]
    for i, c in enumerate(cons):
        if not isinstance(c, dict):
            bad.append(f"mapspace.constraints[{i}]: expected a mapping")
            continue
        if c.get("type") == "datatype":
            if c.get("target") not in names:
                bad.append(f"mapspace.constraints[{i}].target: unknown level {c.get('target')!r}")
            for key in ("keep", "bypass"):
                for t in c.get(key, []) or []:
                    if str(t).lower() not in _TENSOR:
                        bad.append(f"mapspace.constraints[{i}].{key}: unknown tensor {t!r}")
    return bad


def _keeps_from_mapspace(ms: Any) -> dict[str, frozenset[Operand]]:
    out: dict[str, frozenset[Operand]] = {}
    for c in (ms or {}).get("constraints", []) or []:
        if isinstance(c, dict) and c.get("type") == "datatype":
            out[c["target"]] = frozenset(_TENSOR[str(t).lower()] for t in c.get("keep", []) or [])
    return out


def build_arch(data: Any, name: str, *, mapspace: Any = None) -> Arch:
    """Build an :class:`Arch` from validated architecture data.

    Gemmini (levels Registers/Accumulator/Scratchpad/DRAM) gets DOSA's energies, bandwidths and
    spatial rules through :func:`~twill.mapping.arch.gemmini_arch`; Simba-style levels get the
    golden-run energies scaled by block size; ``energy_pj`` on a level overrides either.
    """
    comps, arith, _ = _arch_components(data)
    names = [str(c["name"]).strip() for c in comps]
    keeps = _keeps_from_mapspace(
        mapspace or (data.get("mapspace") if isinstance(data, dict) else None)
    )
    macs = int((arith or {}).get("instances", comps[0].get("instances", 1)))
    lowered = [n.lower() for n in names]
    if lowered == ["registers", "accumulator", "scratchpad", "dram"]:
        acc, sp, dram = comps[1], comps[2], comps[3]
        pe_dim = int(acc.get("instances", 16))
        acc_kb = acc["entries"] * acc["instances"] * acc.get("word-bits", 32) / 8 / 1024
        sp_kb = sp["entries"] * sp.get("word-bits", 8) / 8 / 1024
        arch = gemmini_arch(
            pe_dim, sp_kb, acc_kb, dram_bandwidth=float(dram.get("shared_bandwidth", 8)), name=name
        )
        if "shared_bandwidth" in sp:
            arch = arch.with_level("Scratchpad", bandwidth=float(sp["shared_bandwidth"]))
        if "shared_bandwidth" in acc:
            arch = arch.with_level("Accumulator", bandwidth=float(acc["shared_bandwidth"]))
        for c in comps:
            if c.get("energy_pj") is not None:
                arch = arch.with_level(str(c["name"]).strip(), energy_pj=float(c["energy_pj"]))
        return arch
    levels = []
    for i, c in enumerate(comps):
        nm = names[i]
        is_top = i == len(comps) - 1
        block = int(c.get("block-size", c.get("block_size", 1)) or 1)
        if c.get("energy_pj") is not None:
            energy = float(c["energy_pj"])
        elif nm in SIMBA_ENERGY_PJ:
            energy = simba_energy(nm, block)
        else:
            energy = 0.0
        kp = keeps.get(nm) or frozenset(_DEFAULT_KEEPS.get(nm.lower(), set()))
        if is_top:
            kp = frozenset(OPERANDS)
        bw = c.get("bandwidth", c.get("shared_bandwidth"))
        partition = None
        if kp == frozenset({Operand.I, Operand.O}):
            partition = ((Operand.I, 0.25), (Operand.O, 0.75))  # CoSA v0.1.0 GB split (DEC-2)
        levels.append(
            MemoryLevel(
                name=nm,
                entries=None if is_top else int(c.get("entries", c.get("depth", 1))),
                instances=int(c.get("instances", 1)),
                word_bits=int(c.get("word-bits", 8)),
                keeps=frozenset(kp),
                energy_pj=energy,
                bandwidth=None,  # DEC-7: DRAM bandwidth not enforced unless asked
                block_size=block,
                partition=partition,
            )
        )
        if bw is not None and c.get("enforce_bandwidth"):
            levels[-1] = replace(levels[-1], bandwidth=float(bw))
    mac_e = float((arith or {}).get("energy_pj", SIMBA_ENERGY_PJ["MAC"][0]))
    return Arch(name, tuple(levels), macs, mac_e)


def read_arch(path: str | Path, *, mapspace: str | Path | None = None) -> Arch:
    """Read a Timeloop architecture YAML (validate, then build).

    Parameters
    ----------
    path
        ``simba.yaml``-style (v1) or DOSA's Gemmini ``arch.yaml`` (v0.3).
    mapspace
        Optional mapspace YAML with ``datatype`` keep/bypass constraints; a ``mapspace.yaml``
        next to ``path`` is used when present.
    """
    p = Path(path)
    data = load_yaml(p)
    bad = validate_arch(data)
    ms_data = None
    ms_path = Path(mapspace) if mapspace else p.with_name("mapspace.yaml")
    if ms_path.exists() and ms_path != p:
        ms_data = load_yaml(ms_path)
        ms_data = ms_data.get("mapspace", ms_data) if isinstance(ms_data, dict) else ms_data
        comps, _, _ = _arch_components(data)
        ms_bad = _validate_mapspace(ms_data, {c.get("name") for c in comps})
        if ms_bad and mapspace:
            bad += [f"{ms_path.name}: {b}" for b in ms_bad]
        elif ms_bad:
            ms_data = None
    if bad:
        raise InvalidProblemError(bad, source=str(p))
    arch = build_arch(data, p.stem, mapspace=ms_data)
    arch_bad = arch.check()
    if arch_bad:
        raise InvalidProblemError(arch_bad, source=str(p))
    return arch


def check_layer_fits(layer: Layer, arch: Arch, source: str | None = None) -> None:
    """Raise when no mapping can exist: the smallest tile (one word of every kept tensor) does
    not fit some level, e.g. weights that cannot fit any tile at the innermost level."""
    bad = [f"{d}" for d in layer.check()]
    for m, lv in enumerate(arch.levels):
        if lv.entries is None:
            continue
        need = sum(1 for _v in lv.keeps)
        if need > lv.entries:
            kept = "".join(v.value for v in OPERANDS if v in lv.keeps)
            bad.append(
                f"levels[{m}] ({lv.name}).entries: {lv.entries} words cannot hold the smallest "
                f"tile of {kept} ({need} words) for layer {layer.name}"
            )
    if bad:
        raise InvalidProblemError(bad, source=source)


# ---------------------------------------------------------------------------- mappings
def read_mapping(path_or_data: str | Path | dict[str, Any], arch: Arch) -> Mapping:
    """Read a Timeloop mapping YAML (CoSA spec §5.2) for ``arch``; inverse of
    :func:`twill.mapping.mapping.to_timeloop_yaml`."""
    source = None
    data = path_or_data
    if not isinstance(path_or_data, dict):
        source = str(path_or_data)
        data = load_yaml(path_or_data)
    entries = data.get("mapping") if isinstance(data, dict) else data
    bad: list[str] = []
    if not isinstance(entries, list):
        raise InvalidProblemError(
            "mapping: expected a list of {target, type, ...} entries", source=source
        )
    names = [lv.name for lv in arch.levels]
    L = arch.n_levels
    temporal = [dict.fromkeys(DIMS, 1) for _ in range(L)]
    spatial = [dict.fromkeys(DIMS, 1) for _ in range(L)]
    order: list[list[Dim]] = [[] for _ in range(L)]
    keeps: list[frozenset[Operand] | None] = [None] * L
    for i, e in enumerate(entries):
        where = f"mapping[{i}]"
        if not isinstance(e, dict):
            bad.append(f"{where}: expected a mapping")
            continue
        tgt = e.get("target")
        if tgt not in names:
            bad.append(f"{where}.target: unknown level {tgt!r} (levels: {', '.join(names)})")
            continue
        m = names.index(tgt)
        kind = e.get("type")
        if kind in ("temporal", "spatial"):
            facs: dict[Dim, int] = {}
            for tok in str(e.get("factors", "")).split():
                mt = re.fullmatch(r"([RSPQCKN])=(\d+)", tok)
                if not mt:
                    bad.append(f"{where}.factors: bad factor {tok!r} (expected e.g. K=4)")
                    continue
                facs[Dim(mt.group(1))] = int(mt.group(2))
            (temporal if kind == "temporal" else spatial)[m].update(facs)
            if kind == "temporal":
                perm = str(e.get("permutation", ""))
                if perm and (len(set(perm)) != len(perm) or any(c not in "RSPQCKN" for c in perm)):
                    bad.append(f"{where}.permutation: {perm!r} is not a permutation of RSPQCKN")
                else:
                    inner_first = [Dim(c) for c in perm]
                    order[m] = list(reversed(inner_first))
        elif kind == "bypass":
            kp = set()
            for t in e.get("keep", []) or []:
                if str(t).lower() not in _TENSOR:
                    bad.append(f"{where}.keep: unknown tensor {t!r}")
                else:
                    kp.add(_TENSOR[str(t).lower()])
            keeps[m] = frozenset(kp)
        else:
            bad.append(f"{where}.type: {kind!r} (expected temporal, spatial or bypass)")
    if bad:
        raise InvalidProblemError(bad, source=source)
    kp_final = None
    if any(k is not None for k in keeps):
        kp_final = [k if k is not None else arch.levels[m].keeps for m, k in enumerate(keeps)]
    # Timeloop lists the permutation outer ... inner reversed; missing dims go innermost.
    return Mapping.from_levels(temporal, spatial=spatial, order=order, keeps=kp_final)


# ----------------------------------------------------------------------------- dataset
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


def _num(row: dict[str, str], key: str) -> float | None:
    v = row.get(key)
    if v is None or str(v).strip() == "":
        return None
    return float(v)


def _gemmini_from_row(row: dict[str, str], where: str, cache: dict[tuple, Arch]) -> Arch:
    pe_dim = int(float(row["arch.meshX"]))
    acc_entries = int(float(row.get("arch.mem1_depth") or row["arch.mem1_entries"]))
    acc_inst = int(float(row["arch.mem1_instances"]))
    acc_bits = int(float(row.get("arch.mem1_word-bits") or 32))
    sp_entries = int(float(row["arch.mem2_entries"]))
    sp_bits = int(float(row.get("arch.mem2_word-bits") or 8))
    acc_bw = _num(row, "arch.mem1_shared_bandwidth")
    sp_bw = _num(row, "arch.mem2_shared_bandwidth")
    key = (pe_dim, acc_entries, acc_inst, acc_bits, sp_entries, sp_bits, acc_bw, sp_bw)
    if key in cache:
        return cache[key]
    acc_kb = acc_entries * acc_inst * acc_bits / 8 / 1024
    sp_kb = sp_entries * sp_bits / 8 / 1024
    arch = gemmini_arch(pe_dim, sp_kb, acc_kb)
    arch = arch.with_level("Accumulator", entries=acc_entries, instances=acc_inst)
    if acc_bw is not None:
        arch = arch.with_level("Accumulator", bandwidth=acc_bw)
    if sp_bw is not None:
        arch = arch.with_level("Scratchpad", bandwidth=sp_bw)
    cache[key] = arch
    return arch


def read_dosa_dataset(path: str | Path, *, limit: int | None = None) -> list[DatasetRow]:
    """Read DOSA's Timeloop sample CSV (validate every row, then build).

    Rows whose mapping string does not parse keep ``mapping=None`` and the reason in ``error``;
    missing columns raise :class:`InvalidProblemError` naming the file and the columns.
    """
    p = Path(path)
    with io.StringIO(read_text_file(p), newline="") as fh:
        reader = csv.DictReader(fh)
        cols = set(reader.fieldnames or [])
        need = {"mapping.mapping", "arch.meshX", "arch.mem1_instances", "arch.mem2_entries"}
        need |= {f"prob.{d.value}" for d in DIMS}
        missing = sorted(need - cols)
        if missing:
            raise InvalidProblemError(f"missing columns: {', '.join(missing)}", source=str(p))
        rows = list(reader)
    if limit is not None:
        rows = rows[:limit]
    out: list[DatasetRow] = []
    cache: dict[tuple, Arch] = {}
    bad: list[str] = []
    for i, row in enumerate(rows):
        where = f"row {i + 2}"
        if None in row.values() or None in row:  # csv: fewer (or more) fields than the header
            n = sum(k is not None and v is not None for k, v in row.items())
            bad.append(f"{where}: {n + len(row.get(None) or [])} fields, header has {len(cols)}")
            continue
        try:
            dims = {d: int(float(row[f"prob.{d.value}"])) for d in DIMS}
            strides = [int(float(row.get(f"prob.{k}") or 1)) for k in _STRIDE_KEYS]
            arch = _gemmini_from_row(row, where, cache)
        except (KeyError, ValueError) as exc:
            bad.append(f"{where}: bad number ({exc})")
            continue
        if any(v < 1 for v in dims.values()):
            bad.append(f"{where}: prob.* dimensions must be positive, found {dims}")
            continue
        layer = Layer(
            f"row{i}", dims, strides[0] or 1, strides[1] or 1, strides[2] or 1, strides[3] or 1
        )
        text = row["mapping.mapping"]
        try:
            mapping, err = parse_dosa_mapping(text, layer, arch), None
        except InvalidProblemError as exc:
            mapping, err = None, str(exc)
        cyc = _num(row, "target.cycle")
        en = _num(row, "target.energy")
        edp = _num(row, "target.edp")
        out.append(DatasetRow(i, layer, arch, text, mapping, err, cyc, en, edp))
    if bad:
        raise InvalidProblemError(bad, source=str(p))
    return out


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


def evaluate_dataset(
    path: str | Path, *, limit: int | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Evaluate every row of a DOSA-style CSV with the cost model.

    Returns
    -------
    rows, errors
        One dict per row (``cycles``, ``energy_uJ``, ``edp``, ``valid``, targets, mapping) and,
        when ``target.*`` columns exist, error statistics of cycles, energy and EDP against
        them (median, 95th percentile, max of the relative error; fraction exact).
    """
    from twill.mapping.cost import evaluate
    from twill.mapping.mapping import verify_mapping

    data = read_dosa_dataset(path, limit=limit)
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
