"""Method ``cosa-edp`` (the default of map-network and fuse) on the awkward shape of issue 42:
ViT-Base's FFN fc1 (197 tokens, a prime) on Simba, where CoSA's proxy puts P=197 at DRAM."""

from __future__ import annotations

from tests.mapping.mappers import mapped
from twill.mapping.arch import simba_arch
from twill.mapping.workload import Layer

#: `twill map fc1.yaml --arch simba --method random16k --seed 0` (P197 C768 K3072), µJ·cycles
RANDOM16K_EDP = 6.489e8


def test_vit_fc1_on_simba_not_worse_than_random16k():
    layer, arch = Layer("fc1", {"P": 197, "C": 768, "K": 3072}), simba_arch()
    got = mapped("cosa-edp", layer, arch, seed=0)
    assert got.solution.report.valid and got.settings["method"] == "cosa-edp"
    assert got.solution.report.edp <= RANDOM16K_EDP
    rerank = mapped("cosa-rerank", layer, arch, metric="edp")
    assert (
        got.solution.report.edp <= rerank.solution.report.edp
    )  # its candidate, polished: never worse
    assert got.objective == got.solution.report.edp


#: `twill map proj.yaml --arch simba --method random16k --seed 0` (P197 C768 K768): the best
#: of 14,619 valid mappings in its 2,000,000 draws, µJ·cycles. `cosa-edp` lost here by 1.29x
#: before its evolutionary stage (docs/benchmarks.md).
RANDOM16K_PROJ_EDP = 14382584.385402488
#: that best mapping is the 3,922nd valid draw of seed 0's stream, so `random` with
#: n_valid=3922 reproduces it in about 500,000 draws instead of 2,000,000
PROJ_BEST_DRAW = 3922


def test_vit_projection_on_simba_not_worse_than_random16k():
    layer, arch = Layer("proj", {"P": 197, "C": 768, "K": 768}), simba_arch()
    ref = mapped("random", layer, arch, seed=0, n_valid=PROJ_BEST_DRAW)
    assert abs(ref.solution.report.edp / RANDOM16K_PROJ_EDP - 1) < 1e-9
    got = mapped("cosa-edp", layer, arch, seed=0)
    assert got.solution.report.edp <= RANDOM16K_PROJ_EDP
    assert got.stats["chosen"] == "evolve"  # CoSA's polished candidate is 1.85e7
