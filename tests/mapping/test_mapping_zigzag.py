"""ZigZag as an independent peer (``docs/mapping.md``): our translation of a mapping into
ZigZag's model reproduces ZigZag 3.9.1's measured 17.030 µJ on the golden Simba mapping, and a CoSA
mapping costs the same in ZigZag's model as in ours. Skipped when ZigZag is not installed."""

from __future__ import annotations

import pytest

from tests.mapping.mappers import mapped
from twill.mapping.arch import simba_arch
from twill.mapping.cost import evaluate
from twill.mapping.mapping import parse_dosa_mapping
from twill.mapping.workload import Dim, Layer
from twill.mapping.zigzag_peer import zigzag_available, zigzag_evaluate, zigzag_mapping

pytestmark = pytest.mark.skipif(
    not zigzag_available(), reason="zigzag-dse not installed (pip install 'twill-sched[peers]')"
)

GOLDEN = (
    "L5[WIO] Q7 P2 - L4[IO] K4X Q2X P2X - L3[I] Q4X P2X - L2[W] K2 - "
    "L1[O] K4 C16 K2X C4X - L0[W] P7"
)
R50_5 = Layer("_outputs_input.5", {"P": 56, "Q": 56, "C": 64, "K": 64})


def test_golden_mapping_in_zigzag(benchmark_data):
    acc = benchmark_data / "cosa" / "zigzag" / "simba_tl.yaml"
    mapping = parse_dosa_mapping(GOLDEN)
    entry = zigzag_mapping(mapping, simba_arch())
    assert entry["spatial_mapping"] == {
        "D1": ["OX, 2", "OY, 2", "K, 4"],
        "D2": ["OX, 2", "OY, 4"],
        "D3": ["C, 4", "K, 2"],
    }
    peer = zigzag_evaluate(R50_5, mapping, simba_arch(), acc)
    assert peer.energy_uj == pytest.approx(17.030, rel=1e-3)  # measured with zigzag-dse 3.9.1
    ours = evaluate(R50_5, simba_arch(), mapping)
    assert ours.energy_uj == pytest.approx(peer.energy_uj, rel=5e-3)
    assert ours.cycles <= peer.latency_cycles <= 1.05 * ours.cycles  # ZigZag adds on/off-load


@pytest.mark.parametrize(
    "layer",
    [
        Layer("dw", {"R": 3, "S": 3, "P": 28, "Q": 28}, groups=32),
        Layer("gc", {"R": 3, "S": 3, "P": 14, "Q": 14, "C": 8, "K": 8}, groups=4),
        Layer("g2", {"P": 56, "Q": 56, "C": 64, "K": 64}, groups=2),
    ],
    ids=["depthwise", "grouped", "golden-x2"],
)
def test_grouped_layers_match_zigzag(benchmark_data, layer):
    """ZigZag's own G dimension (relevant to every operand) against ours: the depthwise layer
    with CoSA's placement of G's primes (spread over Simba's PEs), the grouped layer with one
    group's CoSA mapping and the golden mapping with the groups one after another (no G
    factors: G outermost)."""

    acc = benchmark_data / "cosa" / "zigzag" / "simba_tl.yaml"
    arch = simba_arch()
    if layer.name == "g2":
        mapping = parse_dosa_mapping(GOLDEN)
    elif layer.name == "gc":
        mapping = mapped("cosa", Layer("one", dict(layer.dims)), arch).solution.mapping
    else:
        mapping = mapped("cosa", layer, arch).solution.mapping
        assert any(mapping.spatial_factor(m, Dim.G) > 1 for m in range(arch.n_levels))
    peer = zigzag_evaluate(layer, mapping, arch, acc)
    ours = evaluate(layer, arch, mapping)
    assert ours.energy_uj == pytest.approx(peer.energy_uj, rel=5e-3)
    assert ours.cycles <= peer.latency_cycles
