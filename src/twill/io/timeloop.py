"""Readers for Timeloop-style YAML and DOSA's CSV: problems, architectures, mappings
(the formats of ``ucb-bar/cosa`` and ``ucb-bar/dosa``; ``docs/formats.md``).

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
  scaled by block size and Gemmini levels DOSA's fitted formulas.
* mapping: Timeloop mapping YAML (``mapping: [{target, type, factors, permutation}, ...]``).
* dataset: DOSA's ``timeloop_sample.csv`` rows (``arch.*``, ``prob.*``, ``mapping.mapping``,
  ``target.*``).
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from twill.errors import InvalidProblemError
from twill.mapping.arch import (
    ARCH_LIMITS,
    SIMBA_ENERGY_PJ,
    Arch,
    MemoryLevel,
    arch_value_defects,
    gemmini_arch,
    simba_energy,
)
from twill.mapping.cost.dataset import (
    DatasetColumns,
    DatasetRow,
    MappingColumns,
    columns_from_rows,
)
from twill.mapping.dosa_strings import parse_dosa_mappings
from twill.mapping.mapping import Mapping, parse_dosa_mapping
from twill.mapping.workload import DIMS, MAX_DIM, MAX_STRIDE, OPERANDS, Dim, Layer, Operand
from twill.text import read_text_file
from twill.yaml_safe import load_yaml_file, short_repr

__all__ = [
    "load_yaml",
    "validate_layer",
    "build_layer",
    "read_layer",
    "read_network",
    "validate_arch",
    "build_arch",
    "read_arch",
    "shipped_archs",
    "mapspace_path",
    "arch_input_files",
    "network_input_files",
    "read_mapping",
    "check_layer_fits",
    "DatasetRow",
    "read_dosa_dataset",
    "read_dosa_columns",
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
    """Parse a YAML file (bounded: see :mod:`twill.yaml_safe`); errors name the file."""
    return load_yaml_file(path)


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


MAX_COUNT = 1_000_000
"""Largest repeat count of a layer (``count``, ``layer_count.yaml``)."""


def _int_defects(where: str, value: object, lo: int, hi: int) -> list[str]:
    """``[]`` when ``value`` is an integer in ``[lo, hi]``, else one message with the range."""
    if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
        return []
    return [f"{where}: must be an integer from {lo} to at most {hi:,}, found {short_repr(value)}"]


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
        bad += _int_defects(f"{base}.{key}", prob[key], 1, MAX_DIM)
    for key in _STRIDE_KEYS[:4]:  # a dilation of 0 is read as 1
        bad += _int_defects(f"{base}.{key}", prob.get(key, 1), int("stride" in key), MAX_STRIDE)
    bad += _int_defects(f"{base}.G", prob.get("G", 1), 1, MAX_DIM)
    bad += _int_defects(f"{base}.count", prob.get("count", 1), 1, MAX_COUNT)
    unknown = set(prob) - set(_PROBLEM_KEYS) - set(_STRIDE_KEYS) - {"shape", "name", "count"}
    for key in sorted(unknown):
        bad.append(
            f"{base}.{key}: unknown key (allowed: R S P Q C K N G Wstride Hstride "
            "Wdilation Hdilation shape)"
        )
    return bad


def build_layer(data: Any, name: str) -> Layer:
    """Build a :class:`Layer` from validated problem data (dilation 0 is read as 1)."""
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
    prob: dict[str, Any] = {d.value: layer.dim(d) for d in DIMS}
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


def _check_layer_names(names: object, source: str) -> None:
    """``layers.yaml`` must list file stems that stay inside the folder (no ``/``, ``..``)."""
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        raise InvalidProblemError("expected a list of layer file stems", source=source)
    bad = [
        f"entry {i} ({short_repr(n)}): must name a file in the same folder (no '/', '\\', "
        "'..'), it would reach outside"
        for i, n in enumerate(names)
        if not n or "/" in n or "\\" in n or n.startswith(".") or "\0" in n
    ]
    if bad:
        raise InvalidProblemError(bad, source=source)


def _read_layer_counts(path: Path, keys: set[str]) -> dict[str, int]:
    """Counts from DOSA's ``layer_count.yaml`` (``{layer key: {count: N}}``), validated."""
    data = load_yaml(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidProblemError(
            f"expected a mapping {{layer key: {{count: N}}}}, found {short_repr(data)}",
            source=str(path),
        )
    out: dict[str, int] = {}
    bad: list[str] = []
    for key, entry in data.items():
        if not isinstance(entry, dict) or "count" not in entry:
            bad.append(f"{short_repr(key)}: expected {{count: N}}, found {short_repr(entry)}")
            continue
        bad += _int_defects(f"{short_repr(key)}.count", entry["count"], 1, MAX_COUNT)
        if str(key) in keys and not bad:
            out[str(key)] = entry["count"]
    if bad:
        raise InvalidProblemError(bad, source=str(path))
    return out


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
        _check_layer_names(names, str(order_file))
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
        counts.update(_read_layer_counts(lc, set(first)))
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


def _list_at(node: dict[str, Any], key: str, path: str, bad: list[str]) -> list[Any]:
    """``node[key]`` when it is a list (absent or null: empty); otherwise a defect."""
    value = node.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        bad.append(f"{path}.{key}: expected a list, found {short_repr(value)}")
        return []
    return value


def _flatten_v03(root: list[Any], out: list[dict[str, Any]], bad: list[str]) -> None:
    """Walk a Timeloop v0.3 ``subtree`` outer → inner (iteratively), collecting local
    components with their instance multiplier; shape defects go to ``bad``."""
    stack = [(node, 1, f"architecture.subtree[{i}]") for i, node in enumerate(root)][::-1]
    while stack:
        node, mult, path = stack.pop()
        if not isinstance(node, dict):
            bad.append(f"{path}: expected a mapping, found {short_repr(node)}")
            continue
        mt = re.search(r"\[(\d{1,9})\.\.(\d{1,9})\]$", str(node.get("name", ""))[:200])
        if mt:
            mult *= max(1, int(mt.group(2)) - int(mt.group(1)) + 1)
        for i, comp in enumerate(_list_at(node, "local", path, bad)):
            where = f"{path}.local[{i}]"
            attrs = comp.get("attributes") if isinstance(comp, dict) else None
            if not isinstance(comp, dict) or not isinstance(attrs, dict | None):
                bad.append(f"{where}: expected a mapping with 'attributes' as a mapping")
                continue
            out.append({**comp, "attributes": attrs or {}, "_path": where, "_mult": mult})
        children = _list_at(node, "subtree", path, bad)
        stack += [(c, mult, f"{path}.subtree[{i}]") for i, c in enumerate(children)][::-1]


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
        _flatten_v03(_list_at(data["architecture"], "subtree", "architecture", bad), flat, bad)
        comps, arith = [], None
        for c in flat:
            cls = str(c.get("class", "")).lower()
            if "mac" in cls or "intmac" in cls:
                arith = {
                    "instances": c["attributes"].get("instances", c["_mult"]),
                    "_path": c["_path"],
                }
                continue
            attrs = dict(c["attributes"])
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
        bad += _component_defects(c, is_top=i == len(comps) - 1)
    if comps:
        top = comps[-1]
        tech = str(top.get("technology", top.get("class", ""))).lower()
        if "dram" not in tech and "dram" not in str(top.get("name", "")).lower():
            bad.append(f"{top['_path']}: the outermost level must be DRAM (missing level)")
    if arith is not None:
        where = arith.get("_path", "arch.arithmetic")
        bad += arch_value_defects(f"{where}.instances", arith.get("instances"), "instances")
        if "energy_pj" in arith:
            bad += arch_value_defects(f"{where}.energy_pj", arith["energy_pj"], "energy_pj")
    ms = data.get("mapspace") if isinstance(data, dict) else None
    if ms is not None:
        bad.extend(
            _validate_mapspace(ms, {c.get("name") for c in comps if isinstance(c.get("name"), str)})
        )
    return bad


# Numeric keys of a storage level and the ARCH_LIMITS range each must lie in.
_LEVEL_NUMBERS = {
    "instances": "instances",
    "word-bits": "word_bits",
    "block-size": "block_size",
    "block_size": "block_size",
    "energy_pj": "energy_pj",
    "bandwidth": "bandwidth",
    "shared_bandwidth": "bandwidth",
    "read_bandwidth": "bandwidth",
    "write_bandwidth": "bandwidth",
}


def _component_defects(c: dict[str, Any], *, is_top: bool) -> list[str]:
    """Defects of one storage level: name, capacity and every numeric key in range
    (:data:`~twill.mapping.arch.ARCH_LIMITS`), checked before anything is built."""
    path = c["_path"]
    name = c.get("name")
    bad = [] if isinstance(name, str) and name.strip() else [f"{path}.name: missing (a string)"]
    for key, kind in _LEVEL_NUMBERS.items():
        if key in c:  # present, even as null: it must be a number in range
            bad += arch_value_defects(f"{path}.{key}", c[key], kind)
    ent = c.get("entries", c.get("depth") if "width" not in c else None)
    if ent is not None or not is_top:
        if ent is None:
            bad.append(f"{path}.entries: missing (on-chip levels need a capacity in words)")
        else:
            bad += arch_value_defects(f"{path}.entries", ent, "entries")
    return bad


def _tensor_list_defects(entry: dict[str, Any], key: str, where: str) -> list[str]:
    """``entry[key]`` must be a list of tensor names (Weights, Inputs, Outputs), or absent."""
    value = entry.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        return [f"{where}.{key}: expected a list of tensors, found {short_repr(value)}"]
    return [
        f"{where}.{key}: unknown tensor {short_repr(t)} (Weights, Inputs or Outputs)"
        for t in value
        if str(t).lower() not in _TENSOR
    ]


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
            target = c.get("target")
            if not isinstance(target, str) or target not in names:
                bad.append(f"mapspace.constraints[{i}].target: unknown level {short_repr(target)}")
            for key in ("keep", "bypass"):
                bad += _tensor_list_defects(c, key, f"mapspace.constraints[{i}]")
    return bad


def _keeps_from_mapspace(ms: Any) -> dict[str, frozenset[Operand]]:
    out: dict[str, frozenset[Operand]] = {}
    for c in (ms or {}).get("constraints", []) or []:
        if isinstance(c, dict) and c.get("type") == "datatype":
            out[c["target"]] = frozenset(_TENSOR[str(t).lower()] for t in c.get("keep", []) or [])
    return out


def _gemmini_pe_dim(macs: int, accumulator_instances: int) -> int:
    """The side of Gemmini's square PE array: the square root of the MAC count when it is a
    square (DOSA's ``arch_cosa.yaml`` gives 256 MACs and one merged accumulator), otherwise
    the number of accumulator instances (one per array column, as in DOSA's ``arch.yaml``)."""
    side = math.isqrt(macs)
    return side if side * side == macs and side > 1 else accumulator_instances


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
        pe_dim = _gemmini_pe_dim(macs, int(acc.get("instances", 16)))
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
            partition = ((Operand.I, 0.25), (Operand.O, 0.75))  # CoSA v0.1.0 GB split
        levels.append(
            MemoryLevel(
                name=nm,
                entries=None if is_top else int(c.get("entries", c.get("depth", 1))),
                instances=int(c.get("instances", 1)),
                word_bits=int(c.get("word-bits", 8)),
                keeps=frozenset(kp),
                energy_pj=energy,
                bandwidth=None,  # DRAM bandwidth not enforced unless asked
                block_size=block,
                partition=partition,
            )
        )
        if bw is not None and c.get("enforce_bandwidth"):
            levels[-1] = replace(levels[-1], bandwidth=float(bw))
    mac_e = float((arith or {}).get("energy_pj", SIMBA_ENERGY_PJ["MAC"][0]))
    return Arch(name, tuple(levels), macs, mac_e)


def mapspace_path(arch_path: str | Path, mapspace: str | Path | None = None) -> Path:
    """The mapspace file :func:`read_arch` reads: ``mapspace`` or ``mapspace.yaml`` beside."""
    return Path(mapspace) if mapspace else Path(arch_path).with_name("mapspace.yaml")


def arch_input_files(path: str | Path, *, mapspace: str | Path | None = None) -> list[Path]:
    """Every file :func:`read_arch` may read for ``path`` (the architecture and its mapspace)."""
    return [Path(path), mapspace_path(path, mapspace)]


def network_input_files(directory: str | Path) -> list[Path]:
    """Every file :func:`read_network` may read in ``directory``: its YAML files (the layers,
    ``layers.yaml``, ``layer_count.yaml``) and the layer files that ``layers.yaml`` names."""
    d = Path(directory)
    if not d.is_dir():
        return []
    files = sorted(d.glob("*.yaml"))
    try:
        names = load_yaml(d / "layers.yaml") if (d / "layers.yaml").is_file() else None
    except (InvalidProblemError, OSError):  # the reader reports it, with the file name
        names = None
    if isinstance(names, list):
        files += [d / f"{n}.yaml" for n in names if isinstance(n, str)]
    return files


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
    ms_path = mapspace_path(p, mapspace)
    if ms_path.exists() and ms_path != p:
        ms_data = load_yaml(ms_path)
        ms_data = ms_data.get("mapspace", ms_data) if isinstance(ms_data, dict) else ms_data
        comps, _, _ = _arch_components(data)
        ms_bad = _validate_mapspace(
            ms_data, {c.get("name") for c in comps if isinstance(c.get("name"), str)}
        )
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


def shipped_archs() -> dict[str, Path]:
    """The architecture YAMLs shipped in ``twill/data/arch`` (the Gemmini family), by name.

    Each file is an ordinary architecture YAML read by :func:`read_arch`; the name is the file
    stem (``gemmini_16x16_sp256k_acc64k``: array, scratchpad and accumulator sizes). The CLI's
    ``--arch`` accepts these names as well as paths.
    """
    folder = Path(__file__).resolve().parent.parent / "data" / "arch"
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))}


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
    """Read a Timeloop mapping YAML (as CoSA writes it) for ``arch``; inverse of
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
                mt = re.fullmatch(r"([RSPQCKNG])=(\d{1,9})", tok)
                if not mt or not 1 <= int(mt.group(2)) <= MAX_DIM:
                    bad.append(
                        f"{where}.factors: bad factor {short_repr(tok)} (expected e.g. K=4, "
                        f"a factor from 1 to at most {MAX_DIM:,})"
                    )
                    continue
                facs[Dim(mt.group(1))] = int(mt.group(2))
            (temporal if kind == "temporal" else spatial)[m].update(facs)
            if kind == "temporal":
                perm = str(e.get("permutation", ""))
                if perm and (len(set(perm)) != len(perm) or any(c not in "RSPQCKNG" for c in perm)):
                    bad.append(f"{where}.permutation: {perm!r} is not a permutation of RSPQCKN(G)")
                else:
                    inner_first = [Dim(c) for c in perm]
                    order[m] = list(reversed(inner_first))
        elif kind == "bypass":
            tensor_bad = _tensor_list_defects(e, "keep", where)
            bad += tensor_bad
            if not tensor_bad:
                keeps[m] = frozenset(_TENSOR[str(t).lower()] for t in e.get("keep") or [])
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
def _num(row: dict[str, str], key: str) -> float | None:
    v = row.get(key)
    if v is None or str(v).strip() == "":
        return None
    try:
        value = float(str(v)[:40])
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"column {key}: expected a finite number, found {short_repr(v)}")
    return value


def _csv_int(row: dict[str, str], key: str, lo: int, hi: int, default: int | None = None) -> int:
    """Column ``key`` as an integer in ``[lo, hi]`` (``1.0`` is accepted as 1).

    Raises ``ValueError`` naming the column, the range and the text found."""
    text = row.get(key)
    if (text is None or not str(text).strip()) and default is not None:
        return default
    try:
        value = float(str(text)[:40])
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value.is_integer() and lo <= value <= hi):
        raise ValueError(
            f"column {key}: expected an integer from {lo} to at most {hi:,}, "
            f"found {short_repr(text)}"
        )
    return int(value)


def _gemmini_from_row(row: dict[str, str], where: str, cache: dict[tuple, Arch]) -> Arch:
    return _gemmini_from_key(_gemmini_key(row), cache)


def _gemmini_key(row: dict[str, str]) -> tuple:
    """The columns of a row that make its Gemmini, validated: PE mesh, accumulator entries,
    instances and word bits, scratchpad entries and word bits, the two bandwidths (``None``
    when absent)."""
    big = int(ARCH_LIMITS["entries"][1])
    pe_dim = _csv_int(row, "arch.meshX", 1, 1024)
    depth_key = "arch.mem1_depth" if row.get("arch.mem1_depth") else "arch.mem1_entries"
    acc_entries = _csv_int(row, depth_key, 1, big)
    acc_inst = _csv_int(row, "arch.mem1_instances", 1, int(ARCH_LIMITS["instances"][1]))
    acc_bits = _csv_int(row, "arch.mem1_word-bits", 1, 1024, default=32)
    sp_entries = _csv_int(row, "arch.mem2_entries", 1, big)
    sp_bits = _csv_int(row, "arch.mem2_word-bits", 1, 1024, default=8)
    acc_bw = _num(row, "arch.mem1_shared_bandwidth")
    sp_bw = _num(row, "arch.mem2_shared_bandwidth")
    for key, bw in (("mem1", acc_bw), ("mem2", sp_bw)):
        if bw is not None and arch_value_defects("", bw, "bandwidth"):
            raise ValueError(f"column arch.{key}_shared_bandwidth: must be > 0, found {bw!r}")
    return (pe_dim, acc_entries, acc_inst, acc_bits, sp_entries, sp_bits, acc_bw, sp_bw)


def _gemmini_from_key(key: tuple, cache: dict[tuple, Arch]) -> Arch:
    """DOSA's Gemmini of a :func:`_gemmini_key` (built once per key)."""
    if key in cache:
        return cache[key]
    pe_dim, acc_entries, acc_inst, acc_bits, sp_entries, sp_bits, acc_bw, sp_bw = key
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


def _layer_of_row(row: dict[str, str], name: str) -> Layer:
    """The layer of a dataset row (``prob.*`` columns, validated; a stride or dilation of 0
    is read as 1)."""
    dims = {d: _csv_int(row, f"prob.{d.value}", 1, MAX_DIM) for d in DIMS}
    strides = [_csv_int(row, f"prob.{k}", 0, MAX_STRIDE, default=1) for k in _STRIDE_KEYS]
    return Layer(name, dims, strides[0] or 1, strides[1] or 1, strides[2] or 1, strides[3] or 1)


_DATASET_COLUMNS = {"mapping.mapping", "arch.meshX", "arch.mem1_instances", "arch.mem2_entries",
                    *(f"prob.{d.value}" for d in DIMS)}  # fmt: skip


def _csv_rows(p: Path) -> tuple[list[dict[str, Any]], set[str]]:
    """The rows and the columns of the dataset CSV ``p`` (UTF-8, a byte-order mark allowed),
    once its header has every column :func:`read_dosa_dataset` needs, each once; a line the
    csv module cannot read (a field over its size limit) names its line."""
    with io.StringIO(read_text_file(p), newline="") as fh:
        reader = csv.DictReader(fh)
        try:
            header = list(reader.fieldnames or [])
            twice = sorted({c for c in header if c.strip() and header.count(c) > 1})
            if twice:
                raise InvalidProblemError(
                    f"line 1: duplicate columns: {', '.join(map(repr, twice))}", source=str(p)
                )
            missing = sorted(_DATASET_COLUMNS - set(header))
            if missing:
                raise InvalidProblemError(f"missing columns: {', '.join(missing)}", source=str(p))
            return list(reader), set(header)
        except csv.Error as exc:
            limit = csv.field_size_limit()
            why = str(exc) if "field limit" not in str(exc) else (
                f"a field longer than {limit:,} characters (the csv module's limit)")  # fmt: skip
            raise InvalidProblemError(
                f"line {reader.reader.line_num}: {why}", source=str(p)
            ) from None


def read_dosa_dataset(path: str | Path, *, limit: int | None = None) -> list[DatasetRow]:
    """Read DOSA's Timeloop sample CSV (validate every row, then build).

    Rows whose mapping string does not parse keep ``mapping=None`` and the reason in ``error``;
    missing columns raise :class:`InvalidProblemError` naming the file and the columns.
    """
    p = Path(path)
    rows, cols = _csv_rows(p)
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
            layer = _layer_of_row(row, f"row{i}")
            arch = _gemmini_from_row(row, where, cache)
        except (KeyError, ValueError) as exc:
            bad.append(f"{where}: {exc}")
            if len(bad) >= 20:
                break
            continue
        text = row["mapping.mapping"]
        try:
            mapping, err = parse_dosa_mapping(text, layer, arch), None
        except InvalidProblemError as exc:
            mapping, err = None, str(exc)
        try:
            cyc, en, edp = (_num(row, f"target.{k}") for k in ("cycle", "energy", "edp"))
        except ValueError as exc:
            bad.append(f"{where}: {exc}")
            continue
        out.append(DatasetRow(i, layer, arch, text, mapping, err, cyc, en, edp))
    if bad:
        raise InvalidProblemError(bad, source=str(p))
    return out


def read_dosa_columns(path: str | Path, *, limit: int | None = None) -> DatasetColumns:
    """Read DOSA's Timeloop sample CSV as columns, for the batch evaluation of
    :func:`twill.mapping.cost.dataset.evaluate_columns`.

    Gives what :func:`~twill.mapping.cost.dataset.columns_from_rows` gives on
    :func:`read_dosa_dataset` (the same layers, architectures, mappings, parse errors and
    targets; the same refusals), faster: a plain file (no quotes, ``\\n`` line ends, every
    line with the header's field count) is split into columns in one pass, each distinct
    layer, architecture and target is validated and built once by the per-row code, and the
    mapping strings are parsed together (:func:`twill.mapping.dosa_strings.parse_dosa_mappings`).
    Any other file, or any value the per-row code refuses, is read by
    :func:`read_dosa_dataset`, which names the rows.
    """
    p = Path(path)
    cols = _plain_csv_columns(read_text_file(p), limit)
    if cols is not None:
        try:
            return _dataset_columns(cols)
        except (KeyError, ValueError):
            pass  # the per-row reader names the row and the column
    return columns_from_rows(read_dosa_dataset(p, limit=limit))


def _plain_csv_columns(text: str, limit: int | None) -> dict[str, list[str]] | None:
    """The columns of a CSV the csv module reads as plain comma splits (no quote, no ``\\r``,
    no NUL, no blank line, no field over its size limit, every line as many fields as the
    header, the header with every needed column once); ``None`` for any other file."""
    if any(c in text for c in ('"', "\r", "\x00")):
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or max(map(len, lines)) > csv.field_size_limit():
        return None
    header = lines[0].split(",")
    n = len(header) - 1
    if len(set(header)) != len(header) or not _DATASET_COLUMNS <= set(header):
        return None
    if min(map(len, lines)) == 0 or set(map(str.count, lines, itertools.repeat(","))) != {n}:
        return None
    rows = len(lines) - 1 if limit is None else min(limit, len(lines) - 1)
    start = len(lines[0]) + 1
    end = start + sum(map(len, lines[1 : rows + 1])) + rows - 1  # the last row's end
    flat = text[start:end].replace("\n", ",").split(",") if rows else []
    return {h: flat[j :: n + 1] for j, h in enumerate(header)}


def _distinct_rows(
    cols: dict[str, list[str]], keys: list[str], B: int
) -> tuple[list[dict[str, str | None]], np.ndarray]:
    """The distinct rows over columns ``keys`` (as the dicts the per-row code reads, first
    seen first; an absent column is ``None``) and the number of each row's."""
    full = {k: cols.get(k) or [None] * B for k in keys}
    fixed = {k: v[0] for k, v in full.items() if B and v.count(v[0]) == B}
    varying = [full[k] for k in keys if k not in fixed]
    number: dict[tuple, int] = {}
    of = np.fromiter(
        (number.setdefault(t, len(number)) for t in zip(*varying, strict=True)) if varying
        else (0 for _ in range(B)),
        dtype=np.int64,
        count=B,
    )  # fmt: skip
    names = [k for k in keys if k not in fixed]
    distinct = [t for t in number] if varying else [()] * min(B, 1)
    return [{**fixed, **dict(zip(names, t, strict=True))} for t in distinct], of


def _dataset_columns(cols: dict[str, list[str]]) -> DatasetColumns:
    """Build the columns of a plain CSV (:func:`_plain_csv_columns`); the per-row builders
    raise ``ValueError`` on the first value they refuse."""
    texts = cols["mapping.mapping"]
    B = len(texts)

    prob_keys = [f"prob.{k}" for k in (*(d.value for d in DIMS), *_STRIDE_KEYS)]
    raw_layers, layer_of = _distinct_rows(cols, prob_keys, B)
    first = np.zeros(len(raw_layers), dtype=np.int64)
    first[layer_of[::-1]] = np.arange(B)[::-1]  # the first row of each distinct layer
    layers = tuple(_layer_of_row(r, f"row{first[j]}") for j, r in enumerate(raw_layers))
    arch_keys = sorted({c for c in cols if c.startswith("arch.")})
    raw_archs, arch_of = _distinct_rows(cols, arch_keys, B)
    cache: dict[tuple, Arch] = {}
    archs = tuple(_gemmini_from_row(r, "", cache) for r in raw_archs)
    targets = []
    for k in ("cycle", "energy", "edp"):
        key = f"target.{k}"
        values = cols.get(key) or [None] * B
        table = {v: _num({key: v}, key) for v in set(values)}
        table = {v: math.nan if x is None else x for v, x in table.items()}
        targets.append(np.fromiter(map(table.__getitem__, values), dtype=np.float64, count=B))
    if len({a.n_levels for a in archs}) > 1:
        raise ValueError("architectures of several level counts")
    L = archs[0].n_levels if archs else 4
    got = parse_dosa_mappings(texts, L)
    groups = np.array([ly.groups for ly in layers], dtype=np.int64)
    gt = np.ones((B, L), dtype=np.int64)
    gt[:, -1] = groups[layer_of] if B else 1  # no G loop admitted: all groups at the top
    maps = MappingColumns(got.temporal, got.spatial, got.order, gt, np.ones_like(gt), got.keeps)
    error: list[str | None] = [None] * B
    for b in np.flatnonzero(~got.ok).tolist():  # another spelling, or not a mapping
        layer, arch = layers[layer_of[b]], archs[arch_of[b]]
        try:
            maps.put(b, parse_dosa_mapping(texts[b], layer, arch), layer, arch)
        except InvalidProblemError as exc:
            error[b] = str(exc)
    return DatasetColumns(
        index=np.arange(B, dtype=np.int64),
        layers=layers,
        layer_of=layer_of,
        archs=archs,
        arch_of=arch_of,
        mapping_text=texts,
        mappings=maps,
        error=error,
        target_cycles=targets[0],
        target_energy_uj=targets[1],
        target_edp=targets[2],
    )
