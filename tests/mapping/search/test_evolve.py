"""The evolutionary search of ``cosa-edp`` (twill.mapping.search.evolve): encoding round
trip, never worse than its best start, valid, and the same mapping for the same seed."""

from __future__ import annotations

import numpy as np

from twill.mapping.arch import gemmini_arch, simba_arch
from twill.mapping.cost.analytical import evaluate
from twill.mapping.mapping import verify_mapping
from twill.mapping.search.evolve import Encoding, EvolveSettings, evolve
from twill.mapping.search.random import valid_samples
from twill.mapping.workload import Layer


def test_encoding_round_trip_keeps_the_cost():
    layer, arch = Layer("g", {"P": 28, "Q": 28, "C": 32, "K": 32, "G": 4}), gemmini_arch()
    for m in valid_samples(layer, arch, 5, seed=3):
        C, keys = Encoding(layer, arch).encode(m)
        back = Encoding(layer, arch).decode(C[None], keys[None]).mapping(0)
        assert evaluate(layer, arch, back).edp == evaluate(layer, arch, m).edp


def test_evolve_is_valid_seeded_and_never_worse_than_its_starts():
    layer, arch = Layer("l", {"P": 49, "C": 96, "K": 64}), simba_arch()
    starts = valid_samples(layer, arch, 20, seed=0)
    cfg = EvolveSettings(generations=6, mutants=512)
    a = evolve(layer, arch, starts, cfg, seed=1)
    assert not verify_mapping(layer, arch, a)
    assert evaluate(layer, arch, a).edp <= min(evaluate(layer, arch, m).edp for m in starts)
    assert a == evolve(layer, arch, starts, cfg, seed=1)
    assert np.isfinite(evaluate(layer, arch, a).edp)
