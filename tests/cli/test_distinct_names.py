"""Things that differ have different names (issue 38): the two Simba variants, and DOSA's
workloads against the model zoo; the old spellings still work. Names resolve from the package's
own data, whatever the current folder."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.mapping.mappers import mapped
from twill.cli import main
from twill.io.networks import SHIPPED_WORKLOADS, load_network
from twill.io.timeloop import read_arch, read_layer
from twill.mapping.arch import builtin_arch

LAYER = "cosa/workloads/resnet50_graph/_outputs_input.5.yaml"


@pytest.mark.parametrize(
    "name,file", [("simba_golden", "simba_golden.yaml"), ("simba_cosa", "simba.yaml")]
)
def test_each_simba_name_is_the_file_it_stands_for(benchmark_data: Path, name, file) -> None:
    arch = builtin_arch(name)
    assert arch.name == name
    assert replace(read_arch(benchmark_data / "cosa/arch" / file), name=name) == arch


def test_simba_is_the_old_name_of_simba_golden() -> None:
    assert builtin_arch("simba") == builtin_arch("simba_golden")


def test_the_two_simba_numbers_come_with_two_names(benchmark_data: Path, capsys) -> None:
    layer = read_layer(benchmark_data / LAYER)
    golden = mapped("cosa", layer, builtin_arch("simba_golden")).solution.report
    cosa = mapped("cosa", layer, builtin_arch("simba_cosa")).solution.report
    assert (golden.arch, cosa.arch) == ("simba_golden", "simba_cosa")
    assert golden.energy_uj == pytest.approx(14.281, abs=1e-3)
    assert cosa.energy_uj == pytest.approx(14.739, abs=1e-3)
    simba_yaml = str(benchmark_data / "cosa/arch/simba.yaml")
    shows = {"simba": "simba_golden", "simba_cosa": "simba_cosa", simba_yaml: "simba.yaml"}
    for arch, shown in shows.items():
        assert main(["map", str(benchmark_data / LAYER), "--arch", arch]) == 0
        out = capsys.readouterr().out
        assert f"on {shown}" in " ".join(out.split())


def test_dosa_workloads_are_named_dosa_and_old_names_still_resolve(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # nothing relative to the current folder
    net = load_network("dosa_resnet50")
    assert net.name == "dosa_resnet50" and net.source == str(SHIPPED_WORKLOADS / "resnet50")
    assert load_network("resnet50").name == "dosa_resnet50"


def test_map_network_resolves_a_workload_name_from_the_package(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["map-network", "dosa_bert", "--arch", "gemmini", "--methods", "cosa", "--limit", "1"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["network"] == "dosa_bert" and len(out["layers"]) == 1
