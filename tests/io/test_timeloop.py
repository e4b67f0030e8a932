"""Timeloop/DOSA readers: validate then build, clear errors, round trips, the DOSA dataset."""

from __future__ import annotations

import pytest

from twill.errors import InvalidProblemError
from twill.io.timeloop import (
    check_layer_fits,
    read_arch,
    read_dosa_dataset,
    read_layer,
    read_mapping,
    read_network,
)
from twill.mapping.arch import gemmini_arch, simba_arch
from twill.mapping.cost.dataset import evaluate_rows
from twill.mapping.mapping import parse_dosa_mapping, to_dosa_string, to_timeloop_yaml
from twill.mapping.workload import Dim

GOLDEN = (
    "L5[WIO] Q7 P2 - L4[IO] K4X Q2X P2X - L3[I] Q4X P2X - L2[W] K2 - "
    "L1[O] K4 C16 K2X C4X - L0[W] P7"
)


class TestLayers:
    def test_cosa_and_dosa_problem(self, benchmark_data):
        a = read_layer(benchmark_data / "cosa/workloads/resnet50_graph/_outputs_input.2.yaml")
        assert (a.dim(Dim.R), a.dim(Dim.P), a.dim(Dim.C), a.w_stride) == (7, 112, 3, 2)
        b = read_layer(benchmark_data / "dosa/workloads/bert/mm_0.yaml")
        assert (b.dim(Dim.P), b.dim(Dim.C), b.dim(Dim.K)) == (128, 768, 768)

    def test_errors_name_file_and_key(self, tmp_path):
        p = tmp_path / "bad.yaml"
        p.write_text("problem:\n  R: 1\n  S: 1\n  P: 0\n  Q: 4\n  C: -3\n  K: x\n")
        with pytest.raises(InvalidProblemError) as e:
            read_layer(p)
        msg = str(e.value)
        assert (
            "bad.yaml" in msg and "problem.P" in msg and "problem.C" in msg and "problem.K" in msg
        )

    def test_bad_yaml(self, tmp_path):
        p = tmp_path / "broken.yaml"
        p.write_text("problem: [1, 2\n")
        with pytest.raises(InvalidProblemError, match="broken.yaml.*not valid YAML"):
            read_layer(p)

    def test_networks_with_counts(self, benchmark_data):
        r50 = read_network(benchmark_data / "cosa/workloads/resnet50_graph")
        assert len(r50) == 24 and sum(x.count for x in r50) == 54
        unet = read_network(benchmark_data / "dosa/workloads/unet")
        assert len(unet) == 23


class TestArch:
    def test_simba_golden(self, benchmark_data):
        arch = read_arch(benchmark_data / "cosa/arch/simba_golden.yaml")
        ref = simba_arch()
        assert [lv.keeps for lv in arch.levels] == [lv.keeps for lv in ref.levels]
        assert [lv.energy_pj for lv in arch.levels] == pytest.approx(
            [lv.energy_pj for lv in ref.levels]
        )
        assert [arch.fanout(m) for m in range(6)] == [1, 8, 1, 8, 16, 1]

    def test_gemmini(self, benchmark_data):
        arch = read_arch(benchmark_data / "dosa/hw/gemmini/arch/arch.yaml")
        ref = gemmini_arch()
        assert [lv.name for lv in arch.levels] == [lv.name for lv in ref.levels]
        assert [lv.entries for lv in arch.levels] == [lv.entries for lv in ref.levels]

    def test_missing_dram_level(self, tmp_path):
        p = tmp_path / "nodram.yaml"
        p.write_text(
            "arch:\n  arithmetic: {instances: 4}\n  storage:\n"
            "  - {name: Registers, entries: 1, instances: 4}\n"
            "  - {name: Buffer, entries: 64, instances: 1}\n"
        )
        with pytest.raises(InvalidProblemError, match="nodram.yaml.*must be DRAM"):
            read_arch(p)

    def test_weights_cannot_fit(self, benchmark_data):
        layer = read_layer(benchmark_data / "cosa/workloads/resnet50_graph/_outputs_input.5.yaml")
        arch = gemmini_arch().with_level("Accumulator", entries=0)
        with pytest.raises(InvalidProblemError, match="Accumulator"):
            check_layer_fits(layer, arch.with_level("Registers", entries=0), source="x.yaml")


class TestMappings:
    def test_timeloop_yaml_round_trip(self, tmp_path):
        arch = simba_arch()
        m = parse_dosa_mapping(GOLDEN)
        p = tmp_path / "map.yaml"
        p.write_text(to_timeloop_yaml(m, arch))
        back = read_mapping(p, arch)
        assert to_dosa_string(back, arch) == to_dosa_string(m, arch)
        assert back.temporal == m.temporal and back.spatial == m.spatial

    def test_dosa_string_errors(self):
        with pytest.raises(InvalidProblemError, match="bad loop"):
            parse_dosa_mapping("L1[WIO] K4Z - L0[W] P2")
        with pytest.raises(InvalidProblemError, match="missing"):
            parse_dosa_mapping("L3[WIO] K4 - L0[W] P2")


class TestDataset:
    def test_error_targets(self, benchmark_data):
        rows, errors = evaluate_rows(read_dosa_dataset(benchmark_data / "dosa/timeloop_sample.csv"))
        assert len(rows) == 2000 and errors["valid"] == 2000
        assert errors["cycles"]["exact_fraction"] > 0.90
        assert errors["energy_uJ"]["median"] < 0.02


def test_dosa_gemmini_descriptions_agree_on_the_pe_array(benchmark_data):
    """DOSA ships Gemmini twice: a v0.3 tree (16 accumulator instances, 32 KB accumulator,
    128 KB scratchpad) and a flat v1 file (256 MACs, one merged 64 KB accumulator, 256 KB
    scratchpad). Both have the 16 x 16 PE array."""
    folder = benchmark_data / "dosa" / "hw" / "gemmini" / "arch"
    sizes = {"arch.yaml": (32, 128), "arch_cosa.yaml": (64, 256)}
    for name, (acc_kb, sp_kb) in sizes.items():
        arch = read_arch(folder / name)
        acc, sp = arch.levels[1], arch.levels[2]
        assert (arch.macs, acc.instances) == (256, 16), name
        assert acc.entries * acc.instances * acc.word_bits // 8 == acc_kb * 1024, name
        assert sp.entries * sp.word_bits // 8 == sp_kb * 1024, name
