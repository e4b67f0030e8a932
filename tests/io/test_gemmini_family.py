"""The shipped Gemmini family (``twill/data/arch``): each file reads back as the machine its
name describes, and CoSA maps a real layer onto it with a mapping the verifier accepts."""

from __future__ import annotations

import re

import pytest

from tests.mapping.mappers import mapped
from twill.io.timeloop import read_arch, shipped_archs
from twill.mapping.arch import gemmini_arch
from twill.mapping.cost.analytical import evaluate
from twill.mapping.mapping import verify_mapping
from twill.mapping.workload import Layer

FAMILY = shipped_archs()


def test_family_covers_the_listed_sizes():
    sizes = {tuple(int(x) for x in re.findall(r"\d+", n)[1:]) for n in FAMILY}
    pe = {s[0] for s in sizes}
    sp = {s[1] for s in sizes}
    acc = {s[2] for s in sizes}
    assert pe == {16, 32} and sp == {128, 256, 512} and acc == {32, 64, 128}


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_member_reads_as_its_named_machine(name):
    pe, sp, acc = (int(x) for x in re.findall(r"\d+", name)[1:])
    arch = read_arch(FAMILY[name])
    want = gemmini_arch(pe, sp, acc)
    assert arch.name == name
    assert arch.macs == pe * pe and arch.levels == want.levels


@pytest.mark.parametrize("name", ["gemmini_16x16_sp512k_acc128k", "gemmini_32x32_sp128k_acc64k"])
def test_cosa_maps_a_resnet_layer_verified(name):
    arch = read_arch(FAMILY[name])
    layer = Layer.from_key("3_3_14_14_256_256_1_1_1", name="res4_conv2")
    res = mapped("cosa", layer, arch, time_limit=20)
    assert verify_mapping(layer, arch, res.solution.mapping) == []
    rep = evaluate(layer, arch, res.solution.mapping)
    # a spatial array can never beat MACs / PEs cycles
    assert rep.cycles >= layer.macs / arch.macs


def test_cli_map_takes_a_shipped_name(capsys, benchmark_data):
    from twill.cli import main

    layer = benchmark_data / "cosa" / "workloads" / "alexnet_graph" / "_outputs_input.2.yaml"
    assert main(["map", str(layer), "--arch", "gemmini_32x32_sp128k_acc64k", "--json"]) == 0
    assert '"cycles"' in capsys.readouterr().out
    assert main(["map", str(layer), "--arch", "gemmini_16x16_sp999k_acc1k"]) == 2
    assert "gemmini_16x16_sp512k_acc128k" in capsys.readouterr().err
