"""ZigZag (KULeuven-MICAS, ``zigzag-dse`` 3.9.1) as an independent peer model
(``docs/mapping.md``, "ZigZag peer"): evaluate one of our mappings in ZigZag's cost model, and
run ZigZag's own LOMA mapper on the same layer and Simba-like accelerator.

ZigZag is an optional extra (``pip install 'twill-sched[peers]'``); nothing here imports it
at module import time, and :func:`zigzag_available` says whether it can be used.

Translation (our → ZigZag): P → OX, Q → OY, R → FX, S → FY, N → B, C and K unchanged; a
grouped layer adds ZigZag's G loop (relevant to all operands) as the outermost temporal loop.
Spatial factors of the fanned-out levels become ZigZag's array dimensions, outermost first
(Simba: GB → PEs = ``D1``, InputBuffer → lanes = ``D2``, AccumulationBuffer → MACs = ``D3``).
Temporal loops are listed inner → outer, level by level, each level in its own loop order.
ZigZag assigns temporal loops to memory levels itself, so only the spatial unrolling
and the loop order carry over exactly; per-level tiling is re-derived by ZigZag.

Preconditions: the accelerator YAML is ZigZag's hardware format with array dimensions
``D1..Dk`` matching the fanned-out levels of the architecture, and memory operands ``I1``
(inputs), ``I2`` (weights), ``O``, e.g. ``data/cosa/zigzag/simba_tl.yaml`` in the repository.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twill.errors import BackendUnavailableError
from twill.mapping.arch import Arch
from twill.mapping.mapping import Mapping
from twill.mapping.workload import Dim, Layer

__all__ = [
    "ZIGZAG_DIM",
    "PeerCost",
    "zigzag_available",
    "zigzag_workload",
    "zigzag_mapping",
    "zigzag_evaluate",
    "zigzag_loma",
]

log = logging.getLogger(__name__)

#: Our dimension → ZigZag's loop dimension.
ZIGZAG_DIM = {
    Dim.R: "FX",
    Dim.S: "FY",
    Dim.P: "OX",
    Dim.Q: "OY",
    Dim.C: "C",
    Dim.K: "K",
    Dim.N: "B",
    Dim.G: "G",
}
_LINKS = {"O": "O", "W": "I2", "I": "I1"}


@dataclass(frozen=True)
class PeerCost:
    """ZigZag's cost of one mapping (its own cost model, not a solver result): energy (pJ),
    latency (cycles, on/off-loading included), the seconds ZigZag took and its mapping."""

    energy_pj: float
    latency_cycles: float
    seconds: float
    mapping: dict[str, Any]

    @property
    def energy_uj(self) -> float:
        return self.energy_pj / 1e6


def zigzag_available() -> bool:
    """Whether ``zigzag`` (and the ``six`` it imports undeclared) can be imported."""
    try:
        import six  # noqa: F401
        import zigzag.api  # noqa: F401
    except Exception:
        return False
    return True


def _require() -> Any:
    if not zigzag_available():
        raise BackendUnavailableError(
            "the ZigZag peer needs zigzag-dse and six (pip install 'twill-sched[peers]')"
        )
    from zigzag.api import get_hardware_performance_zigzag

    return get_hardware_performance_zigzag


def zigzag_workload(layer: Layer, *, precision_bits: int = 8) -> list[dict[str, Any]]:
    """The layer as ZigZag's in-memory workload (one convolution, 8-bit operands as Simba's).

    Examples
    --------
    >>> zigzag_workload(Layer("l", {"P": 4, "C": 2}))[0]["loop_sizes"]
    [1, 1, 2, 1, 4, 1, 1]
    """
    b = precision_bits
    g = layer.groups
    eq = "O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]"
    dims, sizes = (
        ["B", "K", "C", "OY", "OX", "FY", "FX"],
        [layer.dim(d) for d in (Dim.N, Dim.K, Dim.C, Dim.Q, Dim.P, Dim.S, Dim.R)],
    )
    if g > 1:  # groups: a loop relevant to all three operands
        eq = "O[b][g][k][oy][ox]+=W[g][k][c][fy][fx]*I[b][g][c][iy][ix]"
        dims, sizes = [*dims, "G"], [*sizes, g]
    return [
        {
            "id": 0,
            "name": layer.name,
            "operator_type": "Conv",
            "equation": eq,
            "dimension_relations": [
                f"ix={layer.w_stride}*ox+{layer.w_dilation}*fx",
                f"iy={layer.h_stride}*oy+{layer.h_dilation}*fy",
            ],
            "loop_dims": dims,
            "loop_sizes": sizes,
            "operand_precision": {"W": b, "I": b, "O": b, "O_final": b},
            "operand_source": {"I": 0, "W": 0},
        }
    ]


def _array_levels(arch: Arch) -> list[int]:
    """Fanned-out levels, outermost first: they become ZigZag's D1, D2, ..."""
    return [m for m in range(arch.n_levels - 1, -1, -1) if arch.fanout(m) > 1]


def zigzag_mapping(mapping: Mapping, arch: Arch) -> dict[str, Any]:
    """Our mapping as ZigZag's mapping entry (spatial mapping + inner → outer temporal order).

    Examples
    --------
    >>> from twill.mapping.arch import simba_arch
    >>> m = Mapping.from_levels(
    ...     [{"P": 7}, {"C": 16, "K": 4}, {}, {}, {}, {"Q": 56, "P": 8}],
    ...     spatial=[{}, {"C": 4, "K": 16}],
    ... )
    >>> zz = zigzag_mapping(m, simba_arch())
    >>> zz["spatial_mapping"]["D3"], zz["temporal_ordering"][:2]
    (['C, 4', 'K, 16'], [['OX', 7], ['K', 4]])
    """
    spatial: dict[str, list[str]] = {}
    for a, m in enumerate(_array_levels(arch), start=1):
        spatial[f"D{a}"] = [f"{ZIGZAG_DIM[d]}, {f}" for d, f in mapping.spatial_loops(m)]
    temporal: list[list[Any]] = []
    for m in range(arch.n_levels):
        for d, f in reversed(mapping.loops(m)):  # loops are outer → inner, G outermost
            temporal.append([ZIGZAG_DIM[d], int(f)])
    return {
        "name": "default",
        "spatial_mapping": spatial,
        "temporal_ordering": temporal,
        "memory_operand_links": dict(_LINKS),
    }


def _hint_mapping(arch: Arch) -> dict[str, Any]:
    """The "hint" setting: PE and lane dimensions over K, OX, OY; the MAC dimension over K, C
    (C reduced only inside a lane, as the Timeloop Simba model supports)."""
    levels = _array_levels(arch)
    hint = {f"D{a}": ["K", "OX", "OY"] for a in range(1, len(levels) + 1)}
    if levels:
        hint[f"D{len(levels)}"] = ["K", "C"]
    return {
        "name": "default",
        "spatial_mapping_hint": hint,
        "memory_operand_links": dict(_LINKS),
    }


def _run(
    layer: Layer, mapping_entry: dict[str, Any], accelerator: str | Path, **kw: Any
) -> PeerCost:
    import time

    import yaml

    api = _require()
    with tempfile.TemporaryDirectory(prefix="twill_zigzag_") as tmp:
        mpath = Path(tmp) / "mapping.yaml"
        mpath.write_text(yaml.safe_dump([mapping_entry], sort_keys=False))
        t0 = time.perf_counter()
        prev = logging.root.manager.disable
        logging.disable(logging.WARNING)  # ZigZag logs every evaluation at INFO/WARNING
        try:
            out = api(
                zigzag_workload(layer),
                str(accelerator),
                str(mpath),
                dump_folder=str(Path(tmp) / "dump"),
                loma_show_progress_bar=False,
                **kw,
            )
        finally:
            logging.disable(prev)
        seconds = time.perf_counter() - t0
    return PeerCost(float(out[0]), float(out[1]), seconds, mapping_entry)


def zigzag_evaluate(
    layer: Layer, mapping: Mapping, arch: Arch, accelerator: str | Path
) -> PeerCost:
    """Evaluate our ``mapping`` in ZigZag's model (LOMA only orders what it is given).

    Raises
    ------
    BackendUnavailableError
        When ZigZag is not installed.
    """
    # a mapping without G factors runs the groups one after another: outermost temporal loop
    entry = zigzag_mapping(mapping.placed(layer.groups) if layer.groups > 1 else mapping, arch)
    return _run(layer, entry, accelerator, opt="EDP", lpf_limit=6)


def zigzag_loma(
    layer: Layer, arch: Arch, accelerator: str | Path, *, lpf_limit: int = 6
) -> PeerCost:
    """ZigZag's LOMA mapper on the "hint" spatial setting, minimising EDP.

    Raises
    ------
    BackendUnavailableError
        When ZigZag is not installed.
    """
    return _run(
        layer,
        _hint_mapping(arch),
        accelerator,
        opt="EDP",
        lpf_limit=lpf_limit,
        enable_mix_spatial_mapping=True,
    )
