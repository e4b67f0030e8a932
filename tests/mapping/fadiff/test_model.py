"""The torch Gemmini model equals the NumPy cost model on discrete mappings (DOSA's model)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from twill.mapping.arch import gemmini_arch  # noqa: E402
from twill.mapping.cost.analytical import (  # noqa: E402
    CostOptions,
    batch_from_mappings,
    evaluate_batch,
)
from twill.mapping.fadiff.model import layer_table, torch_costs  # noqa: E402
from twill.mapping.mapping import parse_dosa_mapping  # noqa: E402
from twill.mapping.search.random import sample_batch  # noqa: E402
from twill.mapping.workload import Layer  # noqa: E402


def _torch(layer, arch, mb, **opts):
    n = len(mb)
    tab = layer_table([layer] * n)
    f = dict(dtype=torch.float64)
    return torch_costs(
        tab,
        arch,
        torch.tensor(mb.temporal, **f),
        torch.tensor(mb.spatial, **f),
        torch.tensor(mb.order),
        **opts,
    )


class TestGolden:
    """DOSA's Timeloop-checked setting (16x16 PEs, 108 KB scratchpad, 16 KB accumulator)."""

    @pytest.mark.parametrize(
        "dims,text,energy_uj,cycles",
        [
            (
                (128, 768, 768),
                "L3[WIO] K48 - L2[WI] N1 K16X - L1[O] C48 P16 C16X - L0[W] P8",
                196.54,
                294912,
            ),
            (
                (128, 64, 128),
                "L3[WIO] K2 - L2[WI] N1 K16X - L1[O] K2 C8 P16 C16X - L0[W] P8",
                4.962,
                4096,
            ),
        ],
    )
    def test_golden(self, dims, text, energy_uj, cycles):
        m, k, c = dims
        layer = Layer("g", {"P": m, "C": c, "K": k})
        mb = batch_from_mappings([parse_dosa_mapping(text)])
        out = _torch(layer, gemmini_arch(16, 108, 16), mb)
        assert float(out.energy_pj[0]) * 1e-6 == pytest.approx(energy_uj, rel=5e-3)
        assert float(out.cycles[0]) == cycles
        assert float(out.level_acc[0, 0]) == 76087296 or dims[1] != 768


LAYERS = [
    Layer("bert_ffn", {"P": 128, "C": 768, "K": 3072}),
    Layer("r50_3x3", {"R": 3, "S": 3, "P": 28, "Q": 28, "C": 128, "K": 128}),
    Layer("r50_s2", {"R": 3, "S": 3, "P": 14, "Q": 14, "C": 256, "K": 256}, 2, 2),
    Layer("unet_up", {"R": 2, "S": 2, "P": 56, "Q": 56, "C": 64, "K": 32}),
    # grouped layers: one group's mapping, the groups one after another (G x one group)
    Layer("mbv2_dw_s2", {"R": 3, "S": 3, "P": 56, "Q": 56}, 2, 2, groups=144),
    Layer("vit_scores", {"P": 197, "C": 64, "K": 197}, groups=12),
]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda ly: ly.name)
@pytest.mark.parametrize("sliding", [True, False])
def test_agrees_with_numpy_on_random_valid_mappings(layer, sliding):
    arch = gemmini_arch()
    rng = np.random.default_rng(7)
    mb = sample_batch(layer, arch, 20000, rng=rng)
    valid = evaluate_batch(layer, arch, mb).valid
    idx = np.flatnonzero(valid)[:60]
    assert len(idx) >= 25  # 8 cases: hundreds of valid mappings in all
    sub = type(mb)(mb.temporal[idx], mb.spatial[idx], mb.order[idx])
    opts = CostOptions(sliding_window=sliding)
    ref = evaluate_batch(layer, arch, sub, options=opts)
    out = _torch(layer, arch, sub, sliding_window=sliding)
    np.testing.assert_allclose(out.energy_pj.numpy(), ref.energy_pj, rtol=1e-12)
    np.testing.assert_array_equal(out.cycles.numpy(), ref.cycles)
    np.testing.assert_allclose(out.level_acc.numpy(), ref.level_accesses, rtol=1e-12)
    np.testing.assert_allclose(out.fills.numpy(), ref.fills, rtol=1e-12)
    if layer.groups > 1:  # the whole layer: G times one group's energy
        one_group = Layer("one", dict(layer.dims), *layer.strides)
        one = evaluate_batch(one_group, arch, sub, options=opts)
        np.testing.assert_allclose(ref.energy_pj, layer.groups * one.energy_pj, rtol=1e-12)


def test_gradient_flows_to_factors():
    layer = LAYERS[0]
    arch = gemmini_arch()
    mb = batch_from_mappings(
        [parse_dosa_mapping("L3[WIO] K48 C3 - L2[WI] K4X - L1[O] C16 P16 C16X - L0[W] P8")]
    )
    T = torch.tensor(mb.temporal, dtype=torch.float64, requires_grad=True)
    out = torch_costs(
        layer_table([layer]),
        arch,
        T,
        torch.tensor(mb.spatial, dtype=torch.float64),
        torch.tensor(mb.order),
    )
    out.energy_pj.sum().backward()
    assert torch.isfinite(T.grad).all() and T.grad.abs().sum() > 0
