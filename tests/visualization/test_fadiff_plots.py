"""The FADiff picture: a PNG is written for a verified run on a two-layer chain."""

from __future__ import annotations

from tests.mapping.mappers import fused
from twill.mapping.arch import gemmini_arch
from twill.mapping.network import chain_network
from twill.mapping.workload import Layer
from twill.visualization.fadiff_plots import plot_fadiff


def test_plot_fadiff_writes_png(tmp_path):
    a = Layer("a", {"P": 16, "Q": 16, "C": 16, "K": 32})
    b = Layer("b", {"R": 3, "S": 3, "P": 16, "Q": 16, "C": 32, "K": 16})
    net = chain_network([a, b])
    res = fused(net, gemmini_arch(), steps=10, seed=0, eval_every=5)
    out = plot_fadiff(net, res, tmp_path / "run.png")
    assert out.is_file() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
