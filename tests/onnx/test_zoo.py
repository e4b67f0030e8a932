"""The model zoo through the ONNX reader: ResNet-50 exported from its PyTorch module gives the
same 54 layers, in the same order, and the same edges (hence the same fusion candidates) as the
hand-written ResNet-50 graph over DOSA's layer folder."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("onnx")
pytest.importorskip("torch")


def _edges(net):
    return Counter((net.layers[e.src].key, net.layers[e.dst].key, e.kind) for e in net.edges)


@pytest.mark.parametrize("folding", [True, False])
def test_resnet50_graph_matches_hand_written(benchmark_data, folding):
    """With and without the exporter's constant folding (``map-network`` and ``fuse`` export
    without it, faster: issue 51), the same layers and edges."""
    from twill.io.networks import load_network
    from twill.onnx.model import import_model

    ours = import_model("resnet50", constant_folding=folding).network
    hand = load_network("resnet50")
    assert [ly.key for ly in ours.layers] == [ly.key for ly in hand.layers]
    assert _edges(ours) == _edges(hand)
    assert len(ours.candidates) == len(hand.candidates) == 66
    assert sum(ly.total_macs for ly in ours.layers) == 4_089_184_256
