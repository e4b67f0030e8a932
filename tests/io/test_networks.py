"""Named networks resolve where the user says (argument, ``--workloads``, ``$TWILL_WORKLOADS``)
or from the copy shipped with the package: never relative to the current folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from twill.cli import main
from twill.errors import InvalidProblemError
from twill.io.networks import (
    SHIPPED_WORKLOADS,
    WORKLOADS_ENV,
    default_workload_root,
    load_network,
)


def test_default_root_follows_env_then_the_shipped_copy(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(WORKLOADS_ENV, str(tmp_path))
    assert default_workload_root() == tmp_path.resolve()
    monkeypatch.delenv(WORKLOADS_ENV)
    monkeypatch.chdir(tmp_path)  # the current folder plays no part
    assert default_workload_root() == SHIPPED_WORKLOADS
    assert (SHIPPED_WORKLOADS / "LICENSE").is_file()
    net = load_network("bert")
    assert net.layers and str(SHIPPED_WORKLOADS) in net.source


def test_explicit_root_is_used_and_a_wrong_one_is_a_clear_error(
    benchmark_data: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)  # only the explicit root can work
    shutil.copytree(benchmark_data / "dosa/workloads/bert", tmp_path / "wl/bert")
    net = load_network("bert", tmp_path / "wl")
    assert net.layers and str(tmp_path / "wl") in net.source
    with pytest.raises(InvalidProblemError, match="layers.yaml not found"):
        load_network("bert", tmp_path / "nowhere")


def test_fuse_workloads_option_names_the_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["fuse", "bert", "--workloads", str(tmp_path / "nowhere"), "--steps", "1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "layers.yaml not found" in err
