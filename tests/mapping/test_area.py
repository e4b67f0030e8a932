"""The area model (twill.mapping.area): Gemmini's closed form matches the level sum, areas
grow with every parameter, and arrays and tensors pass through the closed form."""

import numpy as np
import pytest

from twill.mapping.arch import gemmini_arch, simba_arch
from twill.mapping.area import area_breakdown, area_mm2, gemmini_area_mm2

# Accelergy 40 nm areas DOSA recorded (ucb-bar/dosa dataset.csv, target.area), mm²:
# (pe_dim, scratchpad kB, accumulator kB) -> area. The fit is within 18.5 % of each.
DOSA_AREAS = {(16, 128, 128): 1.258575, (16, 8, 2): 0.170690, (128, 1024, 8): 9.842240,
              (2, 2048, 32): 5.160948, (64, 256, 64): 2.866094}  # fmt: skip


@pytest.mark.parametrize("params", [(16, 128, 32), (32, 256, 64), (8, 64, 16), (4, 1, 1)])
def test_closed_form_equals_level_sum(params):
    assert gemmini_area_mm2(*params) == pytest.approx(area_mm2(gemmini_arch(*params)), rel=1e-9)


@pytest.mark.parametrize(("params", "published"), sorted(DOSA_AREAS.items()))
def test_near_the_published_areas(params, published):
    assert gemmini_area_mm2(*params) == pytest.approx(published, rel=0.185)


def test_area_grows_with_each_parameter():
    base = area_mm2(gemmini_arch(16, 128, 32))
    assert area_mm2(gemmini_arch(32, 128, 32)) > base
    assert area_mm2(gemmini_arch(16, 256, 32)) > base
    assert area_mm2(gemmini_arch(16, 128, 64)) > base
    assert area_mm2(simba_arch(pes=64)) > area_mm2(simba_arch())


def test_registers_and_dram_are_not_srams():
    names = [n for n, _ in area_breakdown(gemmini_arch()).levels_mm2]
    assert names == ["Accumulator", "Scratchpad"]


def test_arrays_and_tensors_pass_through():
    got = gemmini_area_mm2(np.array([16.0, 32.0]), np.array([128.0, 256.0]), 32.0)
    assert got.shape == (2,) and got[0] == pytest.approx(gemmini_area_mm2(16, 128, 32))
    torch = pytest.importorskip("torch")
    pe = torch.tensor(16.0, requires_grad=True)
    gemmini_area_mm2(pe, torch.tensor(128.0), torch.tensor(32.0)).backward()
    assert pe.grad.item() == pytest.approx(2 * 16 * 4.216e-4)
