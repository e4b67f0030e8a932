"""Method ``cosa-edp`` (the default of map-network and fuse) on the awkward shape of issue 42:
ViT-Base's FFN fc1 (197 tokens, a prime) on Simba, where CoSA's proxy puts P=197 at DRAM."""

from __future__ import annotations

from twill.mapping.arch import simba_arch
from twill.mapping.pipeline import map_layer
from twill.mapping.workload import Layer

#: `twill map fc1.yaml --arch simba --method random16k --seed 0` (P197 C768 K3072), µJ·cycles
RANDOM16K_EDP = 6.489e8


def test_vit_fc1_on_simba_not_worse_than_random16k():
    layer, arch = Layer("fc1", {"P": 197, "C": 768, "K": 3072}), simba_arch()
    got = map_layer(layer, arch, mapper="cosa-edp", seed=0)
    assert got.report.valid and got.method == "cosa-edp"
    assert got.report.edp <= RANDOM16K_EDP
    rerank = map_layer(layer, arch, mapper="cosa-rerank", metric="edp")
    assert got.report.edp <= rerank.report.edp  # its candidate, polished: never worse
    assert got.objective == got.report.edp
